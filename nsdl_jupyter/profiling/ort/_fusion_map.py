"""Map onnxruntime's profiled nodes back to the ONNX nodes of the model the user opened.

onnxruntime profiles the graph it optimized: fused nodes (`.../MatMulAddFusion`, `BiasGelu`,
`SkipLayerNormalization`), NCHWc convolutions named after the original tensor they produce
(`/relu/Relu_output_0_nchwc` is the Conv+Relu whose output is `/relu/Relu_output_0`), and
inserted nodes (layout reorders, reshapes around a Gemm, memcpy). The optimized model it
writes (`SessionOptions.optimized_model_filepath`) says what each of them reads and writes.

For every optimized node we find the original tensors at its border:
- an output keeps its original name, or the node is named after it (`<tensor>_nchwc`), or it
  is named after an original node (`<node>/<Fusion>...`: that node's outputs), or its output
  reaches an original tensor through inserted pass-through nodes (Reshape, reorders);
- an input is an original tensor, or is traced back through the node that produced it.
The original nodes it replaced are those between its border tensors: a walk back from the
producers of its outputs that stops at its inputs, at weights and graph inputs, and at nodes
already claimed by an earlier optimized node (nodes are taken in topological order).

A fused node's time is split over the nodes it covers in proportion to an estimate of their
work: multiply-adds for Conv, ConvTranspose, MatMul and Gemm, output elements otherwise (so
a Conv+Relu gives nearly all its time to the Conv). Nodes that cover nothing (inserted) give
their time to the original nodes their outputs feed (or, for a node onnxruntime made up
from nothing it names, to the nodes that made its inputs).

Inlined function ops go the other way: one original node becomes several. onnxruntime
expands a function op that no provider has a kernel for (HardSwish on CPU: HardSigmoid + Mul)
or a call of a model-local function into its body (Graph::InlineFunction): the body's
nodes keep their own names, prefixed `_inlfunc_<op>...`, or none at all (HardSwish's body
nodes are unnamed), and its inner tensors are named `_inlfunc_<op>_..._<name>`, while the
tensors at its border keep the call's names. The nodes joined by such inner tensors, or
copied from the same call of a model-local function (`_inlined_calls` reads which from their
names), are taken as one: between the original tensors at their border lies the function
node, and each of them maps to it whole with `kind="inlined"` (a row's time lands on the node
it is part of). A body whose border onnxruntime renamed too (NCHWc reorders from one block to
the next) maps to the call its names tell.

The profiler names an unnamed node `<op type>_<node index>` (sequential_executor.cc), an
index the saved model does not keep. `map_layers` keys such a node by its op type and its
rank among the unnamed nodes of that op type, and `by_profiled_name` gives it the profiler's
name: the k-th row of that op type (in run order) is the k-th node, both orders being
onnxruntime's topological order of the same graph.
"""

from __future__ import annotations

import math
import re
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import count, takewhile
from pathlib import Path

import onnx

from nsdl_jupyter.profiling.ort._inlined_calls import INLINED_PREFIX, NCHWC_SUFFIX, InlinedCalls

_WALK_LIMIT = 256  # original nodes one optimized node may cover
_MATMUL_LIKE = frozenset({"MatMul", "Gemm", "MatMulInteger", "FusedMatMul"})
_CONV_LIKE = frozenset({"Conv", "ConvTranspose", "ConvInteger", "QLinearConv"})
_FREE = frozenset(
    {"Constant", "Shape", "Size", "Identity", "Unsqueeze", "Squeeze", "Reshape", "Flatten"}
)


@dataclass(frozen=True)
class LayerMapping:
    """The ONNX nodes one profiled node stands for, and the share of its time each gets."""

    nodes: tuple[str, ...]
    weights: tuple[float, ...]
    kind: str  # "original", "fused", "inlined", "inserted" or "unmapped"


@dataclass
class _Original:
    nodes: Mapping[str, onnx.NodeProto]
    producer: Mapping[str, str]  # tensor -> node name
    consumers: Mapping[str, list[str]]  # tensor -> node names
    sources: frozenset[str]  # graph inputs, initializers: walks stop there
    shapes: Mapping[str, tuple[int, ...]]


