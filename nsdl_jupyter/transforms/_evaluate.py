"""Evaluate nodes whose inputs are all constant, for constant folding.

onnxruntime on the CPU computes them (the kernels the folded model would have used, so the
folded values are the ones the runtime would compute); nodes it cannot run (an operator it
lacks) fall back to onnx's reference evaluator. A whole batch goes through one session; when
that fails, each node is tried alone so one bad node does not stop the others.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import onnx
import onnx_ir as ir


class EvaluationError(RuntimeError):
    """Neither onnxruntime nor the reference evaluator could compute a node."""


def _mini_model(
    nodes: Sequence[ir.Node],
    constants: Mapping[str, np.ndarray],
    outputs: Sequence[str],
    model: ir.Model,
) -> onnx.ModelProto:
    """A model of `nodes` with their constant inputs as initializers."""
    initializers = [onnx.numpy_helper.from_array(array, name) for name, array in constants.items()]
    graph = onnx.helper.make_graph(
        [ir.serde.serialize_node(node) for node in nodes],
        "fold",
        [],
        [onnx.helper.make_empty_tensor_value_info(name) for name in outputs],
        initializers,
    )
    imports = [
        onnx.helper.make_opsetid(domain, version)
        for domain, version in model.graph.opset_imports.items()
    ]
    proto = onnx.helper.make_model(graph, opset_imports=imports)
    proto.ir_version = model.ir_version
    proto.functions.extend(ir.serde.serialize_function(f) for f in model.functions.values())
    return proto


def _run_ort(proto: onnx.ModelProto) -> list[np.ndarray]:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 4
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(
        proto.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )
    return list(session.run(None, {}))


def _run_reference(proto: onnx.ModelProto) -> list[np.ndarray]:
    from onnx.reference import ReferenceEvaluator

    return list(ReferenceEvaluator(proto).run(None, {}))


def evaluate(
    nodes: Sequence[ir.Node],
    constants: Mapping[str, np.ndarray],
    outputs: Sequence[str],
    model: ir.Model,
) -> dict[str, np.ndarray]:
    """Values of `outputs` computed from `nodes` (in order) and the `constants` they read."""
    proto = _mini_model(nodes, constants, outputs, model)
    errors = []
    for runner in (_run_ort, _run_reference):
        try:
            results = runner(proto)
        except Exception as error:  # both runtimes raise their own error types
            errors.append(f"{runner.__name__[5:]}: {_first_line(error)}")
            continue
        if all(isinstance(result, np.ndarray) for result in results):
            return {name: np.asarray(result) for name, result in zip(outputs, results, strict=True)}
        errors.append(f"{runner.__name__[5:]}: a result is not a tensor")
    raise EvaluationError("; ".join(errors))


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0][:300] if text else type(error).__name__
