"""Type checking: the ONNX checker and strict shape inference, reported per node."""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass
from typing import Literal

import onnx
import onnx_ir as ir

from nsdl_jupyter.ops import is_custom_domain

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
    return check_proto(check_snapshot(model))


def check_snapshot(model: ir.Model) -> onnx.ModelProto:
    """The model as a proto for checking, built without changing the model.

    Safe off the kernel's thread (it only reads), so a panel can check big models in a worker.
    Big initializers become typed graph inputs: checking needs their types, not their bytes
    (serializing BERT-base's 440 MB for the checker and for inference made a check take 8 s),
    and external weights are never read. Small ones (shape tensors, axes) stay, so inference
    can still propagate their values. Node names are those of the document (generated ones
    included), so diagnostics name what the views show.
    """
    graph = model.graph
    small: list[ir.Value] = []
    big: list[ir.Value] = []
    for value in graph.initializers.values():
        tensor = value.const_value
        (small if tensor is not None and tensor.nbytes <= _WEIGHT_BYTES else big).append(value)
    inputs = [*graph.inputs, *(v for v in big if not v.is_graph_input())]
    view = ir.GraphView(
        inputs,
        graph.outputs,
        nodes=list(graph),
        initializers=small,
        opset_imports=dict(graph.opset_imports),
        name=graph.name,
    )
    proto = onnx.ModelProto(ir_version=model.ir_version)
    for domain, version in graph.opset_imports.items():
        proto.opset_import.add(domain=domain, version=version)
    # onnx_ir's GraphView serializes fine but its typing does not match GraphViewProtocol
    ir.serde.serialize_graph_into(proto.graph, view, model_ir_version=model.ir_version)  # type: ignore[arg-type]
    for function in model.functions.values():
        ir.serde.serialize_function_into(proto.functions.add(), from_=function)
    return proto


def check_proto(proto: onnx.ModelProto) -> list[Diagnostic]:
    """The checks on a snapshot: ONNX checker per node, then strict shape inference.

    A node so broken that even lenient inference stops (a missing required input) is
    reported on that node instead of failing the whole check.
    """
    _sort_topologically(proto.graph)
    gaps = _custom_operators(proto) + _gap_diagnostics(proto) + _untyped_custom_outputs(proto)
    try:
        # Types of new graph outputs are often unknown until inferred; the checker demands them.
        inferred = onnx.shape_inference.infer_shapes(proto)
    except (onnx.shape_inference.InferenceError, onnx.checker.ValidationError) as error:
        message = _first_line(str(error))
        node = _node_named_in(message, proto)
        found = _node_diagnostics(proto)
        if not any(d.node == node for d in found):
            found.append(Diagnostic("error", node, message, "shape_inference"))
        return gaps + found
    diagnostics = gaps + _checker_diagnostics(inferred)
    if any(d.severity == "error" for d in diagnostics):
        return diagnostics
    return diagnostics + _inference_diagnostics(inferred)


def _custom_operators(proto: onnx.ModelProto) -> list[Diagnostic]:
    """Nodes of domains with no schemas here (TensorRT plugins, vendor ops): a warning each."""
    return [
        Diagnostic(
            "warning",
            node.name,
            f"{node.domain}::{node.op_type} is a custom operator: its inputs, outputs and "
            "attributes are not checked here, and the runtime needs its plugin or library",
        )
        for node in proto.graph.node
        if _is_custom(node)
    ]


def _is_custom(node: onnx.NodeProto) -> bool:
    return is_custom_domain(node.domain)


def _untyped_custom_outputs(proto: onnx.ModelProto) -> list[Diagnostic]:
    """Graph outputs of custom operators whose type nothing can infer: a warning on the node
    (the checker's "Unrecognized type value case" names no node); they leave the checked copy."""
    producers = {name: node for node in proto.graph.node for name in node.output}
    found, kept = [], []
    for output in proto.graph.output:
        node = producers.get(output.name)
        if output.type.WhichOneof("value") is None and node and node.domain not in _ONNX_DOMAINS:
            found.append(
                Diagnostic(
                    "warning",
                    node.name,
                    f"graph output {output.name!r} of {node.domain} operator {node.op_type} has "
                    f"no type (no schema to infer it): set one with "
                    f"doc.set_tensor_type({output.name!r}, ...)",
                )
            )
        else:
            kept.append(output)
    if found:
        del proto.graph.output[:]
        proto.graph.output.extend(kept)
    return found


def _gap_diagnostics(proto: onnx.ModelProto) -> list[Diagnostic]:
    """Empty inputs inside a variadic list (`Concat(a, '', b)`): the ONNX checker lets them
    pass, onnxruntime refuses the model."""
    opsets = {entry.domain: entry.version for entry in proto.opset_import}
    found = []
    for node in proto.graph.node:
        if "" not in node.input:
            continue
        try:
            schema = onnx.defs.get_schema(node.op_type, opsets.get(node.domain, 1), node.domain)
        except onnx.defs.SchemaError:
            continue
        formals = schema.inputs
        variadic = (
            bool(formals)
            and formals[-1].option == onnx.defs.OpSchema.FormalParameterOption.Variadic
        )
        if not variadic:
            continue  # gaps in single inputs: the checker reports them
        first = len(formals) - 1
        holes = [i for i, name in enumerate(node.input) if i >= first and not name]
        if holes:
            found.append(
                Diagnostic(
                    "error",
                    node.name,
                    f"{node.op_type} {node.name} has empty variadic input(s) {holes}: "
                    "connect a tensor there or remove the gap (variadic inputs cannot be empty)",
                )
            )
    return found


def _sort_topologically(graph: onnx.GraphProto) -> None:
    """Order nodes so each comes after its producers (ONNX requires it; edits may not keep it)."""
    available = {i.name for i in graph.input} | {i.name for i in graph.initializer} | {""}
    produced_by: dict[str, int] = {}
    for index, node in enumerate(graph.node):
        for name in node.output:
            produced_by[name] = index
    seen = set(available)
    for node in graph.node:
        if any(name not in seen and name in produced_by for name in node.input):
            break
        seen.update(node.output)
    else:
        return
    nodes = list(graph.node)
    waiting = [
        {produced_by[n] for n in node.input if n in produced_by and n not in available}
        for node in nodes
    ]
    users: dict[int, list[int]] = {}
    for index, needs in enumerate(waiting):
        for producer in needs:
            users.setdefault(producer, []).append(index)
    ready = deque(i for i, needs in enumerate(waiting) if not needs)
    order: list[int] = []
    while ready:
        current = ready.popleft()
        order.append(current)
        for user in users.get(current, ()):
            waiting[user].discard(current)
            if not waiting[user]:
                ready.append(user)
    placed = set(order)
    order += [i for i in range(len(nodes)) if i not in placed]  # a cycle: keep the rest as is
    copies = [onnx.NodeProto() for _ in nodes]
    for copy, index in zip(copies, order, strict=True):
        copy.CopyFrom(nodes[index])
    del graph.node[:]
    graph.node.extend(copies)


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
        if _is_custom(node):
            continue  # reported once, by _custom_operators
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