def map_layers(original: onnx.ModelProto, optimized: onnx.ModelProto) -> dict[str, LayerMapping]:
    """For every node of `optimized` (by name; an unnamed one by `_unnamed_key`), the nodes of
    `original` it stands for."""
    graph = _original(original)
    keyed = _keyed(optimized.graph.node)
    inlined = InlinedCalls(original)
    bodies, tags = _inlined_bodies(keyed, graph, inlined)
    call_of = inlined.calls_by_tag(tags.values())
    # an unnamed node outside a body is one of the original's, which has no name to map to
    opt_nodes = [n for n in keyed if n.name in bodies or not _is_unnamed(n.name)]
    opt_producer = {out: n.name for n in opt_nodes for out in n.output if out}
    opt_consumers: dict[str, list[onnx.NodeProto]] = {}
    for node in opt_nodes:
        for name in node.input:
            opt_consumers.setdefault(name, []).append(node)
    by_name = {n.name: n for n in opt_nodes}

    border_out: dict[str, set[str]] = {}
    for node in opt_nodes:
        border_out[node.name] = _border_outputs(node, graph, opt_consumers)

    # Nodes that kept their name cover themselves first; then every node (in order) also
    # takes the unclaimed original nodes between its border tensors, an inlined body's nodes
    # those between the body's border tensors.
    claimed = {node.name for node in opt_nodes if node.name in graph.nodes}
    result: dict[str, LayerMapping] = {}
    for node in opt_nodes:
        if node.name in result:
            continue
        body = bodies.get(node.name)
        if body is not None:
            members = [by_name[name] for name in body]
            inputs = [i for m in members for i in m.input if opt_producer.get(i) not in body]
            stops = _border_inputs(inputs, graph, opt_producer, by_name, border_out)
            outputs = set().union(*(border_out[name] for name in body))
            covered = _walk(graph, outputs, stops, claimed, own="")
            call = call_of.get(tags.get(node.name, ""))
            if not covered and call is not None and call not in claimed:
                covered = [call]  # its border renamed (NCHWc reorders): the call its names tell
            claimed.update(covered)
            if covered:
                found = LayerMapping(tuple(covered), _weights(graph, covered), "inlined")
                result.update(dict.fromkeys(body, found))
            continue
        stops = _border_inputs(node.input, graph, opt_producer, by_name, border_out)
        covered = _walk(graph, border_out[node.name], stops, claimed, own=node.name)
        claimed.update(covered)
        if node.name in graph.nodes:
            covered = [node.name, *covered]
        if covered:
            kind = "original" if covered == [node.name] else "fused"
            result[node.name] = LayerMapping(tuple(covered), _weights(graph, covered), kind)
    for node in opt_nodes:
        if node.name in result or node.name in bodies:  # a body of an unnamed node: unmapped
            continue
        fed = _fed_nodes(node, graph, opt_consumers, result) or _read_from(
            _border_inputs(node.input, graph, opt_producer, by_name, border_out), graph
        )
        if fed:
            share = 1.0 / len(fed)
            result[node.name] = LayerMapping(tuple(fed), (share,) * len(fed), "inserted")
    unmapped = LayerMapping((), (), "unmapped")
    return {node.name: result.get(node.name, unmapped) for node in keyed}


def by_profiled_name(
    mapping: Mapping[str, LayerMapping], rows: Iterable[tuple[str, str]]
) -> dict[str, LayerMapping]:
    """`mapping` with its unnamed nodes under the names the profiler gave them; `rows` are the
    profile's (name, op type) in run order. An op type with more or fewer rows of the form
    `<op type>_<index>` than unnamed nodes leaves them unmatched: the ranks would not pair."""
    result = dict(mapping)
    profiled: dict[str, list[str]] = {}
    for name, op_type in rows:
        if name not in mapping and re.fullmatch(re.escape(op_type) + r"_\d+", name):
            profiled.setdefault(op_type, []).append(name)
    for op_type, names in profiled.items():
        ranked = (mapping.get(_unnamed_key(op_type, rank)) for rank in count())
        unnamed = [found for found in takewhile(bool, ranked) if found is not None]
        if len(unnamed) == len(names):
            result.update(zip(names, unnamed, strict=True))
    return result


