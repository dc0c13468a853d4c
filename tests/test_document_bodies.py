"""Editing the bodies of If/Loop nodes as documents of their own (open, edit, confirm)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnx_ir as ir
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import nsdl_jupyter as nj
from nsdl_jupyter.document import DocumentError, GraphEditError


def control_flow_model() -> onnx.ModelProto:
    """x -> If(cond): then = LeakyRelu(x) then a Loop adding the outer `step` `trips` times;
    else = Neg(x). Shaped like torch's exports: branches read outer-scope tensors by name."""
    loop_body = helper.make_graph(
        [
            helper.make_node("Identity", ["cond_in"], ["cond_out"], name="keep_going"),
            helper.make_node("Add", ["acc_in", "step"], ["acc_out"], name="accumulate"),
        ],
        "loop_body",
        [
            helper.make_tensor_value_info("i", TensorProto.INT64, []),
            helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
            helper.make_tensor_value_info("acc_in", TensorProto.FLOAT, [2, 3]),
        ],
        [
            helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
            helper.make_tensor_value_info("acc_out", TensorProto.FLOAT, [2, 3]),
        ],
    )
    then_branch = helper.make_graph(
        [
            helper.make_node("LeakyRelu", ["x"], ["act"], name="then_act", alpha=0.1),
            helper.make_node(
                "Loop", ["trips", "", "act"], ["looped"], name="then_loop", body=loop_body
            ),
        ],
        "then_branch",
        [],
        [helper.make_tensor_value_info("looped", TensorProto.FLOAT, [2, 3])],
    )
    else_branch = helper.make_graph(
        [helper.make_node("Neg", ["x"], ["negated"], name="else_neg")],
        "else_branch",
        [],
        [helper.make_tensor_value_info("negated", TensorProto.FLOAT, [2, 3])],
    )
    graph = helper.make_graph(
        [
            helper.make_node(
                "If",
                ["cond"],
                ["y"],
                name="branch",
                then_branch=then_branch,
                else_branch=else_branch,
            )
        ],
        "main",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]),
            helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
        initializer=[
            numpy_helper.from_array(np.array(3, np.int64), "trips"),
            numpy_helper.from_array(np.array(1.0, np.float32), "step"),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    return model


X = np.array([[-1.0, 2.0, -3.0], [4.0, -5.0, 6.0]], np.float32)


def run(path: Path, cond: bool) -> np.ndarray:
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return session.run(None, {"x": X, "cond": np.array(cond)})[0]


@pytest.fixture
def doc(tmp_path: Path) -> nj.ModelDocument:
    path = tmp_path / "flow.onnx"
    onnx.save(control_flow_model(), path)
    return nj.open_model(path)


def leaky(x: np.ndarray, alpha: float) -> np.ndarray:
    return np.where(x > 0, x, alpha * x)


def test_edit_inside_a_then_branch_confirm_save_run_and_undo(
    doc: nj.ModelDocument, tmp_path: Path
) -> None:
    original = tmp_path / "original.onnx"
    doc.save(original)
    np.testing.assert_allclose(run(original, True), leaky(X, 0.1) + 3, rtol=1e-6)
    with pytest.raises(GraphEditError, match="no node named 'then_act' in the main graph"):
        doc.set_attribute("then_act", "alpha", 0.5)

    then = doc.open_subgraph("branch", "then_branch")
    then.set_attribute("then_act", "alpha", 0.5)
    assert then.can_undo and not doc.can_undo
    with pytest.raises(DocumentError, match=r"branch\.then_branch is open"):
        doc.rename_node("branch", "other")
    with pytest.raises(DocumentError, match="confirm"):
        doc.save()
    then.confirm()

    assert doc.undo_description == "edit branch.then_branch"
    edited = tmp_path / "edited.onnx"
    doc.save(edited)
    np.testing.assert_allclose(run(edited, True), leaky(X, 0.5) + 3, rtol=1e-6)
    np.testing.assert_allclose(run(edited, False), -X)
    with pytest.raises(DocumentError, match="closed"):
        then.set_attribute("then_act", "alpha", 0.7)

    doc.undo()
    again = tmp_path / "again.onnx"
    doc.save(again)
    assert again.read_bytes() == original.read_bytes()


def test_nested_loop_body_inside_a_branch(doc: nj.ModelDocument, tmp_path: Path) -> None:
    step_users = len(doc.tensors["step"].uses())
    then = doc.open_subgraph("branch", "then_branch")
    body = then.open_subgraph("then_loop", "body")
    with pytest.raises(DocumentError, match=r"then_loop\.body is open"):
        then.set_attribute("then_act", "alpha", 0.5)
    mul = body.add_node("Mul", name="square", inputs=["acc_in", "acc_in"])
    body.disconnect("accumulate", 0)
    body.connect(mul.outputs[0], "accumulate", 0)
    body.confirm()
    then.confirm()
    out = tmp_path / "nested.onnx"
    doc.save(out)
    expected = leaky(X, 0.1)
    for _ in range(3):
        expected = expected * expected + 1  # acc * acc + step
    np.testing.assert_allclose(run(out, True), expected, rtol=1e-6)
    assert len(doc.tensors["step"].uses()) == step_users  # the old body's use left with it
    doc.undo()
    assert len(doc.tensors["step"].uses()) == step_users  # the old body's use, back, once


def test_discard_changes_nothing_and_frees_the_parent(doc: nj.ModelDocument) -> None:
    before = ir.to_proto(doc.model).SerializeToString(deterministic=True)
    x_users = len(doc.tensors["x"].uses())
    then = doc.open_subgraph("branch", "then_branch")
    then.remove_node("then_loop")
    then.discard()
    assert ir.to_proto(doc.model).SerializeToString(deterministic=True) == before
    assert len(doc.tensors["x"].uses()) == x_users
    doc.rename_node("branch", "choose")  # editable again
    assert not then.can_redo and "choose" in doc.nodes
    with pytest.raises(GraphEditError, match=r"no graph attribute .body.*then_branch"):
        doc.open_subgraph("choose", "body")


def test_create_a_body_empty_or_as_a_copy(doc: nj.ModelDocument) -> None:
    doc.create_subgraph("branch", "else_branch", copy_of="then_branch")
    copy = doc.nodes["branch"].attributes["else_branch"].as_graph()
    assert copy.name == "branch_else_branch"
    assert [n.name for n in copy] == ["then_act", "then_loop"]
    doc.undo()
    assert doc.nodes["branch"].attributes["else_branch"].as_graph().name == "else_branch"
    doc.create_subgraph("branch", "else_branch")
    assert len(doc.nodes["branch"].attributes["else_branch"].as_graph()) == 0
    with pytest.raises(nj.NsdlError, match="no graph attribute 'alpha'"):
        doc.create_subgraph("branch", "alpha")
