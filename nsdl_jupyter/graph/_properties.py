"""What a properties pane says about one node, tensor or group box of a GraphScene.

Computed on request, one click at a time, from the scene's tables: an item's node, its own
inputs and outputs, a tensor's producer and uses, a group's members (counted once per
topology). Nothing here walks the whole model per click, so a 50,000-node model answers as
fast as a small one. Weights are summarised (dtype, shape, a few values); min/max/mean of a
float initializer come from a separate request, so a click never waits on a large tensor.

Here rather than in widgets/: it reads only graph data (GraphScene, onnx_ir), so the Designer
and a static export can use it as GraphView does; the answers are TypedDicts that the widget
protocol (widgets/_messages.py) declares as they are.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterator, Mapping
from typing import TypedDict

import numpy as np
import onnx_ir as ir

from nsdl_jupyter.graph._errors import GraphDataError
from nsdl_jupyter.graph._extract import (
    GRAPH_INPUT,
    GRAPH_OUTPUT,
    PSEUDO,
    body_inputs,
    op_label,
)
from nsdl_jupyter.graph._hierarchy import is_group_ref
from nsdl_jupyter.graph._scene import GraphScene
from nsdl_jupyter.graph._shapes import dtype_text, shape_text
from nsdl_jupyter.ops import (
    OpSchemaInfo,
    UnknownDomainError,
    UnknownOperatorError,
    attribute_to_python,
    get_schema,
)

FIRST_VALUES = 6  # values of an initializer shown in its summary
MAX_CONSUMERS = 50  # consumers named for one tensor; the rest are counted
MAX_TEXT = 240  # characters of an attribute value before it is cut
MAX_INFER_NODES = 5_000  # larger graphs show the types they declare (dynamo exports: all)
_FLOATS = frozenset(
    {
        ir.DataType.FLOAT,
        ir.DataType.FLOAT16,
        ir.DataType.BFLOAT16,
        ir.DataType.DOUBLE,
    }
)


class PropertiesLookupError(GraphDataError, LookupError):
    """A request names an item, tensor or group the view no longer has."""


# ---------------------------------------------------------------------- answers
class Attribute(TypedDict):
    name: str
    type: str  # "int", "floats", "tensor", "graph" ...
    value: str  # display text, tensors and graphs summarised


class Initializer(TypedDict):
    name: str
    dtype: str
    shape: str
    size: int  # elements
    values: str  # the first few values, "…" when there are more
    stats: bool  # min/max/mean can be asked for (a float tensor)


class Port(TypedDict):
    slot: str  # the schema's name of the input/output ("X", "B"), else its position
    name: str  # the tensor; "" for an omitted optional input
    dtype: str  # "" when unknown
    shape: str  # "1x128x768" with the multiplication sign, "scalar"; "" when unknown
    source: str  # inputs: producing node, "graph input", "initializer"; outputs: ""
    initializer: Initializer | None


class NodeProperties(TypedDict):
    item: int
    name: str
    op_type: str
    domain: str  # "" for the default ONNX domain
    op: str  # as the box says it ("Conv", "com.microsoft::FusedMatMul")
    scope: str  # "/encoder/layer.0/attention" ("" at the top)
    doc: str
    attributes: list[Attribute]
    inputs: list[Port]
    outputs: list[Port]
    body_inputs: list[Port]  # tensors its If/Loop/Scan bodies read from the enclosing graph


class TensorProperties(TypedDict):
    name: str
    dtype: str
    shape: str
    producer: str  # node name; "" for a graph input or an initializer
    producer_op: str
    consumers: list[str]  # the first MAX_CONSUMERS node names
    more_consumers: int  # consumers not named
    graph_input: bool
    graph_output: bool
    initializer: Initializer | None


class OpCount(TypedDict):
    op: str
    count: int


class GroupProperties(TypedDict):
    group: int
    key: str  # the path ("/encoder/layer.0"; range groups "/encoder#2")
    label: str
    nodes: int  # nodes inside, at any depth (graph inputs/outputs not counted)
    ops: list[OpCount]  # op histogram, most frequent first
    synthetic: bool  # a range of siblings, not a name scope of the model


class TensorStats(TypedDict):
    name: str
    min: float | None  # over the finite values; None when there is none
    max: float | None
    mean: float | None
    nonfinite: int  # NaN and infinite values


# ---------------------------------------------------------------------- text
def declared_type(value: ir.Value) -> tuple[str, str]:
    """(dtype, shape) as the model states them (value_info, graph I/O, initializers)."""
    tensor = value.const_value
    dtype = value.dtype if value.dtype is not None else tensor.dtype if tensor else None
    shape = value.shape if value.shape is not None else tensor.shape if tensor else None
    return dtype_text(dtype), shape_text(shape)


def _number(v: object) -> str:
    if isinstance(v, (float, np.floating)):
        return f"{float(v):.4g}"
    if isinstance(v, bytes):
        return repr(v.decode("utf-8", errors="replace"))
    if isinstance(v, str):
        return repr(v)
    return str(v)


def _cut(text: str) -> str:
    return text if len(text) <= MAX_TEXT else text[: MAX_TEXT - 1] + "\u2026"


def _first_values(tensor: ir.TensorProtocol) -> str:
    """The first FIRST_VALUES values of a tensor (reads no more than those of a mapped file)."""
    size = math.prod(tensor.shape.numpy())
    if size == 0:
        return "(empty)"
    try:
        flat = np.asarray(tensor.numpy()).reshape(-1)[:FIRST_VALUES]
    except Exception as error:  # missing external data: say so, do not fail
        return f"(data unreadable: {type(error).__name__})"
    text = ", ".join(_number(v) for v in flat.tolist())
    return text + (", \u2026" if size > FIRST_VALUES else "")


def initializer_summary(name: str, tensor: ir.TensorProtocol) -> Initializer:
    return {
        "name": name,
        "dtype": dtype_text(tensor.dtype),
        "shape": shape_text(tensor.shape),
        "size": int(math.prod(tensor.shape.numpy())),
        "values": _first_values(tensor),
        "stats": tensor.dtype in _FLOATS,
    }


def attribute_text(attr: ir.Attr) -> str:
    """An attribute value for reading: lists and strings as written, tensors and graphs
    summarised, long values cut."""
    kind = attr.type
    if attr.is_ref():
        return f"@{attr.ref_attr_name} (the calling node's attribute)"
    if kind == ir.AttributeType.TENSOR:
        tensor = attr.as_tensor()
        summary = initializer_summary("", tensor)
        return _cut(f"{summary['dtype']} {summary['shape']}: {summary['values']}")
    if kind == ir.AttributeType.TENSORS:
        return f"{len(attr.as_tensors())} tensors"
    if kind == ir.AttributeType.GRAPH:
        graph = attr.as_graph()
        return f"graph {graph.name or ''} ({len(graph)} nodes)".replace("  ", " ")
    if kind == ir.AttributeType.GRAPHS:
        return f"{len(attr.as_graphs())} graphs"
    value = attribute_to_python(attr)
    if isinstance(value, list):
        return _cut("[" + ", ".join(_number(v) for v in value) + "]")
    return _cut(_number(value) if not isinstance(value, str) else value)


# ---------------------------------------------------------------------- the pane's data
class Properties:
    """Answers for one scene; `invalidate()` after an edit forgets what was counted."""

    def __init__(self, scene: GraphScene) -> None:
        self.scene = scene
        self._group_ops: dict[int, Counter[str]] = {}
        self._stats: dict[str, TensorStats] = {}

    def invalidate(self) -> None:
        """Forget what was counted (after an edit). Types need no call: the scene's shared
        inference is marked stale by the edit it patches or rebuilds."""
        self._group_ops.clear()
        self._stats.clear()

    def type_of(self, value: ir.Value) -> tuple[str, str]:
        """(dtype, shape) as the model declares them, else from shape inference (shared with
        the drawing; run on the first value whose type the model does not state)."""
        dtype, shape = declared_type(value)
        if dtype and shape:
            return dtype, shape
        found = self._inferred().get(value.name or "")
        return (dtype or found[0], shape or found[1]) if found else (dtype, shape)

    def _inferred(self) -> Mapping[str, tuple[str, str]]:
        """The scene's shared inference, brought up to date. Over MAX_INFER_NODES a click does
        not wait for it (measured: 7.6 s for 50,000 nodes, mostly serialization; 0.45 s for
        BERT-base): it shows what the drawing inferred, if that is still fresh."""
        types = self.scene.types
        if len(self.scene.graph) > MAX_INFER_NODES and types.stale:
            return {}
        return types.fresh()

    # ------------------------------------------------------------------ node
    def node(self, item: int) -> NodeProperties:
        node = self._node(item)
        schema = self._schema(node)
        in_names = [p.name for p in schema.inputs] if schema else []
        out_names = [p.name for p in schema.outputs] if schema else []
        scope = self.scene.hierarchy.groups[self.scene.hierarchy.item_group[item]].key
        return {
            "item": item,
            "name": node.name or "",
            "op_type": node.op_type,
            "domain": node.domain,
            "op": op_label(node),
            "scope": scope if self.scene.hierarchy.item_group[item] > 0 else "",
            "doc": node.doc_string or "",
            "attributes": [
                {"name": name, "type": attr.type.name.lower(), "value": attribute_text(attr)}
                for name, attr in node.attributes.items()
            ],
            "inputs": [
                self._port(_slot(in_names, k), value, output=False)
                for k, value in enumerate(node.inputs)
            ],
            "outputs": [
                self._port(_slot(out_names, k), value, output=True)
                for k, value in enumerate(node.outputs)
            ],
            "body_inputs": [self._port("", value, output=False) for value in _body_inputs(node)],
        }

    def _node(self, item: int) -> ir.Node:
        items = self.scene.bound_table().items
        if not 0 <= item < len(items) or not items[item].alive:
            raise PropertiesLookupError(f"no item {item} in this view: redraw it")
        node = items[item].node
        if node is None or items[item].flags & PSEUDO:
            raise PropertiesLookupError(
                f"item {item} ({items[item].key}) is a graph input/output: ask for its tensor"
            )
        return node

    def _schema(self, node: ir.Node) -> OpSchemaInfo | None:
        opsets = self.scene.builder.opsets
        try:
            return get_schema(
                node.op_type, node.domain, opsets.get(node.domain) or None, allow_deprecated=True
            )
        except (UnknownOperatorError, UnknownDomainError):
            return None

    def _port(self, slot: str, value: ir.Value | None, *, output: bool) -> Port:
        if value is None:
            return {
                "slot": slot, "name": "", "dtype": "", "shape": "", "source": "(omitted)",
                "initializer": None,
            }  # fmt: skip
        dtype, shape = self.type_of(value)
        return {
            "slot": slot,
            "name": value.name or "",
            "dtype": dtype,
            "shape": shape,
            "source": "" if output else _source(value),
            "initializer": _initializer(value),
        }

    # ------------------------------------------------------------------ tensor
    def tensor(self, tensor: int, item: int) -> TensorProperties:
        """The tensor `tensor` (an index of the scene's tensor table) at item `item`, one end
        of an edge carrying it (or a graph input/output box, with `tensor` -1)."""
        value = self._value(tensor, item)
        dtype, shape = self.type_of(value)
        producer = value.producer()
        consumers = [node.name or "" for node, _slot in _uses(value)]
        graph = self.scene.graph
        return {
            "name": value.name or "",
            "dtype": dtype,
            "shape": shape,
            "producer": (producer.name or "") if producer is not None else "",
            "producer_op": op_label(producer) if producer is not None else "",
            "consumers": consumers[:MAX_CONSUMERS],
            "more_consumers": max(0, len(consumers) - MAX_CONSUMERS),
            "graph_input": value.is_graph_input() and value.graph is graph,
            "graph_output": value.is_graph_output() and value.graph is graph,
            "initializer": _initializer(value),
        }

    def _value(self, tensor: int, item: int) -> ir.Value:
        table = self.scene.table
        items = table.items
        if not 0 <= item < len(items) or not items[item].alive:
            raise PropertiesLookupError(f"no item {item} in this view: redraw it")
        at = items[item]
        if tensor < 0:
            name = at.name
        elif tensor < len(table.tensors):
            name = table.tensors[tensor].name
        else:
            raise PropertiesLookupError(f"no tensor {tensor} in this view: redraw it")
        graph = self.scene.graph
        if at.flags & GRAPH_INPUT:
            candidates: list[ir.Value | None] = list(graph.inputs)
        elif at.flags & GRAPH_OUTPUT:
            candidates = list(graph.outputs)
        elif at.node is not None:
            node = at.node
            candidates = [*node.inputs, *node.outputs, *_body_inputs(node)]
        else:  # a tensor of an enclosing graph: read through the edges that carry it
            candidates = [
                value
                for e in table.edges
                if e.src == item and (user := items[e.dst].node) is not None
                for value in (*user.inputs, *_body_inputs(user))
            ]
        found = next((v for v in candidates if v is not None and v.name == name), None)
        if found is None:
            raise PropertiesLookupError(f"{at.key} has no tensor {name!r}: redraw the view")
        return found

    # ------------------------------------------------------------------ group
    def group(self, group: int) -> GroupProperties:
        groups = self.scene.hierarchy.groups
        if not 0 <= group < len(groups):
            raise PropertiesLookupError(f"no group {group} in this view: redraw it")
        ops = self._group_ops.get(group)
        if ops is None:
            items = self.scene.table.items
            ops = Counter(
                items[i].op for i in self._members(group) if items[i].alive and items[i].is_node
            )
            self._group_ops[group] = ops
        g = groups[group]
        return {
            "group": group,
            "key": g.key or "/",
            "label": g.label or "(model)",
            "nodes": sum(ops.values()),
            "ops": [{"op": op, "count": n} for op, n in ops.most_common()],
            "synthetic": g.synthetic,
        }

    def _members(self, group: int) -> Iterator[int]:
        groups = self.scene.hierarchy.groups
        stack = [group]
        while stack:
            for ref in groups[stack.pop()].children:
                if is_group_ref(ref):
                    stack.append(~ref)
                else:
                    yield ref

    # ------------------------------------------------------------------ statistics
    def stats(self, name: str) -> TensorStats:
        """min/max/mean of the float initializer `name` (read once, then remembered)."""
        known = self._stats.get(name)
        if known is not None:
            return known
        graph = self.scene.graph
        value = graph.initializers.get(name) if isinstance(graph, ir.Graph) else None
        tensor = value.const_value if value is not None else None
        if tensor is None:
            raise PropertiesLookupError(f"no initializer {name!r} in this graph")
        if tensor.dtype not in _FLOATS:
            raise PropertiesLookupError(
                f"{name!r} is {dtype_text(tensor.dtype)}: statistics are for float tensors"
            )
        array = np.asarray(tensor.numpy()).reshape(-1)
        finite = np.isfinite(array)
        count = int(finite.sum())
        kept = array if count == array.size else array[finite]
        stats: TensorStats = {
            "name": name,
            "min": float(kept.min()) if count else None,
            "max": float(kept.max()) if count else None,
            "mean": float(kept.mean(dtype=np.float64)) if count else None,
            "nonfinite": int(array.size - count),
        }
        self._stats[name] = stats
        return stats


def _slot(names: list[str], k: int) -> str:
    if k < len(names):
        return names[k]
    return f"{names[-1]}[{k - len(names) + 1}]" if names else str(k)


def _source(value: ir.Value) -> str:
    producer = value.producer()
    if producer is not None:
        return producer.name or op_label(producer)
    if value.is_initializer():
        return "initializer"
    if value.is_graph_input():
        return "graph input"
    return "enclosing graph"


def _initializer(value: ir.Value) -> Initializer | None:
    tensor = value.const_value
    if tensor is None or not value.is_initializer():
        return None
    return initializer_summary(value.name or "", tensor)


def _body_inputs(node: ir.Node) -> list[ir.Value]:
    return body_inputs(node) if node.attributes else []


def _uses(value: ir.Value) -> list[tuple[ir.Node, int]]:
    return [(use.node, use.idx) for use in value.uses()]
