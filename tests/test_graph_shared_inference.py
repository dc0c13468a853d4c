"""One shape inference per graph, shared by the drawing's edge labels and the properties pane
(graph/_shapes.py TensorTypes), on real TorchScript exports (no intermediate types): whichever
needs types first runs it, an edit only marks it stale, the next reader re-infers once and the
other reader gets that result."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx_ir as ir
import pytest

from nsdl_jupyter.document import ModelDocument
from nsdl_jupyter.graph import GraphScene, Properties, _properties, _shapes, decode_columns
from nsdl_jupyter.widgets import GraphView
from tests import real_exports

X = _shapes.TIMES


def count_inferences(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Wraps the one inference function both readers go through; lists the graphs it ran on."""
    calls: list[str] = []
    infer = _shapes.infer_tensor_types

    def counted(graph: ir.Graph | ir.Function) -> dict[str, tuple[str, str]]:
        calls.append(graph.name or "")
        return infer(graph)

    monkeypatch.setattr(_shapes, "infer_tensor_types", counted)
    return calls


@pytest.fixture
def inferences(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    return count_inferences(monkeypatch)


def open_view(name: str) -> tuple[ModelDocument, GraphView]:
    doc = ModelDocument(ir.from_proto(real_exports.load(name)))
    return doc, GraphView(doc)


def zoom_in(view: GraphView) -> None:
    """What the canvas sends once labels are legible (js/src/graph_view/scene_store.ts)."""
    view._channel.receive(view, {"kind": "nsdl.event", "name": "tensor_shapes", "payload": {}}, [])


def click(view: GraphView, node: str) -> dict[str, Any]:
    """The pane's answer for a click on `node`, as the browser asks for it."""
    answers: list[dict[str, Any]] = []
    view.send = lambda content, buffers=None: answers.append(content)  # type: ignore[method-assign]
    item = view._scene.table.by_key[node]
    request = {"kind": "nsdl.request", "id": "v:1", "name": "node_properties"}
    view._channel.receive(view, {**request, "payload": {"item": item}}, [])
    assert answers[-1]["ok"], answers[-1]
    value: dict[str, Any] = answers[-1]["value"]
    return value


def edge_label(view: GraphView, tensor: str) -> str:
    """The shape the canvas draws on the edges of `tensor` (from the `_shapes` buffer)."""
    meta, columns = decode_columns(view._shapes)
    assert meta["topology"] == view._scene.topology_version
    index = next(i for i, t in enumerate(view._scene.table.tensors) if t.name == tensor)
    return str(meta["shapes"][columns["tensor.shape"][index]])


def output_shape(answer: dict[str, Any]) -> str:
    return str(answer["outputs"][0]["shape"])


@pytest.mark.parametrize("drawing_first", [True, False])
def test_the_drawing_and_the_pane_share_one_inference_on_bert(
    inferences: list[str], drawing_first: bool
) -> None:
    doc, view = open_view("bert_base_torchscript")
    matmul = next(n for n in doc.graph if n.op_type == "MatMul" and n.inputs[1].is_initializer())
    assert matmul.outputs[0].shape is None  # the export states no intermediate shape
    assert inferences == []  # opening and drawing infer nothing
    if drawing_first:
        zoom_in(view)
        answer = click(view, matmul.name or "")
    else:
        answer = click(view, matmul.name or "")
        zoom_in(view)
    assert len(inferences) == 1
    assert output_shape(answer).endswith(f"{X}768")
    assert edge_label(view, matmul.outputs[0].name or "") == output_shape(answer)
    for node in [n for n in doc.graph if n.op_type == "Softmax"][:3]:
        click(view, node.name or "")
    zoom_in(view)
    assert len(inferences) == 1


def test_an_edit_infers_nothing_and_the_next_click_refreshes_pane_and_edges(
    inferences: list[str],
) -> None:
    doc, view = open_view("vit_b_16_torchscript")
    reshaped = doc.nodes["/Reshape"].outputs[0].name or ""
    zoom_in(view)
    assert output_shape(click(view, "/Reshape")) == f"1{X}768{X}196"
    assert edge_label(view, reshaped) == f"1{X}768{X}196" and len(inferences) == 1
    drawn = view._shapes
    # a new Reshape target, as an initializer linked through the document API (a patch edit)
    doc.create_initializer("patch_grid", np.array([1, 384, 392], dtype=np.int64))
    doc.connect("patch_grid", "/Reshape", 1, replace=True)
    assert view._edits and len(inferences) == 1  # patched without inferring
    assert view._shapes is drawn and view._scene.types.stale  # labels stay as they were
    answer = click(view, "/Reshape")
    assert len(inferences) == 2
    assert output_shape(answer) == f"1{X}384{X}392"
    assert edge_label(view, reshaped) == f"1{X}384{X}392"  # sent to the canvas with the click
    assert edge_label(view, "patch_grid") == "3"  # the new initializer's own edge
    transposed = click(view, "/Transpose")
    assert output_shape(transposed) == f"1{X}392{X}384"
    zoom_in(view)
    assert len(inferences) == 2
    # undo is an edit too; this time the drawing asks first, and the click reuses its result
    doc.undo()
    doc.undo()
    assert len(inferences) == 2
    zoom_in(view)
    assert edge_label(view, reshaped) == f"1{X}768{X}196" and len(inferences) == 3
    assert output_shape(click(view, "/Reshape")) == f"1{X}768{X}196" and len(inferences) == 3


def test_an_attribute_edit_or_a_rebuild_makes_the_result_stale_a_rename_does_not(
    inferences: list[str],
) -> None:
    doc, view = open_view("resnet50_torchscript")
    flat = doc.nodes["/Flatten"].outputs[0].name or ""
    assert output_shape(click(view, "/Flatten")) == f"1{X}2048" and len(inferences) == 1
    doc.rename_node("/fc/Gemm", "classifier")
    assert not view._scene.types.stale
    assert output_shape(click(view, "classifier")) == f"1{X}1000" and len(inferences) == 1
    doc.set_attribute("/Flatten", "axis", 2)
    assert len(inferences) == 1 and view._scene.types.stale
    zoom_in(view)
    assert edge_label(view, flat) == f"2048{X}1" and len(inferences) == 2
    assert output_shape(click(view, "/Flatten")) == f"2048{X}1" and len(inferences) == 2
    doc.add_graph_output(flat)  # graph I/O: the scene rebuilds its tables
    assert len(inferences) == 2 and view._scene.types.stale
    assert output_shape(click(view, "/Flatten")) == f"2048{X}1" and len(inferences) == 3
    assert edge_label(view, flat) == f"2048{X}1"  # the new topology got the click's result


def test_a_large_graph_pane_waits_for_no_inference_but_reads_the_drawings(
    inferences: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_properties, "MAX_INFER_NODES", 100)  # resnet50 has 169 nodes
    scene = GraphScene(ir.from_proto(real_exports.load("resnet50_torchscript")).graph)
    props = Properties(scene)
    relu = next(scene.table.by_key[n.name or ""] for n in scene.graph if n.op_type == "Relu")
    assert props.node(relu)["outputs"][0]["shape"] == "" and inferences == []
    scene.infer()  # the drawing asked
    assert props.node(relu)["outputs"][0]["shape"] == f"1{X}64{X}112{X}112"
    assert len(inferences) == 1
    scene.types.edited()
    assert props.node(relu)["outputs"][0]["shape"] == ""  # stale: not shown, not re-inferred
    assert len(inferences) == 1


def test_an_open_body_has_its_own_shared_inference(inferences: list[str]) -> None:
    doc, view = open_view("control_flow_torchscript")
    body_doc = doc.open_subgraph("/Loop", "body")
    body = GraphView(body_doc)
    zoom_in(body)
    sigmoid = click(body, "/Sigmoid")
    assert output_shape(sigmoid) == f"2{X}?" and inferences == [body_doc.graph.name]
    assert edge_label(body, "/Sigmoid_output_0") == output_shape(sigmoid)
    click(view, "/Loop")
    zoom_in(view)
    assert inferences == [body_doc.graph.name, doc.graph.name]
    body_doc.set_attribute("/step/Gemm", "alpha", 2.0)  # edits a copy of the body
    assert len(inferences) == 2 and body._scene.types.stale and not view._scene.types.stale
    click(body, "/Sigmoid")
    assert inferences[2:] == [body_doc.graph.name] and not body._scene.types.stale
    body_doc.confirm()  # written back into the model: now the model's types are stale
    assert len(inferences) == 3 and view._scene.types.stale
    click(view, "/Loop")
    assert inferences[3:] == [doc.graph.name]
