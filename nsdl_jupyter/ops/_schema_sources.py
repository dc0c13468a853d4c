"""Where schemas come from, and their conversion into `OpSchemaInfo`.

- ONNX domains ("", "ai.onnx.ml", "ai.onnx.preview.training", ...): every version of every
  operator from `onnx.defs.get_all_schemas_with_history()` of the installed onnx.
- onnxruntime contrib domains ("com.microsoft", "com.microsoft.nchwc",
  "com.ms.internal.nhwc"): the PyPI wheels of onnxruntime expose them through
  `onnxruntime.capi.onnxruntime_pybind11_state.get_all_operator_schema()` (checked with
  onnxruntime 1.32: 150 com.microsoft operators, all `since_version` 1). Those schema objects
  spell some fields differently (`typeStr`, `isHomogeneous`) and give attribute defaults as
  serialized `AttributeProto` bytes in `_default_value`.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Literal

import onnx
import onnx_ir as ir

from nsdl_jupyter.ops._categories import category_of
from nsdl_jupyter.ops._schema_info import (
    AttributeInfo,
    FormalParameter,
    OpSchemaInfo,
    ParameterOption,
)

_log = logging.getLogger(__name__)

Source = Literal["onnx", "onnxruntime"]

_OPTIONS: dict[str, ParameterOption] = {
    "Single": "single",
    "Optional": "optional",
    "Variadic": "variadic",
}
_PARAGRAPH_BREAK = re.compile(r"\n\s*\n")
_SPACES = re.compile(r"\s+")


@dataclass(frozen=True)
class RawSchema:
    """A schema object of onnx or onnxruntime, not yet converted."""

    name: str
    domain: str  # normalized: "" for ONNX
    since_version: int
    deprecated: bool
    source: Source
    schema: Any


def normalize_domain(domain: str) -> str:
    """``"ai.onnx"`` and ``""`` name the same domain; return ``""`` for both."""
    return "" if domain in ("", "ai.onnx") else domain


def onnx_raw_schemas() -> Iterator[RawSchema]:
    """Every version of every operator of the installed onnx."""
    for schema in onnx.defs.get_all_schemas_with_history():
        yield RawSchema(
            schema.name,
            normalize_domain(schema.domain),
            int(schema.since_version),
            bool(schema.deprecated),
            "onnx",
            schema,
        )


def onnxruntime_raw_schemas(skip_domains: frozenset[str]) -> Iterator[RawSchema]:
    """Schemas that onnxruntime adds (contrib domains); nothing if it cannot be imported."""
    try:
        from onnxruntime.capi import onnxruntime_pybind11_state as ort_state
    except ImportError as error:  # onnxruntime is a dependency; still, degrade gracefully
        _log.warning("onnxruntime contrib schemas unavailable: %s", error)
        return
    getter = getattr(ort_state, "get_all_operator_schema", None)
    if getter is None:
        _log.warning("this onnxruntime build does not expose get_all_operator_schema")
        return
    for schema in getter():
        domain = normalize_domain(schema.domain)
        if domain in skip_domains:
            continue
        yield RawSchema(
            schema.name,
            domain,
            int(schema.since_version),
            bool(schema.deprecated),
            "onnxruntime",
            schema,
        )


def first_paragraph(doc: str | None) -> str:
    """The first paragraph of a schema doc string, on one line."""
    if not doc:
        return ""
    paragraph = _PARAGRAPH_BREAK.split(doc.strip(), maxsplit=1)[0]
    return _SPACES.sub(" ", paragraph).strip()


def convert(raw: RawSchema) -> OpSchemaInfo:
    """Build the `OpSchemaInfo` of one raw schema."""
    schema = raw.schema
    ort = raw.source == "onnxruntime"
    attributes = {
        name: _attribute_info(name, attr, ort) for name, attr in schema.attributes.items()
    }
    has_function = False
    if not ort:
        has_function = bool(schema.has_function or schema.has_context_dependent_function)
    return OpSchemaInfo(
        name=raw.name,
        domain=raw.domain,
        since_version=raw.since_version,
        deprecated=raw.deprecated,
        doc=first_paragraph(schema.doc),
        category=category_of(raw.name, raw.domain, raw.source),
        attributes=MappingProxyType(attributes),
        inputs=tuple(_parameter(p, ort) for p in schema.inputs),
        outputs=tuple(_parameter(p, ort) for p in schema.outputs),
        min_input=int(schema.min_input),
        max_input=int(schema.max_input),
        min_output=int(schema.min_output),
        max_output=int(schema.max_output),
        type_constraints=MappingProxyType(
            {c.type_param_str: tuple(c.allowed_type_strs) for c in schema.type_constraints}
        ),
        has_function=has_function,
        source=raw.source,
    )


def _parameter(param: Any, ort: bool) -> FormalParameter:
    option = _OPTIONS[param.option.name]
    if ort:
        return FormalParameter(
            name=param.name,
            type_str=param.typeStr,
            option=option,
            is_homogeneous=bool(param.isHomogeneous),
            min_arity=1,  # not exposed by onnxruntime; 1 is the ONNX default
            description=param.description or "",
        )
    return FormalParameter(
        name=param.name,
        type_str=param.type_str,
        option=option,
        is_homogeneous=bool(param.is_homogeneous),
        min_arity=int(param.min_arity),
        description=param.description or "",
    )


def _attribute_info(name: str, attr: Any, ort: bool) -> AttributeInfo:
    attr_type = ir.AttributeType(int(attr.type.value))
    proto: onnx.AttributeProto
    if ort:
        data: bytes = attr._default_value  # the only spelling onnxruntime exposes
        proto = onnx.AttributeProto.FromString(data) if data else onnx.AttributeProto()
    else:
        proto = attr.default_value
    default = None
    if proto.type != onnx.AttributeProto.UNDEFINED:
        default = ir.serde.deserialize_attribute(proto)
        default.name = name
    return AttributeInfo(
        name=name,
        type=attr_type,
        required=bool(attr.required),
        default=default,
        description=first_paragraph(attr.description),
    )
