"""The main graph as `node_work` reads it: nodes (names, tensors, attributes), the inputs, the
weights' types and the stated types of every value, and the weightless model for shape
inference.

A file or an onnx.ModelProto is read straight from the protobuf: building onnx_ir from it and
serializing it back for inference cost 4-6 s on a 20,000-node model, for work that needs
only names, attributes and types. An onnx_ir model (a ModelDocument's) is read as it is.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import onnx
import onnx_ir as ir

from nsdl_jupyter._weightless import model_proto, weightless_model
from nsdl_jupyter.document import read_model_proto
from nsdl_jupyter.profiling._model_source import model_source

# A stated dim: a size, a named dim ('batch'), or None (unnamed or unknown).
StatedDims = tuple[int | str | None, ...]


@dataclass(frozen=True)
class Value:
    """A value's stated element type and dims (None: not stated)."""

    name: str
    dtype: ir.DataType | None
    dims: StatedDims | None


class NodeFacts:
    """One node: its names, the tensors it reads (None: an optional input left out) and
    writes, and its attributes (onnx_ir's or protobuf's, read through the methods)."""

    __slots__ = ("_attributes", "domain", "inputs", "name", "op_type", "outputs")

    def __init__(  # noqa: PLR0917 - the fields of one node
        self,
        name: str,
        op_type: str,
        domain: str,
        inputs: list[str | None],
        outputs: list[str],
        attributes: Mapping[str, ir.Attr] | Sequence[onnx.AttributeProto],
    ) -> None:
        self.name = name
        self.op_type = op_type
        self.domain = domain
        self.inputs = inputs
        self.outputs = outputs
        self._attributes = attributes

    def _attribute(self, name: str) -> Any:
        """The attribute `name` or None; protobuf's are searched when asked (most nodes are
        never asked, and a dict per node cost a third of reading the graph)."""
        if isinstance(self._attributes, Mapping):
            return self._attributes.get(name)
        return next((a for a in self._attributes if a.name == name), None)

    def attr_int(self, name: str, default: int) -> int:
        attr = self._attribute(name)
        if attr is None:
            return default
        return int(attr.i if isinstance(attr, onnx.AttributeProto) else attr.as_int())

    def attr_ints(self, name: str) -> list[int]:
        attr = self._attribute(name)
        if attr is None:
            return []
        values = attr.ints if isinstance(attr, onnx.AttributeProto) else attr.as_ints()
        return [int(v) for v in values]

    def attr_float(self, name: str, default: float) -> float:
        attr = self._attribute(name)
        if attr is None:
            return default
        return float(attr.f if isinstance(attr, onnx.AttributeProto) else attr.as_float())

    def attr_string(self, name: str, default: str | None = None) -> str | None:
        """The string attribute `name`, else `default`."""
        attr = self._attribute(name)
        if attr is None:
            return default
        if isinstance(attr, onnx.AttributeProto):
            return attr.s.decode("utf-8", errors="replace")
        return str(attr.as_string())

    def constant_type(self) -> tuple[ir.DataType, tuple[int, ...]] | None:
        """A Constant node's tensor value: its element type and dims (None for other kinds)."""
        values = (
            self._attributes.values() if isinstance(self._attributes, Mapping) else self._attributes
        )
        attr = next(iter(values), None)
        if isinstance(attr, onnx.AttributeProto):
            if attr.type != onnx.AttributeProto.TENSOR:
                return None
            return ir.DataType(attr.t.data_type), tuple(int(d) for d in attr.t.dims)
        if attr is None or attr.type != ir.AttributeType.TENSOR:
            return None
        tensor = attr.as_tensor()
        return tensor.dtype, tuple(int(d) for d in tensor.shape.numpy())


@dataclass
class GraphFacts:
    """What `node_work` reads of a model's main graph."""

    nodes: list[NodeFacts]
    inputs: list[Value]  # the graph inputs that are not initializers
    initializers: dict[str, tuple[ir.DataType, tuple[int, ...]]]
    outputs: list[str]
    stated: dict[str, Value]  # node outputs: their type as the model states it
    functions: set[tuple[str, str]]  # (domain, name) of the model's local functions
    weightless: Callable[[], onnx.ModelProto]  # the model for shape inference


def graph_facts(model: Any) -> GraphFacts:
    """Read `model` (a path, an onnx.ModelProto, an onnx_ir.Model or a ModelDocument)."""
    if isinstance(model, (str, os.PathLike)):
        path = Path(model).expanduser().resolve()
        if not path.is_file():
            raise FileNotFoundError(f"no model file at {path}")
        return _from_proto(read_model_proto(path))
    if isinstance(model, onnx.ModelProto):
        return _from_proto(model)
    return _from_ir(model_source(model).model)


def _from_proto(model: onnx.ModelProto) -> GraphFacts:
    graph = model.graph
    initializers = {t.name: (ir.DataType(t.data_type), tuple(t.dims)) for t in graph.initializer}
    nodes = [
        NodeFacts(
            node.name, node.op_type, node.domain, [name or None for name in node.input],
            list(node.output), node.attribute,
        )
        for node in graph.node
    ]  # fmt: skip
    typed = {info.name: info for info in [*graph.value_info, *graph.output]}
    stated = {
        name: _proto_value(typed[name]) if name in typed else Value(name, None, None)
        for node in nodes
        for name in node.outputs
        if name
    }
    return GraphFacts(
        nodes,
        [_proto_value(i) for i in graph.input if i.name not in initializers],
        initializers,
        [o.name for o in graph.output],
        stated,
        {(f.domain, f.name) for f in model.functions},
        lambda: weightless_model(model),
    )


def _proto_value(info: onnx.ValueInfoProto) -> Value:
    if not info.type.HasField("tensor_type"):
        return Value(info.name, None, None)
    tensor = info.type.tensor_type
    dtype = ir.DataType(tensor.elem_type) if tensor.elem_type else None
    if not tensor.HasField("shape"):
        return Value(info.name, dtype, None)
    dims: list[int | str | None] = []
    for dim in tensor.shape.dim:
        kind = dim.WhichOneof("value")
        dims.append(dim.dim_value if kind == "dim_value" else dim.dim_param or None)
    return Value(info.name, dtype, tuple(dims))


def _from_ir(model: ir.Model) -> GraphFacts:
    graph = model.graph
    initializers = {}
    for name, value in graph.initializers.items():
        tensor = value.const_value
        if tensor is not None:
            initializers[name] = (tensor.dtype, tuple(int(d) for d in tensor.shape.numpy()))
    nodes = []
    stated: dict[str, Value] = {}
    for node in graph:
        outputs = [v.name or "" for v in node.outputs]
        nodes.append(NodeFacts(
            node.name or "", node.op_type, node.domain,
            [None if v is None else v.name or "" for v in node.inputs], outputs,
            node.attributes,
        ))  # fmt: skip
        for value in node.outputs:
            if value.name:
                stated[value.name] = _ir_value(value)
    return GraphFacts(
        nodes,
        [_ir_value(v) for v in graph.inputs if not v.is_initializer()],
        initializers,
        [v.name or "" for v in graph.outputs],
        stated,
        {(f.domain, f.name) for f in model.functions.values()},
        lambda: model_proto(model),
    )


def _ir_value(value: ir.Value) -> Value:
    if value.shape is None:
        return Value(value.name or "", value.dtype, None)
    dims = tuple(
        d if isinstance(d, int) else d.value if isinstance(d, ir.SymbolicDim) else None
        for d in value.shape
    )
    return Value(value.name or "", value.dtype, dims)
