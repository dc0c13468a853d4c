"""Editing the bodies of If/Loop nodes as documents of their own (open, edit, confirm)."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnx_ir as ir
import onnxruntime as ort
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

import nsdl_jupyter as nj
from nsdl_jupyter.document import DocumentError, GraphEditError
from tests import real_exports
from tests.test_document_undo_property import edits


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


def function_model() -> onnx.ModelProto:
    """y = Scaled(x) with a local function `local::Scaled(t) = t * @alpha + t`, whose `alpha`
    is an attribute parameter read through ref_attr_name, as onnxscript writes functions."""
    alpha = onnx.AttributeProto(
        name="value_float", type=onnx.AttributeProto.FLOAT, ref_attr_name="alpha"
    )
    constant = helper.make_node("Constant", [], ["a"], name="alpha_const")
    constant.attribute.append(alpha)
    function = helper.make_function(
        "local",
        "Scaled",
        ["t"],
        ["out"],
        [
            constant,
            helper.make_node("Mul", ["t", "a"], ["scaled"], name="scale"),
            helper.make_node("Add", ["scaled", "t"], ["out"], name="skip"),
        ],
        opset_imports=[helper.make_opsetid("", 17)],
        attributes=["alpha"],
    )
    graph = helper.make_graph(
        [helper.make_node("Scaled", ["x"], ["y"], name="block", domain="local", alpha=2.0)],
        "main",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
    )
    model = helper.make_model(
        graph,
        functions=[function],
        opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("local", 1)],
    )
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    return model


def run_x(path: Path) -> list[np.ndarray]:
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return session.run(None, {"x": X})


def test_edit_a_local_function_confirm_run_and_undo(tmp_path: Path) -> None:
    source = tmp_path / "functions.onnx"
    onnx.save(function_model(), source)
    doc = nj.open_model(source)
    assert list(doc.functions) == [("local", "Scaled", "")]
    original = tmp_path / "original.onnx"
    doc.save(original)
    np.testing.assert_allclose(run_x(original)[0], X * 2 + X)

    body = doc.open_function("Scaled", "local")
    assert body.parameters == {"alpha": None}
    body.set_parameter("alpha", 3.0)  # a default for instances that give none
    body.rename_node("skip", "residual")
    body.set_attribute("alpha_const", "value_float", 0.5)  # the constant no longer reads @alpha
    body.confirm()
    edited = tmp_path / "edited.onnx"
    doc.save(edited)
    np.testing.assert_allclose(run_x(edited)[0], X * 0.5 + X)
    saved = onnx.load(edited).functions[0]
    assert [n.name for n in saved.node][-1] == "residual"
    assert saved.attribute_proto[0].f == 3.0

    doc.undo()
    again = tmp_path / "again.onnx"
    doc.save(again)
    assert again.read_bytes() == original.read_bytes()


def test_a_new_function_instantiated_twice_then_deleted(tmp_path: Path) -> None:
    source = tmp_path / "plain.onnx"
    onnx.save(control_flow_model(), source)
    doc = nj.open_model(source)
    doc.create_function("Twice", "blocks", ["a"], ["b"], attributes={"gain": None})
    assert doc.opset_imports["blocks"] == 1
    body = doc.open_function("Twice", "blocks")
    body.remove_node("b_placeholder")  # and with it the output it made
    body.add_node("Add", name="sum", inputs=["a", "a"])
    body.add_graph_output("sum_C")
    body.confirm()
    with pytest.raises(nj.NsdlError, match=r"missing \['gain'\]"):
        doc.add_node("Twice", "blocks", inputs=["y"])
    first = doc.add_node("Twice", "blocks", inputs=["y"], attributes={"gain": 1.5})
    second = doc.add_node("Twice", "blocks", inputs=[first.outputs[0]], attributes={"gain": 2})
    assert first.attributes["gain"].type == ir.AttributeType.FLOAT
    doc.add_graph_output(second.outputs[0].name)
    out = tmp_path / "twice.onnx"
    doc.save(out)
    session = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"])
    y, quadrupled = session.run(None, {"x": X, "cond": np.array(False)})
    np.testing.assert_allclose(quadrupled, 4 * y)

    doc.delete_function("Twice", "blocks")  # the instances stay, as custom operators
    assert {d.node for d in doc.check() if "custom operator" in d.message} == {
        first.name,
        second.name,
    }
    doc.undo()
    assert ("blocks", "Twice", "") in doc.functions
    with pytest.raises(GraphEditError, match="no local function blocks::Nope"):
        doc.open_function("Nope", "blocks")


def _bodies_of(doc: nj.ModelDocument) -> list[tuple[str, str]]:
    return sorted(
        (name, attr.name)
        for name, node in doc.nodes.items()
        for attr in node.attributes.values()
        if attr.type == ir.AttributeType.GRAPH
    )


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    steps=st.lists(
        st.one_of(
            st.tuples(st.just("open"), st.integers(0, 99)),
            st.tuples(st.just("confirm"), st.just(0)),
            st.tuples(st.just("discard"), st.just(0)),
            st.tuples(st.just("edit"), edits()),
        ),
        min_size=1,
        max_size=30,
    )
)
def test_random_edits_across_bodies_then_undo_all_restore_the_bytes(
    tmp_path: Path, steps: list[tuple[str, Any]]
) -> None:
    doc = nj.open_model(_saved(tmp_path, control_flow_model()))
    original = ir.to_proto(doc.model).SerializeToString(deterministic=True)
    stack: list[nj.ModelDocument] = [doc]
    for action, argument in steps:
        top = stack[-1]
        if action == "open" and _bodies_of(top):
            node, attribute = _bodies_of(top)[argument % len(_bodies_of(top))]
            stack.append(top.open_subgraph(node, attribute))
        elif action in {"confirm", "discard"} and len(stack) > 1:
            getattr(stack.pop(), action)()
        elif action == "edit":
            # ZeroDivisionError: the edit picks a node or tensor of a graph that has none left
            with contextlib.suppress(DocumentError, ZeroDivisionError):
                argument(top)
    while len(stack) > 1:
        stack.pop().confirm()
    while doc.undo():
        pass
    assert ir.to_proto(doc.model).SerializeToString(deterministic=True) == original


def _saved(folder: Path, model: onnx.ModelProto) -> Path:
    path = folder / f"model_{len(list(folder.iterdir()))}.onnx"
    onnx.save(model, path)
    return path


@pytest.mark.parametrize("name", ["control_flow_torchscript", "control_flow_dynamo"])
def test_real_torch_export_edit_the_then_branch_and_the_loop_body(
    name: str, tmp_path: Path
) -> None:
    """torch's own If (both exporters) and Loop (TorchScript, scripted `for`): edit inside,
    confirm, save, run; the outputs change as the edits imply; undo-all gives the bytes back."""
    doc = nj.open_model(real_exports.save(name, tmp_path))
    original = tmp_path / "original.onnx"
    doc.save(original)
    weights = {k: v.const_value.numpy() for k, v in doc.graph.initializers.items() if v.const_value}
    x = np.abs(np.random.default_rng(0).standard_normal((2, 32))).astype(np.float32)  # sum > 0

    def linear(t: np.ndarray, layer: str, alpha: float = 1.0) -> np.ndarray:
        return alpha * t @ weights[f"{layer}.weight"].T + weights[f"{layer}.bias"]

    def run_n(path: Path, n: int) -> np.ndarray:
        session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        return session.run(None, {"x": x, "n": np.array(n, np.int64)})[0]

    branch = next(node for node in doc.nodes.values() if node.op_type == "If")
    then = doc.open_subgraph(branch, "then_branch")
    gemm = next(node for node in then.nodes.values() if node.op_type == "Gemm")
    then.set_attribute(gemm, "alpha", 2.0)
    then.confirm()
    edited = tmp_path / "edited.onnx"
    doc.save(edited)
    gated = np.maximum(linear(x, "then_proj", alpha=2.0), 0)
    np.testing.assert_allclose(run_n(edited, 0), gated, rtol=1e-4, atol=1e-5)

    loops = [node for node in doc.nodes.values() if node.op_type == "Loop"]
    if loops:  # the TorchScript export: y = y + sigmoid(step(y)) becomes y + tanh(step(y))
        body = doc.open_subgraph(loops[0], "body")
        sigmoid = next(node for node in body.nodes.values() if node.op_type == "Sigmoid")
        add = next(node for node in body.nodes.values() if node.op_type == "Add")
        tanh = body.add_node("Tanh", name="squash", inputs=[sigmoid.inputs[0]])
        body.connect(tanh.outputs[0], add, 1, replace=True)
        body.remove_node(sigmoid)
        body.confirm()
        doc.save(edited)
        np.testing.assert_allclose(
            run_n(edited, 1), gated + np.tanh(linear(gated, "step")), rtol=1e-4, atol=1e-5
        )
    while doc.undo():
        pass
    doc.save(edited)
    assert edited.read_bytes() == original.read_bytes()
