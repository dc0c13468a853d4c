"""Exact peephole simplifications for sanitize: nodes that compute nothing go away.

Each rule leaves every output bit-identical (up to the sign of a zero for `x + 0`): Identity,
Dropout at inference, Casts to the type a tensor already has, reshapes/expands/slices/tiles
whose result has the input's static shape, pads of zero, single-input Concat, Transposes that
cancel, chains of reshapes that collapse into one (Unsqueeze/Squeeze chains by their axes),
Reshapes around elementwise ops, Casts through a type that holds every value, `x*1`, `x/1`,
`x+0`, `x-0`, `x and True` (on dynamic shapes too: broadcasting is checked by rank and
dims), `Relu(Relu(x))` and other idempotent pairs, `Neg(Neg(x))`, If nodes with a constant
condition (the taken branch is inlined), common subexpressions (small constants compared by
content) and q/k/v MatMuls of one input (one MatMul and a Split: the same dot products).
Rewrites that change rounding (merging `(x*a)*b` into `x*(a*b)`, fusing BatchNormalization
into Conv) are not done. A graph output keeps its name: the tensor that replaces it is
renamed.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection
from dataclasses import dataclass, field

import numpy as np
import onnx_ir as ir

from nsdl_jupyter._tensor_bytes import tensor_bytes
from nsdl_jupyter._walk import has_subgraphs, subgraphs

_RESHAPES = frozenset({"Reshape", "Squeeze", "Unsqueeze", "Flatten"})
# Same static shape in and out means the identity for these (given the extra checks below).
_SHAPE_NOOPS = frozenset({"Expand", "Reshape", "Squeeze", "Unsqueeze", "Flatten", "Tile"})


def _static(value: ir.Value | None) -> tuple[int, ...] | None:
    if value is None or value.shape is None:
        return None
    dims = [dim for dim in value.shape if isinstance(dim, int)]
    if len(dims) != len(value.shape):
        return None
    return tuple(dims)


def _dtype(value: ir.Value | None) -> ir.DataType | None:
    if value is None:
        return None
    if isinstance(value.type, ir.TensorType):
        return value.type.dtype
    return None


def _constant(value: ir.Value | None) -> np.ndarray | None:
    tensor = _constant_tensor(value)
    return None if tensor is None else tensor.numpy()


def _constant_tensor(value: ir.Value | None) -> ir.TensorProtocol | None:
    """The constant behind `value`, unread: its shape and dtype cost nothing, its values
    a copy of its bytes (check those first on weights)."""
    if value is None or value.const_value is None or value.is_graph_input():
        return None
    if value.producer() is not None:
        return None
    return value.const_value


def _constant_shape(value: ir.Value | None) -> tuple[int, ...] | None:
    tensor = _constant_tensor(value)
    return None if tensor is None else tuple(tensor.shape.numpy())


def _around(values: Collection[ir.Value]) -> set[ir.Node]:
    """The producers and users of `values`, and theirs: every node a rule reading those
    values' types can be applied to (a rule looks at its node's inputs, outputs and their
    producers and users)."""
    nodes: set[ir.Node] = set()
    frontier = set(values)
    for _ in range(2):
        reached: set[ir.Node] = set()
        for value in frontier:
            producer = value.producer()
            if producer is not None:
                reached.add(producer)
            reached.update(user for user, _ in value.uses())
        nodes |= reached
        frontier = {v for node in reached for v in (*node.inputs, *node.outputs) if v is not None}
    return nodes


def _standard(node: ir.Node) -> bool:
    return node.domain in ("", "ai.onnx")


@dataclass
class Simplifier:
    """Applies the rules to a graph and its subgraphs until none applies."""

    removed: dict[str, int] = field(default_factory=dict)

    def run(self, graph: ir.Graph, near: Collection[ir.Value] | None = None) -> int:
        """How many rules applied. `near`: the graph is as the last run left it but for the
        types and shapes of these values: only the rules of nodes within two hops of them
        could apply now (and duplicates are found by inputs and attributes, not shapes), so
        the whole graph is swept only once one of those applies."""
        total = 0 if near is None else self._sweep(graph, _around(near))
        if near is not None and not total:
            return 0
        deduplicated: int | None = None  # what the last search for duplicates found
        while True:
            swept = self._sweep(graph)
            if not swept and deduplicated == 0:
                return total  # that search saw this very graph: it would find none again
            deduplicated = self._deduplicate(graph)
            total += swept + deduplicated
            if not swept and not deduplicated:
                return total

    def _deduplicate(self, graph: ir.Graph) -> int:
        """Common subexpressions: a node identical to an earlier one (same operator,
        inputs and attributes) reuses its outputs. Small constants count as the same input
        when their contents are (TorchScript gives each Unsqueeze its own `axes` tensor)."""
        seen: dict[tuple[object, ...], ir.Node] = {}
        contents = _ConstantKeys()
        count = 0
        for node in list(graph):
            for subgraph in subgraphs(node):
                count += self._deduplicate(subgraph)
            key = _node_key(node, contents)
            if key is None:
                continue
            earlier = seen.get(key)
            if earlier is None:
                seen[key] = node
                continue
            if any(out.is_graph_output() for out in node.outputs):
                continue
            for out, kept in zip(node.outputs, earlier.outputs, strict=True):
                out.replace_all_uses_with(kept)
            graph.remove(node, safe=True)
            self.removed["duplicate " + node.op_type] = (
                self.removed.get("duplicate " + node.op_type, 0) + 1
            )
            count += 1
        return count

    def _sweep(self, graph: ir.Graph, only: set[ir.Node] | None = None) -> int:
        count = 0
        for node in list(graph):
            if node.graph is not graph:
                continue  # removed by an earlier rule in this sweep
            for subgraph in subgraphs(node):
                count += self._sweep(subgraph, only)
            if not _standard(node) or (only is not None and node not in only):
                continue
            rule = _RULES.get(node.op_type)
            if rule is not None and rule(self, graph, node):
                self.removed[node.op_type] = self.removed.get(node.op_type, 0) + 1
                count += 1
        return count

    # ------------------------------------------------------------ mechanics
    def bypass(self, graph: ir.Graph, node: ir.Node, source: ir.Value | None) -> bool:
        """Let `node`'s single used output be `source`; remove `node`."""
        if source is None:
            return False
        result = node.outputs[0]
        if any(out.uses() or out.is_graph_output() for out in node.outputs[1:]):
            return False
        known = _dtype(result) is not None and _dtype(source) is not None
        if known and _dtype(result) != _dtype(source):
            return False
        if result.is_graph_output():
            if not _can_take_name(graph, source):
                return False
            public = result.name
            result.name = f"{public}__bypassed"
            source.name = public
            if result.shape is not None:
                source.shape = result.shape
            result.replace_all_uses_with(source, replace_graph_outputs=True)
        else:
            result.replace_all_uses_with(source)
        graph.remove(node, safe=True)
        return True

    def replace(self, graph: ir.Graph, old: ir.Node, new: ir.Node) -> bool:
        """Put `new` in place of `old`; `new`'s outputs take over names and uses."""
        graph.insert_before(old, new)
        for before, after in zip(old.outputs, new.outputs, strict=True):
            public = before.name
            before.name = f"{public}__replaced"
            after.name = public
            after.type = before.type
            after.shape = before.shape
            before.replace_all_uses_with(after, replace_graph_outputs=True)
        graph.remove(old, safe=True)
        return True


