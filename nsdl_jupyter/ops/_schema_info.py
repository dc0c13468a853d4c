"""What the editors and the document need to know about one operator version."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

import onnx_ir as ir

ParameterOption = Literal["single", "optional", "variadic"]


@dataclass(frozen=True)
class AttributeInfo:
    """One attribute of an operator schema.

    `default` is shared by every caller of the cached schema: attach `fresh_default()` to a
    node, never `default` itself.
    """

    name: str
    type: ir.AttributeType
    required: bool
    default: ir.Attr | None = field(default=None, compare=False)
    description: str = ""

    def fresh_default(self) -> ir.Attr | None:
        """A new `ir.Attr` equal to the default, safe to attach to a node."""
        if self.default is None:
            return None
        return ir.Attr(self.name, self.default.type, self.default.value)


@dataclass(frozen=True)
class FormalParameter:
    """One input or output of an operator schema."""

    name: str
    type_str: str
    option: ParameterOption
    is_homogeneous: bool = True
    min_arity: int = 1
    description: str = ""


@dataclass(frozen=True)
class OpSchemaInfo:
    """One version of one operator: what `get_schema` and `list_operators` return.

    `max_input` / `max_output` are 2147483647 for variadic parameters (as in ONNX).
    `type_constraints` maps a type parameter ("T") to its allowed types ("tensor(float)").
    """

    name: str
    domain: str
    since_version: int
    deprecated: bool
    doc: str
    category: str
    attributes: Mapping[str, AttributeInfo] = field(hash=False)
    inputs: tuple[FormalParameter, ...]
    outputs: tuple[FormalParameter, ...]
    min_input: int
    max_input: int
    min_output: int
    max_output: int
    type_constraints: Mapping[str, tuple[str, ...]] = field(hash=False)
    has_function: bool = False
    source: Literal["onnx", "onnxruntime"] = "onnx"

    @property
    def required_attributes(self) -> tuple[str, ...]:
        """Names of attributes a node must set."""
        return tuple(name for name, info in self.attributes.items() if info.required)

    @property
    def qualified_name(self) -> str:
        """``Conv`` for the default domain, ``com.microsoft::Attention`` otherwise."""
        return f"{self.domain}::{self.name}" if self.domain else self.name
