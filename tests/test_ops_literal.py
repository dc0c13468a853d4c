"""The literal parser: valid forms, every error form with its column, round trip."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nsdl_jupyter.ops import LiteralSyntaxError, format_literal, parse_literal


def same(a: object, b: object) -> bool:
    """Equal values of the same types all the way down (True != 1 here; nan == nan)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, list):
        assert isinstance(b, list)
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a):
        return math.isnan(b)
    return a == b


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[1, 2, 3]", [1, 2, 3]),
        ("[[1, 2], [3, 4]]", [[1, 2], [3, 4]]),
        ("1.5e-3", 1.5e-3),
        ("-inf", -math.inf),
        ("+inf", math.inf),
        ("Infinity", math.inf),
        ("nan", math.nan),
        ("NaN", math.nan),
        ("'Some text'", "Some text"),
        ('"double"', "double"),
        ("'It\\'s alive!'", "It's alive!"),
        ('"say \\"hi\\""', 'say "hi"'),
        ("'a\\\\b\\nc\\td'", "a\\b\nc\td"),
        ("'\\x41\\u00e9\\U0001F600'", "A\u00e9\U0001f600"),
        ("''", ""),
        ("true", True),
        ("false", False),
        ("True", True),
        ("42", 42),
        ("-7", -7),
        ("+3", 3),
        ("3.", 3.0),
        (".5", 0.5),
        ("2E+3", 2000.0),
        ("007", 7),
        ("123456789012345678901234567890", 123456789012345678901234567890),
        ("[]", []),
        ("[ ]", []),
        ("[[]]", [[]]),
        ("[1, 2, ]", [1, 2]),
        ("  [ 1 ,2 ]  ", [1, 2]),
        ("[1,\n 2,\n 3]", [1, 2, 3]),
        ("[1, 2.5, 'x', true, [false]]", [1, 2.5, "x", True, [False]]),
        ("'[not, a, list]'", "[not, a, list]"),
        ("'multi\nline'", "multi\nline"),
    ],
)
def test_valid_literals(text: str, expected: object) -> None:
    assert same(parse_literal(text), expected)


@pytest.mark.parametrize(
    ("text", "column", "fragment"),
    [
        ("", 1, "expected a value"),
        ("   ", 4, "got end of text"),
        ("[1, 2", 6, "expected ',' or ']', got end of text"),
        ("[1, 2, 3 4]", 10, "expected ',' or ']', got '4'"),
        ("[1, [2, 3]", 11, "close the list opened at column 1"),
        ("[1,,2]", 4, "expected a value"),
        ("[,]", 2, "got ','"),
        ("]", 1, "got ']'"),
        ("[1] 2", 5, "unexpected '2' after the value"),
        ("1 2", 3, "unexpected '2'"),
        ("'abc", 1, "unterminated string: add the closing '"),
        ('[1, "abc]', 5, 'add the closing "'),
        ("'abc\\", 1, "unterminated string"),
        ("'a\\qb'", 3, "unknown escape '\\q'"),
        ("'\\x4'", 2, "needs exactly 2 hex digits"),
        ("'\\uZZZZ'", 2, "needs exactly 4 hex digits"),
        ("'\\U00110000'", 2, "not a valid character"),
        ("'\\ud800'", 2, "not a valid character"),
        ("1.2.3", 1, "malformed number '1.2.3'"),
        ("[1, 1e]", 5, "malformed number '1e'"),
        ("0x10", 1, "malformed number '0x10'"),
        ("12abc", 1, "malformed number '12abc'"),
        ("+true", 1, "malformed number '+true'"),
        ("-", 1, "expected a value"),
        ("abc", 1, "unknown word 'abc': put text in quotes, e.g. 'abc'"),
        ("[1, None]", 5, "unknown word 'None'"),
        ("[1, 2] ]", 8, "unexpected ']'"),
        ("(1, 2)", 1, "got '(1'"),
        ("{1: 2}", 1, "got '{1:'"),
        ("[" * 65, 65, "nested deeper than 64"),
        ("1" * 5000, 1, "too long"),
    ],
)
def test_error_column(text: str, column: int, fragment: str) -> None:
    with pytest.raises(LiteralSyntaxError) as info:
        parse_literal(text)
    error = info.value
    assert error.column == column
    assert str(error).startswith(f"column {column}: ")
    assert fragment in str(error)
    assert isinstance(error, ValueError)


def test_multiline_error_names_line_and_column() -> None:
    with pytest.raises(LiteralSyntaxError) as info:
        parse_literal("[1,\n 2 3]")
    assert info.value.column == 8
    assert (info.value.line, info.value.line_column) == (2, 4)
    assert str(info.value).startswith("line 2, column 4: expected ',' or ']'")


def test_parse_rejects_non_text() -> None:
    with pytest.raises(TypeError, match="expects str"):
        parse_literal(b"[1]")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (True, "true"),
        (3, "3"),
        (3.0, "3.0"),
        (1e20, "1e+20"),
        (-math.inf, "-inf"),
        (math.nan, "nan"),
        ("It's", '"It\'s"'),
        ("both ' and \"", "'both \\' and \"'"),
        ("tab\there\n", "'tab\\there\\n'"),
        ("\x00\x7f", "'\\x00\\x7f'"),
        ((1, 2), "[1, 2]"),
        ([[1, 2], [3, 4]], "[[1, 2], [3, 4]]"),
        (np.float32(0.1), "0.1"),
        (np.float16(3), "3.0"),
        (np.int8(-5), "-5"),
        (np.bool_(False), "false"),
        (np.array(2.5, dtype=np.float32), "2.5"),
        (np.array([[0.1, 0.2]], dtype=np.float32), "[[0.1, 0.2]]"),
        (np.array([1, 2], dtype=np.uint8), "[1, 2]"),
        (np.array([b"a", b"b'"], dtype=object), "['a', \"b'\"]"),
        (np.array(["x"]), "['x']"),
        (np.zeros((2, 0), dtype=np.float32), "[[], []]"),
        (b"raw", "'raw'"),
    ],
)
def test_format_literal(value: object, text: str) -> None:
    assert format_literal(value) == text


def test_format_float32_array_round_trips_bits() -> None:
    rng = np.random.default_rng(0)
    array = rng.standard_normal((3, 4)).astype(np.float32)
    back = np.array(parse_literal(format_literal(array)), dtype=np.float32)
    assert np.array_equal(back, array)


def test_format_literal_rejects_unknown_objects() -> None:
    with pytest.raises(TypeError, match="cannot write a dict"):
        format_literal({"a": 1})


scalars = st.integers() | st.floats(allow_nan=False) | st.text() | st.booleans()
nested = st.recursive(scalars, lambda inner: st.lists(inner, max_size=5), max_leaves=30)


@settings(max_examples=400, deadline=None)
@given(nested)
def test_round_trip(value: object) -> None:
    text = format_literal(value)
    assert same(parse_literal(text), value), text


@settings(max_examples=100, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=40))
def test_arbitrary_text_never_crashes(text: str) -> None:
    """Any text either parses or raises LiteralSyntaxError with a column inside the text."""
    try:
        parse_literal(text)
    except LiteralSyntaxError as error:
        column = error.column
    else:
        return
    assert 1 <= column <= len(text) + 1
