"""Models and paths the profiling tests share (built in code), with checks of the models."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

REPO = Path(__file__).resolve().parent.parent
SHARED_FIXTURES = REPO.parent / "shared" / "fixtures"
OWN_FIXTURES = Path(__file__).resolve().parent / "fixtures"
LOOP_TRIPS = 5


def shared_fixture(*parts: str) -> Path:
    """A file of the shared real samples (<repo>/../shared/fixtures); skips, saying why, when
    that folder is not on this machine."""
    path = SHARED_FIXTURES.joinpath(*parts)
    if not SHARED_FIXTURES.is_dir():
        pytest.skip(
            f"{SHARED_FIXTURES} is absent on this machine: the real trtexec/onnxruntime samples "
            "live there (beside the repository); tests of them are skipped"
        )
    if not path.is_file():
        pytest.skip(f"{path} is absent from the shared fixtures folder")
    return path


def control_flow_model() -> onnx.ModelProto:
    """x[batch, 64] -> ReduceSum -> Greater -> If(then: Add, Relu | else: Mul) -> Loop(5 x
    Add, Tanh, Identity) -> Sigmoid. Nodes inside If/Loop bodies run nested in their parent."""
    then_graph = helper.make_graph(
        [
            helper.make_node("Add", ["x", "x"], ["t_out"], name="then_add"),
            helper.make_node("Relu", ["t_out"], ["t_out2"], name="then_relu"),
        ],
        "then",
        [],
        [helper.make_tensor_value_info("t_out2", TensorProto.FLOAT, ["batch", 64])],
    )
    else_graph = helper.make_graph(
        [helper.make_node("Mul", ["x", "x"], ["e_out"], name="else_mul")],
        "else",
        [],
        [helper.make_tensor_value_info("e_out", TensorProto.FLOAT, ["batch", 64])],
    )
    body = helper.make_graph(
        [
            helper.make_node("Identity", ["cond_in"], ["cond_out"], name="body_cond"),
            helper.make_node("Add", ["acc_in", "x"], ["acc_out"], name="body_add"),
            helper.make_node("Tanh", ["acc_out"], ["scan_out"], name="body_tanh"),
        ],
        "body",
        [
            helper.make_tensor_value_info("i", TensorProto.INT64, []),
            helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
            helper.make_tensor_value_info("acc_in", TensorProto.FLOAT, ["batch", 64]),
        ],
        [
            helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
            helper.make_tensor_value_info("acc_out", TensorProto.FLOAT, ["batch", 64]),
            helper.make_tensor_value_info("scan_out", TensorProto.FLOAT, ["batch", 64]),
        ],
    )
    nodes = [
        helper.make_node("ReduceSum", ["x"], ["s"], name="sum", keepdims=0),
        helper.make_node("Greater", ["s", "zero"], ["c"], name="gt"),
        helper.make_node("If", ["c"], ["y"], name="branch", then_branch=then_graph,
                         else_branch=else_graph),
        helper.make_node("Loop", ["trip", "", "y"], ["z", "scans"], name="loop", body=body),
        helper.make_node("Sigmoid", ["z"], ["out"], name="final"),
    ]  # fmt: skip
    graph = helper.make_graph(
        nodes,
        "control_flow",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 64])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, ["batch", 64])],
        initializer=[
            numpy_helper.from_array(np.array(0.0, np.float32), "zero"),
            numpy_helper.from_array(np.array(LOOP_TRIPS, np.int64), "trip"),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def mlp_model(hidden: int = 256, layers: int = 4, batch: int | str = "batch") -> onnx.ModelProto:
    """x[batch, hidden] -> (MatMul -> Add -> Relu) x layers -> y; names fc{i}_matmul etc."""
    rng = np.random.default_rng(0)
    nodes, inits = [], []
    x = "x"
    for i in range(layers):
        w = numpy_helper.from_array(
            (rng.standard_normal((hidden, hidden)) / np.sqrt(hidden)).astype(np.float32), f"w{i}"
        )
        b = numpy_helper.from_array(np.zeros(hidden, np.float32), f"b{i}")
        inits += [w, b]
        nodes += [
            helper.make_node("MatMul", [x, f"w{i}"], [f"m{i}"], name=f"fc{i}_matmul"),
            helper.make_node("Add", [f"m{i}", f"b{i}"], [f"a{i}"], name=f"fc{i}_add"),
            helper.make_node("Relu", [f"a{i}"], [f"r{i}"], name=f"fc{i}_relu"),
        ]
        x = f"r{i}"
    graph = helper.make_graph(
        nodes,
        "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, hidden])],
        [helper.make_tensor_value_info(x, TensorProto.FLOAT, [batch, hidden])],
        initializer=inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def two_input_model() -> onnx.ModelProto:
    """ids[batch, seq] int64 and mask[batch, seq] float -> Cast(ids) * mask -> y."""
    nodes = [
        helper.make_node("Cast", ["ids"], ["f"], name="cast", to=TensorProto.FLOAT),
        helper.make_node("Mul", ["f", "mask"], ["y"], name="mul"),
    ]
    graph = helper.make_graph(
        nodes,
        "two_inputs",
        [
            helper.make_tensor_value_info("ids", TensorProto.INT64, ["batch", 8]),
            helper.make_tensor_value_info("mask", TensorProto.FLOAT, ["batch", 8]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 8])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


@pytest.mark.parametrize("build", [control_flow_model, mlp_model, two_input_model])
def test_helper_models_are_valid(build: object) -> None:
    model = build()  # type: ignore[operator]
    onnx.checker.check_model(model, full_check=True)
