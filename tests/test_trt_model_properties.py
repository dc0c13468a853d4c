"""The model's TensorRT properties (`doc.tensorrt`) reach the engine build: real TensorRT-RTX
builds on this CPU with a dynamic-batch model and its profile; trtexec argv; version refusals."""

from __future__ import annotations

from pathlib import Path

import pytest

import nsdl_jupyter as nj
from nsdl_jupyter.document import ModelDocument
from nsdl_jupyter.profiling import TrtSettings, TrtSettingsError
from tests._document_models import dynamic_conv_document

PROFILE = {"min": [1, 3, 8, 8], "opt": [4, 3, 16, 8], "max": [8, 3, 32, 8]}


@pytest.fixture
def doc(tmp_path: Path) -> ModelDocument:
    return dynamic_conv_document(tmp_path, PROFILE)


def test_properties_merge_into_settings(doc: ModelDocument) -> None:
    doc.tensorrt.set_layer_precision("conv", "fp16")
    merged = TrtSettings(fp16=True).with_model_properties(doc.tensorrt)
    assert merged.optimization_profiles == ({"x": PROFILE},)
    assert merged.layer_precisions == {"conv": "fp16"} and merged.typing == "obey"
    own = {"x": {k: [2, 3, 8, 8] for k in PROFILE}}
    explicit = TrtSettings(
        typing="prefer", optimization_profiles=[own], layer_precisions={"conv": "fp32"}
    ).with_model_properties(doc.tensorrt)
    assert explicit.optimization_profiles == (own,)  # the call's own profiles win
    assert explicit.layer_precisions == {"conv": "fp32"} and explicit.typing == "prefer"
    with pytest.raises(TrtSettingsError, match="clear_layer_precisions"):
        TrtSettings(typing="strong").with_model_properties(doc.tensorrt)


def test_trtexec_argv_from_the_model(doc: ModelDocument) -> None:
    doc.tensorrt.set_layer_precision("relu", "fp16")
    settings = TrtSettings(backend="trtexec", fp16=True).with_model_properties(doc.tensorrt)
    argv = settings.trtexec_argv("m.onnx", "m.engine", version="10.3.0")
    for flag in (
        "--minShapes=x:1x3x8x8",
        "--optShapes=x:4x3x16x8",
        "--maxShapes=x:8x3x32x8",
        "--layerPrecisions=relu:fp16",
        "--precisionConstraints=obey",
        "--fp16",
    ):
        assert flag in argv
    with pytest.raises(TrtSettingsError, match=r"layer_precisions: TensorRT 11\.0.*clear_layer"):
        settings.trtexec_argv("m.onnx", "m.engine", version="11.0.0")


def test_trt11_refuses_layer_precisions_saying_what_to_do(doc: ModelDocument) -> None:
    doc.tensorrt.set_layer_precision("conv", "bf16")
    settings = TrtSettings(backend="tensorrt").with_model_properties(doc.tensorrt)
    settings.check("tensorrt", "10.8.0")
    with pytest.raises(TrtSettingsError, match="convert_tensors") as info:
        settings.check("tensorrt", "11.0.0")
    assert "build with TensorRT 10" in str(info.value)


@pytest.fixture
def rtx_settings() -> TrtSettings:
    pytest.importorskip("tensorrt_rtx", reason="needs TensorRT-RTX: pip install -e '.[trt-rtx]'")
    return TrtSettings(backend="tensorrt_rtx")


def test_rtx_builds_with_the_models_profile(
    doc: ModelDocument, rtx_settings: TrtSettings, tmp_path: Path
) -> None:
    doc.tensorrt.set_profile("x", [2, 3, 4, 8], [2, 3, 4, 8], [2, 3, 4, 8], profile=1)
    result = nj.export_engine(doc, tmp_path / "dyn.engine", rtx_settings)
    assert result.backend == "tensorrt_rtx"
    assert result.applied["optimization_profiles"] == 2
    # read back from the builder's profile objects (the engine itself needs a GPU to load)
    assert result.answer["optimization_profiles"] == [
        {"x": PROFILE},
        {"x": {k: [2, 3, 4, 8] for k in PROFILE}},
    ]
    assert result.engine.stat().st_size == result.engine_bytes > 0


def test_rtx_refuses_the_models_layer_precisions(
    doc: ModelDocument, rtx_settings: TrtSettings, tmp_path: Path
) -> None:
    doc.tensorrt.set_layer_precision("conv", "fp16")
    with pytest.raises(TrtSettingsError, match=r"TensorRT-RTX .*clear_layer_precisions"):
        nj.export_engine(doc, tmp_path / "p.engine", rtx_settings)
    assert not (tmp_path / "p.engine").exists()
