"""State of the Local functions window: the model's functions as rows (filterable), and
creating or deleting one from the text a user types in its form."""

from __future__ import annotations

from dataclasses import dataclass

import onnx_ir as ir

from nsdl_jupyter._walk import nodes_in
from nsdl_jupyter.document import DocumentError, ModelDocument
from nsdl_jupyter.ops import (
    AttributeLiteralError,
    LiteralSyntaxError,
    attribute_to_python,
    format_literal,
    parse_literal,
)


@dataclass(frozen=True)
class FunctionRow:
    """One local function as the window lists it."""

    domain: str
    name: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    parameters: tuple[tuple[str, str | None], ...]  # (name, default as literal text or None)
    nodes: int  # nodes of its body
    instances: int  # nodes of the model (any graph) that call it

    @property
    def key(self) -> str:
        """``local::Block``: how the window, the palette and quick add name it."""
        return f"{self.domain}::{self.name}"

    @property
    def signature(self) -> str:
        return f"({', '.join(self.inputs)}) → ({', '.join(self.outputs)})"


def function_rows(doc: ModelDocument, text: str = "") -> list[FunctionRow]:
    """The model's local functions whose name or domain contains `text`, sorted by key."""
    needle = text.strip().lower()
    calls: dict[tuple[str, str, str], int] = {}
    graphs = [doc.graph, *(f.graph for f in doc.functions.values())]
    for graph in graphs:
        for node in nodes_in(graph):
            key = (node.domain, node.op_type, node.overload)
            calls[key] = calls.get(key, 0) + 1
    rows = [
        FunctionRow(
            domain=function.domain,
            name=function.name,
            inputs=tuple(v.name or "" for v in function.inputs),
            outputs=tuple(v.name or "" for v in function.outputs),
            parameters=tuple(
                (name, None if attr.type == ir.AttributeType.UNDEFINED else _text(attr))
                for name, attr in function.attributes.items()
            ),
            nodes=len(function.graph),
            instances=calls.get(key, 0),
        )
        for key, function in doc.functions.items()
    ]
    return sorted(
        (r for r in rows if needle in r.key.lower()), key=lambda r: (r.domain, r.name.lower())
    )


def _text(attr: ir.Attr) -> str:
    return format_literal(attribute_to_python(attr))


def parse_names(text: str) -> list[str]:
    """``"x, y"`` -> ["x", "y"] (commas or spaces between names)."""
    return [part for part in text.replace(",", " ").split() if part]


def parse_parameters(text: str) -> dict[str, object]:
    """``"alpha=0.5, axis=1, mode"`` -> {"alpha": 0.5, "axis": 1, "mode": None}; a value is
    literal text (``[1, 2]``, ``'text'``); a name alone has no default."""
    parameters: dict[str, object] = {}
    for part in _split_top_level(text):
        name, _, value = part.partition("=")
        name = name.strip()
        if not name.isidentifier():
            raise DocumentError(
                f"parameter {name!r} is not an identifier: write name=default or name alone"
            )
        parameters[name] = parse_literal(value.strip()) if value.strip() else None
    return parameters


def _split_top_level(text: str) -> list[str]:
    """Split at commas outside brackets and quotes (``a=[1, 2], b`` has two parts)."""
    parts: list[str] = []
    current: list[str] = []
    depth, quote = 0, ""
    for char in text:
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char in "[(":
            depth += 1
        elif char in "])":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append("".join(current))
            current = []
            continue
        current.append(char)
    parts.append("".join(current))
    return [p.strip() for p in parts if p.strip()]


def create_function(
    doc: ModelDocument,
    name: str,
    domain: str,
    *,
    inputs: str,
    outputs: str,
    parameters: str = "",
) -> str | None:
    """Create a function from the form's texts (one undo step); None, or what went wrong."""
    try:
        doc.create_function(
            name.strip(),
            domain.strip(),
            parse_names(inputs),
            parse_names(outputs),
            attributes=parse_parameters(parameters),
        )
    except (DocumentError, LiteralSyntaxError, AttributeLiteralError) as error:
        return str(error)
    return None


def delete_function(doc: ModelDocument, name: str, domain: str) -> str | None:
    """Delete a function (one undo step; its instances stay as custom operators)."""
    try:
        doc.delete_function(name, domain)
    except DocumentError as error:
        return str(error)
    return None
