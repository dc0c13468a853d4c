"""Type checking: the ONNX checker and strict shape inference, reported per node."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

import numpy as np
import onnx
import onnx_ir as ir

Severity = Literal["error", "warning", "info"]

_NODE_IN_MESSAGE = re.compile(r"node name: ([^)]*)\)|Node \(([^)]*)\)|node \"?([^\" ]+)\"? ")
_WEIGHT_BYTES = 4096
_ONNX_DOMAINS = frozenset({"", "ai.onnx", "ai.onnx.ml", "ai.onnx.preview.training"})


@dataclass(frozen=True)
class Diagnostic:
    """One finding: `node` is the node's name in the main graph, or None for the whole model."""

    severity: Severity
    node: str | None
    message: str
    source: Literal["checker", "shape_inference"] = "checker"


def check_model(model: ir.Model) -> list[Diagnostic]:
    """All checker findings per node, then the first shape-inference error (it stops there)."""
    proto = _proto_without_big_weights(model)
    # Types of new graph outputs are often unknown until inferred; the checker demands them.
    proto = onnx.shape_inference.infer_shapes(proto)
    diagnostics = _checker_diagnostics(proto)
    if any(d.severity == "error" for d in diagnostics):
        return diagnostics
    return diagnostics + _inference_diagnostics(proto)


def _proto_without_big_weights(model: ir.Model) -> onnx.ModelProto:
    """The model as a proto whose big initializers are typed graph inputs instead.

    Checking needs types and shapes, not weights: serializing BERT-base's 440 MB of weights
    for each of the checker and shape inference made a check take 8 s; small initializers
    (shape tensors, axes) stay, so shape inference can still propagate their values.
    """
    big = [
        value
        for value in model.graph.initializers.values()
        if value.const_value is not None and value.const_value.nbytes > _WEIGHT_BYTES
    ]
    originals = [(value, value.const_value) for value in big]
    try:
        for value, tensor in originals:
            assert tensor is not None
            value.const_value = ir.Tensor(np.empty(0, tensor.dtype.numpy()), dtype=tensor.dtype)
        proto = ir.to_proto(model)
    finally:
        for value, tensor in originals:
            value.const_value = tensor
    if not originals:
        return proto
    names = {value.name for value in big}
    graph = proto.graph
    kept = [tensor for tensor in graph.initializer if tensor.name not in names]
    del graph.initializer[:]
    graph.initializer.extend(kept)
    infos = [info for info in graph.value_info if info.name not in names]
    del graph.value_info[:]
    graph.value_info.extend(infos)
    inputs = {info.name for info in graph.input}
    for value, tensor in originals:
        assert tensor is not None
        if value.name not in inputs:
            graph.input.append(
                onnx.helper.make_tensor_value_info(
                    value.name or "", int(tensor.dtype), list(tensor.shape.numpy())
                )
            )
    return proto


def _checker_diagnostics(proto: onnx.ModelProto) -> list[Diagnostic]:
    try:
        onnx.checker.check_model(proto)
    except onnx.checker.ValidationError as error:
        model_message = _first_line(str(error))
    else:
        return []
    found = _node_diagnostics(proto)
    if found:
        return found
    return [Diagnostic("error", _node_named_in(model_message, proto), model_message)]


def _node_diagnostics(proto: onnx.ModelProto) -> list[Diagnostic]:
    context = onnx.checker.C.CheckerContext()
    context.ir_version = proto.ir_version
    context.opset_imports = {entry.domain: entry.version for entry in proto.opset_import}
    scope = onnx.checker.C.LexicalScopeContext()
    found = []
    for node in proto.graph.node:
        try:
            onnx.checker.check_node(node, context, scope)
        except onnx.checker.ValidationError as error:
            foreign = node.domain not in _ONNX_DOMAINS
            found.append(
                Diagnostic(
                    "warning" if foreign else "error",
                    node.name,
                    (
                        f"{node.domain} operator {node.op_type} has no ONNX schema; onnxruntime "
                        "checks it when the model runs"
                    )
                    if foreign
                    else _first_line(str(error)),
                )
            )
    return found


def _inference_diagnostics(proto: onnx.ModelProto) -> list[Diagnostic]:
    try:
        onnx.shape_inference.infer_shapes(proto, check_type=True, strict_mode=True, data_prop=True)
    except (onnx.shape_inference.InferenceError, onnx.checker.ValidationError) as error:
        message = _first_line(str(error))
        node = _node_named_in(message, proto)
        foreign = node is not None and _domain_of(proto, node) not in _ONNX_DOMAINS
        return [Diagnostic("warning" if foreign else "error", node, message, "shape_inference")]
    return []


def _node_named_in(message: str, proto: onnx.ModelProto) -> str | None:
    names = {node.name for node in proto.graph.node}
    for match in _NODE_IN_MESSAGE.finditer(message):
        candidate: str = next(group for group in match.groups() if group is not None)
        for part in (candidate, *candidate.split(",")):
            cleaned = part.strip().strip("\"'")
            if cleaned in names:
                return cleaned
    return None


def _domain_of(proto: onnx.ModelProto, name: str) -> str:
    return next((node.domain for node in proto.graph.node if node.name == name), "")


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else text
