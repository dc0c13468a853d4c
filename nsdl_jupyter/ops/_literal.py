"""Literals as users type them in an editor: ``[1, 2]``, ``1.5e-3``, ``'It\\'s'``, ``true``.

A small hand-written recursive-descent parser (no `eval`, no `ast.literal_eval`: those accept
Python-only syntax and cannot say at which column the text went wrong), and `format_literal`,
its inverse, which writes values back as text a user could type again.

Grammar::

    value  := number | string | bool | list
    list   := '[' [ value (',' value)* [','] ] ']'
    number := [+-] digits ['.' digits] [('e'|'E') [+-] digits]  |  [+-] ('inf' | 'infinity' | 'nan')
    string := "'" chars "'"  |  '"' chars '"'
              escapes: \\' \\" \\\\ \\n \\t \\r \\0 \\xHH \\uXXXX \\UXXXXXXXX
    bool   := 'true' | 'false'   (also 'True' / 'False')

A number with a '.', an exponent, or spelled inf/nan is a float; otherwise an int.
"""

from __future__ import annotations

import math
import re
import unicodedata
from typing import Any, TypeAlias, Union

import numpy as np
import onnx
import onnx_ir as ir

from nsdl_jupyter._errors import ArgumentError
from nsdl_jupyter.ops._errors import LiteralSyntaxError
from nsdl_jupyter.ops._reference import AttributeReference

LiteralValue: TypeAlias = Union[int, float, str, bool, list["LiteralValue"]]  # noqa: UP007

MAX_DEPTH = 64

_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_NUMBER_TAIL = re.compile(r"[A-Za-z0-9_.]")
_MALFORMED = re.compile(r"[A-Za-z0-9_.+-]*")
_WORD = re.compile(r"[+-]?[A-Za-z_][A-Za-z0-9_]*")
_WHITESPACE = re.compile(r"\s*")
_TOKEN_FOR_MESSAGE = re.compile(r"[^\s\[\],'\"]+|.", re.DOTALL)
_STRING_RUN = {"'": re.compile(r"[^'\\]*"), '"': re.compile(r'[^"\\]*')}
_SIMPLE_ESCAPES = {
    "'": "'",
    '"': '"',
    "\\": "\\",
    "n": "\n",
    "t": "\t",
    "r": "\r",
    "0": "\0",
}
_HEX_ESCAPES = {"x": 2, "u": 4, "U": 8}
_ESCAPE_HELP = "use \\' \\\" \\\\ \\n \\t \\r \\0 \\xHH \\uXXXX or \\UXXXXXXXX"
_SPECIAL_FLOATS = {"inf": math.inf, "infinity": math.inf, "nan": math.nan}
_BOOLS = {"true": True, "false": False, "True": True, "False": False}


def parse_literal(text: str) -> LiteralValue:
    """Parse literal text; raise `LiteralSyntaxError` naming the 1-based column on error."""
    return parse_literal_with_positions(text)[0]


def parse_literal_with_positions(text: str) -> tuple[LiteralValue, LiteralPositions]:
    """Parse `text` and also return where each list and each list item starts.

    Converters that check nested lists (tensors must not be ragged, INTS must hold ints) use
    the positions to point at the offending item. Valid while the parsed value is alive.
    """
    if not isinstance(text, str):
        raise ArgumentError(f"parse_literal expects str, got {type(text).__name__}")
    parser = _Parser(text)
    return parser.parse(), parser.positions


