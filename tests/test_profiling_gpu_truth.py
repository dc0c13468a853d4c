"""GPU truth on a CPU machine: kernel placement, GPU report parts and saved GPU reports, from
real H200 runs kept in tests/fixtures/gpu_truth (made by its make.sh)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from nsdl_jupyter.profiling import ProfileReport
from nsdl_jupyter.profiling._errors import TraceFormatError
from nsdl_jupyter.profiling.gpu._kernels import INPUT_COPY, OUTPUT_COPY, attribute_kernels
from nsdl_jupyter.profiling.gpu._report import NO_GPU_TIMING, gpu_report_parts
from nsdl_jupyter.profiling.ort._trace import parse_ort_trace
from tests.gpu_truth import MODELS

FIXTURES = Path(__file__).parent / "fixtures" / "gpu_truth"


def _raw() -> tuple[object, dict[str, object]]:
    answer = json.loads((FIXTURES / "resnet50_b8_raw_answer.json").read_text())
    parsed = parse_ort_trace(
        FIXTURES / "resnet50_b8_raw_trace.json", skip_runs=int(answer["skip_runs"])
    )
    return parsed, answer


def test_every_kernel_of_a_real_run_is_placed_in_a_node_or_a_copy() -> None:
    parsed, _ = _raw()
    timing = attribute_kernels(FIXTURES / "resnet50_b8_raw_kernels.npz", parsed.windows)
    runs = len(parsed.run_ms)
    layers = set(parsed.layers["name"])
    assert set(timing.gpu_ms) <= layers | {INPUT_COPY, OUTPUT_COPY}
    assert timing.gpu_ms[INPUT_COPY] > 0 and timing.gpu_ms[OUTPUT_COPY] > 0
    assert timing.placed_share > 0.75  # the rest: copying the 4.8 MB input batch
    # every kernel of the kept runs is counted once: per-run sums match the busy time
    summed = sum(timing.gpu_ms.values())
    assert 0.9 * timing.busy_ms.mean() <= summed <= timing.busy_ms.mean() * 1.0001
    assert (timing.busy_ms <= timing.span_ms + 1e-9).all()
    assert len(timing.busy_ms) == runs
    # the Conv nodes launch the convolution kernels: cuDNN / xmma names land on Convs
    conv = timing.kernels[timing.kernels["layer"] == "/conv1/Conv"]
    assert len(conv) >= 1 and conv["calls"].sum() >= 1
    assert timing.timeline["start_ms"].is_monotonic_increasing


def test_gpu_parts_give_layers_gpu_ms_and_copies_on_the_io_nodes() -> None:
    parsed, answer = _raw()
    parts = gpu_report_parts(
        answer["gpu"],
        parsed,
        FIXTURES / "resnet50_b8_raw_kernels.npz",
        (["/conv1/Conv"], ["/fc/Gemm"]),
    )
    layers = parts.layers.set_index("name")
    assert layers.loc[INPUT_COPY, "onnx_nodes"] == ["/conv1/Conv"]
    assert layers.loc[OUTPUT_COPY, "mapped_as"] == "inserted"
    assert (layers["gpu_ms"] >= 0).all() and layers["gpu_ms"].sum() > 0
    report = ProfileReport(parts.layers, metadata={"gpu": parts.metadata},
                           kernels=parts.kernels, gpu_metrics=parts.metrics)  # fmt: skip
    assert report.has_gpu_times and report.time_column == "gpu_ms"
    assert report.mapped_share() == pytest.approx(1.0)  # copies are drawn on their nodes
    assert parts.metrics is not None and "sm_clock_mhz" in parts.metrics


def test_missing_cupti_says_so_and_keeps_host_times() -> None:
    parsed, _ = _raw()
    gpu = {"timing": {"available": False, "message": "per-kernel GPU times need CUPTI..."}}
    parts = gpu_report_parts(gpu, parsed, None)
    assert "gpu_ms" not in parts.layers and parts.metadata["timing"]["available"] is False
    assert "CUPTI" in parts.metadata["timing"]["message"]
    assert gpu_report_parts({"metrics": {}}, parsed, None).metadata["timing"]["message"] == (
        NO_GPU_TIMING
    )
    report = ProfileReport(parts.layers)
    assert not report.has_gpu_times and report.time_column == "mean_ms"


@pytest.mark.parametrize("model", MODELS)
def test_h200_reports_load_and_meet_the_issue_goals(model: str) -> None:
    report = ProfileReport.load(FIXTURES / f"{model}_b8_cuda_report.json")
    timing = report.metadata["gpu"]["timing"]
    assert report.has_gpu_times and not report.kernels.empty and not report.gpu_metrics.empty
    summed = float(report.layers["gpu_ms"].sum())
    assert 0.9 * timing["busy_ms_mean"] <= summed <= timing["busy_ms_mean"] * 1.0001
    assert timing["busy_ms_mean"] <= float(report.latency["p50"])
    assert report.mapped_share() >= 0.95
    assert report.metadata["gpu"]["clocks"]["locked"]


def test_a_report_with_kernels_round_trips(tmp_path: Path) -> None:
    report = ProfileReport.load(FIXTURES / "resnet50_b8_cuda_report.json")
    again = ProfileReport.load(report.save(tmp_path / "r.json"))
    assert again.kernels.shape == report.kernels.shape
    assert again.kernel_timeline["duration_ms"].sum() == pytest.approx(
        report.kernel_timeline["duration_ms"].sum()
    )
    assert again.gpu_metrics.columns.tolist() == report.gpu_metrics.columns.tolist()
    assert again.node_times() == pytest.approx(report.node_times())


def test_a_bad_kernel_file_is_a_trace_format_error(tmp_path: Path) -> None:
    parsed, _ = _raw()
    bad = tmp_path / "k.npz"
    bad.write_bytes(b"not an npz")
    with pytest.raises(TraceFormatError, match="kernel record file"):
        attribute_kernels(bad, parsed.windows)
    data = dict(np.load(FIXTURES / "resnet50_b8_raw_kernels.npz"))
    data["name_id"] = data["name_id"] + 10_000
    np.savez(bad, **data)
    with pytest.raises(TraceFormatError, match="out of range"):
        attribute_kernels(bad, parsed.windows)
