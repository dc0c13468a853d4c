"""A TensorRT engine's layer JSON as a graph: the real trtexec export and a small TensorRT 10
inspector export written here in the same format."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import onnx_ir as ir
import pytest
from onnx import TensorProto, helper
from test_profiling_helpers import shared_fixture

import nsdl_jupyter as nj
from nsdl_jupyter.document import ModelDocument
from nsdl_jupyter.editors._parameters import NodeForm, describe_selection
from nsdl_jupyter.graph import EngineGraph, EngineGraphError
from nsdl_jupyter.widgets import GraphView

PREFIX = "mobilenet.qat.onnx.engine."
CONV = "features.2.conv.1.0.weight + QuantizeLinear_73 + Conv_77 + PWN(Clip_81)"


def _real(kind: str) -> Path:
    return shared_fixture("trtexec", PREFIX + kind + ".json")


def _tensor(name: str, dims: list[int], fmt: str) -> dict[str, Any]:
    return {"Name": name, "Location": "Device", "Dimensions": dims, "Format/Datatype": fmt}


FP32 = "Row major linear FP32"
FP16 = "Channel major FP16 format where channel % 8 == 0"


def tiny_engine_json() -> dict[str, Any]:
    """What TensorRT 10's inspector writes for the small CNN of test_trt_export (conv+relu
    fused, an inserted reformat, layer Metadata naming the ONNX nodes)."""
    return {
        "Layers": [
            {
                "Name": "Reformatting CopyNode for Input Tensor 0 to /conv0/Conv + /relu0/Relu",
                "LayerType": "Reformat",
                "Inputs": [_tensor("image", [1, 3, 16, 16], FP32)],
                "Outputs": [_tensor("image_hwc8", [1, 3, 16, 16], FP16)],
                "ParameterType": "Reformat",
                "Origin": "REFORMAT",
                "TacticValue": "0x00000000000003e8",
                "StreamId": 0,
                "Metadata": "",
            },
            {
                "Name": "/conv0/Conv + /relu0/Relu",
                "LayerType": "CaskConvolution",
                "Inputs": [_tensor("image_hwc8", [1, 3, 16, 16], FP16)],
                "Outputs": [_tensor("/relu0/Relu_output_0", [1, 8, 16, 16], FP16)],
                "ParameterType": "Convolution",
                "Kernel": [3, 3],
                "PaddingMode": "kEXPLICIT_ROUND_DOWN",
                "PrePadding": [1, 1],
                "PostPadding": [1, 1],
                "Stride": [1, 1],
                "Dilation": [1, 1],
                "OutMaps": 8,
                "Groups": 1,
                "Weights": {"Type": "Half", "Count": 216},
                "Bias": {"Type": "Half", "Count": 8},
                "HasBias": 1,
                "HasReLU": 1,
                "Activation": "RELU",
                "TacticName": "sm80_xmma_fprop_implicit_gemm_f16f16_f16f16_f16_nhwckrsc_nhwc",
                "TacticValue": "0x5d9d5aa5e3a1c8f1",
                "StreamId": 0,
                "Metadata": "[ONNX Layer: /conv0/Conv]\x1f[ONNX Layer: /relu0/Relu]",
            },
            {
                "Name": "/pool/GlobalAveragePool",
                "LayerType": "CaskPooling",
                "Inputs": [_tensor("/relu0/Relu_output_0", [1, 8, 16, 16], FP16)],
                "Outputs": [_tensor("/pool/GlobalAveragePool_output_0", [1, 8, 1, 1], FP32)],
                "ParameterType": "Pooling",
                "PoolingType": "AVERAGE",
                "WindowSize": [16, 16],
                "TacticValue": "0x0000000000000001",
                "StreamId": 0,
                "Metadata": "[ONNX Layer: /pool/GlobalAveragePool]",
            },
            {
                "Name": "/flatten/Flatten + /fc/Gemm",
                "LayerType": "CaskGemmMatrixMultiply",
                "Inputs": [_tensor("/pool/GlobalAveragePool_output_0", [1, 8, 1, 1], FP32)],
                "Outputs": [_tensor("logits", [1, 10], FP32)],
                "ParameterType": "MatrixMultiply",
                "TacticName": "sm80_xmma_gemm_f32f32_f32f32_f32_tn_n",
                "TacticValue": "0x0000000000020318",
                "StreamId": 0,
                "Metadata": "[ONNX Layer: /flatten/Flatten]\x1f[ONNX Layer: /fc/Gemm]",
            },
        ],
        "Bindings": ["image", "logits"],
    }


def small_cnn_names_only() -> Any:
    """The small CNN's node names and I/O (no weights: only the names matter here)."""
    names = ["/conv0/Conv", "/relu0/Relu", "/pool/GlobalAveragePool", "/fc/Gemm"]
    tensors = ["image", "c0", "r0", "p0", "logits"]
    nodes = [
        helper.make_node("Identity", [a], [b], name=n)
        for n, a, b in zip(names, tensors, tensors[1:], strict=False)
    ]
    graph = helper.make_graph(
        nodes,
        "small_cnn",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, [1, 3, 16, 16])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 10])],
    )
    return helper.make_model(graph)


