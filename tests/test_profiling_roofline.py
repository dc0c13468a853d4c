"""Roofline and findings from a real GPU report (ResNet-50 batch 8 on the H200,
tests/fixtures/gpu_truth) and the TorchScript export of the same network, against peaks
given in code (the H200's order of magnitude) until a fixture with measured peaks lands."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import nsdl_jupyter.figures  # noqa: F401 - registers report.roofline()
from nsdl_jupyter.profiling import INPUT_COPY, ProfileReport, ProfileSettingsError, node_work
from nsdl_jupyter.profiling.analysis._findings import FINDING_COLUMNS
from nsdl_jupyter.profiling.analysis._roofline import ROOFLINE_COLUMNS
from tests import real_exports

REPORT = Path(__file__).parent / "fixtures" / "gpu_truth" / "resnet50_b8_cuda_report.json"
MODEL = real_exports.FOLDER / "resnet50_torchscript.onnx"
INPUTS = {"input": [8, 3, 224, 224]}
PEAKS = {
    "gpu": "NVIDIA H200",
    "sm_clock_mhz": 1980,
    "flops_per_s": {"float32": 6.0e13, "tf32": 4.0e14, "float16": 7.5e14, "bfloat16": 7.5e14},
    "bytes_per_s": 4.0e12,
}


@pytest.fixture(scope="module")
def report() -> ProfileReport:
    loaded = ProfileReport.load(REPORT)
    loaded.metadata["peaks"] = PEAKS
    return loaded


def test_every_layer_gets_its_nodes_work_and_a_bound(report: ProfileReport) -> None:
    table = report.roofline_table(MODEL, inputs=INPUTS)
    assert list(table.columns) == ROOFLINE_COLUMNS
    assert table.attrs["peaks"]["gpu"] == "NVIDIA H200"
    compute = table[table["kind"] != "host copy"]
    assert set(compute["work_status"]) == {"ok"}
    # FLOPs are conserved: the layers' sum is the nodes' sum (fused rows cover Identity nodes)
    work = node_work(MODEL, INPUTS)
    assert compute["flops"].sum() == pytest.approx(work["flops"].sum())
    assert set(compute["bound"]) <= {"compute", "memory", "latency"}
    # the roof at a layer's intensity is min(peak, intensity x bandwidth), and % of roof its
    # ratio; a float32 Conv on onnxruntime's CUDA provider (use_tf32 defaults to 1): tf32
    row = compute.set_index("name").loc["/conv1/Conv"]
    assert row["flops"] == work.set_index("name").loc["/conv1/Conv", "flops"]
    assert row["achieved_flops_per_s"] == pytest.approx(row["flops"] / (row["time_ms"] / 1e3))
    assert row["dtype"] == "float32" and row["roof_dtype"] == "tf32"
    roof = min(PEAKS["flops_per_s"]["tf32"], row["intensity"] * PEAKS["bytes_per_s"])
    assert row["roof_flops_per_s"] == pytest.approx(roof)
    assert row["pct_of_roof"] == pytest.approx(100 * row["achieved_flops_per_s"] / roof)
    # a ReLU is memory traffic only: its % of roof is its bandwidth against the peak
    relu = compute[compute["op_type"] == "Relu"].iloc[0]
    assert relu["pct_of_roof"] == pytest.approx(relu["memory_pct"])
    assert relu["bound"] in ("memory", "latency")
    # the input copy moves the input batch over the host link: bytes, no roof
    copy = table.set_index("name").loc[INPUT_COPY]
    assert copy["bytes"] == 8 * 3 * 224 * 224 * 4 and copy["bound"] == "host copy"


def test_bound_follows_the_latency_cut_off(report: ProfileReport) -> None:
    strict = report.roofline_table(MODEL, inputs=INPUTS, latency_pct=60.0)
    loose = report.roofline_table(MODEL, inputs=INPUTS, latency_pct=1.0)
    assert (strict["bound"] == "latency").sum() > (loose["bound"] == "latency").sum()
    both = strict[strict["kind"] != "host copy"]
    below = both[["compute_pct", "memory_pct"]].max(axis=1) < 60.0
    assert (both.loc[below, "bound"] == "latency").all()
    assert (both.loc[~below, "bound"] != "latency").all()


def test_fp32_gemm_and_conv_meet_the_tf32_roof_unless_use_tf32_is_off(
    report: ProfileReport,
) -> None:
    """onnxruntime's CUDA provider runs float32 MatMul/Conv on TF32 tensor cores by default
    (use_tf32=1): those layers are measured against the tf32 roof, the rest against float32;
    with use_tf32=0 in the report's provider options, everything against float32."""
    table = report.roofline_table(MODEL, inputs=INPUTS)
    heavy = table["kind"].isin(["conv", "gemm"])
    assert (table.loc[heavy, "roof_dtype"] == "tf32").all() and heavy.sum() > 50
    assert (table.loc[~heavy & (table["flops"] > 0), "roof_dtype"] == "float32").all()
    off = ProfileReport.load(REPORT)
    off.metadata["peaks"] = PEAKS
    off.metadata["settings"]["provider_options"] = {"use_tf32": "0"}
    strict = off.roofline_table(MODEL, inputs=INPUTS)
    assert set(strict.loc[strict["flops"] > 0, "roof_dtype"]) == {"float32"}
    conv = strict.set_index("name").loc["/conv1/Conv"]
    assert conv["peak_flops_per_s"] == PEAKS["flops_per_s"]["float32"]


