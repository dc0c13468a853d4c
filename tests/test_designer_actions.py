"""The Designer's whole-model actions from Python, driven through their widgets as a click
would: Global Modifications (FP16, sanitize, opset, tensor dtype, a user tool) on a real
model with real onnxruntime comparisons and undo; Profile Model with onnxruntime for real and
with TensorRT (refused here, no GPU, in one sentence); Export TensorRT Engine with
TensorRT-RTX building on this CPU, the output guard in front of it."""

from __future__ import annotations

import inspect
import sys
import time
from pathlib import Path

import numpy as np
import onnx
import onnx_ir as ir
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

import nsdl_jupyter as nj
from nsdl_jupyter.document import ModelDocument
from nsdl_jupyter.examples import small_transformer
from nsdl_jupyter.transforms import ToolStore, UserTool, convert_to_fp16
from nsdl_jupyter.widgets.designer._designer import Designer
from nsdl_jupyter.widgets.designer._global_modifications import GlobalModifications

pytestmark = pytest.mark.usefixtures("settings_dir")


@pytest.fixture(scope="module")
def bert_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny BERT of nsdl_jupyter.examples (TorchScript-style names), saved once."""
    path = tmp_path_factory.mktemp("bert") / "bert.onnx"
    onnx.save(small_transformer(), path)
    return path


@pytest.fixture
def designer(bert_file: Path, tmp_path: Path) -> Designer:
    path = tmp_path / "bert.onnx"
    path.write_bytes(bert_file.read_bytes())
    return Designer(nj.open_model(path))


@pytest.fixture
def overflow(tmp_path: Path) -> Designer:
    """x * 1e5 -> Relu -> * 1e-5: the scaled tensor overflows float16 wherever it is stored,
    so FP16 validation keeps its producer and its user float32 (TorchScript-style names)."""

    def constant(name: str, value: float) -> onnx.NodeProto:
        tensor = helper.make_tensor("value", TensorProto.FLOAT, [], [value])
        return helper.make_node("Constant", [], [f"{name}_output_0"], name=name, value=tensor)

    nodes = [
        constant("/encoder/Constant", 1e5),
        helper.make_node("Mul", ["x", "/encoder/Constant_output_0"],
                         ["/encoder/Mul_output_0"], name="/encoder/Mul"),
        helper.make_node("Relu", ["/encoder/Mul_output_0"], ["/encoder/act/Relu_output_0"],
                         name="/encoder/act/Relu"),
        constant("/decoder/Constant", 1e-5),
        helper.make_node("Mul", ["/encoder/act/Relu_output_0", "/decoder/Constant_output_0"],
                         ["y"], name="/decoder/Mul"),
    ]  # fmt: skip
    graph = helper.make_graph(
        nodes,
        "main_graph",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [8, 8])],
    )
    path = tmp_path / "overflow.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]), path)
    return Designer(nj.open_model(path))


def canonical(doc: ModelDocument) -> bytes:
    return bytes(ir.to_proto(doc.model).SerializeToString(deterministic=True))


def run_dialog(dialog: GlobalModifications, name: str, **values: object) -> str | None:
    dialog.choice.value = name
    for key, value in values.items():
        dialog.controls[key].value = value
    dialog.run_button.click()
    return dialog.wait(180)


def test_fp16_from_the_dialog_is_one_undoable_edit_with_its_summary(designer: Designer) -> None:
    doc = designer.doc
    original = canonical(doc)
    topology = designer.graph._topology
    dialog = designer.global_modifications()
    tabs = designer.right.tabs
    assert tabs.children[tabs.selected_index] is dialog and tabs.get_title(3) == "Modify"
    assert designer.global_modifications() is dialog  # opened once, shown again
    assert run_dialog(dialog, "fp16") == "done", dialog.result.value
    summary = dialog.result.value
    assert "FP16 conversion: nodes 191 → 192, initializers 48 → 48" in summary
    assert "max abs diff" in summary and "nsdl-modify-diffs" in summary  # per output
    assert dialog.progress.value == 1.0 and not dialog.run_button.disabled
    weights = [v.const_value for v in doc.model.graph.initializers.values()]
    assert any(t is not None and t.dtype == ir.DataType.FLOAT16 for t in weights)
    assert doc.undo_description == "FP16 conversion" and doc.dirty
    assert designer.graph._topology != topology  # the canvas was sent the new graph
    designer.undo_button.click()
    assert canonical(doc) == original and not doc.can_undo
    designer.close()


def test_sanitize_and_tensor_dtype_summaries_and_undo(designer: Designer) -> None:
    doc = designer.doc
    original = canonical(doc)
    dialog = designer.global_modifications()
    assert run_dialog(dialog, "sanitize", fuse_batchnorm=True) == "done", dialog.result.value
    assert "Sanitize: nodes 191 → 78" in dialog.result.value
    assert len(list(doc.model.graph)) == 78
    # a batch dtype conversion whose result onnxruntime refuses: applied, and said so
    assert run_dialog(dialog, "tensor_dtype", from_dtype="float32") == "done"
    assert "onnxruntime cannot run the result" in dialog.result.value
    assert doc.undo() and doc.undo() and canonical(doc) == original
    designer.close()


def test_refused_options_and_cancel_leave_the_model_as_it_was(designer: Designer) -> None:
    doc = designer.doc
    original = canonical(doc)
    dialog = designer.global_modifications()
    assert run_dialog(dialog, "opset", target=999) is None  # refused before any work
    assert "target opset must be an int from 1 to" in dialog.result.value
    assert "nsdl-failure-details" in dialog.result.value  # the details toggle
    assert run_dialog(dialog, "tensor_dtype", from_dtype="int8", to_dtype="int8") is None
    assert "pick another dtype" in dialog.result.value
    dialog.choice.value = "fp16"
    run = dialog.run()
    assert run is not None and dialog.run() is None  # one run at a time
    dialog.cancel_button.click()
    assert dialog.wait(5) == "cancelled" and "model is unchanged" in dialog.result.value
    run._thread.join(180)  # the worker ends unseen
    assert canonical(doc) == original and not doc.can_undo
    designer.close()


FLOAT32_KEPT = {"/encoder/Mul", "/encoder/act/Relu"}


def test_fp16_validation_in_the_dialog_keeps_the_nodes_that_break_accuracy(
    overflow: Designer,
) -> None:
    doc = overflow.doc
    dialog = overflow.global_modifications()
    dialog.choice.value = "fp16"
    api = set(inspect.signature(convert_to_fp16).parameters)
    assert {"validate", "tolerance", "provider", "max_rounds"} <= set(dialog.controls) & api
    assert dialog.controls["validate"].value is True  # as convert_to_fp16's default
    assert run_dialog(dialog, "fp16") == "done", dialog.result.value
    result = dialog.current.result if dialog.current is not None else None
    assert result is not None and set(result.kept_float32) == FLOAT32_KEPT
    assert "max abs error" in result.kept_float32["/encoder/Mul"]  # why, as the API logs it
    summary = dialog.result.value
    assert "2 node(s) kept float32 by validation" in summary and "nsdl-modify-kept" in summary
    assert all(name in summary for name in FLOAT32_KEPT)
    assert "kept 2 node(s) float32 so the result passes validation" in summary  # the warning
    assert result.differences and all(d.ok for d in result.differences)
    assert "<td>ok</td>" in summary
    assert result.status is not None and result.status.counts["validation_rounds"] >= 3
    inferred = onnx.shape_inference.infer_shapes(ir.to_proto(doc.model)).graph.value_info
    dtypes = {v.name: v.type.tensor_type.elem_type for v in inferred}
    assert {dtypes[f"{name}_output_0"] for name in FLOAT32_KEPT} == {TensorProto.FLOAT}
    assert dtypes["/decoder/Constant_output_0"] == TensorProto.FLOAT16  # converted
    x = np.random.default_rng(0).standard_normal((8, 8)).astype(np.float32)
    session = ort.InferenceSession(ir.to_proto(doc.model).SerializeToString())
    (y,) = session.run(None, {"x": x.astype(np.float16)})
    np.testing.assert_allclose(np.asarray(y, np.float32), np.maximum(x, 0), atol=1e-2)
    assert doc.undo_description == "FP16 conversion" and doc.undo() and not doc.can_undo
    overflow.close()


def test_cancel_in_fp16_validation_stops_it_at_once_and_the_dialog_stays_usable(
    overflow: Designer,
) -> None:
    doc = overflow.doc
    original = canonical(doc)
    dialog = overflow.global_modifications()
    dialog.choice.value = "fp16"
    run = dialog.run()
    assert run is not None
    deadline = time.monotonic() + 60
    while dialog.phase.value != "validation round 2" and not run.done:
        assert time.monotonic() < deadline, dialog.phase.value
        time.sleep(0.02)
    dialog.cancel_button.click()  # while the bisection runs
    assert run.state == "cancelled" and dialog.phase.value == "cancelled"  # said at once
    assert "model is unchanged" in dialog.result.value
    assert not dialog.run_button.disabled and dialog.cancel_button.disabled
    run._thread.join(30)
    assert not run._thread.is_alive()
    status = run.result.status
    # the worker stopped before its next round: no bisection result, nothing applied
    assert status is None or "nodes_kept_by_validation" not in status.counts
    assert not run.result.kept_float32
    assert canonical(doc) == original and not doc.can_undo
    assert run_dialog(dialog, "fp16", validate=False) == "done", dialog.result.value
    assert "<td>over " in dialog.result.value  # unvalidated: the overflow shows, nothing kept
    assert "nsdl-modify-kept" not in dialog.result.value
    assert doc.undo_description == "FP16 conversion" and doc.undo() and not doc.can_undo
    overflow.close()


def test_an_edit_during_the_run_refuses_the_stale_result(designer: Designer) -> None:
    doc = designer.doc
    dialog = designer.global_modifications()
    dialog.choice.value = "sanitize"
    assert dialog.run() is not None
    doc.set_attribute("/embeddings/LayerNorm/LayerNormalization", "epsilon", 1e-6)
    assert dialog.wait(180) == "failed"
    assert "edited while the modification ran" in dialog.result.value
    assert doc.undo_description is not None and "epsilon" in doc.undo_description
    designer.close()


def test_a_user_tool_from_the_dialog(designer: Designer) -> None:
    resave = "import onnx, sys; onnx.save(onnx.load(sys.argv[1]), sys.argv[2])"
    ToolStore().add(UserTool("copy model", sys.executable, ["-c", resave, "$Model", "$Output"]))
    doc = designer.doc
    dialog = designer.global_modifications()
    dialog.choice.value = "tool"
    assert dialog.controls["tool"].options == ("copy model",)
    dialog.run_button.click()
    assert dialog.wait(180) == "done", dialog.result.value
    assert "User tool: nodes 191 → 191, initializers 48 → 48; max abs diff 0" in (
        dialog.result.value
    )
    assert doc.undo_description == "User tool"
    designer.close()


def test_profile_model_runs_onnxruntime_and_tensorrt_says_why_not_here(
    designer: Designer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # the onnxruntime trace lands here
    designer.profile_button.click()
    panel = designer.activity
    assert panel is not None and panel.model is designer.doc and panel.framework == "ort"
    assert designer.right.tabs.children[designer.right.tabs.selected_index] is panel
    panel._iterations.value, panel._warmup.value = 2, 1
    panel._run.click()
    report = panel.wait(180)
    assert report is not None, panel._message.value
    assert set(report.node_times()) <= set(designer.doc.nodes)
    # the same panel on TensorRT: the profile's own controls, shared where ORT has them
    assert designer.profile_model("tensorrt") is panel and panel.framework == "tensorrt"
    assert not panel._lock_clocks.disabled  # CPU provider chosen, but TensorRT is the GPU
    panel._passes.value = 3
    panel._prebuilt.value = str(designer.doc.path)
    panel._trt_profile.click()
    assert panel.status == "failed" and "is not a .engine / .plan / .trt file" in (
        panel._message.value
    )
    panel._prebuilt.value = ""
    panel._trt_profile.click()
    panel.wait(300)
    assert panel.status == "failed"
    sentence = panel._message.value.split("</div>")[0]
    assert "nsdl-failure" in sentence and ("GPU" in sentence or "cuda" in sentence.lower())
    assert "<details" in panel._message.value
    designer.close()


def test_export_engine_from_the_designer(designer: Designer, tmp_path: Path) -> None:
    pytest.importorskip("tensorrt_rtx", reason="needs TensorRT-RTX: pip install -e '.[trt-rtx]'")
    model = designer.doc.path
    assert model is not None
    designer.engine_button.click()
    panel = designer.activity
    assert panel is not None and panel.framework == "tensorrt"
    panel._engine_path.value = str(model)  # the model itself: the output guard refuses
    panel._export.click()
    assert panel.status == "failed" and "model" in panel._message.value
    assert nj.open_model(model).nodes  # intact
    panel._engine_path.value = str(tmp_path / "bert.engine")
    panel._export.click()
    panel.wait(600)
    assert panel.status == "done", panel._message.value
    assert "Engine written" in panel._message.value and "bytes, built in" in panel._message.value
    assert (tmp_path / "bert.engine").stat().st_size > 0
    designer.close()
