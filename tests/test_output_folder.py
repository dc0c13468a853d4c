"""The default output folder: one per model, under NSDL_OUTPUT_DIR or ./nsdl_output, never
beside the notebooks; a profile writes its trace there."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import onnx
import pytest

import nsdl_jupyter as nj
from nsdl_jupyter.profiling import OrtProfileSettings
from tests._document_models import conv_relu_model


@pytest.fixture(autouse=True)
def _default_root(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv("NSDL_OUTPUT_DIR", raising=False)
    nj.set_output_folder(None)
    yield
    nj.set_output_folder(None)


def test_root_is_the_setting_else_the_variable_else_cwd(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert nj.output_folder() == tmp_path / "nsdl_output"
    monkeypatch.setenv("NSDL_OUTPUT_DIR", str(tmp_path / "env"))
    assert nj.output_folder("m") == tmp_path / "env" / "m"
    nj.set_output_folder(tmp_path / "set")
    assert nj.output_folder("m") == tmp_path / "set" / "m"
    nj.set_output_folder(None)
    monkeypatch.setenv("NSDL_OUTPUT_DIR", "rel")
    assert nj.output_folder() == tmp_path / "rel"


def test_torch_names_become_one_folder_name(tmp_path: Path) -> None:
    nj.set_output_folder(tmp_path)
    folder = nj.output_folder("/encoder/layer.0:x")
    assert folder.parent == tmp_path and folder.name == "_encoder_layer.0_x"
    assert nj.output_folder("..").name == "model"  # never a way out of the root


def test_a_profile_writes_its_trace_in_the_model_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = tmp_path / "notebooks" / "net.onnx"
    model.parent.mkdir()
    onnx.save(conv_relu_model(), model)
    monkeypatch.chdir(model.parent)
    nj.set_output_folder(tmp_path / "out")
    report = nj.profile_ort(model, iterations=2, warmup=0)
    trace = tmp_path / "out" / "net" / "net_cpu_profile.json"
    assert trace.is_file()
    assert sorted(p.name for p in model.parent.iterdir()) == ["net.onnx"]  # nothing beside it
    assert report.metadata["trace_path"].endswith("net_cpu_profile.json")
    assert OrtProfileSettings().default_trace_path("net") == trace