def _edges(engine: EngineGraph) -> set[tuple[str, str]]:
    found = set()
    for node in engine.graph:
        for value in node.inputs:
            producer = value.producer() if value is not None else None
            if producer is not None:
                found.add((producer.name or "", node.name or ""))
    return found


# ---- the real trtexec export -----------------------------------------------------------------


@pytest.mark.may_skip  # reads ../shared/fixtures: skipped, saying so, where absent
def test_real_trtexec_layer_info_becomes_a_graph_of_layers_and_tensors() -> None:
    path = _real("graph")
    raw = json.loads(path.read_text())
    engine = nj.open_engine_graph(path)

    assert isinstance(engine, ir.Model)
    assert engine.layer_names == [layer["Name"] for layer in raw["Layers"]]
    assert [v.name for v in engine.graph.inputs] == ["input1"]
    assert [v.name for v in engine.graph.outputs] == ["1179"]
    # every tensor a layer reads is written by the layer before it in this chain-shaped
    # network, or is the engine input
    produced = {t["Name"]: layer["Name"] for layer in raw["Layers"] for t in layer["Outputs"]}
    expected = {
        (produced[t["Name"]], layer["Name"])
        for layer in raw["Layers"]
        for t in layer["Inputs"]
        if t["Name"] in produced
    }
    assert _edges(engine) == expected
    assert len(expected) >= 72  # connected: no layer is left floating

    node = next(n for n in engine.graph if n.name == CONV)
    assert node.domain == "trt.engine"
    assert node.op_type == "CudaDepthwiseConvolution"
    attrs = node.attributes
    assert attrs["precision"].as_string() == "INT8"
    assert attrs["tactic"].as_string() == "0xfffffffffffffffc"
    assert list(attrs["Kernel"].as_ints()) == [3, 3]
    assert attrs["Groups"].as_int() == 96
    assert json.loads(attrs["Weights"].as_string()) == {"Type": "Int8", "Count": 864}
    assert list(attrs["output_formats"].as_strings()) == [
        "Thirty-two wide channel vectorized row major Int8 format"
    ]
    assert list(attrs["onnx_nodes"].as_strings()) == ["QuantizeLinear_73", "Conv_77", "Clip_81"]
    assert engine.layers_of("Conv_77") == [CONV]
    assert engine.layer(CONV)["OutMaps"] == 96
    out = node.outputs[0]
    assert out.dtype == ir.DataType.INT8
    assert list(out.shape or []) == [1, 96, 56, 56]


@pytest.mark.may_skip  # reads ../shared/fixtures: skipped, saying so, where absent
def test_real_engine_graph_draws_in_graph_view_with_the_trtexec_times_laid_over() -> None:
    engine = nj.open_engine_graph(_real("graph"))
    view = GraphView(engine)
    table = view._scene.table
    assert sorted(table.node_names()) == sorted(engine.layer_names)

    report = nj.load_trtexec(profile=_real("profile"), layer_info=_real("graph"))
    times = report.layer_times()
    assert len(times) == 73
    view.set_overlay(times, label="TensorRT ms")
    import numpy as np

    values = np.frombuffer(view._overlay_values, dtype="<f4")
    drawn = {table.items[i].name for i in np.flatnonzero(np.isfinite(values))}
    assert drawn == set(engine.layer_names)  # every profiled layer is a node of the graph


@pytest.mark.may_skip  # reads ../shared/fixtures: skipped, saying so, where absent
def test_parameter_pane_shows_precision_formats_and_tactic() -> None:
    engine = nj.open_engine_graph(_real("graph"))
    form = describe_selection(ModelDocument(engine), [CONV])
    assert isinstance(form, NodeForm)
    assert (form.op_type, form.domain) == ("CudaDepthwiseConvolution", "trt.engine")
    rows = {row.name: row.text for row in form.set_rows}
    assert rows["precision"] == "INT8"
    assert rows["tactic"] == "0xfffffffffffffffc"
    assert "Int8" in rows["input_formats"]
    assert form.inputs == ("382",) and form.outputs == ("399",)


@pytest.mark.may_skip  # reads ../shared/fixtures: skipped, saying so, where absent
def test_engine_graph_saves_as_onnx_and_loads_back(tmp_path: Path) -> None:
    engine = nj.open_engine_graph(_real("graph"))
    ir.save(engine, tmp_path / "engine.onnx")
    back = ir.load(tmp_path / "engine.onnx")
    assert [n.name for n in back.graph] == engine.layer_names
    node = next(n for n in back.graph if n.name == CONV)
    assert node.attributes["precision"].as_string() == "INT8"