def _unnamed_key(op_type: str, rank: int) -> str:
    """The key of the `rank`-th unnamed node of `op_type` (its rank in the saved model)."""
    return f"<unnamed {op_type} {rank}>"


def _is_unnamed(key: str) -> bool:
    return key.startswith("<unnamed ")


def _keyed(nodes: Iterable[onnx.NodeProto]) -> list[onnx.NodeProto]:
    """`nodes`, an unnamed one as a copy named by `_unnamed_key`."""
    ranks: dict[str, int] = {}
    keyed: list[onnx.NodeProto] = []
    for node in nodes:
        if node.name:
            keyed.append(node)
            continue
        rank = ranks.get(node.op_type, 0)
        ranks[node.op_type] = rank + 1
        named = onnx.NodeProto()
        named.CopyFrom(node)
        named.name = _unnamed_key(node.op_type, rank)
        keyed.append(named)
    return keyed


def _inlined_bodies(
    opt_nodes: Sequence[onnx.NodeProto], graph: _Original, inlined: InlinedCalls
) -> tuple[dict[str, frozenset[str]], dict[str, str]]:
    """Node -> the nodes of the inlined function body it belongs to: nodes named by
    onnxruntime's inliner or reading or writing a body's inner tensor, joined by those
    tensors and by the call their names tell (`_inlined_calls`: a rewrite inside a body, a
    Gemm between reshapes, makes tensors of its own). A node standing for an original node by
    its name (a Conv fused with a body's first node) keeps its own mapping. Also node -> the
    tag of its call, where its names tell it."""
    parent: dict[str, str] = {}

    def root(name: str) -> str:
        while parent[name] != name:
            parent[name] = parent[parent[name]]
            name = parent[name]
        return name

    first_with: dict[str, str] = {}  # inner tensor -> the first body node that has it
    first_of_call: dict[str, str] = {}  # call tag -> the first body node that has it
    tags: dict[str, str] = {}
    for node in opt_nodes:
        inner = [t for t in (*node.input, *node.output) if t.startswith(INLINED_PREFIX)]
        if not inner and not node.name.startswith(INLINED_PREFIX):
            continue
        if node.name in graph.nodes or _named_after(node.name, graph) is not None:
            continue
        if _nchwc_tensor(node.name, graph) is not None:
            continue
        parent[node.name] = node.name
        for tensor in inner:
            other = first_with.setdefault(tensor, node.name)
            parent[root(other)] = root(node.name)
        tag = next(filter(None, map(inlined.tag, (node.name, *inner))), None)
        if tag is not None:
            tags[node.name] = tag
            other = first_of_call.setdefault(tag, node.name)
            parent[root(other)] = root(node.name)
    groups: dict[str, set[str]] = {}
    for name in parent:
        groups.setdefault(root(name), set()).add(name)
    bodies = {name: frozenset(groups[root(name)]) for name in parent}
    body_tags = {name: tags[m] for name, body in bodies.items() for m in body if m in tags}
    return bodies, body_tags


def fused_node_mapping(original: Path, optimized: Path) -> dict[str, LayerMapping]:
    """`map_layers` of two model files, read without their weights."""
    return map_layers(
        onnx.load(str(original), load_external_data=False),
        onnx.load(str(optimized), load_external_data=False),
    )


def _original(model: onnx.ModelProto) -> _Original:
    nodes = {n.name: n for n in model.graph.node if n.name}
    producer = {out: n.name for n in model.graph.node for out in n.output if out and n.name}
    consumers: dict[str, list[str]] = {}
    for node in model.graph.node:
        for name in node.input:
            if name:
                consumers.setdefault(name, []).append(node.name)
    sources = frozenset(
        [i.name for i in model.graph.input] + [t.name for t in model.graph.initializer]
    )
    return _Original(nodes, producer, consumers, sources, _inferred_shapes(model))


def _border_outputs(
    node: onnx.NodeProto, graph: _Original, opt_consumers: Mapping[str, list[onnx.NodeProto]]
) -> set[str]:
    """Original tensors this optimized node produces (or stands for)."""
    direct = {out for out in node.output if out in graph.producer}
    if direct:
        return direct
    nchwc = _nchwc_tensor(node.name, graph)
    if nchwc is not None:
        return {nchwc}
    through = _through_pass_nodes(node, graph, opt_consumers)
    if through:
        return through
    anchor = _named_after(node.name, graph)
    if anchor is not None:
        return {out for out in graph.nodes[anchor].output if out}
    return set()


