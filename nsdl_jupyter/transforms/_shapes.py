"""Shape inference on an onnx_ir model, merging whole types back.

onnx_ir's ShapeInferencePass merges only the element type of each inferred value, and sets
it as a *tensor* type even where onnx inferred a sequence or an optional, which breaks
If/Loop/SequenceMap models (found on the ONNX backend node tests). Here the inferred type is
copied whole. Large initializers are swapped for graph inputs of the same type while onnx
looks at the model, so a model with gigabytes of weights is not serialized with them.
"""

from __future__ import annotations

import onnx
import onnx_ir as ir

_INLINE_LIMIT = 1024  # initializers at most this big stay (data propagation reads them)


def infer_shapes(model: ir.Model) -> bool:
    """Run onnx shape inference (non-strict, with data propagation); True if it ran."""
    graph = model.graph
    order = list(graph.initializers)
    stashed: list[tuple[ir.Value, ir.TensorProtocol]] = []
    added: list[ir.Value] = []
    for name, value in list(graph.initializers.items()):
        tensor = value.const_value
        if tensor is None or tensor.nbytes <= _INLINE_LIMIT:
            continue
        if value.type is None:
            value.type = ir.TensorType(tensor.dtype)
        if value.shape is None:
            value.shape = ir.Shape(tensor.shape.numpy())
        if not value.is_graph_input():
            graph.inputs.append(value)
            added.append(value)
        graph.initializers.pop(name)
        stashed.append((value, tensor))
    try:
        proto = ir.serde.serialize_model(model)
    finally:
        for value in added:
            graph.inputs.remove(value)
        for value, tensor in stashed:
            value.const_value = tensor
            graph.register_initializer(value)
        if stashed:
            values = dict(graph.initializers)
            graph.initializers.clear()
            for name in order:
                graph.initializers.add(values[name])
    try:
        inferred = onnx.shape_inference.infer_shapes(
            proto, check_type=False, strict_mode=False, data_prop=True
        )
    except Exception:  # onnx raises its own error types; the model is left as it was
        return False
    _merge(model, ir.serde.deserialize_model(inferred))
    return True


def _merge(model: ir.Model, inferred: ir.Model) -> None:
    for original_graph, inferred_graph in zip(model.graphs(), inferred.graphs(), strict=False):
        found = ir.convenience.create_value_mapping(inferred_graph)
        for name, value in ir.convenience.create_value_mapping(original_graph).items():
            twin = found.get(name)
            if twin is None or value.const_value is not None:
                continue
            current = value.type
            if twin.type is not None and (
                current is None or (current != twin.type and _same_kind(current, twin.type))
            ):
                value.type = twin.type
            if twin.shape is not None and (value.shape is None or _more_known(twin, value)):
                value.shape = twin.shape


def _same_kind(a: ir.TypeProtocol, b: ir.TypeProtocol) -> bool:
    return type(a) is type(b)


def _more_known(inferred: ir.Value, value: ir.Value) -> bool:
    """True when the inferred shape fixes dims the current one leaves open."""
    assert inferred.shape is not None
    assert value.shape is not None
    if len(inferred.shape) != len(value.shape):
        return False
    known_now = sum(isinstance(d, int) for d in value.shape)
    known_then = sum(isinstance(d, int) for d in inferred.shape)
    return known_then > known_now
