"""A model as a proto with its large weights as typed graph inputs: the one weightless model.

Shape inference and onnx's checker need a weight's type and shape, never its bytes, but they
take a whole ModelProto: serializing the weights into it costs more than what it is for
(BERT-base's 440 MB made a check take 8 s) and would read external data. Here every weight
over `WEIGHT_BYTES`, and every external one (onnx cannot follow its file from a proto in
memory), becomes a graph input of its type; smaller constants stay, because data propagation
reads their values (shapes, axes, pads, slice bounds). Sanitize's inference, the type-check
panel, the views' edge labels and the checker after a save all build their proto here;
`weightless_model` does the same for a ModelProto without building onnx_ir (node_work).
"""

from __future__ import annotations

from collections.abc import Iterable

import onnx
import onnx_ir as ir

from nsdl_jupyter._tensor_bytes import tensor_bytes

# The one size rule. Data propagation only reads shape-like tensors: a rank-8 shape is 64
# bytes, and 1 KB holds 128 int64s (any shape, axes, pads, slice bounds or scalar). Larger
# constants are data: keeping them gives inference nothing and costs their serialization.
WEIGHT_BYTES = 1024


def is_weight(tensor: ir.TensorProtocol | onnx.TensorProto) -> bool:
    """True when `tensor` goes in as a typed graph input: external, or over WEIGHT_BYTES."""
    if isinstance(tensor, onnx.TensorProto):
        if tensor.data_location == onnx.TensorProto.EXTERNAL:
            return True
        tensor = ir.serde.TensorProtoTensor(tensor)
    return isinstance(tensor, ir.ExternalTensor) or tensor_bytes(tensor) > WEIGHT_BYTES


def typed_input(name: str, dtype: int, dims: Iterable[int]) -> onnx.ValueInfoProto:
    """The graph input that stands for weight `name`: its element type and static shape."""
    info = onnx.ValueInfoProto(name=name)
    tensor_type = info.type.tensor_type
    tensor_type.elem_type = dtype
    tensor_type.shape.SetInParent()  # a scalar has a shape with no dims, not none
    for dim in dims:
        tensor_type.shape.dim.add().dim_value = dim
    return info


def weightless_proto(
    graph: ir.Graph,
    *,
    ir_version: int,
    functions: Iterable[ir.Function] = (),
    outer: Iterable[ir.Value] = (),
) -> onnx.ModelProto:
    """`graph` (its nodes and bodies as they are, node names included) as a model whose
    weights are typed inputs after the graph's own; nothing in `graph` changes, so a reader
    on another thread may build it. `functions`: the local functions its nodes may call.
    `outer`: tensors of enclosing graphs that a body reads, as inputs (constants by the same
    rule as the graph's own: small ones stay constants, weights are typed inputs)."""
    kept: list[ir.Value] = []
    weights: list[onnx.ValueInfoProto] = []
    inputs = list(graph.inputs)
    own_inputs = set(inputs)  # an initializer that is also an input stays that input
    for value in [*graph.initializers.values(), *outer]:
        tensor = value.const_value
        if tensor is None:
            inputs.append(value)  # an outer tensor computed by the parent
        elif not is_weight(tensor):
            kept.append(value)
        elif value not in own_inputs:
            weights.append(weight_input(value))
    view = ir.GraphView(
        inputs,
        graph.outputs,
        nodes=list(graph),
        initializers=kept,
        opset_imports=dict(graph.opset_imports),
        name=graph.name or "graph",
    )
    proto = onnx.ModelProto(ir_version=ir_version)
    for domain, version in graph.opset_imports.items():
        proto.opset_import.add(domain=domain, version=version)
    # onnx_ir's GraphView serializes fine but its typing does not match GraphViewProtocol
    ir.serde.serialize_graph_into(proto.graph, view, model_ir_version=ir_version)  # type: ignore[arg-type]
    proto.graph.input.extend(weights)
    for function in functions:
        ir.serde.serialize_function_into(proto.functions.add(), from_=function)
    return proto


def model_proto(model: ir.Model) -> onnx.ModelProto:
    """`model` weightless: its main graph and its local functions."""
    return weightless_proto(
        model.graph, ir_version=model.ir_version, functions=model.functions.values()
    )


def weight_input(value: ir.Value) -> onnx.ValueInfoProto:
    """`typed_input` for initializer `value`, typed by its tensor."""
    tensor = value.const_value
    assert tensor is not None
    if isinstance(tensor, ir.serde.TensorProtoTensor):  # dims without building a Shape
        return typed_input(value.name or "", tensor.raw.data_type, tensor.raw.dims)
    return typed_input(value.name or "", tensor.dtype, tensor.shape.numpy())


def weightless_model(model: onnx.ModelProto) -> onnx.ModelProto:
    """`model` (a proto, left as it is) weightless by the same rule: its main graph's weights
    as typed inputs after the graph's own, its nodes, value_info and functions copied."""
    source = model.graph
    proto = onnx.ModelProto(ir_version=model.ir_version)
    proto.opset_import.extend(model.opset_import)
    proto.functions.extend(model.functions)
    graph = proto.graph
    graph.name = source.name or "graph"
    graph.node.extend(source.node)
    graph.input.extend(source.input)
    graph.output.extend(source.output)
    graph.value_info.extend(source.value_info)
    own_inputs = {info.name for info in source.input}
    for tensor in source.initializer:
        if not is_weight(tensor):
            graph.initializer.append(tensor)
        elif tensor.name not in own_inputs:
            graph.input.append(typed_input(tensor.name, tensor.data_type, tensor.dims))
    return proto
