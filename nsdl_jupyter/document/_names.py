"""Node and tensor naming rules: C90 identifiers, uniqueness, generated names."""

from __future__ import annotations

import re
from collections.abc import Container

from nsdl_jupyter.document._errors import InvalidNameError

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_C90_KEYWORDS = frozenset(
    {
        "auto",
        "break",
        "case",
        "char",
        "const",
        "continue",
        "default",
        "do",
        "double",
        "else",
        "enum",
        "extern",
        "float",
        "for",
        "goto",
        "if",
        "int",
        "long",
        "register",
        "return",
        "short",
        "signed",
        "sizeof",
        "static",
        "struct",
        "switch",
        "typedef",
        "union",
        "unsigned",
        "void",
        "volatile",
        "while",
    }
)


def check_node_name(name: object, taken: Container[str]) -> str:
    """Return `name` if it can name a new node, else raise InvalidNameError saying how to fix it."""
    if not isinstance(name, str) or not name:
        raise InvalidNameError(f"node name must be a non-empty string, got {name!r}")
    if not _IDENTIFIER.match(name):
        column = next(
            (i for i, c in enumerate(name) if not (c.isascii() and (c.isalnum() or c == "_"))), 0
        )
        raise InvalidNameError(
            f"node name {name!r} is not a C identifier (character {column + 1} is "
            f"{name[column]!r}): use letters, digits and '_', not starting with a digit"
        )
    if name in _C90_KEYWORDS:
        raise InvalidNameError(f"node name {name!r} is a C keyword: choose another name")
    if name in taken:
        raise InvalidNameError(f"a node named {name!r} already exists in this graph: pick another")
    return name


def check_tensor_name(name: object, taken: Container[str]) -> str:
    """Tensor names need only be non-empty, printable and unique in the graph."""
    if not isinstance(name, str) or not name.strip():
        raise InvalidNameError(f"tensor name must be a non-empty string, got {name!r}")
    if not name.isprintable():
        raise InvalidNameError(f"tensor name {name!r} contains control characters")
    if name in taken:
        raise InvalidNameError(f"tensor name {name!r} is already used in this graph: pick another")
    return name


def unique_name(base: str, taken: Container[str]) -> str:
    """`base` made into a C identifier and suffixed with the first free `_N` if needed."""
    stem = re.sub(r"[^A-Za-z0-9_]", "_", base) or "node"
    if stem[0].isdigit():
        stem = "_" + stem
    if stem not in taken and stem not in _C90_KEYWORDS:
        return stem
    counter = 1
    while f"{stem}_{counter}" in taken:
        counter += 1
    return f"{stem}_{counter}"