def test_findings_are_ranked_backed_by_figures_and_rolled_up(report: ProfileReport) -> None:
    found = report.findings(MODEL, inputs=INPUTS)
    assert list(found.columns) == FINDING_COLUMNS
    ranked = found[found["rule_id"] != "others"]["est_speedup_pct"]
    assert ranked.is_monotonic_decreasing
    assert found["rule_id"].iloc[-1] == "others" and len(found) <= 11
    assert (found["speedup_scope"] == "global").all()
    assert all(isinstance(e, dict) and e for e in found["evidence"])
    assert all(len(nodes) > 0 for nodes in found["nodes"])
    # host copies: 26 % of this run's GPU time, the first thing to fix, the copy rows' share
    copies = found.iloc[0]
    assert copies["rule_id"] == "host_copies" and copies["severity"] == "high"
    layers = report.layers
    share = layers[layers["op_type"] == "Memcpy"]["gpu_ms"].sum() / layers["gpu_ms"].sum()
    assert copies["est_speedup_pct"] == pytest.approx(100 * share, abs=1e-3)
    assert "io_binding=True" in copies["mitigation"]
    rules = set(found["rule_id"]) | set(found.iloc[-1]["evidence"]["rules"])
    assert {"fp32_tensor_cores", "launch_latency", "elementwise_chain"} <= rules
    # a global estimate is the local one weighted by the layers' share of GPU time
    fp32 = found[found["rule_id"] == "fp32_tensor_cores"].iloc[0]
    table = report.roofline_table(MODEL, inputs=INPUTS).set_index("name")
    layer = table.loc[table["onnx_nodes"].map(lambda n: n == fp32["nodes"])].iloc[0]
    assert fp32["est_speedup_pct"] == pytest.approx(
        fp32["local_speedup_pct"] * layer["share"], abs=1e-2
    )


def test_without_peaks_only_what_was_measured_is_said() -> None:
    bare = ProfileReport.load(REPORT)
    table = bare.roofline_table(MODEL, inputs=INPUTS)
    assert table.attrs["peaks"] is None and table["pct_of_roof"].isna().all()
    assert set(table["bound"]) == {"", "host copy"}
    found = bare.findings(MODEL, inputs=INPUTS)
    assert list(found["rule_id"]) == ["host_copies"]


@pytest.mark.parametrize(
    "peaks",
    [{"flops_per_s": {"float32": 1e13}}, {"flops_per_s": 1e13, "bytes_per_s": 1e12},
     {"flops_per_s": {"float16": -1.0}, "bytes_per_s": 1e12}, "fast"],
)  # fmt: skip
def test_malformed_peaks_say_the_interface(report: ProfileReport, peaks: object) -> None:
    with pytest.raises(ProfileSettingsError, match="bytes_per_s"):
        report.roofline_table(MODEL, inputs=INPUTS, peaks=peaks)  # type: ignore[arg-type]


def test_missing_model_file_says_pass_model(report: ProfileReport) -> None:
    with pytest.raises(ProfileSettingsError, match="pass model="):
        report.roofline_table()  # metadata names resnet50_b8.onnx, not here


def test_roofline_figure_draws_points_and_roofs(report: ProfileReport) -> None:
    fig = report.roofline(MODEL, inputs=INPUTS)
    roofs = [t for t in fig.data if t.name.endswith(" roof")]
    assert sorted(t.name for t in roofs) == sorted(f"{d} roof" for d in PEAKS["flops_per_s"])
    points = [t for t in fig.data if not t.name.endswith(" roof")]
    assert {t.name for t in points} >= {"Conv", "Relu", "Add", "Gemm"}
    assert sum(len(t.x) for t in points) == 121  # every layer but the two copies
    assert fig.layout.xaxis.type == "log" and fig.layout.yaxis.type == "log"
    fp16 = next(t for t in roofs if t.name == "float16 roof")
    assert max(fp16.y) == PEAKS["flops_per_s"]["float16"]
    assert "/conv1/Conv" in str([t.customdata for t in points])


def test_a_tensorrt_style_report_maps_fused_fp16_layers_to_their_nodes() -> None:
    """TensorRT layers cover several ONNX nodes and run in FP16: the work is the nodes'
    summed FLOPs, the bytes those at the group's border, halved for fp16, on the fp16 roof."""
    work = node_work(MODEL, INPUTS).set_index("name")
    conv, relu = "/conv1/Conv", "/relu/Relu"
    layers = pd.DataFrame({
        "name": ["conv1 + relu", "maxpool"], "op_type": ["CaskConvolution", "CaskPooling"],
        "precision": ["FP16", "FP16"], "onnx_nodes": [[conv, relu], ["/maxpool/MaxPool"]],
        "mean_ms": [0.05, 0.01],
    })  # fmt: skip
    trt = ProfileReport(layers, metadata={"runtime": "tensorrt", "peaks": PEAKS})
    table = trt.roofline_table(MODEL, inputs=INPUTS).set_index("name")
    fused = table.loc["conv1 + relu"]
    assert fused["flops"] == work.loc[conv, "flops"] + work.loc[relu, "flops"]
    # the border: the input batch and the weights in, the ReLU's output out (not the Conv's)
    border = 8 * 3 * 224 * 224 * 4 + work.loc[conv, "weight_bytes"] + 8 * 64 * 112 * 112 * 4
    assert fused["bytes"] == pytest.approx(border / 2)
    assert fused["roof_dtype"] == "float16"
    assert fused["peak_flops_per_s"] == PEAKS["flops_per_s"]["float16"]
    assert math.isfinite(fused["pct_of_roof"]) and np.isfinite(table["intensity"]).all()
