"""The ActivityPanel's TensorRT side from Python: the form, its version gate, a real
TensorRT-RTX export with the model's optimization profile, cancel, and errors."""

from __future__ import annotations

import threading
from pathlib import Path

import onnx
import pytest

from nsdl_jupyter.document import ModelDocument
from nsdl_jupyter.examples import resnet18
from nsdl_jupyter.profiling import TrtSettings
from nsdl_jupyter.widgets.profile._activity_panel import TRT_SETTINGS_KEY, ActivityPanel
from nsdl_jupyter.widgets.profile._trt_settings_form import TrtSettingsForm
from tests._document_models import dynamic_conv_document, dynamic_conv_model

PROFILE = {"min": [1, 3, 8, 8], "opt": [2, 3, 8, 8], "max": [4, 3, 16, 8]}


def test_form_defaults_round_trip_and_bad_values() -> None:
    form = TrtSettingsForm()
    assert form.settings() == TrtSettings()  # the seed's defaults
    form.controls["fp16"].value = True
    form.controls["optimization_level"].value = 5
    form.controls["max_aux_streams"].value = "0"
    form.controls["workspace_mib"].value = "512"
    form.controls["plugins"].value = "a.so, b.so"
    assert form.settings() == TrtSettings(
        fp16=True, optimization_level=5, max_aux_streams=0, workspace_mib=512,
        plugins=("a.so", "b.so"),
    )  # fmt: skip
    assert TrtSettingsForm(form.settings()).settings() == form.settings()
    form.controls["workspace_mib"].value = "lots"
    with pytest.raises(ValueError, match="workspace limit"):
        form.settings()
    assert form.controls["trtexec_path"].disabled
    form.controls["backend"].value = "trtexec"
    assert not form.controls["trtexec_path"].disabled


def test_gate_disables_what_the_version_lacks_with_the_reason() -> None:
    form = TrtSettingsForm(TrtSettings(fp16=True, typing="obey"))
    form.gate("tensorrt", "10.8.0")
    assert not form.controls["fp16"].disabled and set(form.reasons) == {"trtexec_path"}
    form.gate("tensorrt", "11.0.0")
    assert form.controls["fp16"].disabled and form.controls["fp16"].value is False
    assert "convert_to_fp16" in form.reasons["fp16"]
    assert form.controls["cudnn_tactics"].disabled
    assert [v for _, v in form.controls["typing"].options] == ["default", "strong"]
    assert form.controls["typing"].value == "default"
    assert "TensorRT 11.0.0" in form.reasons["typing"]
    form.gate("tensorrt", "10.8.0")  # back: enabled again
    assert not form.controls["fp16"].disabled and "fp16" not in form.reasons
    assert len(form.controls["typing"].options) == 4


@pytest.fixture
def doc(tmp_path: Path) -> ModelDocument:
    return dynamic_conv_document(tmp_path, PROFILE)


@pytest.fixture
def rtx() -> None:
    pytest.importorskip("tensorrt_rtx", reason="needs TensorRT-RTX: pip install -e '.[trt-rtx]'")


@pytest.mark.usefixtures("rtx")
def test_panel_exports_with_tensorrt_rtx_and_the_models_profile(
    doc: ModelDocument, tmp_path: Path
) -> None:
    panel = ActivityPanel(doc)
    assert panel._trt_box.layout.display == "none" and panel.backends is None  # not probed
    panel.framework = "tensorrt"
    assert panel._ort_box.layout.display == "none" and panel._export.layout.display is None
    assert panel.trt_backend()[0] == "tensorrt_rtx"  # 'auto' without the tensorrt module
    assert "tensorrt_rtx 1." in panel._trt_title.value
    assert panel.trt_form.controls["fp16"].disabled
    assert "TensorRT-RTX" in panel.trt_form.reasons["fp16"]
    panel.trt_form.controls["optimization_level"].value = 2
    panel._engine_path.value = str(tmp_path / "dyn.engine")
    panel.export()
    assert panel.status == "running" and panel._export.disabled
    panel.wait(300)
    assert panel.status == "done", panel._message.value
    engine = panel.engine
    assert engine is not None and engine.engine == tmp_path / "dyn.engine"
    assert engine.answer["optimization_profiles"] == [{"x": PROFILE}]
    assert engine.applied["builder_optimization_level"] == 2
    assert "Engine written" in panel._message.value and panel._progress.value == 1.0
    assert doc.companion[TRT_SETTINGS_KEY] == TrtSettings(optimization_level=2).to_json()
    again = ActivityPanel(doc, framework="tensorrt")  # the settings kept for this model
    assert again.trt_form.controls["optimization_level"].value == 2


@pytest.mark.usefixtures("rtx")
def test_panel_export_cancel_and_settings_errors(tmp_path: Path) -> None:
    path = tmp_path / "r.onnx"
    onnx.save(resnet18(image_size=64, num_classes=10), path)
    panel = ActivityPanel(path, framework="tensorrt")
    panel._engine_path.value = str(tmp_path / "r.engine")
    panel.trt_form.controls["workspace_mib"].value = "-3"
    panel.export()
    assert panel.status == "failed" and "workspace limit" in panel._message.value
    panel.trt_form.controls["workspace_mib"].value = ""
    started = threading.Event()
    panel.export()
    assert panel.job is not None
    panel.job.add_listener(lambda _p: started.set())
    assert started.wait(120)
    panel.cancel()
    panel.wait(300)
    assert panel.status == "cancelled", panel._message.value
    assert not (tmp_path / "r.engine").exists() and not panel._export.disabled


def test_profile_button_runs_profile_trt_and_says_why_it_cannot_here(tmp_path: Path) -> None:
    """The Profile button calls nj.profile_trt; on this GPU-less machine that is refused with
    the reason shown in the panel (the run itself is for a GPU with TensorRT)."""
    path = tmp_path / "dyn.onnx"
    onnx.save(dynamic_conv_model(), path)
    panel = ActivityPanel(path)
    assert not panel._trt_profile.disabled
    panel.profile_trt()
    if panel.job is not None:
        panel.wait(300)
    assert panel.status == "failed"
    assert "GPU" in panel._message.value or "cuda" in panel._message.value.lower()