def _through_pass_nodes(
    node: onnx.NodeProto, graph: _Original, opt_consumers: Mapping[str, list[onnx.NodeProto]]
) -> set[str]:
    """Original tensors reached from the node's outputs through inserted single-input nodes
    (a Reshape or reorder onnxruntime put after a fused node)."""
    found: set[str] = set()
    frontier = [out for out in node.output if out]
    for _ in range(4):
        following: list[str] = []
        for tensor in frontier:
            for consumer in opt_consumers.get(tensor, []):
                if consumer.name in graph.nodes or _named_after(consumer.name, graph):
                    continue
                if consumer.name.endswith(NCHWC_SUFFIX):
                    continue
                outs = [o for o in consumer.output if o]
                found.update(o for o in outs if o in graph.producer)
                following.extend(o for o in outs if o not in graph.producer)
        if found or not following:
            break
        frontier = following
    return found


def _nchwc_tensor(name: str, graph: _Original) -> str | None:
    """The original tensor an NCHWc node is named after (`<tensor>_nchwc`), if any."""
    if name.endswith(NCHWC_SUFFIX) and name[: -len(NCHWC_SUFFIX)] in graph.producer:
        return name[: -len(NCHWC_SUFFIX)]
    return None


def _named_after(name: str, graph: _Original) -> str | None:
    """The original node a fused node is named after (`<node>/<Fusion>/...`), if any."""
    parts = name.split("/")
    for end in range(len(parts) - 1, 0, -1):
        prefix = "/".join(parts[:end])
        if prefix in graph.nodes:
            return prefix
    return None


def _border_inputs(
    inputs: Iterable[str],
    graph: _Original,
    opt_producer: Mapping[str, str],
    by_name: Mapping[str, onnx.NodeProto],
    border_out: Mapping[str, set[str]],
) -> set[str]:
    """Original tensors a node reads (`inputs`: its inputs), directly or through the nodes
    that made them."""
    stops: set[str] = set()
    for name in inputs:
        if not name:
            continue
        if name in graph.producer or name in graph.sources:
            stops.add(name)
            continue
        # a renamed tensor: what its producers stand for, passing through inserted nodes
        pending, seen = deque([name]), set[str]()
        while pending and len(seen) < 16:
            tensor = pending.popleft()
            if tensor in seen:
                continue
            seen.add(tensor)
            maker = opt_producer.get(tensor)
            if maker is None:
                continue
            outs = border_out.get(maker, set())
            if outs:
                stops.update(outs)
            else:
                pending.extend(i for i in by_name[maker].input if i)
                stops.update(i for i in by_name[maker].input if i in graph.producer)
    return stops


def _walk(
    graph: _Original, outputs: Iterable[str], stops: set[str], claimed: set[str], own: str
) -> list[str]:
    """Unclaimed original nodes between `stops` and `outputs`, walking back from the outputs;
    claimed nodes end the walk, except `own` (the node's namesake, claimed by itself)."""
    covered: list[str] = []
    seen: set[str] = set()
    pending = deque(graph.producer[t] for t in outputs if t in graph.producer)
    while pending and len(seen) < _WALK_LIMIT:
        name = pending.popleft()
        if name in seen:
            continue
        seen.add(name)
        if name != own:
            if name in claimed:
                continue
            covered.append(name)
        for tensor in graph.nodes[name].input:
            if not tensor or tensor in stops or tensor in graph.sources:
                continue
            maker = graph.producer.get(tensor)
            if maker is not None and maker not in seen:
                pending.append(maker)
    return covered


