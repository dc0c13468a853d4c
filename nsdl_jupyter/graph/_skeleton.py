"""A graph read straight from its protobuf, shaped like onnx_ir's for the drawing's readers.

Opening a big file is mostly onnx_ir building its model (100,000 nodes: about 1.3 s of 1.4).
A view only reads names, operators, edges and declared types, so it draws from this skeleton
and builds nothing: `GraphScene` binds its items to the onnx_ir graph on first need (an edit, the
properties pane, shape inference), which the document builds then.

The skeleton answers exactly what onnx_ir's deserializer would (same names, domains, producers,
initializers, declared types; `tests/test_graph_skeleton.py` compares the tables of both). It
refuses (`of` returns None) what it does not model: graph attributes (If, Loop and Scan bodies),
nodes without a unique name, a tensor produced twice; the caller then builds the model.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from functools import lru_cache
from types import MappingProxyType
from typing import Any, NamedTuple, cast

import onnx
import onnx_ir as ir

from nsdl_jupyter._gc import gc_paused

_GRAPH_ATTRIBUTES = (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)
_NO_PROPS: Mapping[str, str] = MappingProxyType({})
_NO_ATTRIBUTES: Mapping[str, Any] = MappingProxyType({})


class _Constant(NamedTuple):
    """What the readers ask of an initializer's tensor: its shape."""

    shape: ir.Shape


class SkeletonValue:
    """A tensor: its name, declared type and shape, producer and whether it is a weight."""

    __slots__ = ("_initializer", "_producer", "const_value", "dtype", "name", "shape")

    def __init__(self, name: str, producer: SkeletonNode | None = None) -> None:
        self.name = name
        self.dtype: ir.DataType | None = None
        self.shape: ir.Shape | None = None
        self.const_value: _Constant | None = None
        self._producer = producer
        self._initializer = False

    def producer(self) -> SkeletonNode | None:
        return self._producer

    def is_initializer(self) -> bool:
        return self._initializer


class SkeletonNode:
    """A node as the table builder reads it (no attributes: the skeleton has no bodies)."""

    __slots__ = ("domain", "inputs", "metadata_props", "name", "op_type", "outputs", "overload")

    attributes = _NO_ATTRIBUTES

    def __init__(self, proto: onnx.NodeProto) -> None:
        self.name = proto.name
        self.op_type = proto.op_type
        domain = proto.domain
        self.domain = "" if domain == "ai.onnx" else domain  # as onnx_ir normalizes it
        self.overload = proto.overload
        self.inputs: list[SkeletonValue | None] = []
        self.outputs: list[SkeletonValue] = []
        props = proto.metadata_props
        self.metadata_props = {p.key: p.value for p in props} if props else _NO_PROPS


class GraphSkeleton:
    """The main graph of a ModelProto, read-only, for drawing before onnx_ir builds it.

    `build` returns the onnx_ir graph the skeleton stands for (the document builds it then).
    """

    def __init__(
        self,
        model: onnx.ModelProto,
        nodes: list[SkeletonNode],
        inputs: list[SkeletonValue],
        outputs: list[SkeletonValue],
        build: Callable[[], ir.Graph],
    ) -> None:
        self.model = model
        self._nodes = nodes
        self.inputs = cast("list[ir.Value]", inputs)
        self.outputs = cast("list[ir.Value]", outputs)
        self.opset_imports = ir.serde.deserialize_opset_import(model.opset_import)
        self.function_keys = [(f.domain, f.name, f.overload) for f in model.functions]
        self.build = build

    # the table builder reads skeleton nodes and values through onnx_ir's names: typed as
    # those so that one builder serves both
    def __iter__(self) -> Iterator[ir.Node]:
        return iter(cast("list[ir.Node]", self._nodes))

    def __len__(self) -> int:
        return len(self._nodes)

    @classmethod
    def of(cls, model: onnx.ModelProto, build: Callable[[], ir.Graph]) -> GraphSkeleton | None:
        """The skeleton of `model`'s main graph; None where it would differ from onnx_ir's."""
        try:
            with gc_paused():  # an object per node and tensor, all long-lived
                return cls._read(model, build)
        except (ValueError, ir.serde.SerdeError):  # a type onnx_ir cannot read: it says so
            return None  # when it builds the model

    @classmethod
    def _read(cls, model: onnx.ModelProto, build: Callable[[], ir.Graph]) -> GraphSkeleton | None:
        graph = model.graph
        protos = graph.node
        names = [node.name for node in protos]
        if "" in names or len(set(names)) != len(names):
            return None  # the document names such nodes when it builds the model
        types = {info.name: info.type for info in graph.value_info}
        values: dict[str, SkeletonValue] = {}

        def named(name: str) -> SkeletonValue:
            """The value of `name` in this graph; made (typed by value_info) on first sight."""
            found = values.get(name)
            if found is None:
                found = values[name] = SkeletonValue(name)
                if name in types:
                    _declare(found, types[name])
            return found

        inputs = []
        for info in graph.input:
            value = values[info.name] = SkeletonValue(info.name)
            _declare(value, info.type)
            inputs.append(value)
        for tensor in graph.initializer:
            if not tensor.name:
                continue  # onnx_ir skips an unnamed initializer
            dims = tuple(tensor.dims)
            weight = values.get(tensor.name)
            if weight is None:  # typed by its tensor, then by value_info (onnx_ir reads both)
                weight = values[tensor.name] = SkeletonValue(tensor.name)
                weight.dtype, weight.shape = _tensor_type(tensor.data_type, dims)
                if tensor.name in types:
                    _declare(weight, types[tensor.name])
            weight.const_value = _Constant(_shape(dims))
            weight._initializer = True
        nodes = []
        for proto in protos:  # every output first, as onnx_ir declares them
            for attribute in proto.attribute:
                if attribute.type in _GRAPH_ATTRIBUTES:
                    return None
            node = SkeletonNode(proto)
            outs = node.outputs
            for name in proto.output:
                if not name:
                    outs.append(SkeletonValue("", node))
                elif name in values:
                    return None  # onnx_ir refuses a tensor declared twice
                else:
                    value = values[name] = SkeletonValue(name, node)
                    if name in types:
                        _declare(value, types[name])
                    outs.append(value)
            nodes.append(node)
        get = values.get
        for proto, node in zip(protos, nodes, strict=True):
            # a name nothing produces gets a value of its own, as in onnx_ir
            node.inputs = [(get(n) or named(n)) if n else None for n in proto.input]
        outputs = []
        for info in graph.output:
            value = values.get(info.name) or SkeletonValue(info.name)
            _declare(value, info.type)
            outputs.append(value)
        return cls(model, nodes, inputs, outputs, build)


def _declare(value: SkeletonValue, declared: onnx.TypeProto) -> None:
    """The type a ValueInfo declares, as onnx_ir reads it (it replaces any earlier one)."""
    value.dtype, value.shape = _declared(declared.SerializeToString())


@lru_cache(maxsize=4096)  # a model declares few distinct types: read each once
def _declared(serialized: bytes) -> tuple[ir.DataType | None, ir.Shape | None]:
    info = onnx.ValueInfoProto(name="t")
    info.type.ParseFromString(serialized)
    read = ir.serde.deserialize_value_info_proto(info, None)
    return read.dtype, read.shape


@lru_cache(maxsize=4096)
def _tensor_type(data_type: int, dims: tuple[int, ...]) -> tuple[ir.DataType, ir.Shape]:
    return ir.DataType(data_type), _shape(dims)


@lru_cache(maxsize=4096)
def _shape(dims: tuple[int, ...]) -> ir.Shape:
    return ir.Shape(dims)
