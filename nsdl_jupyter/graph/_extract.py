"""Extraction of an onnx_ir graph into flat tables: items (nodes + graph I/O), edges, tensors.

Items are numbered once and keep their number for the life of a view: a removed node leaves a
tombstone (``alive`` false) so that patches sent to the browser can address items by index.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cache, lru_cache
from typing import NamedTuple

import onnx
import onnx_ir as ir

from nsdl_jupyter._walk import graphs_in, subgraphs
from nsdl_jupyter.graph._skeleton import GraphSkeleton
from nsdl_jupyter.ops import is_custom_operator, parse_literal

# item flags (mirrored in js/src/graph_view/graph.ts)
CONSTANT = 1
GRAPH_INPUT = 2
GRAPH_OUTPUT = 4
HAS_SUBGRAPH = 8
FUNCTION_CALL = 16
OUTER_SCOPE = 32
CUSTOM_OP = 64  # an operator without a schema here (TensorRT plugin, vendor op)
PSEUDO = GRAPH_INPUT | GRAPH_OUTPUT | OUTER_SCOPE
# the op labels of those boxes: no operator has a schema by these names
PSEUDO_OPS = {GRAPH_INPUT: "Input", GRAPH_OUTPUT: "Output", OUTER_SCOPE: "Outer"}

# Limits on name scopes read from a model (untrusted): the hierarchy costs depth squared.
MAX_SCOPE_DEPTH = 64
MAX_SCOPE_TEXT = 16_384  # characters of a name_scopes / namespace metadata value

# edge flags
OPTIONAL_INPUT = 1
FROM_CONSTANT = 2
BODY_INPUT = 4  # a tensor the node's If/Loop/Scan body reads from the enclosing graph


@dataclass(slots=True)
class Item:
    """One box of the drawing: an ONNX node, or a pseudo node for a graph input/output."""

    name: str
    op: str
    flags: int
    scope: tuple[str, ...]
    key: str  # unique among items: the node name, or "input:x" / "output:y" for pseudo nodes
    alive: bool = True
    node: ir.Node | None = field(default=None, repr=False, compare=False)

    @property
    def is_node(self) -> bool:
        return not self.flags & PSEUDO


# rows made by the hundred thousand: named tuples are made 3x faster than frozen dataclasses
# and read column-wise at C speed (`zip(*table.edges)`)
class Edge(NamedTuple):
    src: int
    dst: int
    tensor: int
    flags: int = 0


class Tensor(NamedTuple):
    name: str
    dtype: str
    shape: str


@dataclass
class GraphTable:
    """Items, edges and tensors of one graph; initializer inputs as per-item stubs."""

    items: list[Item] = field(default_factory=list)
    edges: list[Edge] = field(default_factory=list)
    tensors: list[Tensor] = field(default_factory=list)
    tensor_index: dict[str, int] = field(default_factory=dict)
    by_key: dict[str, int] = field(default_factory=dict)
    # (item, tensor, input slot) for every input fed by an initializer
    initializer_inputs: list[tuple[int, int, int]] = field(default_factory=list)

    def index_of(self, node_name: str) -> int:
        return self.by_key[node_name]

    def node_names(self) -> Iterable[str]:
        return (it.name for it in self.items if it.alive and it.is_node)


def op_label(node: ir.Node) -> str:
    return op_text(node.op_type, node.domain)


def op_text(op_type: str, domain: str) -> str:
    """How a box names its operator: ``Conv``, ``com.microsoft::FusedMatMul``."""
    return op_type if domain in ("", "ai.onnx") else f"{domain}::{op_type}"


def scope_of(node: ir.Node) -> tuple[str, ...]:
    """The name scope of a node, outermost first, at most MAX_SCOPE_DEPTH levels.

    torch's dynamo exporter records it in metadata_props (``pkg.torch.onnx.name_scopes``, a
    list literal of module names, or ``namespace``); TorchScript exports put it in the node
    name (``/encoder/layer.3/attention/MatMul``); other exporters write ``blk17/Add``.
    A metadata value that is malformed or over the limits falls back to the next source.
    """
    props = node.metadata_props
    if props:
        scopes = _torch_name_scopes(props.get("pkg.torch.onnx.name_scopes", ""))
        if scopes:
            return _module_path(scopes, props.get("pkg.torch.onnx.class_hierarchy", ""))
        namespace = props.get("namespace", "")
        if namespace and len(namespace) <= MAX_SCOPE_TEXT:
            parts = tuple(
                p.split(":")[0].strip() for p in namespace.split("/") if p.split(":")[0].strip()
            )
            if len(parts) <= MAX_SCOPE_DEPTH:
                return parts
    name = node.name or ""
    if "/" in name:
        # a name is the node's identity, never dropped: deeper levels are only not drawn
        return tuple(p for p in name.split("/", MAX_SCOPE_DEPTH + 1)[:-1] if p)[:MAX_SCOPE_DEPTH]
    return ()


# Scope names the dynamo exporter invents (no module of the user's model): dropped.
_EXPORTER_ARTEFACTS = ("_empty_nn_module_stack_from_metadata_hook",)


def _module_path(scopes: tuple[str, ...], class_hierarchy: str) -> tuple[str, ...]:
    """The modules of a dynamo scope: its last entry names the aten op itself when the class
    hierarchy ends in an op (``aten.add.Tensor``), not a module; exporter artefacts go."""
    if class_hierarchy.endswith(("'aten.", "']")) and len(class_hierarchy) <= MAX_SCOPE_TEXT:
        last = class_hierarchy.rstrip("]'\" ").rsplit("'", 1)[-1]
        if last.startswith(("aten.", "prims.", "<built-in", "_operator.")):
            scopes = scopes[:-1]
    return tuple(s for s in scopes if s not in _EXPORTER_ARTEFACTS)


def _torch_name_scopes(text: str) -> tuple[str, ...]:
    """Scopes from dynamo's ``['', 'encoder', 'encoder.layer.0']``; () when absent or bad.

    The value is untrusted file content: it is read by the literal parser (linear time, nesting
    bounded) and only after a length check, never by ``ast.literal_eval``.
    """
    if not text or len(text) > MAX_SCOPE_TEXT:
        return ()
    try:
        parsed = parse_literal(text)
    except ValueError:  # LiteralSyntaxError, or int() refusing an absurd number of digits
        return ()
    if not isinstance(parsed, list):
        return ()
    entries = [s for s in parsed if isinstance(s, str)]
    if len(entries) != len(parsed):
        return ()
    parts: list[str] = []
    previous = ""
    for entry in entries:
        if not entry:
            continue
        # entries may be fully qualified ("encoder.layer.0"): keep the new suffix only
        qualified = previous and entry.startswith(previous + ".")
        part = entry[len(previous) + 1 :] if qualified else entry
        parts.append(part)
        previous = entry
    return tuple(parts) if len(parts) <= MAX_SCOPE_DEPTH else ()


def _common_prefix(scopes: list[tuple[str, ...]]) -> tuple[str, ...]:
    first = scopes[0]
    length = len(first)
    for scope in scopes[1:]:
        length = min(length, len(scope))
        while first[:length] != scope[:length]:
            length -= 1
    return first[:length]


def short_name(name: str) -> str:
    """The last path component: the scope is drawn by the group frame around the node."""
    tail = name.rsplit("/", 1)[-1]
    return tail or name


@lru_cache(maxsize=4096)
def _optional_slots(op_type: str, domain: str, opset: int) -> frozenset[int]:
    try:
        schema = onnx.defs.get_schema(op_type, opset, domain)
    except Exception:  # unknown or custom op: no schema, nothing is known to be optional
        return frozenset()
    optional = onnx.defs.OpSchema.FormalParameterOption.Optional
    return frozenset(i for i, p in enumerate(schema.inputs) if p.option == optional)


@cache
def _dtype_name(dtype: ir.DataType | None) -> str:
    return dtype.name.lower() if dtype is not None else ""


def _tensor_info(value: ir.Value) -> tuple[str, str]:
    shape = value.shape
    return _dtype_name(value.dtype), str(shape) if shape is not None else ""


def _has_subgraph(node: ir.Node) -> bool:
    if not node.attributes:
        return False
    return any(
        attr.type in (ir.AttributeType.GRAPH, ir.AttributeType.GRAPHS)
        for attr in node.attributes.values()
        if isinstance(attr, ir.Attr)
    )


def body_inputs(node: ir.Node) -> list[ir.Value]:
    """Tensors of the graphs around `node` that its bodies read (at any depth), in first-use
    order, leaving out those that are inputs of `node` itself: ONNX's implicit inputs."""
    inner = [g for body in subgraphs(node) for g in graphs_in(body)]
    own = {id(g) for g in inner}
    explicit = {id(v) for v in node.inputs if v is not None}
    found: dict[int, ir.Value] = {}
    for graph in inner:
        for body_node in graph:
            for value in body_node.inputs:
                if value is None or id(value) in explicit or id(value) in found:
                    continue
                if id(value.graph) not in own:
                    found[id(value)] = value
    return list(found.values())


