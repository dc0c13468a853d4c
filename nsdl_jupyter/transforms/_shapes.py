"""Shape inference on an onnx_ir model, merging whole types back; onnxruntime's symbolic
inference where onnx's loses a model's dimension names (`relate_dims`,
nsdl_jupyter._symbolic_shapes says when).

onnx_ir's ShapeInferencePass merges only the element type of each inferred value, and sets
it as a *tensor* type even where onnx inferred a sequence or an optional, which breaks
If/Loop/SequenceMap models (found on the ONNX backend node tests). Here the inferred type is
copied whole. onnx looks at the model with its weights as typed graph inputs
(`nsdl_jupyter._weightless`), so a model with gigabytes of weights is not serialized with them.
"""

from __future__ import annotations

from collections.abc import Sequence

import onnx
import onnx_ir as ir

from nsdl_jupyter._symbolic_shapes import symbolic_dims
from nsdl_jupyter._walk import graphs_in
from nsdl_jupyter._weightless import model_proto


def infer_shapes(model: ir.Model) -> list[ir.Value] | None:
    """Run onnx shape inference (non-strict, with data propagation): the values that got a
    new type or shape (none when every value was already typed with a static shape), None
    when onnx's inference failed (the model is left as it was)."""
    if shapes_settled(model):
        return []
    proto = model_proto(model)
    try:
        inferred = onnx.shape_inference.infer_shapes(
            proto, check_type=False, strict_mode=False, data_prop=True
        )
    except Exception:  # onnx raises its own error types; the model is left as it was
        return None
    return _merge(model, inferred)


def relate_dims(model: ir.Model, values: Sequence[ir.Value]) -> int:
    """Shapes for `values` with a dimension onnx inference could not relate to the graph
    inputs' (`unk__0` after the Slice of BERT's position ids to `sequence`), from onnxruntime's
    symbolic inference: taken when of the same rank and saying only numbers and the graph
    inputs' dimension names. Returns how many values it shaped."""
    named = input_dim_names(model)
    loose = [v for v in open_values(model, values) if v.shape is not None]
    if not loose or not named:  # static inputs: see nsdl_jupyter._symbolic_shapes
        return 0
    found = symbolic_dims(model_proto(model), {v.name or "" for v in loose})
    shaped = 0
    for value in loose:
        _, dims = found.get(value.name or "", (0, []))
        current = value.shape
        if current is None or len(dims) != len(current):
            continue
        if all(isinstance(dim, int) or dim in named for dim in dims):
            value.shape = ir.Shape(dims)
            shaped += 1
    return shaped


def input_dim_names(model: ir.Model) -> set[str]:
    """The names of the graph inputs' symbolic dims (what a profile's dim_sizes sizes)."""
    return {dim for value in model.graph.inputs for dim in _dim_names(value.shape)} - {""}


def open_values(model: ir.Model, values: Sequence[ir.Value]) -> list[ir.Value]:
    """`values` with a dim that is neither a number nor a graph input's dim name, or of
    unknown shape: nothing sizes them from the graph inputs' sizes."""
    named = input_dim_names(model)
    return [v for v in values if v.shape is None or set(_dim_names(v.shape)) - named]


def _dim_names(shape: ir.Shape | None) -> list[str]:
    """The symbolic dimensions of `shape`, "" for an unnamed one."""
    return [str(dim.value or "") for dim in shape or () if not isinstance(dim, int)]


def shapes_settled(model: ir.Model) -> bool:
    """Every value of every graph is a constant or typed with a static shape: inference has
    nothing to add."""
    return all(
        _settled(value) for graph in graphs_in(model.graph) for value in _graph_values(graph)
    )


