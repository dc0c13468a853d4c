"""An onnxruntime report against a TensorRT one, side by side per ONNX node.

The TensorRT report is the real trtexec export of a QAT MobileNet (../shared/fixtures/trtexec);
the onnxruntime report is a real run (child process, CPU) of the first layers of that
MobileNet rebuilt in code with the same ONNX node names (the fixture ships no .onnx file).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from test_profiling_helpers import shared_fixture

import nsdl_jupyter as nj
from nsdl_jupyter.figures import compare_figure, compare_table

pytestmark = pytest.mark.may_skip  # the trtexec samples live beside the repository


def mobilenet_qat_head() -> onnx.ModelProto:
    """QuantizeLinear_2, then three QDQ convolutions named as in the engine: weights quantized
    by QuantizeLinear_8/25/42, Conv_12/29/46, Clip_16/33 (ReLU6)."""
    rng = np.random.default_rng(0)
    inits = [
        numpy_helper.from_array(np.array(0.02, np.float32), "scale"),
        numpy_helper.from_array(np.array(0, np.int8), "zero"),
        numpy_helper.from_array(np.array(0.0, np.float32), "lo"),
        numpy_helper.from_array(np.array(6.0, np.float32), "hi"),
    ]
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "scale", "zero"], ["xq"], name="QuantizeLinear_2"),
        helper.make_node("DequantizeLinear", ["xq", "scale", "zero"], ["x0"], name="Dq_3"),
    ]
    convs = [  # (weight quantizer, conv, clip or None, out, in/group, kernel, stride, groups)
        ("QuantizeLinear_8", "Conv_12", "Clip_16", 32, 3, 3, 2, 1),
        ("QuantizeLinear_25", "Conv_29", "Clip_33", 32, 1, 3, 1, 32),
        ("QuantizeLinear_42", "Conv_46", None, 16, 32, 1, 1, 1),
    ]
    current = "x0"
    for index, (wq, conv, clip, out, cin, k, stride, groups) in enumerate(convs):
        w = f"w{index}"
        inits.append(numpy_helper.from_array(
            (rng.standard_normal((out, cin, k, k)) * 0.1).astype(np.float32), w))  # fmt: skip
        nodes += [
            helper.make_node("QuantizeLinear", [w, "scale", "zero"], [w + "q"], name=wq),
            helper.make_node("DequantizeLinear", [w + "q", "scale", "zero"], [w + "d"],
                             name=f"Dq_w{index}"),
            helper.make_node("Conv", [current, w + "d"], [conv + "_out"], name=conv,
                             strides=[stride] * 2, pads=[k // 2] * 4, group=groups),
        ]  # fmt: skip
        current = conv + "_out"
        if clip is not None:
            nodes.append(helper.make_node("Clip", [current, "lo", "hi"], [clip], name=clip))
            current = clip
    graph = helper.make_graph(
        nodes,
        "mobilenet_qat_head",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 224, 224])],
        [helper.make_tensor_value_info(current, TensorProto.FLOAT, None)],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> tuple[nj.ProfileReport, nj.ProfileReport]:
    profile = shared_fixture("trtexec", "mobilenet.qat.onnx.engine.profile.json")
    trt = nj.load_trtexec(profile)
    folder = tmp_path_factory.mktemp("ort")
    ort = nj.profile_ort(
        mobilenet_qat_head(), iterations=3, warmup=1, graph_optimization=False,
        trace_path=folder / "trace.json",
    )  # fmt: skip
    return ort, trt


def test_ort_and_trtexec_side_by_side_per_onnx_node(reports) -> None:  # type: ignore[no-untyped-def]
    ort, trt = reports
    table = ort.compare(trt)
    assert table.attrs["by"] == "onnx_node"  # the runtimes differ
    rows = {tuple(r.onnx_nodes): r for r in table.itertuples()}
    fused = rows[("QuantizeLinear_8", "Conv_12", "Clip_16")]
    assert fused.layers_b == ["features.0.0.weight + QuantizeLinear_8 + Conv_12 + PWN(Clip_16)"]
    assert sorted(fused.layers_a) == ["Clip_16", "Conv_12", "QuantizeLinear_8"]
    ort_ms = ort.layers.set_index("name")["mean_ms"]
    assert fused.mean_ms_a == pytest.approx(
        ort_ms[["QuantizeLinear_8", "Conv_12", "Clip_16"]].sum()
    )
    trt_ms = trt.layers.set_index("name")["mean_ms"]
    assert fused.mean_ms_b == pytest.approx(trt_ms[fused.layers_b[0]])
    assert fused.delta_ms == pytest.approx(fused.mean_ms_b - fused.mean_ms_a)
    assert rows[("QuantizeLinear_2",)].layers_b == ["QuantizeLinear_2"]
    assert ("QuantizeLinear_42", "Conv_46") in rows
    # the DequantizeLinear nodes TensorRT folds away are ORT-only; the rest of the engine TRT-only
    assert math.isnan(rows[("Dq_3",)].mean_ms_b)
    trt_only = table[table["mean_ms_a"].isna()]
    assert len(trt_only) == len(trt.layers) - 4
    assert table.attrs["matched_layers"] == 4
    by_name = ort.compare(trt, by="name")
    assert by_name.attrs["by"] == "name"
    assert by_name.attrs["matched_layers"] == 1  # only QuantizeLinear_2 has the same name
    with pytest.raises(ValueError, match="by='layer'"):
        ort.compare(trt, by="layer")


def test_compare_view_draws_node_groups(reports) -> None:  # type: ignore[no-untyped-def]
    ort, trt = reports
    table = compare_table(ort, trt)
    figure = compare_figure(ort, trt, n=10)
    names = list(figure.data[0].y)
    assert "QuantizeLinear_8 + Conv_12 + Clip_16" in names
    assert len(names) == int(table.dropna(subset=["mean_ms_a", "mean_ms_b"]).shape[0]) == 4


def test_same_runtime_still_compares_by_name(reports, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    _, trt = reports
    assert trt.compare(trt).attrs["by"] == "name"
    assert (trt.compare(trt)["delta_ms"].abs() < 1e-12).all()
