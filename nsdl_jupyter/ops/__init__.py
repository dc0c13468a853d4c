"""Operator layer: ONNX and onnxruntime contrib schemas, literal parsing, attribute conversion.

- `get_schema(op, domain, opset)` / `list_operators(imports)` / `latest_opset(domain)`: schemas
  of the installed onnx (every opset) and onnxruntime's contrib domains, cached.
- `parse_literal("[1, 2]")` / `format_literal(value)`: literal text as users type it, with
  errors that name the 1-based column.
- `to_attribute(name, value, type)` / `attribute_to_python(attr)`: values and literal text to
  `onnx_ir.Attr` of a given type (checked, with the fix in the message) and back.
"""

from __future__ import annotations

from nsdl_jupyter.ops._attributes import attribute_to_python, to_attribute
from nsdl_jupyter.ops._errors import (
    AttributeLiteralError,
    AttributeValueError,
    LiteralSyntaxError,
    UnknownDomainError,
    UnknownOperatorError,
)
from nsdl_jupyter.ops._literal import LiteralValue, format_literal, parse_literal
from nsdl_jupyter.ops._reference import AttributeReference
from nsdl_jupyter.ops._registry import (
    ONNX_DOMAINS,
    get_schema,
    is_custom_domain,
    is_custom_operator,
    known_domains,
    latest_opset,
    list_operators,
)
from nsdl_jupyter.ops._schema_info import AttributeInfo, FormalParameter, OpSchemaInfo
from nsdl_jupyter.ops._schema_sources import normalize_domain

__all__ = [
    "ONNX_DOMAINS",
    "AttributeInfo",
    "AttributeLiteralError",
    "AttributeReference",
    "AttributeValueError",
    "FormalParameter",
    "LiteralSyntaxError",
    "LiteralValue",
    "OpSchemaInfo",
    "UnknownDomainError",
    "UnknownOperatorError",
    "attribute_to_python",
    "format_literal",
    "get_schema",
    "is_custom_domain",
    "is_custom_operator",
    "known_domains",
    "latest_opset",
    "list_operators",
    "normalize_domain",
    "parse_literal",
    "to_attribute",
]
