"""trtexec exports into a ProfileReport, from the real samples (../shared/fixtures/trtexec)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from onnx import TensorProto, helper
from test_profiling_helpers import shared_fixture

from nsdl_jupyter.profiling import ProfileReport, load_trtexec, trt_layer_nodes

PREFIX = "mobilenet.qat.onnx.engine."
pytestmark = pytest.mark.may_skip  # the samples live beside the repository, not in it


def _sample(kind: str) -> Path:
    return shared_fixture("trtexec", PREFIX + kind + ".json")


def test_profile_layer_info_and_times_together() -> None:
    report = load_trtexec(
        profile=_sample("profile"), layer_info=_sample("graph"), times=_sample("timing")
    )
    raw = json.loads(_sample("profile").read_text())
    records = [r for r in raw if "name" in r]
    assert len(report.layers) == len(records) == 73
    assert report.metadata["iterations"] == raw[0]["count"] == 6610
    layers = report.layers.set_index("name")
    conv = "features.0.0.weight + QuantizeLinear_8 + Conv_12 + PWN(Clip_16)"
    assert layers.loc[conv, "mean_ms"] == pytest.approx(0.00872257)
    assert layers.loc[conv, "median_ms"] == pytest.approx(0.008608)
    assert layers.loc[conv, "total_ms"] == pytest.approx(57.6562)
    assert layers.loc[conv, "op_type"] == "CaskConvolution"
    assert layers.loc[conv, "precision"] == "INT8"
    assert layers.loc[conv, "input_shapes"] == "int8[1,3,224,224]"
    assert layers.loc[conv, "output_shapes"] == "int8[1,32,112,112]"
    assert layers.loc[conv, "onnx_nodes"] == ["QuantizeLinear_8", "Conv_12", "Clip_16"]
    assert layers.loc["QuantizeLinear_2", "onnx_nodes"] == ["QuantizeLinear_2"]
    assert math.isclose(report.layers["share"].sum(), 1.0, rel_tol=1e-9)
    # shares agree with trtexec's own percentages
    pct = {r["name"]: r["percentage"] for r in records}
    assert layers.loc[conv, "share"] * 100 == pytest.approx(pct[conv], rel=0.02)
    assert set(report.layers["precision"]) >= {"INT8", "FP32"}

    timing = json.loads(_sample("timing").read_text())
    assert len(report.latencies_ms) == len(timing)
    assert report.latency["p50"] == pytest.approx(
        sorted(t["latencyMs"] for t in timing)[len(timing) // 2], rel=0.05
    )
    # run metadata found beside the profile
    assert report.metadata["device"] == "NVIDIA TITAN RTX"
    assert report.metadata["build_options"]["Precision"] == "FP32+FP16+INT8"
    assert report.metadata["model_name"] == "mobilenet.qat"
    # the timeline is the engine order, back to back
    tl = report.timeline_events
    assert list(tl["name"]) == list(report.layers["name"])
    assert (tl["start_ms"].diff().dropna() >= 0).all()


def test_older_exports_without_count_or_median(tmp_path: Path) -> None:
    raw = json.loads(_sample("profile").read_text())
    old = [{k: v for k, v in r.items() if k != "medianMs"} for r in raw if "name" in r]
    path = tmp_path / "old.profile.json"
    path.write_text(json.dumps(old))
    report = load_trtexec(profile=path)
    assert len(report.layers) == 73
    assert report.layers["median_ms"].isna().all()
    assert report.layers["mean_ms"].notna().all()
    assert report.metadata["iterations"] is None
    assert report.layers["onnx_nodes"].map(len).sum() > 73  # names still map to nodes


def test_layer_info_alone_and_times_alone() -> None:
    info = load_trtexec(layer_info=_sample("graph"))
    assert len(info.layers) == 73 and info.layers["mean_ms"].isna().all()
    times = load_trtexec(times=_sample("timing"))
    assert len(times.layers) == 0 and len(times.latencies_ms) > 0
    with pytest.raises(TypeError, match="needs profile="):
        load_trtexec()


def test_report_round_trip(tmp_path: Path) -> None:
    report = load_trtexec(profile=_sample("profile"), layer_info=_sample("graph"))
    again = ProfileReport.load(report.save(tmp_path / "trt.json"))
    assert list(again.layers["onnx_nodes"]) == list(report.layers["onnx_nodes"])
    assert list(again.layers["precision"]) == list(report.layers["precision"])
    assert again.metadata["device"] == report.metadata["device"]


def test_with_the_model_only_real_nodes_are_kept() -> None:
    nodes = [
        helper.make_node("QuantizeLinear", ["a", "s", "z"], ["b"], name="QuantizeLinear_8"),
        helper.make_node("Conv", ["b", "w"], ["c"], name="Conv_12"),
    ]
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info("a", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("c", TensorProto.FLOAT, [1])],
    )  # fmt: skip
    model = helper.make_model(graph)
    report = load_trtexec(profile=_sample("profile"), model=model)
    layers = report.layers.set_index("name")
    conv = "features.0.0.weight + QuantizeLinear_8 + Conv_12 + PWN(Clip_16)"
    assert layers.loc[conv, "onnx_nodes"] == ["QuantizeLinear_8", "Conv_12"]
    assert report.node_times()["Conv_12"] == pytest.approx(layers.loc[conv, "mean_ms"])


@pytest.mark.parametrize(
    ("name", "metadata", "expected"),
    [
        ("Conv_1 + Relu_2", None, ["Conv_1", "Relu_2"]),
        ("w.weight + QuantizeLinear_8 + Conv_12 + PWN(Clip_16)", None,
         ["QuantizeLinear_8", "Conv_12", "Clip_16"]),
        ("PWN(PWN(Sigmoid_3, Mul_4), Add_5)", None, ["Sigmoid_3", "Mul_4", "Add_5"]),
        ("Reformatting CopyNode for Input Tensor 0 to GlobalAveragePool_843", None, []),
        ("copied_squeeze_after_(Unnamed Layer* 850) [ElementWise]", None, []),
        ("{ForeignNode[/enc/MatMul.../enc/Add_3]}", None, ["/enc/MatMul", "/enc/Add_3"]),
        ("fused 17", "[ONNX Layer: /conv1/Conv]\x1f[ONNX Layer: /relu/Relu]",
         ["/conv1/Conv", "/relu/Relu"]),
    ],
)  # fmt: skip
def test_fused_layer_names_map_back(name: str, metadata: str | None, expected: list[str]) -> None:
    assert trt_layer_nodes(name, metadata) == expected
