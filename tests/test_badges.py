"""Badges on boxes in Python (no browser): the TensorRT precision pill follows doc.tensorrt and
its chooser's request edits it undoably; custom operators carry the CUSTOM_OP flag and the
"custom" pill. The browser side is tests/ui/test_badges_ui.py, the drawing parity
tests/test_drawing_parity.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import onnx
import onnx_ir as ir
import pytest

import nsdl_jupyter as nj
from nsdl_jupyter.document import PRECISIONS, ModelDocument
from nsdl_jupyter.graph import decode_columns
from nsdl_jupyter.graph._extract import CUSTOM_OP, FUNCTION_CALL
from nsdl_jupyter.ops import is_custom_domain
from nsdl_jupyter.widgets import GraphView
from tests.test_document_check import call_model
from tests.test_graph_view_widget import Sent, request


def _model() -> onnx.ModelProto:
    x = onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 4])
    y = onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1, 4])
    nodes = [
        onnx.helper.make_node("Relu", ["x"], ["r"], name="relu"),
        onnx.helper.make_node("Sigmoid", ["r"], ["y"], name="sigmoid"),
    ]
    graph = onnx.helper.make_graph(nodes, "g", [x], [y])
    return onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", 17)])


@pytest.fixture
def doc(tmp_path: Path) -> Any:
    onnx.save(_model(), tmp_path / "m.onnx")
    return nj.open_model(tmp_path / "m.onnx")


def _flags(view: GraphView) -> dict[str, int]:
    """Item flags by name, the topology with its patches applied (as the browser has them)."""
    _meta, columns = decode_columns(view._topology)
    flags = dict(zip(columns["item.name"], columns["item.flags"].tolist(), strict=True))
    for patch in view._edits:
        for name, _op, item_flags, *_rest in patch["items"].values():
            flags[name] = item_flags
    return flags


def test_precision_badges_follow_the_document_and_the_chooser_edits_it(doc: Any) -> None:
    view = GraphView(doc)
    sent = Sent(view)
    assert view._precisions == {} and view._precision_choices == [*PRECISIONS, "none"]
    doc.tensorrt.set_layer_precision("relu", "fp16")
    assert view._precisions == {"relu": "fp16"}
    view._channel.receive(view, request("v:1", "precision", nodes=["relu"], precision="int8"), [])
    assert sent.messages[-1]["ok"] is True
    assert doc.tensorrt.layer_precision("relu") == "int8" and view._precisions == {"relu": "int8"}
    view._channel.receive(view, request("v:2", "precision", nodes=["relu"], precision="none"), [])
    assert doc.tensorrt.layer_precisions == {} and view._precisions == {}
    doc.undo()
    assert view._precisions == {"relu": "int8"}
    doc.undo()
    assert view._precisions == {"relu": "fp16"}
    doc.rename_node("relu", "act")  # the constraint, and so the badge, follows the node
    assert view._precisions == {"act": "fp16"}
    # a refused pick reaches the view as an error naming the valid ones; nothing changes
    view._channel.receive(view, request("v:3", "precision", nodes=["act"], precision="fp7"), [])
    answer = sent.messages[-1]
    assert answer["ok"] is False and "fp16" in answer["error"]["message"]
    assert view._precisions == {"act": "fp16"}
    svg = view.export_image(doc.path.parent / "badges.svg").result().read_text()
    assert 'class="nsdl-pill-precision"' in svg and ">fp16</text>" in svg


def test_a_read_only_view_offers_no_chooser() -> None:
    view = GraphView(_model())
    sent = Sent(view)
    assert view._precision_choices == [] and view._precisions == {}
    view._channel.receive(view, request("v:1", "precision", nodes=["relu"], precision="fp16"), [])
    assert sent.messages[-1]["ok"] is False
    assert "open the model as a document" in sent.messages[-1]["error"]["message"]


def test_custom_operators_carry_the_custom_flag_and_pill(doc: Any) -> None:
    view = GraphView(doc)
    assert not any(f & CUSTOM_OP for f in _flags(view).values())
    doc.import_domain("trt.plugins", 1)
    doc.add_node("MyPlugin", "trt.plugins", name="plugin", inputs=["r"], num_outputs=1)
    flags = _flags(view)
    assert flags["plugin"] & CUSTOM_OP and not flags["relu"] & CUSTOM_OP
    assert any(d.node == "plugin" and d.severity == "warning" for d in doc.check())
    svg = view.export_image(doc.path.parent / "custom.svg").result().read_text()
    assert svg.count('class="nsdl-pill-custom"') == 1
    doc.undo()
    assert "plugin" not in doc.nodes
    # ONNX, ONNX-ML and onnxruntime contrib domains have schemas: not custom
    assert not any(is_custom_domain(d) for d in ("", "ai.onnx", "ai.onnx.ml", "com.microsoft"))


def test_a_local_function_call_is_not_a_custom_operator(doc: Any) -> None:
    doc.create_function("Twice", "local", ["a"], ["b"])
    doc.add_node("Twice", "local", name="call", inputs=["r"])
    flags = _flags(GraphView(doc))
    assert flags["call"] & FUNCTION_CALL and not flags["call"] & CUSTOM_OP


def test_a_local_function_call_in_a_body_tab_is_not_a_custom_operator(tmp_path: Path) -> None:
    """A body's own model has no functions; its document lists the model's, so the body tab's
    view, its check and add_node treat calls as calls, not as custom operators."""
    doc = ModelDocument(ir.from_proto(call_model(alpha=3.0)))
    then = doc.open_subgraph("branch", "then_branch")
    assert then.functions.keys() == doc.functions.keys() == {("local", "Scaled", "")}
    view = GraphView(then)
    added = then.add_node("Scaled", "local", inputs=["x"], attributes={"alpha": 1.0})
    flags = _flags(view)
    for call in ("inner_call", added.name):
        assert flags[call] & FUNCTION_CALL and not flags[call] & CUSTOM_OP
    assert not any("custom operator" in d.message for d in then.check())
    svg = view.export_image(tmp_path / "body.svg").result().read_text()
    assert "nsdl-pill-custom" not in svg
    with pytest.raises(nj.NsdlError, match=r"missing \['alpha'\]"):  # the signature holds
        then.add_node("Scaled", "local", inputs=["x"])