def _merge(model: ir.Model, inferred: onnx.ModelProto) -> list[ir.Value]:
    """Copy inferred types into the model, reading the proto's value_info directly (turning
    the whole inferred proto back into onnx_ir would cost more than the inference); the
    values that changed."""
    learned: list[ir.Value] = []
    for graph, proto in _graph_pairs(model.graph, inferred.graph):
        found: dict[str, onnx.ValueInfoProto] = {}
        for info in [*proto.input, *proto.value_info, *proto.output]:
            found[info.name] = info
        for value in _graph_values(graph):
            info = found.get(value.name or "")
            if info is None or _settled(value) or not info.type.WhichOneof("value"):
                continue
            if info.type.HasField("tensor_type"):
                if _merge_tensor(value, info.type):
                    learned.append(value)
                continue
            twin_type = ir.serde.deserialize_type_proto_for_type(info.type)
            twin_shape = ir.serde.deserialize_type_proto_for_shape(info.type)
            current = value.type
            changed = False
            if twin_type is not None and (
                current is None or (current != twin_type and _same_kind(current, twin_type))
            ):
                value.type = twin_type
                changed = True
            if twin_shape is not None and (
                value.shape is None or _more_known(twin_shape, value.shape)
            ):
                value.shape = twin_shape
                changed = True
            if changed:
                learned.append(value)
    return learned


def _merge_tensor(value: ir.Value, proto: onnx.TypeProto) -> bool:
    """`_merge` for a tensor type, read from the proto's fields: an IR type or shape is only
    built when it is taken (most inferred values hold nothing new after the first pass)."""
    tensor = proto.tensor_type
    current = value.type
    changed = False
    if tensor.HasField("elem_type") and (
        current is None or (type(current) is ir.TensorType and current.dtype != tensor.elem_type)
    ):
        value.type = ir.TensorType(
            ir.DataType(tensor.elem_type), denotation=proto.denotation or None
        )
        changed = True
    if not tensor.HasField("shape"):
        return changed
    dims = tensor.shape.dim
    shape = value.shape
    if shape is None or (
        len(dims) == len(shape)
        and sum(dim.HasField("dim_value") for dim in dims)
        > sum(isinstance(dim, int) for dim in shape)
    ):
        value.shape = ir.serde.deserialize_tensor_shape(tensor.shape)
        changed = True
    return changed


def _graph_values(graph: ir.Graph) -> list[ir.Value]:
    values = list(graph.inputs)
    for node in graph:
        values.extend(node.outputs)
    return values


def _graph_pairs(graph: ir.Graph, proto: onnx.GraphProto) -> list[tuple[ir.Graph, onnx.GraphProto]]:
    """The graph and every subgraph, each with its inferred proto (matched by position)."""
    pairs = [(graph, proto)]
    for node, node_proto in zip(graph, proto.node, strict=False):
        inner = {attr.name: attr for attr in node_proto.attribute}
        for name, attr in node.attributes.items():
            twin = inner.get(name)
            if twin is None:
                continue
            if attr.type == ir.AttributeType.GRAPH:
                pairs.extend(_graph_pairs(attr.as_graph(), twin.g))
            elif attr.type == ir.AttributeType.GRAPHS:
                for sub, sub_proto in zip(attr.as_graphs(), twin.graphs, strict=False):
                    pairs.extend(_graph_pairs(sub, sub_proto))
    return pairs


def _settled(value: ir.Value) -> bool:
    """Inference cannot tell more about `value`: a constant, or typed with a static shape."""
    return value.const_value is not None or (value.type is not None and _static(value.shape))


def _static(shape: ir.Shape | None) -> bool:
    return shape is not None and all(isinstance(dim, int) for dim in shape)


def _same_kind(a: ir.TypeProtocol, b: ir.TypeProtocol) -> bool:
    return type(a) is type(b)


def _more_known(inferred: ir.Shape, current: ir.Shape) -> bool:
    """True when the inferred shape fixes dims the current one leaves open."""
    if len(inferred) != len(current):
        return False
    return sum(isinstance(d, int) for d in inferred) > sum(isinstance(d, int) for d in current)