class TableBuilder:
    """Builds and incrementally updates a GraphTable from an onnx_ir graph."""

    def __init__(
        self,
        graph: ir.Graph | ir.Function | GraphSkeleton,
        functions: Iterable[tuple[str, str, str]] = (),
    ):
        self.graph = graph
        self.functions = set(functions)
        opsets = graph.opset_imports if hasattr(graph, "opset_imports") else {}
        self.opsets: dict[str, int] = dict(opsets)
        self.table = GraphTable()
        self._building = False
        self._value_tensor: dict[int, int] = {}

    # ---------------------------------------------------------------------------- building
    def build(self) -> GraphTable:
        self._building = True
        try:
            return self._build()
        finally:
            self._building = False
            self._value_tensor.clear()

    def _build(self) -> GraphTable:
        table = self.table
        for value in self.graph.inputs:
            if not value.is_initializer():
                self._add_item(
                    value.name or "", PSEUDO_OPS[GRAPH_INPUT], GRAPH_INPUT, f"input:{value.name}"
                )
        nodes = list(self.graph)
        first = len(table.items)
        add_item = self.add_node_item
        for node in nodes:
            add_item(node)
        add_edges = self._add_input_edges
        for index, node in enumerate(nodes, first):  # items numbered in node order
            add_edges(node, index)
        for value in self.graph.outputs:
            self._add_output(value)
        self._adopt_helpers()
        return table

    def _is_helper(self, node: ir.Node, has_subgraph: bool) -> bool:
        """Constants, weight aliases (Identity of an initializer) and shape-only arithmetic:
        what the Constants toggle hides. A node is one when it reads nothing but
        initializers, other helpers and tensor shapes (Shape, Size)."""
        if node.domain not in ("", "ai.onnx"):
            return False
        if node.op_type in ("Constant", "Shape", "Size"):
            return True
        if not node.inputs or has_subgraph:
            return False
        table = self.table
        for value in node.inputs:
            if value is None or value.is_initializer() or value.const_value is not None:
                continue
            producer = value.producer()
            item = table.by_key.get(producer.name or "") if producer is not None else None
            if item is None or not table.items[item].flags & CONSTANT:
                return False
        return True

    def _adopt_helpers(self) -> None:
        """Give stray nodes the scope they belong to, so each level shows modules rather than
        hundreds of constants: a helper moves into the innermost scope holding all its
        consumers when that is deeper than its own (torch writes weight aliases unscoped and
        constants one level up); a top-level node whose producers and consumers all sit in one
        module moves into it (the dynamo exporter leaves some Splits at the top)."""
        items = self.table.items
        consumers: dict[int, list[int]] = {}
        producers: dict[int, list[int]] = {}
        for edge in self.table.edges:
            consumers.setdefault(edge.src, []).append(edge.dst)
            producers.setdefault(edge.dst, []).append(edge.src)
        for index in range(len(items) - 1, -1, -1):  # consumers first: chains move together
            item = items[index]
            if index not in consumers or not item.is_node:
                continue
            helper = bool(item.flags & CONSTANT)
            if not helper and item.scope:
                continue
            around = consumers[index] + ([] if helper else producers.get(index, []))
            scope = _common_prefix([items[i].scope for i in around])
            if len(scope) > len(item.scope) and scope[: len(item.scope)] == item.scope:
                item.scope = scope

    def _add_item(
        self,
        name: str,
        op: str,
        flags: int,
        key: str,
        *,
        scope: tuple[str, ...] = (),
        node: ir.Node | None = None,
    ) -> int:
        table = self.table
        index = len(table.items)
        table.items.append(Item(name, op, flags, scope, key, True, node))
        table.by_key[key] = index
        return index

    def add_node_item(self, node: ir.Node) -> int:
        op_type, domain = node.op_type, node.domain
        has_subgraph = bool(node.attributes) and _has_subgraph(node)
        flags = CONSTANT if self._is_helper(node, has_subgraph) else 0
        if has_subgraph:
            flags |= HAS_SUBGRAPH
        functions = self.functions
        if functions and (domain, op_type, node.overload) in functions:
            flags |= FUNCTION_CALL
        elif domain and is_custom_operator(domain, op_type, node.overload, functions):
            flags |= CUSTOM_OP  # ONNX's own domain is "" in onnx_ir: never custom
        name = node.name or ""
        op = op_text(op_type, domain)
        return self._add_item(name, op, flags, name, scope=scope_of(node), node=node)

    def tensor(self, value: ir.Value) -> int:
        if self._building:  # one value, one tensor row: skip the comparison below
            known = self._value_tensor.get(id(value))
            if known is not None:
                return known
        return self._new_tensor(value)

    def _new_tensor(self, value: ir.Value) -> int:
        table = self.table
        name = value.name or ""
        index = table.tensor_index.get(name)
        row = Tensor(name, *_tensor_info(value))
        if index is None or table.tensors[index] != row:
            index = len(table.tensors)
            table.tensors.append(row)
            table.tensor_index[name] = index
        if self._building:
            self._value_tensor[id(value)] = index
        return index

    def _source_of(self, value: ir.Value) -> int | None:
        """Item index producing `value`; None when it is an initializer (drawn as a stub)."""
        table = self.table
        producer = value.producer()
        if producer is not None:
            return table.by_key.get(producer.name or "")
        if value.is_initializer() or value.const_value is not None:
            return None
        key = f"input:{value.name}"
        if key not in table.by_key:  # a value of an enclosing graph, used inside a subgraph
            self._add_item(value.name or "", PSEUDO_OPS[OUTER_SCOPE], OUTER_SCOPE, key)
        return table.by_key[key]

    def _add_input_edges(self, node: ir.Node, dst: int | None = None) -> None:
        """The edges into `node` (item `dst`, looked up by name when not given)."""
        table = self.table
        items, edges = table.items, table.edges
        if dst is None:
            dst = table.by_key[node.name or ""]
        domain = node.domain
        optional = _optional_slots(node.op_type, domain, self.opsets.get(domain, 21))
        known = self._value_tensor  # while building: one tensor row per value
        for slot, value in enumerate(node.inputs):
            if value is None:
                continue
            tensor = known.get(id(value))
            if tensor is None:
                tensor = self._new_tensor(value)
            src = self._source_of(value)
            if src is None:
                table.initializer_inputs.append((dst, tensor, slot))
                continue
            flags = OPTIONAL_INPUT if slot in optional else 0
            if items[src].flags & CONSTANT:
                flags |= FROM_CONSTANT
            edges.append(Edge(src, dst, tensor, flags))
        if items[dst].flags & HAS_SUBGRAPH:
            for value in body_inputs(node):
                src = self._source_of(value)
                if src is not None:  # None: an initializer, no box to draw the edge from
                    edges.append(Edge(src, dst, self.tensor(value), self._body_flags(src)))

    def _add_output(self, value: ir.Value) -> None:
        dst = self._add_item(
            value.name or "", PSEUDO_OPS[GRAPH_OUTPUT], GRAPH_OUTPUT, f"output:{value.name}"
        )
        src = self._source_of(value)
        if src is not None:
            self.table.edges.append(Edge(src, dst, self.tensor(value)))

    def bind(self, graph: ir.Graph) -> None:
        """Point the items at `graph`, the onnx_ir graph of the skeleton they were read from
        (built before any edit, so every node still has its name)."""
        nodes = {node.name: node for node in graph}
        for item in self.table.items:
            if item.node is not None:
                item.node = nodes[item.key]
        self.graph = graph

    # ---------------------------------------------------------------------------- patching
    def refresh_edges(self, items: set[int]) -> None:
        """Recompute the incoming edges and initializer stubs of `items` and of the
        consumers of their outputs (edges touching `items` are dropped first)."""
        table = self.table
        table.edges = [e for e in table.edges if e.src not in items and e.dst not in items]
        table.initializer_inputs = [s for s in table.initializer_inputs if s[0] not in items]
        for index in sorted(items):
            item = table.items[index]
            if not item.alive:
                continue
            if item.flags & GRAPH_OUTPUT:
                value = next((v for v in self.graph.outputs if v.name == item.name), None)
                src = self._source_of(value) if value is not None else None
                if value is not None and src is not None:
                    table.edges.append(Edge(src, index, self.tensor(value)))
                continue
            node = item.node
            if node is None:
                continue
            self._add_input_edges(node)
            for output in node.outputs:
                for consumer, slot in output.uses():
                    dst = table.by_key.get(consumer.name or "")
                    if dst is None or dst in items or consumer.graph is not node.graph:
                        continue
                    optional = _optional_slots(
                        consumer.op_type, consumer.domain, self.opsets.get(consumer.domain, 21)
                    )
                    flags = OPTIONAL_INPUT if slot in optional else 0
                    if item.flags & CONSTANT:
                        flags |= FROM_CONSTANT
                    table.edges.append(Edge(index, dst, self.tensor(output), flags))
            for value in self.graph.outputs:
                if value.producer() is node:
                    dst = table.by_key.get(f"output:{value.name}")
                    if dst is not None and dst not in items:
                        table.edges.append(Edge(index, dst, self.tensor(value)))
        self._refresh_body_edges(items)

    def _refresh_body_edges(self, items: set[int]) -> None:
        """Edges from `items` into the control-flow nodes (outside `items`) whose bodies read
        their outputs; a scan of the item flags, bodies walked only for control-flow nodes."""
        table = self.table
        for dst, owner in enumerate(table.items):
            if dst in items or not owner.alive or owner.node is None:
                continue
            if not owner.flags & HAS_SUBGRAPH:
                continue
            for value in body_inputs(owner.node):
                src = self._source_of(value)
                if src is not None and src in items:
                    table.edges.append(Edge(src, dst, self.tensor(value), self._body_flags(src)))

    def _body_flags(self, src: int) -> int:
        return BODY_INPUT | (FROM_CONSTANT if self.table.items[src].flags & CONSTANT else 0)


def build_table(
    graph: ir.Graph | ir.Function | GraphSkeleton, functions: Iterable[tuple[str, str, str]] = ()
) -> TableBuilder:
    builder = TableBuilder(graph, functions)
    builder.build()
    return builder
