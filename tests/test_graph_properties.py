"""What the properties pane shows (nsdl_jupyter/graph/_properties.py), on the real torch
exports, and the GraphView requests that carry it (answers checked against their declared
types by the widget protocol)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import onnx_ir as ir
import pytest

import nsdl_jupyter as nj
from nsdl_jupyter.graph import GraphScene
from nsdl_jupyter.graph._properties import (
    FIRST_VALUES,
    Properties,
    PropertiesLookupError,
    shape_text,
)
from nsdl_jupyter.widgets import GraphView
from tests import real_exports
from tests.test_graph_shared_inference import count_inferences
from tests.test_graph_view_widget import Sent

X = "\u00d7"


def scene_of(name: str) -> tuple[GraphScene, ir.Model]:
    model = ir.from_proto(real_exports.load(name))
    return GraphScene(model.graph), model


def item_of(scene: GraphScene, name: str) -> int:
    return scene.table.by_key[name]


@pytest.fixture(scope="module")
def bert_dynamo() -> tuple[GraphScene, ir.Model]:
    return scene_of("bert_base_dynamo")


def test_a_node_shows_op_attributes_and_typed_ports_from_value_info(
    bert_dynamo: tuple[GraphScene, ir.Model], monkeypatch: pytest.MonkeyPatch
) -> None:
    scene, model = bert_dynamo
    inferences = count_inferences(monkeypatch)
    props = Properties(scene)
    node = next(n for n in model.graph if n.op_type == "MatMul" and n.inputs[1].is_initializer())
    got = props.node(item_of(scene, node.name))
    assert (got["name"], got["op_type"], got["domain"], got["op"]) == (
        node.name, "MatMul", "", "MatMul",
    )  # fmt: skip
    assert got["scope"].startswith("/encoder/layer.0/attention/self/")
    a, b = got["inputs"]
    assert (a["slot"], b["slot"]) == ("A", "B")
    assert (a["dtype"], a["shape"]) == ("float", f"batch{X}sequence{X}768")
    assert a["source"] == node.inputs[0].producer().name and a["initializer"] is None
    weight = node.inputs[1].const_value.numpy()
    assert b["source"] == "initializer" and b["initializer"] is not None
    assert b["initializer"]["shape"] == f"768{X}768" and b["initializer"]["size"] == 768 * 768
    first = [float(v) for v in b["initializer"]["values"].split(", ")[:FIRST_VALUES]]
    assert np.allclose(first, weight.reshape(-1)[:FIRST_VALUES], rtol=1e-3)
    assert b["initializer"]["stats"] is True
    (y,) = got["outputs"]
    assert (y["slot"], y["shape"], y["source"]) == ("Y", f"batch{X}sequence{X}768", "")
    # attributes as text: a LayerNormalization's epsilon and axis
    norm = next(n for n in model.graph if n.op_type == "LayerNormalization")
    attrs = {a["name"]: a for a in props.node(item_of(scene, norm.name))["attributes"]}
    assert attrs["axis"] == {"name": "axis", "type": "int", "value": "-1"}
    assert float(attrs["epsilon"]["value"]) == pytest.approx(norm.attributes["epsilon"].value)
    assert inferences == []  # value_info is complete


def test_statistics_of_a_weight_come_on_request_and_match_numpy(
    bert_dynamo: tuple[GraphScene, ir.Model],
) -> None:
    scene, model = bert_dynamo
    props = Properties(scene)
    name, value = next(
        (k, v) for k, v in model.graph.initializers.items() if v.const_value.size > 1000
    )
    array = value.const_value.numpy().astype(np.float64)
    stats = props.stats(name)
    assert stats["name"] == name and stats["nonfinite"] == 0
    assert stats["min"] == pytest.approx(array.min()) and stats["max"] == pytest.approx(array.max())
    assert stats["mean"] == pytest.approx(array.mean(), abs=1e-7)
    assert props.stats(name) is stats  # read once
    integer = next(k for k, v in model.graph.initializers.items() if v.dtype == ir.DataType.INT64)
    with pytest.raises(PropertiesLookupError, match="statistics are for float tensors"):
        props.stats(integer)
    with pytest.raises(LookupError, match="no initializer 'nope'"):
        props.stats("nope")


def test_a_torchscript_export_gets_its_shapes_from_inference_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    scene, model = scene_of("bert_base_torchscript")
    calls = count_inferences(monkeypatch)
    props = Properties(scene)
    matmuls = [n for n in model.graph if n.op_type == "MatMul" and n.inputs[1].is_initializer()]
    assert matmuls[0].outputs[0].shape is None  # the export states no intermediate shape
    for node in matmuls[:5]:
        (y,) = props.node(item_of(scene, node.name))["outputs"]
        width = node.inputs[1].shape[-1]  # the weight's last dim: 768 or 3072
        assert y["dtype"] == "float" and y["shape"].endswith(f"{X}{width}"), y
    assert len(calls) == 1
    assert matmuls[0].outputs[0].shape is None  # the model itself is left as it was


def test_an_edge_shows_its_tensor_producer_and_consumers(
    bert_dynamo: tuple[GraphScene, ir.Model],
) -> None:
    scene, model = bert_dynamo
    props = Properties(scene)
    table = scene.table
    edge = next(e for e in table.edges if table.items[e.src].op == "LayerNormalization")
    got = props.tensor(edge.tensor, edge.dst)
    value = table.items[edge.src].node.outputs[0]
    assert got["name"] == value.name == table.tensors[edge.tensor].name
    assert (
        got["producer"] == table.items[edge.src].name and got["producer_op"] == "LayerNormalization"
    )
    assert sorted(got["consumers"]) == sorted(u.node.name for u in value.uses())
    assert got["more_consumers"] == 0 and len(got["consumers"]) >= 3  # Q, K, V and the residual
    assert got["shape"] == f"batch{X}sequence{X}768" and not got["graph_input"]
    # the same tensor from its producer's end
    assert props.tensor(edge.tensor, edge.src) == got
    # a graph input box (tensor -1) and a graph output box
    first = table.by_key["input:input_ids"]
    inp = props.tensor(-1, first)
    assert inp["graph_input"] and inp["producer"] == "" and inp["dtype"] == "int64"
    assert inp["shape"] == f"batch{X}sequence"
    out = props.tensor(-1, table.by_key[f"output:{model.graph.outputs[0].name}"])
    assert out["graph_output"] and out["producer"]


def test_a_group_shows_its_path_node_count_and_op_histogram(
    bert_dynamo: tuple[GraphScene, ir.Model],
) -> None:
    scene, _model = bert_dynamo
    props = Properties(scene)
    by_key = scene.hierarchy.by_key()
    layer = props.group(by_key["/encoder/layer.0"])
    assert layer["key"] == "/encoder/layer.0" and layer["label"] == "layer.0"
    assert not layer["synthetic"]
    counts = {o["op"]: o["count"] for o in layer["ops"]}
    assert (
        layer["nodes"]
        == sum(counts.values())
        == scene.hierarchy.groups[by_key["/encoder/layer.0"]].size
    )
    assert counts["MatMul"] >= 6 and counts["Softmax"] == 1
    assert [o["count"] for o in layer["ops"]] == sorted(counts.values(), reverse=True)
    root = props.group(0)
    assert root["key"] == "/" and root["nodes"] == len(list(scene.table.node_names()))


def test_control_flow_shows_bodies_and_what_they_read() -> None:
    scene, model = scene_of("control_flow_torchscript")
    props = Properties(scene)
    got = props.node(item_of(scene, "/If"))
    attrs = {a["name"]: a for a in got["attributes"]}
    assert attrs["then_branch"]["type"] == "graph" and "(2 nodes)" in attrs["then_branch"]["value"]
    read = {p["name"]: p for p in got["body_inputs"]}
    assert read["x"]["source"] == "graph input" and read["x"]["shape"] == f"2{X}32"
    assert read["then_proj.weight"]["initializer"] is not None
    # the BODY_INPUT edge x -> /If carries x: its pane comes from the If's end
    edge = next(e for e in scene.table.edges if scene.table.items[e.dst].name == "/If" and e.flags)
    tensor = props.tensor(edge.tensor, edge.dst)
    assert tensor["name"] == "x" and "/then_proj/Gemm" in tensor["consumers"]
    assert model.graph.inputs[0].name == "x"


def test_unknown_or_stale_references_raise_lookup_errors(
    bert_dynamo: tuple[GraphScene, ir.Model],
) -> None:
    scene, _ = bert_dynamo
    props = Properties(scene)
    with pytest.raises(LookupError, match="no item 999999"):
        props.node(999_999)
    with pytest.raises(PropertiesLookupError, match="graph input/output: ask for its tensor"):
        props.node(scene.table.by_key["input:input_ids"])
    with pytest.raises(LookupError, match="no group"):
        props.group(-5)
    with pytest.raises(LookupError, match="no tensor"):
        props.tensor(10**7, 0)


def test_shape_text() -> None:
    assert shape_text(None) == ""
    assert shape_text(ir.Shape([])) == "scalar"
    assert shape_text(ir.Shape(["batch", 3, None, "unk__4"])) == f"batch{X}3{X}?{X}?"


def test_graph_view_answers_the_pane_requests_and_forgets_after_an_edit(tmp_path: Path) -> None:
    path = real_exports.save("resnet50_torchscript", tmp_path)
    doc = nj.open_model(path)
    view = GraphView(doc)
    sent = Sent(view)
    table = view._scene.table
    conv = next(i for i, it in enumerate(table.items) if it.op == "Conv")

    def ask(kind: str, /, **payload: Any) -> Any:
        envelope = {"kind": "nsdl.request", "id": "v:1", "name": kind, "payload": payload}
        view._channel.receive(view, envelope, [])
        answer = sent.messages[-1]
        assert answer["ok"], answer
        return json.loads(json.dumps(answer["value"], allow_nan=False))  # plain JSON

    node = ask("node_properties", item=conv)
    assert node["op_type"] == "Conv" and {a["name"] for a in node["attributes"]} >= {"kernel_shape"}
    weight = node["inputs"][1]
    assert weight["initializer"]["shape"].count(X) == 3
    stats = ask("tensor_stats", name=weight["name"])
    assert stats["min"] <= stats["mean"] <= stats["max"]
    edge = table.edges[3]
    assert ask("tensor_properties", tensor=edge.tensor, item=edge.dst)["name"]
    assert ask("group_properties", group=1)["nodes"] > 0
    bad = {"kind": "nsdl.request", "id": "v:2", "name": "node_properties", "payload": {"item": -1}}
    view._channel.receive(view, bad, [])
    failed = sent.messages[-1]
    assert not failed["ok"] and failed["error"]["type"] == "PropertiesLookupError"
    # edits: the pane's next answers see them (the op histogram is counted again)
    before = ask("group_properties", group=0)
    old = table.items[conv].name
    doc.rename_node(old, "stem_conv")
    assert ask("node_properties", item=conv)["name"] == "stem_conv"
    doc.add_node("Relu", inputs=[doc.nodes["stem_conv"].outputs[0]], name="added_relu")
    after = ask("group_properties", group=0)
    assert after["nodes"] == before["nodes"] + 1
    relus = {o["op"]: o["count"] for o in after["ops"]}["Relu"]
    assert relus == {o["op"]: o["count"] for o in before["ops"]}["Relu"] + 1
    assert view.show_properties is True
    assert GraphView(doc, show_properties=False).show_properties is False