def _fed_nodes(
    node: onnx.NodeProto,
    graph: _Original,
    opt_consumers: Mapping[str, list[onnx.NodeProto]],
    mapped: Mapping[str, LayerMapping],
) -> list[str]:
    """For an inserted node: the original nodes that its outputs feed (of a fused node, its main
    one: the node taking most of its time)."""
    frontier = [out for out in node.output if out]
    for _ in range(8):
        fed: list[str] = []
        following: list[str] = []
        for tensor in frontier:
            fed.extend(c for c in graph.consumers.get(tensor, []) if c in graph.nodes)
            for consumer in opt_consumers.get(tensor, []):
                mapping = mapped.get(consumer.name)
                if mapping is not None and mapping.kind != "inserted" and mapping.nodes:
                    fed.append(_main_node(mapping))
                else:
                    following.extend(o for o in consumer.output if o)
        if fed:
            return list(dict.fromkeys(fed))
        if not following:
            break
        frontier = following
    return []


def _main_node(mapping: LayerMapping) -> str:
    """The node that takes most of a mapped row's time (a Gemm's MatMul, not its Add)."""
    if len(mapping.weights) != len(mapping.nodes):
        return mapping.nodes[0]
    return max(zip(mapping.nodes, mapping.weights, strict=True), key=lambda nw: nw[1])[0]


def _read_from(tensors: Iterable[str], graph: _Original) -> list[str]:
    """Last resort for a node onnxruntime made up: the original nodes that made its inputs."""
    return list(dict.fromkeys(graph.producer[t] for t in sorted(tensors) if t in graph.producer))


def _weights(graph: _Original, covered: Sequence[str]) -> tuple[float, ...]:
    if len(covered) == 1:
        return (1.0,)
    costs = [_cost(graph, graph.nodes[name]) for name in covered]
    total = sum(costs)
    if total <= 0:  # nothing but free nodes: the namesake (or first) takes the time
        return tuple(1.0 if i == 0 else 0.0 for i in range(len(covered)))
    return tuple(cost / total for cost in costs)


def _cost(graph: _Original, node: onnx.NodeProto) -> float:
    """Rough work of one node: multiply-adds for Conv and MatMul, none for nodes that only
    describe tensors (folded away by onnxruntime), output elements otherwise."""
    if node.op_type in _FREE:
        return 0.0
    out = graph.shapes.get(node.output[0]) if node.output else None
    elements = float(math.prod(out)) if out else 1.0
    if node.op_type in _CONV_LIKE and len(node.input) > 1:
        weight = graph.shapes.get(node.input[1])
        if weight and len(weight) > 1:
            return elements * float(math.prod(weight[1:]))
    if node.op_type in _MATMUL_LIKE and node.input:
        left = graph.shapes.get(node.input[0])
        if left:
            transposed = node.op_type == "Gemm" and any(
                a.name == "transA" and a.i == 1 for a in node.attribute
            )
            inner = left[-2] if transposed and len(left) > 1 else left[-1]
            return elements * float(inner)
    return elements


def _without_weight_bytes(model: onnx.ModelProto) -> onnx.ModelProto:
    """A copy of `model` whose large initializers keep their name, type and dims only (never
    copying the weights: a whole copy of an inline GPT-2 would be 500 MB)."""
    light = onnx.ModelProto(
        ir_version=model.ir_version, opset_import=model.opset_import, functions=model.functions
    )
    source, graph = model.graph, light.graph
    graph.name = source.name
    for field in ("node", "input", "output", "value_info"):
        getattr(graph, field).extend(getattr(source, field))
    for tensor in source.initializer:
        if tensor.ByteSize() <= 4096:
            graph.initializer.append(tensor)
        else:
            graph.initializer.add(name=tensor.name, data_type=tensor.data_type, dims=tensor.dims)
    return light


def _inferred_shapes(model: onnx.ModelProto) -> dict[str, tuple[int, ...]]:
    """Static shapes of the model's tensors (unknown dims as 1), from onnx's inference on a
    copy without the weights' bytes."""
    light = _without_weight_bytes(model)
    try:
        inferred = onnx.shape_inference.infer_shapes(light)
    except Exception:  # inference is a hint for the split, never a reason to fail
        inferred = light
    shapes: dict[str, tuple[int, ...]] = {}
    infos = [*inferred.graph.value_info, *inferred.graph.input, *inferred.graph.output]
    for info in infos:
        dims = info.type.tensor_type.shape.dim
        shapes[info.name] = tuple(d.dim_value if d.dim_value > 0 else 1 for d in dims)
    for tensor in model.graph.initializer:
        shapes[tensor.name] = tuple(int(d) for d in tensor.dims)
    return shapes