def new_initializer(graph: ir.Graph, stem: str, array: np.ndarray) -> ir.Value:
    """`array` as a new initializer of `graph`, named `stem` (with `_`s added until unique)."""
    name = stem
    while name in graph.initializers:
        name += "_"
    tensor = ir.Tensor(array, name=name)
    value = ir.Value(
        name=name,
        type=ir.TensorType(tensor.dtype),
        shape=ir.Shape(tensor.shape.numpy()),
        const_value=tensor,
    )
    graph.register_initializer(value)
    return value


# Never folded or merged: their value changes from run to run.
NONDETERMINISTIC = frozenset(
    {
        "RandomNormal",
        "RandomNormalLike",
        "RandomUniform",
        "RandomUniformLike",
        "Bernoulli",
        "Multinomial",
        "Dropout",  # in training mode it is random; inference mode is folded by removal
    }
)


_SAME_CONTENT_BYTES = 4096  # constants up to this size are compared by content


class _ConstantKeys:
    """What identifies a node input for CSE: its contents for a small constant, else itself."""

    def __init__(self) -> None:
        self._keys: dict[ir.Value, object] = {}

    def __call__(self, value: ir.Value | None) -> object:
        if value is None:
            return None
        key = self._keys.get(value)
        if key is None:
            tensor = value.const_value
            key = id(value)
            if (
                tensor is not None
                and value.producer() is None
                and not value.is_graph_input()
                and tensor_bytes(tensor) <= _SAME_CONTENT_BYTES
            ):
                # strings have no raw bytes: their contents are the key
                contents: object = (
                    tuple(tensor.numpy().reshape(-1).tolist())
                    if tensor.dtype == ir.DataType.STRING
                    else tensor.tobytes()
                )
                key = ("constant", tensor.dtype, tuple(tensor.shape.numpy()), contents)
            self._keys[value] = key
        return key


