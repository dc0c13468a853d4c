"""ProfileReport: statistics, save/load, compare, and the GPU report kept as a fixture."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import onnx
import pandas as pd
import pytest
from test_profiling_helpers import OWN_FIXTURES, mlp_model

from nsdl_jupyter.profiling import ProfileReport, profile_ort

GPU_OPT = OWN_FIXTURES / "ort_cuda_resnet50_b8_opt_report.json"
GPU_NOOPT = OWN_FIXTURES / "ort_cuda_resnet50_b8_noopt_report.json"


@pytest.fixture(scope="module")
def cpu_report(tmp_path_factory: pytest.TempPathFactory) -> ProfileReport:
    folder = tmp_path_factory.mktemp("report")
    path = folder / "mlp.onnx"
    onnx.save(mlp_model(layers=3), path)
    return profile_ort(path, iterations=5, warmup=1, graph_optimization=False,
                       trace_path=folder / "trace.json")  # fmt: skip


def test_latency_statistics(cpu_report: ProfileReport) -> None:
    values = cpu_report.latencies_ms
    lat = cpu_report.latency
    assert lat["count"] == 5
    assert lat["p50"] == pytest.approx(np.percentile(values, 50))
    assert lat["p90"] == pytest.approx(np.percentile(values, 90))
    assert lat["p99"] == pytest.approx(np.percentile(values, 99))
    assert lat["mean"] == pytest.approx(values.mean())
    assert lat["min"] <= lat["p50"] <= lat["p90"] <= lat["p99"] <= lat["max"]


def test_save_and_load_give_the_same_report(cpu_report: ProfileReport, tmp_path: Path) -> None:
    path = cpu_report.save(tmp_path / "sub" / "r.json")
    text = path.read_text()
    json.loads(text)  # strict JSON: no NaN literals
    assert "NaN" not in text
    again = ProfileReport.load(path)
    pd.testing.assert_frame_equal(again.layers, cpu_report.layers)
    pd.testing.assert_frame_equal(again.timeline_events, cpu_report.timeline_events)
    assert np.array_equal(again.latencies_ms, cpu_report.latencies_ms)
    assert again.metadata == json.loads(json.dumps(cpu_report.metadata))
    assert not list(tmp_path.glob("sub/.*partial"))
    with pytest.raises(IsADirectoryError):
        cpu_report.save(tmp_path)
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "something-else"}')
    with pytest.raises(ValueError, match="not a profile report"):
        ProfileReport.load(bad)


def test_views_of_the_data(cpu_report: ProfileReport) -> None:
    top = cpu_report.top(3)
    assert list(top["mean_ms"]) == sorted(cpu_report.layers["mean_ms"], reverse=True)[:3]
    by_op = cpu_report.by_op_type()
    assert set(by_op.index) == {"MatMul", "Add", "Relu"}
    assert list(by_op["layers"]) and by_op["layers"].sum() == 9
    assert by_op["share"].sum() == pytest.approx(1.0)
    assert "end-to-end p50" in cpu_report.summary()
    html = cpu_report._repr_html_()
    assert "fc0_matmul" in html or "fc1_matmul" in html or "fc2_matmul" in html


def test_compare_two_reports(cpu_report: ProfileReport) -> None:
    faster = ProfileReport(
        cpu_report.layers.assign(mean_ms=cpu_report.layers["mean_ms"] / 2),
        latencies_ms=cpu_report.latencies_ms / 2,
        metadata={**cpu_report.metadata, "model_name": "faster"},
    )
    table = cpu_report.compare(faster)
    assert len(table) == len(cpu_report.layers)
    assert np.allclose(table["speedup"], 2.0)
    assert np.allclose(table["delta_ms"], -table["mean_ms_a"] / 2)
    assert table.attrs["speedup_p50"] == pytest.approx(2.0)
    assert table.attrs["matched_layers"] == len(cpu_report.layers)
    # sorted by the size of the change
    assert list(table["delta_ms"].abs()) == sorted(table["delta_ms"].abs(), reverse=True)


def test_gpu_fixture_from_the_h200() -> None:
    """The report the activity produced on the H200 (tests/fixtures/make_gpu_reports.sh)."""
    report = ProfileReport.load(GPU_OPT)
    md = report.metadata
    assert md["provider"] == "CUDAExecutionProvider"
    assert "H200" in md["device"]
    assert md["runtime_version"].startswith("1.31")
    assert md["iterations"] == 100 and len(report.latencies_ms) == 100
    assert len(report.layers) == 122
    assert set(report.layers["provider"]) == {"CUDAExecutionProvider"}
    assert report.layers["in_graph"].all()
    # ResNet-50 batch 8, bare: ~2.4 ms; the profiled runs are slower (the profiler syncs)
    assert 1.5 < report.latency["p50"] < 4.0
    assert np.median(md["profiled_run_ms"]) > report.latency["p50"]
    assert report.layers.iloc[0]["output_shapes"] == "float[8,64,112,112]"


def test_gpu_optimization_on_vs_off() -> None:
    on, off = ProfileReport.load(GPU_OPT), ProfileReport.load(GPU_NOOPT)
    assert off.metadata["graph_optimization"] is False
    table = on.compare(off)
    assert table.attrs["matched_layers"] == 122
    assert math.isfinite(table.attrs["speedup_p50"])