# ---- a small TensorRT 10 inspector export ----------------------------------------------------


def test_tiny_engine_links_layers_to_onnx_nodes_through_metadata() -> None:
    engine = nj.open_engine_graph(json.dumps(tiny_engine_json()))
    assert engine.onnx_nodes == {
        "Reformatting CopyNode for Input Tensor 0 to /conv0/Conv + /relu0/Relu": [],
        "/conv0/Conv + /relu0/Relu": ["/conv0/Conv", "/relu0/Relu"],
        "/pool/GlobalAveragePool": ["/pool/GlobalAveragePool"],
        "/flatten/Flatten + /fc/Gemm": ["/flatten/Flatten", "/fc/Gemm"],
    }
    assert engine.layers_of("/relu0/Relu") == ["/conv0/Conv + /relu0/Relu"]
    names = [n.name for n in engine.graph]
    assert _edges(engine) == set(itertools.pairwise(names))
    precisions = [n.attributes["precision"].as_string() for n in engine.graph]
    assert precisions == ["FP16", "FP16", "FP32", "FP32"]
    conv = engine.graph.node(1)
    assert conv.attributes["tactic"].as_string().startswith("sm80_xmma_fprop")
    assert conv.attributes["StreamId"].as_int() == 0


def test_model_keeps_only_the_names_of_its_real_nodes(tmp_path: Path) -> None:
    path = tmp_path / "tiny.graph.json"
    path.write_text(json.dumps(tiny_engine_json()))
    engine = nj.open_engine_graph(path, model=small_cnn_names_only())  # no /flatten/Flatten
    assert engine.onnx_nodes["/flatten/Flatten + /fc/Gemm"] == ["/fc/Gemm"]
    assert engine.graph.name == "tiny"


def test_layers_group_by_the_name_scope_of_their_onnx_nodes() -> None:
    data = tiny_engine_json()
    for layer in data["Layers"]:
        layer["Metadata"] = layer["Metadata"].replace("[ONNX Layer: /", "[ONNX Layer: /encoder/")
    engine = nj.open_engine_graph(data)
    scopes = [n.metadata_props["namespace"] for n in engine.graph]
    # the common scope of a fused layer's nodes: /encoder/conv0 + /encoder/relu0 -> /encoder
    assert scopes == ["/", "/encoder", "/encoder/pool", "/encoder"]
    view = GraphView(engine)
    assert "/encoder" in view.groups


def test_layer_names_without_detail_give_unconnected_nodes() -> None:
    """An export without --profilingVerbosity=detailed lists names only."""
    engine = nj.open_engine_graph({"Layers": ["/conv0/Conv + /relu0/Relu", "/fc/Gemm"]})
    assert engine.layer_names == ["/conv0/Conv + /relu0/Relu", "/fc/Gemm"]
    assert engine.onnx_nodes["/conv0/Conv + /relu0/Relu"] == ["/conv0/Conv", "/relu0/Relu"]
    assert not _edges(engine)


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("{not json", "is not JSON"),
        ({"layers": []}, "expected {'Layers': [...]}"),
        ({"Layers": [3]}, "layer 0 is a int"),
    ],
)
def test_what_is_not_a_layer_json_is_refused(source: Any, message: str) -> None:
    with pytest.raises(EngineGraphError, match=message.replace("[", r"\[").replace("{", r"\{")):
        nj.open_engine_graph(source)


def test_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no such layer JSON file"):
        nj.open_engine_graph(tmp_path / "absent.graph.json")


def test_repeated_layer_names_become_unique_and_stable() -> None:
    """Repeats get `#2`, `#3`... in file order; a suffix an earlier layer already holds is
    skipped; the same JSON gives the same names every time (overlays key on them)."""
    names = ["x", "x#2", "x", "x", "y", "x#2", "x"]
    expected = ["x", "x#2", "x#3", "x#4", "y", "x#2#2", "x#5"]
    first = nj.open_engine_graph({"Layers": names})
    assert first.layer_names == expected
    assert nj.open_engine_graph({"Layers": names}).layer_names == expected
    assert [node.name for node in first.graph] == expected
    assert first.layer("x#4") == {"Name": "x"}


def test_many_layers_of_one_name_stay_unique() -> None:
    """12,000 layers named `x` (60 KB of untrusted JSON) took 25 s when every repeat counted
    its suffix up from 2; bench/bench_engine_graph.py times 20,000 of them."""
    engine = nj.open_engine_graph({"Layers": ["x"] * 12_000})
    names = engine.layer_names
    assert len(set(names)) == 12_000
    assert names[:3] == ["x", "x#2", "x#3"]
    assert names[-1] == "x#12000"