def _node_key(
    node: ir.Node, input_key: Callable[[ir.Value | None], object]
) -> tuple[object, ...] | None:
    if node.op_type in NONDETERMINISTIC or not node.outputs:
        return None
    attributes: list[tuple[str, object]] = []
    if has_subgraphs(node):
        return None
    for name, attr in sorted(node.attributes.items()):
        value: object = attr.value
        if attr.type == ir.AttributeType.TENSOR:
            array = attr.as_tensor().numpy()
            value = (array.shape, str(array.dtype), array.tobytes())
        elif isinstance(value, list | tuple):
            value = tuple(value)
        elif not isinstance(value, int | float | str | bytes):
            return None
        attributes.append((name, value))
    inputs = tuple(input_key(v) for v in node.inputs)
    return (node.op_identifier(), len(node.outputs), inputs, tuple(attributes))


def _can_take_name(graph: ir.Graph, source: ir.Value) -> bool:
    """A tensor can be renamed to a graph output's name when this graph produces it alone."""
    producer = source.producer()
    return (
        producer is not None
        and producer.graph is graph
        and not source.is_graph_output()
        and not source.is_graph_input()
    )


# ------------------------------------------------------------------ rules
def _identity(s: Simplifier, graph: ir.Graph, node: ir.Node) -> bool:
    return s.bypass(graph, node, node.inputs[0] if node.inputs else None)


def _dropout(s: Simplifier, graph: ir.Graph, node: ir.Node) -> bool:
    training = node.inputs[2] if len(node.inputs) > 2 else None
    if training is not None:
        flag = _constant(training)
        if flag is None or bool(flag.reshape(-1)[0]):
            return False
    if "is_test" in node.attributes and not node.attributes["is_test"].as_int():
        return False
    return s.bypass(graph, node, node.inputs[0])


def _cast(s: Simplifier, graph: ir.Graph, node: ir.Node) -> bool:
    source = node.inputs[0]
    to = node.attributes.get("to")
    dtype = _dtype(source)
    if to is None or dtype is None:
        return False
    if int(dtype) == to.as_int():
        return s.bypass(graph, node, source)
    return _cast_of_widening(graph, node)


_D = ir.DataType
# (from, to) where `to` holds every value of `from` exactly: Cast(Cast(x, to), B) == Cast(x, B).
_WIDENING = frozenset(
    {
        (_D.BOOL, t)
        for t in (
            _D.UINT8,
            _D.INT8,
            _D.INT16,
            _D.INT32,
            _D.INT64,
            _D.FLOAT16,
            _D.BFLOAT16,
            _D.FLOAT,
            _D.DOUBLE,
        )
    }
    | {
        (_D.UINT8, t)
        for t in (
            _D.INT16,
            _D.UINT16,
            _D.INT32,
            _D.UINT32,
            _D.INT64,
            _D.UINT64,
            _D.FLOAT16,
            _D.BFLOAT16,
            _D.FLOAT,
            _D.DOUBLE,
        )
    }
    | {
        (_D.INT8, t)
        for t in (_D.INT16, _D.INT32, _D.INT64, _D.FLOAT16, _D.BFLOAT16, _D.FLOAT, _D.DOUBLE)
    }
    | {(_D.UINT16, t) for t in (_D.INT32, _D.UINT32, _D.INT64, _D.UINT64, _D.FLOAT, _D.DOUBLE)}
    | {(_D.INT16, t) for t in (_D.INT32, _D.INT64, _D.FLOAT, _D.DOUBLE)}
    | {(_D.UINT32, t) for t in (_D.INT64, _D.UINT64, _D.DOUBLE)}
    | {(_D.INT32, _D.INT64), (_D.INT32, _D.DOUBLE)}
    | {(_D.FLOAT16, _D.FLOAT), (_D.FLOAT16, _D.DOUBLE), (_D.BFLOAT16, _D.FLOAT)}
    | {(_D.BFLOAT16, _D.DOUBLE), (_D.FLOAT, _D.DOUBLE)}
)
_PLAIN = frozenset(t for pair in _WIDENING for t in pair)


def _cast_of_widening(graph: ir.Graph, node: ir.Node) -> bool:
    """Cast(Cast(x, A), B) -> Cast(x, B) when A holds every value of x's type exactly."""
    inner = _single_use_producer(graph, node, frozenset({"Cast"}))
    if inner is None or inner.attributes.keys() != {"to"} or node.attributes.keys() != {"to"}:
        return False
    source = inner.inputs[0]
    start, middle = _dtype(source), _dtype(inner.outputs[0])
    end = _dtype(node.outputs[0])
    if start is None or middle is None or end not in _PLAIN or (start, middle) not in _WIDENING:
        return False
    node.replace_input_with(0, source)
    return _drop(graph, inner)


def _cast_like(s: Simplifier, graph: ir.Graph, node: ir.Node) -> bool:
    source, like = node.inputs[0], node.inputs[1]
    if _dtype(source) is None or _dtype(source) != _dtype(like):
        return False
    return s.bypass(graph, node, source)


