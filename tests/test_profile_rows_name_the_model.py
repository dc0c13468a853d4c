"""Profile rows speak the model: each row is named by the model's node it stands for (module
path + op), onnxruntime's own name kept beside it, in the report, its timeline, the figures,
the table and the ProfileView; and the figures read well (distinct op-type colours shared by
every view, cut labels, titles clear of the axis). Real torch exports, profiled for real."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import nsdl_jupyter as nj
from nsdl_jupyter import figures
from nsdl_jupyter.figures._plotly import LABEL_WIDTH, PALETTE, TOP_AXIS_MARGIN, palette_colour
from nsdl_jupyter.profiling import ProfileReport
from nsdl_jupyter.widgets.profile._profile_view import ProfileView
from tests import real_exports


def _profile(name: str, folder: Path) -> ProfileReport:
    path = real_exports.save(name, folder)
    return nj.profile_ort(
        path, iterations=2, warmup=1, intra_op_threads=2, trace_path=folder / "trace.json"
    )


@pytest.fixture(scope="module")
def resnet(tmp_path_factory: pytest.TempPathFactory) -> ProfileReport:
    return _profile("resnet50_torchscript", tmp_path_factory.mktemp("resnet"))


@pytest.fixture(scope="module")
def vit(tmp_path_factory: pytest.TempPathFactory) -> ProfileReport:
    return _profile("vit_tiny_hf_dynamo", tmp_path_factory.mktemp("vit"))


def test_an_nchwc_row_is_named_by_the_models_conv(resnet: ProfileReport) -> None:
    row = resnet.layers.set_index("name").loc["/layer2/layer2.2/relu_1/Relu_output_0_nchwc"]
    assert row["op_type"] == "Conv"
    assert row["node"] == "/layer2/layer2.2/conv2/Conv +Relu"
    assert resnet.layers["node"].is_unique
    events = resnet.timeline_events.set_index("name")
    assert events.loc["/layer2/layer2.2/relu_1/Relu_output_0_nchwc", "node"] == row["node"]


def test_a_dynamo_row_is_named_by_module_path_and_op(vit: ProfileReport) -> None:
    nodes = vit.layers["node"]
    assert not nodes.str.startswith("node_").any(), nodes[nodes.str.startswith("node_")]
    assert (nodes == "/layers.0/attention/q_proj/MatMul +Add").any()  # MatMulAddFusion
    fused = vit.layers[vit.layers["mapped_as"] == "fused"].iloc[0]
    assert fused["node"] != fused["name"] and fused["node"].startswith("/")


def _inserting_model(path: Path) -> Path:
    """TorchScript-shaped pieces onnxruntime rewrites by inserting nodes of its own: a Linear on
    a 3-D input (MatMul + Add become a Gemm between two Reshapes) and q, k, v taken apart by
    Gathers (Llama's and Swin's attention: one Split, then a Squeeze per Gather)."""
    rng = np.random.default_rng(0)

    def index(i: int, name: str) -> onnx.NodeProto:
        value = numpy_helper.from_array(np.array(i, np.int64))
        return helper.make_node("Constant", [], [f"{name}_output_0"], name=name, value=value)

    qkv = "/attn/Transpose_output_0"
    nodes = [
        helper.make_node("MatMul", ["x", "fc.weight"], ["/fc/MatMul_output_0"], name="/fc/MatMul"),
        helper.make_node("Add", ["fc.bias", "/fc/MatMul_output_0"], ["h"], name="/fc/Add"),
        helper.make_node("Reshape", ["h", "shape"], ["r"], name="/attn/Reshape"),
        helper.make_node("Transpose", ["r"], [qkv], name="/attn/Transpose", perm=[2, 0, 1, 3]),
        *(index(i, f"/attn/Constant_{i}") for i in range(3)),
        *(
            helper.make_node(
                "Gather",
                [qkv, f"/attn/Constant_{i}_output_0"],
                [t],
                name=f"/attn/Gather_{i}",
                axis=0,
            )
            for i, t in enumerate("qkv")
        ),
        helper.make_node("Transpose", ["k"], ["kt"], name="/attn/Transpose_1", perm=[0, 2, 1]),
        helper.make_node("MatMul", ["q", "kt"], ["s"], name="/attn/MatMul"),
        helper.make_node("MatMul", ["s", "v"], ["y"], name="/attn/MatMul_1"),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 8, 16])],
        [
            numpy_helper.from_array(rng.standard_normal((16, 48)).astype(np.float32), "fc.weight"),
            numpy_helper.from_array(rng.standard_normal(48).astype(np.float32), "fc.bias"),
            numpy_helper.from_array(np.array([2, 8, 3, 16], np.int64), "shape"),
        ],
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def test_rows_onnxruntime_inserted_are_named_by_the_node_they_serve(tmp_path: Path) -> None:
    """Swin and Llama exports: a third of the rows were onnxruntime's made-up names
    (`gemm_input_reshape_token_24`, `Squeeze_token_18`, `Squeeze`), which say nothing of the
    model; each now names the model node its time goes to, and its own op type."""
    report = nj.profile_ort(
        _inserting_model(tmp_path / "inserting.onnx"), iterations=1, warmup=0, intra_op_threads=1
    )
    layers = report.layers
    inserted = layers[layers["mapped_as"] == "inserted"]
    assert {"Reshape", "Squeeze"} <= set(inserted["op_type"])  # both rewrites happened
    assert layers["node"].str.startswith("/").all(), list(layers["node"])
    assert layers["node"].is_unique
    by_name = layers.set_index("name")["node"]
    # the Reshape before the Gemm serves the Gemm's main node, its MatMul (not its Add)
    assert by_name["gemm_input_reshape"] == "/fc/MatMul (inserted Reshape)"
    squeezes = inserted[inserted["op_type"] == "Squeeze"]["node"]
    assert squeezes.str.contains(r"^/attn/\S+ \(inserted Squeeze\)", regex=True).all()


def test_figures_and_table_show_model_nodes_with_the_runtime_name_beside(
    resnet: ProfileReport,
) -> None:
    label = "/layer2/layer2.2/conv2/Conv +Relu"
    table = figures.layers_table(resnet, filter_text="layer2.2/conv2")
    assert list(table.columns[:2]) == ["node", "name"]
    assert label in set(table["node"]) and "_nchwc" in " ".join(table["name"])
    top = figures.top_layers_figure(resnet, n=len(resnet.layers))
    shown = list(top.data[0].y)
    assert all(len(y) <= LABEL_WIDTH for y in shown) and len(set(shown)) == len(shown)
    assert label in shown
    long = "/layer1/layer1.0/downsample/downsample.0/Conv"
    assert "…" + long[-(LABEL_WIDTH - 1) :] in shown  # the full text is in the hover
    assert any(c[3] == label and c[4].endswith("_nchwc") for c in top.data[0].customdata)
    timeline = figures.timeline_figure(resnet, rows="layer")
    rows = {str(y) for trace in timeline.data for y in trace.y}
    assert not any("_nchwc" in r for r in rows)
    assert all(len(r) <= LABEL_WIDTH for r in rows)


def test_the_view_lists_model_nodes_and_says_the_true_order(resnet: ProfileReport) -> None:
    view = ProfileView(resnet)
    first = view._table.options[0][0]
    assert first.startswith("/") and "_nchwc" not in first
    assert "model node" in view._header.value
    assert view.ascending is False and view._ascending.description == "descending"
    times = [float(t) for t in view.table()[view.sort_by]]
    assert times == sorted(times, reverse=True)
    view._ascending.value = True
    assert view._ascending.description == "ascending"
    index = int(resnet.layers.index[resnet.layers["node"] == "/conv1/Conv +Relu"][0])
    view.selected = str(resnet.layers.loc[index, "name"])
    assert "onnxruntime name" in view._details.value and "_nchwc" in view._details.value
    assert "white-space: pre" in view.children[0].value  # the header never wraps mid-word


def test_op_type_colours_are_distinct_and_the_same_in_every_view(
    resnet: ProfileReport, vit: ProfileReport
) -> None:
    assert len(set(PALETTE)) == len(PALETTE) >= 24
    assert len({palette_colour(i) for i in range(80)}) == 80
    for a in range(len(PALETTE)):
        for b in range(a):
            assert _lab_distance(PALETTE[a], PALETTE[b]) >= 24, (PALETTE[a], PALETTE[b])
    for report in (resnet, vit):
        timeline = figures.timeline_figure(report)
        bars = {t.name: t.marker.color for t in timeline.data if t.type == "bar"}
        assert len(set(bars.values())) == len(bars)  # no two op types alike
        top = figures.top_layers_figure(report, n=len(report.layers))
        for op_type, colour in zip(
            (c[0] for c in top.data[0].customdata), top.data[0].marker.color, strict=True
        ):
            assert bars.get(op_type, colour) == colour, op_type
        pie = figures.op_type_share_figure(report).data[0]
        for op_type, colour in zip(pie.labels, pie.marker.colors, strict=True):
            assert bars.get(op_type, colour) == colour, op_type


def test_the_timeline_title_sits_above_its_top_axis(resnet: ProfileReport) -> None:
    fig = figures.timeline_figure(resnet)
    assert fig.layout.xaxis.side == "top" and fig.layout.margin.t == TOP_AXIS_MARGIN
    assert fig.layout.title.yref == "container" and fig.layout.title.yanchor == "top"
    assert fig.layout.title.xanchor == "left"  # the modebar is at the right: clear of it


def _lab_distance(first: str, second: str) -> float:
    return math.dist(_lab(first), _lab(second))


def _lab(colour: str) -> tuple[float, float, float]:
    """CIE L*a*b* (D65) of a #rrggbb colour."""

    def linear(c: float) -> float:
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (linear(int(colour[i : i + 2], 16) / 255) for i in (1, 3, 5))
    x = (0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047
    y = 0.2126 * r + 0.7152 * g + 0.0722 * b
    z = (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883

    def f(t: float) -> float:
        return t ** (1 / 3) if t > 0.008856 else 7.787 * t + 16 / 116

    return 116 * f(y) - 16, 500 * (f(x) - f(y)), 200 * (f(y) - f(z))
