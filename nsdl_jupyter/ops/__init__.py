"""Operator layer: ONNX and onnxruntime contrib schemas, literal parsing, attribute conversion."""

from __future__ import annotations

from nsdl_jupyter.ops._errors import (
    AttributeLiteralError,
    AttributeValueError,
    LiteralSyntaxError,
    UnknownDomainError,
    UnknownOperatorError,
)
from nsdl_jupyter.ops._literal import LiteralValue, format_literal, parse_literal

__all__ = [
    "AttributeLiteralError",
    "AttributeValueError",
    "LiteralSyntaxError",
    "LiteralValue",
    "UnknownDomainError",
    "UnknownOperatorError",
    "format_literal",
    "parse_literal",
]