def _same_shape(s: Simplifier, graph: ir.Graph, node: ir.Node) -> bool:
    source = node.inputs[0]
    shape_in, shape_out = _static(source), _static(node.outputs[0])
    if shape_in is None or shape_in != shape_out:
        return False
    return s.bypass(graph, node, source)


def _reshape_like(s: Simplifier, graph: ir.Graph, node: ir.Node) -> bool:
    return (
        _same_shape(s, graph, node)
        or _reshape_to_itself(s, graph, node)
        or _reshape_around_elementwise(s, graph, node)
        or _merge_axes(s, graph, node)
        or _reshape_of_reshape(graph, node)
        or _collapse_chain(s, graph, node)
    )


_AXES_OPS = frozenset({"Squeeze", "Unsqueeze"})


def _single_use_producer(
    graph: ir.Graph, node: ir.Node, ops: frozenset[str], users: frozenset[str] = frozenset()
) -> ir.Node | None:
    """The node making `node`'s first input, if it is one of `ops` and feeds nothing else
    (or only nodes of `users`, each of which will merge it in turn)."""
    source = node.inputs[0] if node.inputs else None
    inner = source.producer() if source is not None else None
    if inner is None or inner.graph is not graph or not _standard(inner):
        return None
    if inner.op_type not in ops or inner.inputs[0] is None:
        return None
    middle = inner.outputs[0]
    if middle.is_graph_output() or any(
        user is not node and not (user.op_type in users and _standard(user))
        for user, _ in middle.uses()
    ):
        return None
    return inner


def _axes(node: ir.Node) -> list[int] | None:
    """Constant axes of Squeeze/Unsqueeze (attribute before opset 13, input after)."""
    if "axes" in node.attributes:
        return list(node.attributes["axes"].as_ints())
    array = _constant(node.inputs[1]) if len(node.inputs) > 1 else None
    return None if array is None else [int(a) for a in array.reshape(-1)]


def _normalized(axes: list[int], rank: int) -> list[int] | None:
    out = sorted(a + rank if a < 0 else a for a in axes)
    if len(set(out)) != len(out) or any(not 0 <= a < rank for a in out):
        return None
    return out


def _merge_axes(s: Simplifier, graph: ir.Graph, node: ir.Node) -> bool:
    """Unsqueeze(Unsqueeze(x)) and Squeeze(Squeeze(x)) -> one node with both axes; an
    Unsqueeze undone by a Squeeze of the same axes (or the reverse) -> x. Needs x's rank,
    not its dims, so it works on dynamic shapes."""
    if node.op_type not in ("Squeeze", "Unsqueeze"):
        return False
    inner = _single_use_producer(graph, node, _AXES_OPS, users=_AXES_OPS)
    source = inner.inputs[0] if inner is not None else None
    if inner is None or source is None or source.shape is None:
        return False
    outer_axes, inner_axes = _axes(node), _axes(inner)
    if outer_axes is None or inner_axes is None:
        return False
    rank = len(source.shape)
    grow = inner.op_type == "Unsqueeze"
    middle_rank = rank + len(inner_axes) if grow else rank - len(inner_axes)
    first = _normalized(inner_axes, middle_rank if grow else rank)
    final_rank = middle_rank + len(outer_axes) * (1 if node.op_type == "Unsqueeze" else -1)
    second = _normalized(outer_axes, final_rank if node.op_type == "Unsqueeze" else middle_rank)
    if first is None or second is None:
        return False
    if node.op_type != inner.op_type:  # the second undoes the first, or nothing
        if first != second:
            return False
        return s.bypass(graph, node, source) and _drop(graph, inner)
    if grow:  # where the first node's new dims land after the second's
        kept = iter(i in first for i in range(middle_rank))
        marks = [i in second or next(kept) for i in range(final_rank)]
        combined = [i for i, new in enumerate(marks) if new]
    else:  # the second's axes count only the dims the first kept
        left = [i for i in range(rank) if i not in first]
        combined = sorted(first + [left[j] for j in second])
    merged = _like(s, graph, node, source, combined)
    s.replace(graph, node, merged)
    return _drop(graph, inner)


def _like(
    s: Simplifier, graph: ir.Graph, node: ir.Node, source: ir.Value, axes: list[int]
) -> ir.Node:
    """A node of `node`'s kind on `source` with these axes, given as `node` gives them."""
    if "axes" in node.attributes:
        return ir.Node(
            node.domain,
            node.op_type,
            [source],
            attributes=[ir.AttrInt64s("axes", axes)],
            name=node.name,
            version=node.version,
        )
    constant = new_initializer(graph, f"{node.name}_axes", np.array(axes, dtype=np.int64))
    return ir.Node(
        node.domain, node.op_type, [source, constant], name=node.name, version=node.version
    )


