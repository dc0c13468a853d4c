"""GraphView widget state in Python: traits, requests, edits, exports (no browser)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import onnx
import pytest
import traitlets

import nsdl_jupyter as nj
from nsdl_jupyter.examples import synthetic_dag
from nsdl_jupyter.graph import decode_columns
from nsdl_jupyter.widgets import GraphView
from nsdl_jupyter.widgets._protocol import WidgetRequestError


@pytest.fixture
def doc(tmp_path: Path) -> Any:
    onnx.save(synthetic_dag(800, seed=11), tmp_path / "m.onnx")
    return nj.open_model(tmp_path / "m.onnx")


class Sent:
    """Captures custom messages the widget sends (the comm is not open outside a kernel)."""

    def __init__(self, view: GraphView) -> None:
        self.messages: list[dict[str, Any]] = []
        view.send = lambda content, buffers=None: self.messages.append(content)  # type: ignore[method-assign]


def request(request_id: str, name: str, **payload: Any) -> dict[str, Any]:
    """A request as a browser view sends it (js/src/protocol.ts)."""
    return {"kind": "nsdl.request", "id": request_id, "name": name, "payload": payload}


def test_unknown_options_and_sources_raise_with_the_valid_ones(doc: Any) -> None:
    with pytest.raises(TypeError, match="valid ones are: height"):
        GraphView(doc, heigth=3)
    with pytest.raises(TypeError, match="cannot show a int"):
        GraphView(3)


def test_topology_is_sent_once_and_expand_request_is_answered_with_a_layout(doc: Any) -> None:
    view = GraphView(doc)
    sent = Sent(view)
    topology = view._topology
    meta, columns = decode_columns(view._layout)
    closed = [k for k, open_ in view.groups.items() if not open_]
    assert closed, "an 800-node model opens collapsed"
    group = view._scene.hierarchy.by_key()[closed[0]]
    view._channel.receive(view, request("v:7", "expand", groups=[group]), [])
    new_meta, new_columns = decode_columns(view._layout)
    answer = {
        "kind": "nsdl.answer",
        "id": "v:7",
        "ok": True,
        "value": {"layout_seq": new_meta["seq"]},
    }
    assert sent.messages[-1] == answer
    assert new_meta["seq"] > meta["seq"]
    assert len(new_columns["ref"]) > len(columns["ref"])
    assert view.groups[closed[0]] is True
    assert view._topology is topology  # never resent for an expansion
    assert doc.companion["collapsed"] == view._scene.collapsed_keys
    view._channel.receive(view, request("v:8", "bogus"), [])
    assert sent.messages[-1]["ok"] is False
    assert sent.messages[-1]["error"]["code"] == "unknown_request"


def test_python_selection_reveals_hidden_nodes_and_rejects_unknown_names(doc: Any) -> None:
    view = GraphView(doc)
    hidden = next(
        name
        for name in doc.nodes
        if view._scene.table.by_key[name] not in decode_columns(view._layout)[1]["ref"]
    )
    view.selected = [hidden]
    refs = decode_columns(view._layout)[1]["ref"].tolist()
    assert view._scene.table.by_key[hidden] in refs
    with pytest.raises(traitlets.TraitError, match="no node named 'nope'"):
        view.selected = ["nope"]
    assert view.selected == [hidden]


def test_document_edits_arrive_as_patches_and_follow_renames(doc: Any) -> None:
    view = GraphView(doc)
    topology = view._topology
    first = next(iter(doc.nodes))
    view.selected = [first]
    doc.rename_node(first, "renamed_first")
    assert view.selected == ["renamed_first"]
    assert len(view._edits) == 1 and view._topology is topology
    doc.add_node("Relu", inputs=[doc.nodes["renamed_first"].outputs[0]], name="added_relu")
    patch = view._edits[-1]
    assert any(item[0] == "added_relu" for item in patch["items"].values())
    doc.undo()
    doc.undo()
    assert view.selected == [first]
    assert "renamed_first" not in view._scene.table.by_key
    assert view._topology is topology
    view.close()
    doc.rename_node(first, "after_close")
    assert len(view._edits) == 4  # unsubscribed on close


def test_marks_and_overlay_are_separate_from_topology(doc: Any) -> None:
    view = GraphView(doc)
    topology = view._topology
    names = list(doc.nodes)[:3]
    view.set_marks({names[0]: "error", names[1]: "warning"})
    with pytest.raises(ValueError, match="use 'error' or 'warning'"):
        view.set_marks({names[0]: "fatal"})
    view.set_overlay({names[0]: 1.0, names[2]: 3.0}, label="ms", colormap="magma")
    assert view._overlay == {"label": "ms", "colormap": "magma", "min": 1.0, "max": 3.0}
    assert len(view._overlay_values) == 4 * len(view._scene.table.items)
    with pytest.raises(ValueError, match="unknown colormap"):
        view.set_overlay({}, colormap="jet")
    view.clear_overlay()
    assert view._overlay == {} and view._topology is topology


def test_export_svg_is_written_at_once_and_png_waits_for_the_browser(
    doc: Any, tmp_path: Path
) -> None:
    view = GraphView(doc)
    sent = Sent(view)
    svg = view.export_image(tmp_path / "g.svg", grid=True)
    assert svg.done()
    root = ET.parse(svg.result()).getroot()
    assert (
        root.tag.endswith("svg") and len(root.findall(".//{http://www.w3.org/2000/svg}rect")) > 10
    )
    png = view.export_image(tmp_path / "g.png", background=None)
    assert not png.done()
    asked = sent.messages[-1]
    assert asked["name"] == "export" and asked["payload"]["format"] == "png"
    assert asked["payload"]["background"] is None
    answer = {"kind": "nsdl.answer", "id": asked["id"], "ok": True, "value": {"mime": "image/png"}}
    view._channel.receive(view, answer, [b"\x89PNG-bytes"])
    assert (
        png.result() == tmp_path / "g.png" and (tmp_path / "g.png").read_bytes() == b"\x89PNG-bytes"
    )
    with pytest.raises(ValueError, match="unknown image format"):
        view.export_image(tmp_path / "g.gif")
    empty = view.export_image(tmp_path / "empty.jpg")
    answer = {**answer, "id": sent.messages[-1]["id"]}
    view._channel.receive(view, answer, [])
    with pytest.raises(WidgetRequestError, match="held no image"):
        empty.result(timeout=0)
    assert not (tmp_path / "empty.jpg").exists()


def test_direction_and_constants_relayout(doc: Any) -> None:
    view = GraphView(doc)
    first = decode_columns(view._layout)[0]
    assert first["direction"] == "TB"  # top-down by default
    view.direction = "LR"
    meta = decode_columns(view._layout)[0]
    assert meta["direction"] == "LR" and meta["seq"] > first["seq"]


def test_open_subgraph_of_an_if_node() -> None:
    import onnx_ir as ir

    cond = ir.Value(name="c", type=ir.TensorType(ir.DataType.BOOL), shape=ir.Shape([]))
    x = ir.Value(name="x", type=ir.TensorType(ir.DataType.FLOAT), shape=ir.Shape([1]))

    def branch(op: str) -> ir.Graph:
        node = ir.node(op, [x], name=f"{op}_in_branch")
        return ir.Graph([], node.outputs, nodes=[node], name=op)

    branches = {"then_branch": branch("Relu"), "else_branch": branch("Neg")}
    if_node = ir.node("If", [cond], attributes=branches, name="the_if")
    graph = ir.Graph([cond, x], if_node.outputs, nodes=[if_node], opset_imports={"": 21})
    view = GraphView(ir.Model(graph, ir_version=10))
    with pytest.raises(ValueError, match="several subgraphs"):
        view.open_subgraph("the_if")
    sub = view.open_subgraph("the_if", "then_branch")
    assert "Relu_in_branch" in sub._scene.table.by_key
    assert "input:x" in sub._scene.table.by_key  # the outer value appears as an input


def test_patch_list_is_folded_into_a_new_topology_after_many_edits(doc: Any) -> None:
    view = GraphView(doc)
    first = next(iter(doc.nodes))
    name = first
    for k in range(70):
        doc.rename_node(name, f"n{k}")
        name = f"n{k}"
    assert len(view._edits) < 64
    assert decode_columns(view._topology)[0]["version"] == 2
    assert name in view._scene.table.by_key and first not in view._scene.table.by_key


def test_view_lookups_raise_the_document_error_types(doc: Any) -> None:
    """An unknown node name is UnknownNodeError in a view as in the document (a KeyError)."""
    from nsdl_jupyter.document import UnknownNodeError
    from nsdl_jupyter.widgets import WidgetError, WidgetLookupError

    view = GraphView(doc)
    with pytest.raises(UnknownNodeError, match="no node named 'nope'"):
        view.open_subgraph("nope")
    with pytest.raises(WidgetLookupError, match="no group 'nope'") as missing:
        view.expand("nope")
    assert isinstance(missing.value, KeyError)
    with pytest.raises(WidgetError, match="unknown image format"):
        view.export_image("x.gif")


def test_the_bands_follow_the_canvas_height_the_browser_reports() -> None:
    """Issue 25: a module outline's bands fill the widget's real canvas. A taller GraphView
    starts with longer columns; the canvas height the browser sends (`_canvas_height`) cuts
    them anew, and the layout's `room` tells the view to fit again; the canvas of a hidden
    output sends nothing."""
    from tests import real_exports

    model = onnx.load(real_exports.FOLDER / "gpt2_dynamo.onnx")

    def columns(view: GraphView) -> int:
        _, c = decode_columns(view._layout)
        return len({round(float(x)) for x, ref in zip(c["x"], c["ref"], strict=True) if ref < 0})

    default, tall = GraphView(model), GraphView(model, height=820)
    assert columns(default) == 3 and columns(tall) == 2
    seq = decode_columns(default._layout)[0]["seq"]
    default._canvas_height = 767  # the browser measured a taller canvas
    meta = decode_columns(default._layout)[0]
    assert meta["seq"] > seq and columns(default) == 2
    assert meta["room"] == list(default._scene.engine.band_room)
    default._canvas_height = 40  # a collapsed output area: no room to cut for
    assert decode_columns(default._layout)[0]["seq"] == meta["seq"] and columns(default) == 2
