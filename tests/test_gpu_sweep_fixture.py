"""The issue-26 sweep made on the H200 (tests/fixtures/gpu_sweep, saved with SweepResult.save):
it loads without a GPU, holds the 6 configurations of each model with GPU-true columns, and
shows what fp16 does at batch 32."""

from __future__ import annotations

import shutil
import tarfile
from pathlib import Path

import pytest

from nsdl_jupyter.sweeps import SweepResult, SweepSettingsError

FIXTURE = Path(__file__).parent / "fixtures" / "gpu_sweep" / "sweep.tar.gz"
HEAVY = {"Conv", "Gemm", "MatMul", "FusedMatMul", "FusedConv"}


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("gpu_sweep")
    with tarfile.open(FIXTURE) as archive:
        archive.extractall(folder, filter="data")
    return folder


@pytest.mark.parametrize("model", ["resnet50", "bert"])
def test_the_h200_sweep_has_six_gpu_timed_rows(saved: Path, model: str) -> None:
    result = SweepResult.load(saved / model)
    frame = result.frame
    assert len(result) == 6 and set(frame["status"]) == {"ok"}
    assert sorted(zip(frame["batch"], frame["precision"], strict=True)) == sorted(
        (b, p) for b in (1, 8, 32) for p in ("fp32", "fp16")
    )
    assert set(frame["backend"]) == {"ort-cuda"} and set(frame["gpu_name"]) == {"NVIDIA H200"}
    assert (frame["gpu_busy_ms"] > 0).all() and (frame["memory_mb"] > 0).all()
    assert (frame["gpu_busy_ms"] <= frame["p50_ms"]).all()  # kernel time within the run
    for index in frame.index:
        layers = result.report(int(index)).layers
        assert layers["gpu_ms"].notna().any()
        # the per-layer GPU times add up to the row's GPU busy time (one stream)
        assert layers["gpu_ms"].sum() == pytest.approx(frame.loc[index, "gpu_busy_ms"], rel=1e-3)


@pytest.mark.parametrize("model", ["resnet50", "bert"])
def test_fp16_is_faster_at_batch_32_also_on_the_gemm_and_conv_layers(
    saved: Path, model: str
) -> None:
    result = SweepResult.load(saved / model)
    fp32 = {"batch": 32, "precision": "fp32"}
    fp16 = {"batch": 32, "precision": "fp16"}

    def heavy_ms(which: dict[str, object]) -> float:
        layers = result.report(which).layers
        return float(layers.loc[layers["op_type"].isin(HEAVY), "gpu_ms"].sum())

    row32, row16 = (result.frame.loc[result._index(w)] for w in (fp32, fp16))
    assert row16["p50_ms"] < 0.7 * row32["p50_ms"]  # measured: 0.59 (ResNet-50), 0.60 (BERT)
    assert row16["throughput_per_s"] > row32["throughput_per_s"]
    assert heavy_ms(fp16) < 0.8 * heavy_ms(fp32)  # measured: 0.75, 0.54


def test_the_heatmap_and_plot_of_the_h200_sweep_draw_without_a_gpu(saved: Path) -> None:
    result = SweepResult.load(saved / "resnet50")
    times = result.layer_times("gpu_ms")
    assert times.shape[1] == 6 and times.notna().any().all()
    figure = result.heatmap(column="gpu_ms", top=10)
    assert len(figure.data[0].y) == 10
    assert len(result.plot("p50_ms", x="batch").data) == 2  # one line per precision


def test_a_saved_sweep_saves_and_loads_again(saved: Path, tmp_path: Path) -> None:
    result = SweepResult.load(saved / "bert")
    again = SweepResult.load(result.save(tmp_path / "copy"))
    assert again.frame.equals(result.frame) and again.axes == result.axes
    assert again.report(5).layers.equals(result.report(5).layers)


def test_a_folder_that_is_not_a_saved_sweep_is_refused(saved: Path, tmp_path: Path) -> None:
    with pytest.raises(SweepSettingsError, match=r"written by SweepResult\.save"):
        SweepResult.load(tmp_path)
    shutil.copy(next((saved / "bert" / "runs").iterdir()), tmp_path / "sweep.json")
    with pytest.raises(SweepSettingsError, match="is not a saved sweep"):
        SweepResult.load(tmp_path)