def _reshape_to_itself(s: Simplifier, graph: ir.Graph, node: ir.Node) -> bool:
    """Reshape(x, t) with a constant t that keeps every dim of x where it is: 0 (copy, when
    allowzero is off), the same static size, or one -1 standing for the only dim left."""
    if node.op_type != "Reshape" or len(node.inputs) < 2 or node.inputs[0] is None:
        return False
    target, shape = _constant(node.inputs[1]), node.inputs[0].shape
    if target is None or shape is None or target.ndim != 1 or len(target) != len(shape):
        return False
    allowzero = node.attributes.get("allowzero")
    copies = allowzero is None or not allowzero.as_int()
    open_dims = [
        i
        for i, (t, dim) in enumerate(zip(target.tolist(), shape, strict=True))
        if not ((t == 0 and copies) or (isinstance(dim, int) and t == dim))
    ]
    if open_dims and (len(open_dims) > 1 or target[open_dims[0]] != -1):
        return False
    return s.bypass(graph, node, node.inputs[0])


# Ops whose every output element depends only on the input elements at the same place.
_ELEMENTWISE = frozenset(
    {
        *("Abs", "Neg", "Relu", "Sigmoid", "Tanh", "Erf", "Exp", "Log", "Sqrt", "Reciprocal"),
        *("Floor", "Ceil", "Round", "Sign", "Sin", "Cos", "Softplus", "LeakyRelu", "Elu"),
        *("Selu", "HardSigmoid", "HardSwish", "Gelu", "Cast", "IsNaN", "IsInf", "Not"),
        *("Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "And", "Or", "Xor", "Where"),
        *("Equal", "Greater", "Less", "GreaterOrEqual", "LessOrEqual", "Mod"),
    }
)
_REGION_LIMIT = 64


def _reshape_around_elementwise(s: Simplifier, graph: ir.Graph, node: ir.Node) -> bool:
    """Reshape -> elementwise ops (with one-element constants) -> Reshapes back to the
    first input's shape: the ops run on the input as it is, both reshapes go (GPT-2's GELU
    between its [batch*seq, n] Gemms)."""
    if node.op_type != "Reshape" or node.inputs[0] is None:
        return False
    source, start = node.inputs[0], node.outputs[0]
    if source.shape is None or start.shape is None or start.is_graph_output():
        return False
    rank = min(len(source.shape), len(start.shape))
    region: dict[ir.Node, None] = {}
    values, exits, queue = {start}, [], [start]
    while queue:
        for user, _ in queue.pop().uses():
            if user in region or user in exits:
                continue
            if user.op_type == "Reshape" and _standard(user) and user.inputs[0] in values:
                if not _same_dims(user.outputs[0].shape, source.shape):
                    return False
                exits.append(user)
                continue
            if user.op_type not in _ELEMENTWISE or not _standard(user) or user.graph is not graph:
                return False
            if any(out.is_graph_output() for out in user.outputs) or len(region) >= _REGION_LIMIT:
                return False
            region[user] = None
            values.update(user.outputs)
            queue.extend(user.outputs)
    if not exits:
        return False
    for user in region:  # every other operand is one element, broadcast to any shape
        for value in user.inputs:
            if value not in values:
                shape = _constant_shape(value)
                if shape is None or math.prod(shape) != 1 or len(shape) > rank:
                    return False
    for user in list(region):
        for index, value in enumerate(user.inputs):
            if value is start:
                user.replace_input_with(index, source)
        for out in user.outputs:
            out.shape = source.shape.copy() if out.shape is not None else None
    for exit_node in exits:
        s.bypass(graph, exit_node, exit_node.inputs[0])
    return _drop(graph, node)


def _same_dims(a: ir.Shape | None, b: ir.Shape | None) -> bool:
    """Provably the same shape: equal sizes or the same named dims."""
    if a is None or b is None or len(a) != len(b):
        return False
    for x, y in zip(a, b, strict=True):
        if isinstance(x, int) or isinstance(y, int):
            if x != y:
                return False
        elif x.value is None or x.value != y.value:
            return False
    return True


def _reshape_of_reshape(graph: ir.Graph, node: ir.Node) -> bool:
    """Reshape(reshape(x), s) -> Reshape(x, s) when s is constant without 0 entries (a 0
    would copy a dim of the middle tensor): the result depends only on x's element count."""
    if node.op_type != "Reshape" or len(node.inputs) < 2:
        return False
    target = _constant(node.inputs[1])
    if target is None or (target == 0).any():
        return False
    inner = _single_use_producer(graph, node, _RESHAPES)
    if inner is None:
        return False
    node.replace_input_with(0, inner.inputs[0])
    return _drop(graph, inner)


def _collapse_chain(s: Simplifier, graph: ir.Graph, node: ir.Node) -> bool:
    """reshape(reshape(x)) -> one Reshape to the final static shape."""
    inner = node.inputs[0].producer() if node.inputs[0] is not None else None
    if inner is None or inner.graph is not graph or not _standard(inner):
        return False
    if inner.op_type not in _RESHAPES:
        return False
    middle = inner.outputs[0]
    if middle.is_graph_output() or any(user is not node for user, _ in middle.uses()):
        return False
    final = _static(node.outputs[0])
    source = inner.inputs[0]
    if final is None or source is None:
        return False
    if _static(source) == final:  # the chain is the identity: bypass both
        return s.bypass(graph, node, source) and _drop(graph, inner)
    shape = new_initializer(graph, f"{node.name}_shape", np.array(final, dtype=np.int64))
    merged = ir.Node(
        "",
        "Reshape",
        [source, shape],
        num_outputs=1,
        name=node.name,
    )
    s.replace(graph, node, merged)
    return _drop(graph, inner)


def _drop(graph: ir.Graph, node: ir.Node) -> bool:
    if all(not out.uses() and not out.is_graph_output() for out in node.outputs):
        graph.remove(node, safe=True)
    return True


def _slice(s: Simplifier, graph: ir.Graph, node: ir.Node) -> bool:
    steps = node.inputs[4] if len(node.inputs) > 4 else None
    if steps is not None:
        array = _constant(steps)
        if array is None or (array <= 0).any():
            return False
    return _same_shape(s, graph, node)


def _pad(s: Simplifier, graph: ir.Graph, node: ir.Node) -> bool:
    if "pads" in node.attributes:
        pads = np.array(node.attributes["pads"].as_ints())
    else:
        array = _constant(node.inputs[1]) if len(node.inputs) > 1 else None
        if array is None:
            return False
        pads = array
    if pads.any():
        return False
    return s.bypass(graph, node, node.inputs[0])


def _concat(s: Simplifier, graph: ir.Graph, node: ir.Node) -> bool:
    if len(node.inputs) != 1:
        return False
    return s.bypass(graph, node, node.inputs[0])


def _split(s: Simplifier, graph: ir.Graph, node: ir.Node) -> bool:
    if len(node.outputs) != 1:
        return False
    return _same_shape(s, graph, node)


def _transpose(s: Simplifier, graph: ir.Graph, node: ir.Node) -> bool:
    perm_attr = node.attributes.get("perm")
    if perm_attr is None:
        return False
    perm = list(perm_attr.as_ints())
    if perm == list(range(len(perm))):
        return s.bypass(graph, node, node.inputs[0])
    inner = node.inputs[0].producer() if node.inputs[0] is not None else None
    if inner is None or inner.graph is not graph or inner.op_type != "Transpose":
        return False
    inner_perm_attr = inner.attributes.get("perm")
    middle = inner.outputs[0]
    if inner_perm_attr is None or middle.is_graph_output():
        return False
    if any(user is not node for user, _ in middle.uses()):
        return False
    inner_perm = list(inner_perm_attr.as_ints())
    combined = [inner_perm[axis] for axis in perm]
    node.replace_input_with(0, inner.inputs[0])
    node.attributes["perm"] = ir.AttrInt64s("perm", combined)
    _drop(graph, inner)
    if combined == list(range(len(combined))):
        s.bypass(graph, node, node.inputs[0])
    return True


def _neutral(value: float, commutative: bool) -> Callable[[Simplifier, ir.Graph, ir.Node], bool]:
    """x op c -> x when c is all `value` and broadcasting changes neither shape nor type.

    Works on dynamic shapes: c must not add dimensions and each of its dims must be 1 or the
    same as x's (HF exports add zero biases to [batch, sequence, hidden] tensors). `x + 0`
    turns -0.0 into +0.0, so bypassing it keeps a -0.0 the original would not: accepted, as
    onnxsim and onnxslim do (equal under ==; only 1/x or atan2 of an exact -0.0 would see it).
    """

    def rule(s: Simplifier, graph: ir.Graph, node: ir.Node) -> bool:
        if len(node.inputs) != 2:
            return False
        orders = [(0, 1), (1, 0)] if commutative else [(0, 1)]
        for x_index, c_index in orders:
            x, shape = node.inputs[x_index], _constant_shape(node.inputs[c_index])
            if shape is None or x is None or not _broadcasts_into(shape, x.shape):
                continue
            if _dtype(x) is None or _dtype(x) != _dtype(node.outputs[0]):
                continue
            array = _constant(node.inputs[c_index])
            if array is None or array.size == 0 or not (array == value).all():
                continue
            return s.bypass(graph, node, x)
        return False

    return rule


def _broadcasts_into(small: tuple[int, ...], shape: ir.Shape | None) -> bool:
    """Broadcasting `small` against `shape` leaves `shape` as it is."""
    if shape is None or len(small) > len(shape):
        return False
    for dim, target in zip(reversed(small), reversed(list(shape)), strict=False):
        if dim not in (1, target):
            return False
    return True


# f(f(x)) = f(x); and Relu(Abs(x)) = Abs(x): the outer node is redundant.
_IDEMPOTENT = frozenset({"Relu", "Abs", "Floor", "Ceil", "Round", "Sign"})
_NONNEGATIVE = frozenset({"Abs", "Relu"})
# f(f(x)) = x
_INVOLUTIONS = frozenset({"Neg", "Not"})


def _inner(graph: ir.Graph, node: ir.Node) -> ir.Node | None:
    source = node.inputs[0] if node.inputs else None
    producer = source.producer() if source is not None else None
    if producer is None or producer.graph is not graph or not _standard(producer):
        return None
    if producer.attributes or node.attributes or len(producer.inputs) != 1:
        return None
    return producer


def _idempotent(s: Simplifier, graph: ir.Graph, node: ir.Node) -> bool:
    inner = _inner(graph, node)
    if inner is None:
        return False
    if inner.op_type == node.op_type or (node.op_type == "Relu" and inner.op_type in _NONNEGATIVE):
        return s.bypass(graph, node, inner.outputs[0])
    return False


def _involution(s: Simplifier, graph: ir.Graph, node: ir.Node) -> bool:
    inner = _inner(graph, node)
    if inner is None or inner.op_type != node.op_type:
        return False
    if s.bypass(graph, node, inner.inputs[0]):
        _drop(graph, inner)
        return True
    return False


def _if(s: Simplifier, graph: ir.Graph, node: ir.Node) -> bool:
    condition = _constant(node.inputs[0])
    if condition is None or condition.size != 1:
        return False
    branch = node.attributes["then_branch" if bool(condition.reshape(-1)[0]) else "else_branch"]
    body = branch.as_graph()
    if len(body.outputs) != len(node.outputs):
        return False
    results = list(body.outputs)
    body.outputs.clear()  # a branch may output an initializer: release it first
    taken = {v.name for v in graph.initializers.values()}
    for name, value in list(body.initializers.items()):
        del body.initializers[name]
        if name in taken:
            value.name = f"{name}_inlined"
        graph.register_initializer(value)
    for inner in list(body):
        body.remove(inner)
        graph.insert_before(node, inner)
    for branch_result, out in zip(results, node.outputs, strict=True):
        result = branch_result
        if out.is_graph_output():
            if not _can_take_name(graph, result):
                identity = ir.Node("", "Identity", [result], num_outputs=1)
                graph.insert_before(node, identity)
                result = identity.outputs[0]
            public = out.name
            out.name = f"{public}__if"
            result.name = public
            result.type = out.type or result.type
            result.shape = out.shape or result.shape
        out.replace_all_uses_with(result, replace_graph_outputs=True)
    graph.remove(node, safe=True)
    return True


def _fuse_sibling_matmuls(s: Simplifier, graph: ir.Graph, node: ir.Node) -> bool:
    """Three or more MatMuls of one input by constant [K, n_i] weights (attention's q, k, v
    projections without bias) -> one MatMul by the weights side by side, and a Split. Each
    output element is the same dot product; onnxsim does the same."""
    source = node.inputs[0]
    if source is None or _matmul_weight(node) is None:
        return False
    siblings = [
        user
        for user, index in source.uses()
        if index == 0
        and user.op_type == "MatMul"
        and _standard(user)
        and user.graph is graph
        and not user.outputs[0].is_graph_output()
        and _matmul_weight(user) is not None
    ]
    weights = [_matmul_weight(user) for user in siblings]
    first = weights[0] if len(siblings) >= 3 else None
    if first is None:
        return False
    siblings = [
        user
        for user, weight in zip(siblings, weights, strict=True)
        if weight is not None and weight.shape[0] == first.shape[0] and weight.dtype == first.dtype
    ]
    if len(siblings) < 3:
        return False
    order = {n: i for i, n in enumerate(graph)}
    siblings.sort(key=order.__getitem__)
    parts = [_constant(user.inputs[1]) for user in siblings]
    joined = np.concatenate([p for p in parts if p is not None], axis=1)
    weight = new_initializer(graph, f"{siblings[0].name}_fused_weight", joined)
    fused = ir.Node("", "MatMul", [source, weight], name=f"{siblings[0].name}_fused")
    sizes = np.array([p.shape[1] for p in parts if p is not None], dtype=np.int64)
    if graph.opset_imports.get("", 13) >= 13:
        split_inputs = [fused.outputs[0], new_initializer(graph, f"{fused.name}_split", sizes)]
        attributes: list[ir.Attr] = []
    else:
        split_inputs = [fused.outputs[0]]
        attributes = [ir.AttrInt64s("split", sizes.tolist())]
    split = ir.Node(
        "",
        "Split",
        split_inputs,
        attributes=[ir.AttrInt64("axis", -1), *attributes],
        num_outputs=len(siblings),
        name=f"{fused.name}_split",
    )
    graph.insert_before(siblings[0], [fused, split])
    fused.outputs[0].type = siblings[0].outputs[0].type
    shape = siblings[0].outputs[0].shape
    if shape is not None and len(shape):  # the siblings' shape, their widths side by side
        fused.outputs[0].shape = ir.Shape([*shape[:-1], int(joined.shape[1])])
    for user, out in zip(siblings, split.outputs, strict=True):
        public = user.outputs[0].name
        user.outputs[0].name = f"{public}__fused"
        out.name, out.type, out.shape = public, user.outputs[0].type, user.outputs[0].shape
        user.outputs[0].replace_all_uses_with(out)
        graph.remove(user, safe=True)
    return True


def _matmul_weight(node: ir.Node) -> ir.TensorProtocol | None:
    """The constant [K, n] weight of a MatMul, unread (a weight is read once, when fused)."""
    weight = _constant_tensor(node.inputs[1]) if len(node.inputs) > 1 else None
    return weight if weight is not None and len(weight.shape) == 2 else None


_RULES: dict[str, Callable[[Simplifier, ir.Graph, ir.Node], bool]] = {
    "Identity": _identity,
    "Dropout": _dropout,
    "Cast": _cast,
    "CastLike": _cast_like,
    "Expand": _same_shape,
    "Tile": _same_shape,
    "Reshape": _reshape_like,
    "Squeeze": _reshape_like,
    "Unsqueeze": _reshape_like,
    "Flatten": _reshape_like,
    "Slice": _slice,
    "Pad": _pad,
    "Concat": _concat,
    "Split": _split,
    "Transpose": _transpose,
    "Add": _neutral(0.0, commutative=True),
    "Sub": _neutral(0.0, commutative=False),
    "Mul": _neutral(1.0, commutative=True),
    "Div": _neutral(1.0, commutative=False),
    "And": _neutral(1.0, commutative=True),  # x and True
    "Or": _neutral(0.0, commutative=True),  # x or False
    "If": _if,
    "MatMul": _fuse_sibling_matmuls,
    **dict.fromkeys(_IDEMPOTENT, _idempotent),
    **dict.fromkeys(_INVOLUTIONS, _involution),
}


# ------------------------------------------------------- inexact (opt-in) fusions
def fuse_batchnorm(graph: ir.Graph) -> list[str]:
    """Fold inference-mode BatchNormalization into the Conv before it (new weights and bias).

    Not exact: the folded weights round differently (relative error ~1e-7 per weight), so
    sanitize only does it when asked. Returns the names of the removed BatchNormalizations.
    """
    fused = []
    for node in list(graph):
        if node.op_type != "BatchNormalization" or not _standard(node):
            continue
        if len(node.outputs) > 1 and any(
            out.uses() or out.is_graph_output() for out in node.outputs[1:]
        ):
            continue
        training = node.attributes.get("training_mode")
        if training is not None and training.as_int():
            continue
        conv = node.inputs[0].producer() if node.inputs[0] is not None else None
        if conv is None or conv.op_type != "Conv" or not _standard(conv) or conv.graph is not graph:
            continue
        middle = conv.outputs[0]
        if middle.is_graph_output() or len(middle.uses()) != 1:
            continue
        params = [_constant(v) for v in node.inputs[1:5]]
        weight = _constant(conv.inputs[1])
        bias = _constant(conv.inputs[2]) if len(conv.inputs) > 2 else None
        if weight is None or any(p is None for p in params):
            continue
        if len(conv.inputs) > 2 and conv.inputs[2] is not None and bias is None:
            continue
        scale, shift, mean, var = (p.astype(np.float64) for p in params)  # type: ignore[union-attr]
        epsilon = node.attributes["epsilon"].as_float() if "epsilon" in node.attributes else 1e-5
        factor = scale / np.sqrt(var + epsilon)
        shape = (-1,) + (1,) * (weight.ndim - 1)
        new_weight = (weight.astype(np.float64) * factor.reshape(shape)).astype(weight.dtype)
        base = bias.astype(np.float64) if bias is not None else np.zeros_like(mean)
        new_bias = ((base - mean) * factor + shift).astype(weight.dtype)
        w_value = new_initializer(graph, f"{conv.name}_weight_bn", new_weight)
        b_value = new_initializer(graph, f"{conv.name}_bias_bn", new_bias)
        conv.replace_input_with(1, w_value)
        if len(conv.inputs) < 3:
            conv.resize_inputs(3)
        conv.replace_input_with(2, b_value)
        if Simplifier().bypass(graph, node, middle):
            fused.append(node.name or "BatchNormalization")
    return fused
