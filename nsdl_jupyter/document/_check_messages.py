"""The ONNX checker's messages about one node, said in the operator's own words.

The checker counts inputs by position and quotes its C++ ("Node (/If)'s input 0 is marked
single but has an empty string in the graph"); the type check says which input or attribute
of the schema is meant and what to do ("If: input `cond` is not connected: connect a bool
tensor"). A message not recognised here is kept as the checker wrote it.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import onnx_ir as ir

from nsdl_jupyter.ops import OpSchemaInfo, UnknownOperatorError, get_schema

_EMPTY_SINGLE = re.compile(r"'s (input|output) (\d+) is marked single but has an empty string")
_ARITY = re.compile(r"has (input|output) size (\d+) not in range \[min=(\d+), max=(\d+)\]")
_REQUIRED = re.compile(r"Required attribute '([^']+)' is missing")
_UNKNOWN_ATTRIBUTE = re.compile(r"Unrecognized attribute: (\S+) for operator")
_ATTRIBUTE_TYPE = re.compile(r"Mismatched attribute type in '.* : ([^']+)'")
_MAX_TYPES = 4  # allowed types named in a hint; more are "a tensor of type T"
_ATTRIBUTE_TYPES = {
    ir.AttributeType.FLOAT: "a float",
    ir.AttributeType.INT: "an int",
    ir.AttributeType.STRING: "a string",
    ir.AttributeType.TENSOR: "a tensor",
    ir.AttributeType.GRAPH: "a graph",
    ir.AttributeType.FLOATS: "a list of floats",
    ir.AttributeType.INTS: "a list of ints",
    ir.AttributeType.STRINGS: "a list of strings",
}


def explain(op_type: str, domain: str, opset: int, message: str) -> str:
    """`message` (the checker's, about a node `op_type` of `domain` at `opset`) naming the
    schema's input or attribute and the fix; `message` itself when not understood."""
    try:
        schema = get_schema(op_type, domain, opset, allow_deprecated=True)
    except UnknownOperatorError:
        return message
    for pattern, say in _SAYINGS:
        found = pattern.search(message)
        if found:
            return say(schema, found) or message
    return message


def _empty_single(schema: OpSchemaInfo, found: re.Match[str]) -> str:
    kind, index = found[1], int(found[2])
    formal = schema.inputs if kind == "input" else schema.outputs
    if not formal:
        return ""
    parameter = formal[min(index, len(formal) - 1)]
    if kind == "output":
        return f"{schema.name}: output `{parameter.name}` has no name: give it one"
    return (
        f"{schema.name}: input `{parameter.name}` is not connected: connect "
        f"{_type_hint(schema, parameter.type_str, parameter.name)}"
    )


def _arity(schema: OpSchemaInfo, found: re.Match[str]) -> str:
    kind, count, low, high = found[1], int(found[2]), int(found[3]), int(found[4])
    formal = schema.inputs if kind == "input" else schema.outputs
    names = ", ".join(f"`{p.name}`" for p in formal)
    if count < low and count < len(formal):
        parameter = formal[count]
        if kind == "input":
            return (
                f"{schema.name}: input `{parameter.name}` is not connected: connect "
                f"{_type_hint(schema, parameter.type_str, parameter.name)}"
            )
        return f"{schema.name}: output `{parameter.name}` is missing: add it"
    fix = f"remove {count - high}" if count > high else f"add {low - count}"
    return f"{schema.name}: takes {low} to {high} {kind}s ({names}), this node has {count}: {fix}"


def _required(schema: OpSchemaInfo, found: re.Match[str]) -> str:
    name = found[1]
    info = schema.attributes.get(name)
    what = _ATTRIBUTE_TYPES.get(info.type, "a value") if info is not None else "a value"
    return f"{schema.name}: attribute `{name}` is required: set it to {what}"


def _unknown_attribute(schema: OpSchemaInfo, found: re.Match[str]) -> str:
    known = ", ".join(f"`{n}`" for n in schema.attributes) or "none"
    return (
        f"{schema.name}: has no attribute `{found[1]}` (opset {schema.since_version}): remove "
        f"it; its attributes are {known}"
    )


def _attribute_type(schema: OpSchemaInfo, found: re.Match[str]) -> str:
    name = found[1].strip()
    info = schema.attributes.get(name)
    if info is None:
        return ""
    what = _ATTRIBUTE_TYPES.get(info.type, info.type.name.lower())
    return f"{schema.name}: attribute `{name}` must be {what}: set it again as {what}"


def _type_hint(schema: OpSchemaInfo, type_str: str, name: str = "") -> str:
    """'a bool tensor', 'a float, float16 or double tensor', 'a tensor of the same type as
    `A`', 'a tensor of type T (float, ...)'."""
    allowed = schema.type_constraints.get(type_str, (type_str,))
    plain = [t[len("tensor(") : -1] for t in allowed if t.startswith("tensor(")]
    if plain and len(plain) == len(allowed) and len(plain) <= _MAX_TYPES:
        listed = plain[0] if len(plain) == 1 else ", ".join(plain[:-1]) + f" or {plain[-1]}"
        return f"a {listed} tensor"
    like = next((p.name for p in schema.inputs if p.type_str == type_str and p.name != name), "")
    if like:
        return f"a tensor of the same type as `{like}`"
    if type_str in schema.type_constraints:
        return f"a tensor of type {type_str} ({', '.join(plain[:3] or allowed[:3])}, ...)"
    return "a tensor"


_SAYINGS: tuple[tuple[re.Pattern[str], Callable[[OpSchemaInfo, re.Match[str]], str]], ...] = (
    (_EMPTY_SINGLE, _empty_single),
    (_ARITY, _arity),
    (_REQUIRED, _required),
    (_UNKNOWN_ATTRIBUTE, _unknown_attribute),
    (_ATTRIBUTE_TYPE, _attribute_type),
)