class LiteralPositions:
    """1-based columns of the lists of one parsed literal and of their items."""

    __slots__ = ("_items", "_lists", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self._lists: dict[int, int] = {}
        self._items: dict[int, list[int]] = {}

    def add_list(self, items: list[LiteralValue], column: int) -> list[int]:
        self._lists[id(items)] = column
        columns: list[int] = []
        self._items[id(items)] = columns
        return columns

    def list_column(self, items: object) -> int | None:
        """Column of the '[' that opened `items`, None if `items` did not come from the text."""
        return self._lists.get(id(items))

    def item_column(self, items: object, index: int) -> int | None:
        """Column where item `index` of `items` starts, None if unknown."""
        columns = self._items.get(id(items))
        if columns is None or not 0 <= index < len(columns):
            return None
        return columns[index]


def describe_token(text: str, pos: int) -> str:
    """The token at `pos` as an error message shows it ("'abc'", "end of text")."""
    if pos >= len(text):
        return "end of text"
    match = _TOKEN_FOR_MESSAGE.match(text, pos)
    token = match.group(0) if match else text[pos]
    if len(token) > 20:
        token = token[:17] + "..."
    return repr(token)


class _Parser:
    __slots__ = ("pos", "positions", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.positions = LiteralPositions(text)

    def error(self, message: str, pos: int | None = None) -> LiteralSyntaxError:
        where = self.pos if pos is None else pos
        return LiteralSyntaxError(message, where + 1, self.text)

    def skip_whitespace(self) -> None:
        match = _WHITESPACE.match(self.text, self.pos)
        if match:
            self.pos = match.end()

    def parse(self) -> LiteralValue:
        self.skip_whitespace()
        value = self.value(0)
        self.skip_whitespace()
        if self.pos < len(self.text):
            token = describe_token(self.text, self.pos)
            raise self.error(
                f"unexpected {token} after the value: separate list items with ',' inside [ ]"
            )
        return value

    def value(self, depth: int) -> LiteralValue:
        text, pos = self.text, self.pos
        if pos >= len(text):
            raise self.error(
                "expected a value (a number, a 'string', true/false or a [list]), got end of text"
            )
        char = text[pos]
        if char == "[":
            return self.list_(depth)
        if char in "'\"":
            return self.string()
        number = _NUMBER.match(text, pos)
        if number:
            return self.number(number)
        word = _WORD.match(text, pos)
        if word:
            return self.word(word)
        raise self.error(
            "expected a value (a number, a 'string', true/false or a [list]), "
            f"got {describe_token(text, pos)}"
        )

    def list_(self, depth: int) -> list[LiteralValue]:
        if depth >= MAX_DEPTH:
            raise self.error(f"lists nested deeper than {MAX_DEPTH} levels")
        start = self.pos
        self.pos += 1
        items: list[LiteralValue] = []
        columns = self.positions.add_list(items, start + 1)
        self.skip_whitespace()
        if self.pos < len(self.text) and self.text[self.pos] == "]":
            self.pos += 1
            return items
        while True:
            columns.append(self.pos + 1)
            items.append(self.value(depth + 1))
            self.skip_whitespace()
            if self.pos >= len(self.text):
                raise self.error(
                    f"expected ',' or ']', got end of text: close the list opened at "
                    f"column {start + 1}"
                )
            char = self.text[self.pos]
            if char == "]":
                self.pos += 1
                return items
            if char != ",":
                raise self.error(f"expected ',' or ']', got {describe_token(self.text, self.pos)}")
            self.pos += 1
            self.skip_whitespace()
            if self.pos < len(self.text) and self.text[self.pos] == "]":
                self.pos += 1  # one trailing comma is fine: [1, 2, ]
                return items

    def number(self, match: re.Match[str]) -> int | float:
        start, end = match.span()
        if end < len(self.text) and _NUMBER_TAIL.match(self.text, end):
            whole = _MALFORMED.match(self.text, start)
            bad = whole.group(0) if whole else match.group(0)
            raise self.error(
                f"malformed number {bad!r}: write numbers like 12, -3, 1.5 or 2e-3",
                start,
            )
        token = match.group(0)
        self.pos = end
        if any(c in token for c in ".eE"):
            return float(token)
        try:
            return int(token)
        except ValueError:  # beyond sys.get_int_max_str_digits()
            raise self.error(f"integer with {len(token)} digits is too long", start) from None

    def word(self, match: re.Match[str]) -> float | bool:
        start, end = match.span()
        token = match.group(0)
        sign = token[0] if token[0] in "+-" else ""
        bare = token[len(sign) :]
        special = _SPECIAL_FLOATS.get(bare.lower())
        if special is not None:
            self.pos = end
            return -special if sign == "-" else special
        if not sign and bare in _BOOLS:
            self.pos = end
            return _BOOLS[bare]
        if sign:
            raise self.error(
                f"malformed number {token!r}: after {sign!r} write digits, inf or nan", start
            )
        raise self.error(
            f"unknown word {token!r}: put text in quotes, e.g. '{token}'; "
            "the only bare words are true, false, inf and nan",
            start,
        )

    def string(self) -> str:
        text = self.text
        start = self.pos
        quote = text[start]
        run = _STRING_RUN[quote]
        parts: list[str] = []
        pos = start + 1
        while True:
            match = run.match(text, pos)
            if match:
                parts.append(match.group(0))
                pos = match.end()
            if pos >= len(text):
                raise self.error(
                    f"unterminated string: add the closing {quote} "
                    f"(write \\{quote} for a {quote} inside the text)",
                    start,
                )
            if text[pos] == quote:
                self.pos = pos + 1
                return "".join(parts)
            # a backslash
            if pos + 1 >= len(text):
                raise self.error(
                    f"unterminated string: add the closing {quote} (write \\\\ for a backslash)",
                    start,
                )
            code = text[pos + 1]
            simple = _SIMPLE_ESCAPES.get(code)
            if simple is not None:
                parts.append(simple)
                pos += 2
                continue
            digits = _HEX_ESCAPES.get(code)
            if digits is None:
                raise self.error(f"unknown escape '\\{code}': {_ESCAPE_HELP}", pos)
            hex_text = text[pos + 2 : pos + 2 + digits]
            if len(hex_text) != digits or not all(c in "0123456789abcdefABCDEF" for c in hex_text):
                raise self.error(f"escape '\\{code}' needs exactly {digits} hex digits", pos)
            point = int(hex_text, 16)
            if point > 0x10FFFF or 0xD800 <= point <= 0xDFFF:
                raise self.error(f"escape '\\{code}{hex_text}' is not a valid character", pos)
            parts.append(chr(point))
            pos += 2 + digits


# ---------------------------------------------------------------------------------------------
# Formatting: python values back to literal text


def format_literal(value: object) -> str:
    """Write a value as literal text that `parse_literal` reads back to an equal value.

    Accepts python scalars and (nested) lists/tuples, numpy scalars and arrays, onnx_ir
    tensors and `onnx.TensorProto`. Floats use the shortest text that round-trips their own
    precision (a float32 0.1 is written ``0.1``). Strings are quoted with escapes.
    An array of shape (0, 3) is written ``[]``: literal text cannot carry the dims that
    follow a zero. Graphs and types have no literal form: they are described in angle
    brackets (display only; such text does not parse back).
    """
    parts: list[str] = []
    _format_into(value, parts)
    return "".join(parts)


def _format_into(value: object, out: list[str]) -> None:
    if isinstance(value, (bool, np.bool_)):
        out.append("true" if value else "false")
    elif isinstance(value, (int, np.integer)):
        out.append(str(int(value)))
    elif isinstance(value, (float, np.floating)):
        out.append(format_float(value))
    elif isinstance(value, str):
        out.append(format_string(value))
    elif isinstance(value, bytes):
        out.append(format_string(value.decode("utf-8", errors="replace")))
    elif isinstance(value, (list, tuple)):
        out.append("[")
        for index, item in enumerate(value):
            if index:
                out.append(", ")
            _format_into(item, out)
        out.append("]")
    elif isinstance(value, np.ndarray):
        _format_array(value, out)
    else:
        _format_other(value, out)


def _format_array(array: np.ndarray[Any, Any], out: list[str]) -> None:
    if array.ndim == 0:
        _format_into(array[()], out)
        return
    if array.dtype.kind in "iub":
        # tolist gives python ints / bools: exact and much faster than per-element work
        _format_into(array.tolist(), out)
        return
    if array.dtype == np.float64:
        _format_into(array.tolist(), out)
        return
    out.append("[")
    for index in range(array.shape[0]):
        if index:
            out.append(", ")
        if array.ndim == 1:
            _format_into(array[index], out)
        else:
            _format_array(array[index], out)
    out.append("]")


def _format_other(value: object, out: list[str]) -> None:
    if isinstance(value, onnx.TensorProto):
        _format_array(onnx.numpy_helper.to_array(value), out)
    elif isinstance(value, ir.TensorProtocol):
        _format_array(value.numpy(), out)
    elif isinstance(value, ir.Graph):
        out.append(f"<graph {value.name!r}: {len(value)} nodes>")
    elif isinstance(value, ir.TypeAndShape):
        out.append(f"<type {value.type}, shape {value.shape}>")
    elif isinstance(value, ir.TypeProtocol):
        out.append(f"<type {value}>")
    elif isinstance(value, AttributeReference):
        out.append(f"<reference to the caller's attribute {value.name!r}>")
    else:
        raise ArgumentError(
            f"format_literal cannot write a {type(value).__name__}: give a number, a str, "
            "a bool, a list, a numpy array or a tensor"
        )


def format_float(value: float | np.floating[Any]) -> str:
    """Shortest text that reads back to the same value at its own precision, always a float."""
    if isinstance(value, np.floating) and not isinstance(value, np.float64):
        if np.isnan(value):
            return "nan"
        if np.isinf(value):
            return "inf" if value > 0 else "-inf"
        text = str(value)
    else:
        text = repr(float(value))
    if not any(c in text for c in ".eEn"):  # 'n' of inf / nan
        text += ".0"
    return text


def format_string(text: str) -> str:
    """Quote `text`: single quotes unless it holds a ' and no ", escapes for the rest."""
    quote = '"' if "'" in text and '"' not in text else "'"
    out = [quote]
    for char in text:
        if char in (quote, "\\"):
            out.append("\\" + char)
        elif char == "\n":
            out.append("\\n")
        elif char == "\t":
            out.append("\\t")
        elif char == "\r":
            out.append("\\r")
        elif unicodedata.category(char) == "Cc":
            point = ord(char)
            out.append(f"\\x{point:02x}" if point < 0x100 else f"\\u{point:04x}")
        else:
            out.append(char)
    out.append(quote)
    return "".join(out)
