"""The Designer's side panes without a browser: tabs, collapse, a dragged width kept in the
user settings for the next Designer, a tool window added later linked to the selection, and
the initializer list that shortens while the tensor editor is open."""

from __future__ import annotations

from pathlib import Path

import onnx
import pytest

import nsdl_jupyter as nj
from nsdl_jupyter.widgets.designer._designer import Designer
from nsdl_jupyter.widgets.designer._layer_explorer import LayerExplorer
from nsdl_jupyter.widgets.designer._side_pane import MIN_WIDTH
from tests.test_canvas_edit import _model, _unknown_type_model

pytestmark = pytest.mark.usefixtures("settings_dir")


def send(designer: Designer, name: str, **payload: object) -> None:
    """As the browser's DesignerKeys sends it."""
    event = {"kind": "nsdl.event", "name": name, "payload": payload}
    designer.shortcuts._channel.receive(None, event, [])


def test_panes_collapse_and_a_dragged_width_is_kept(resnet18_file: Path) -> None:
    designer = Designer(nj.open_model(resnet18_file))
    left, right = designer.left, designer.right
    assert [left.tabs.get_title(i) for i in range(2)] == ["Palette", "Layers"]
    assert "%" in left.layout.width and "%" in right.layout.width  # a share, with a least px
    right.toggle.click()
    assert not right.expanded and right.tabs.layout.display == "none"
    assert right.layout.width == "12px" and "nsdl-pane-closed" in right._dom_classes
    right.toggle.click()
    assert right.expanded and right.tabs.layout.display == ""
    send(designer, "resize_pane", pane="left", width=333)
    assert left.layout.width == "333px"
    send(designer, "resize_pane", pane="right", width=5)
    assert right.layout.width == f"{MIN_WIDTH}px"
    designer.close()
    again = Designer(nj.open_model(resnet18_file))
    assert again.left.layout.width == "333px" and again.right.layout.width == f"{MIN_WIDTH}px"
    again.close()


def test_a_tool_window_added_later_follows_the_selection(resnet18_file: Path) -> None:
    designer = Designer(nj.open_model(resnet18_file))
    extra = LayerExplorer(designer.doc)
    designer.add_tool("More layers", extra, side="right")
    assert designer.right.tabs.get_title(3) == "More layers"
    designer.graph.selected = ["/relu/Relu"]
    assert extra.selected == ["/relu/Relu"]
    extra.go_to("/conv1/Conv")
    assert designer.graph.selected == ["/conv1/Conv"]
    designer.right.tabs.selected_index = 3
    assert not designer.initializers.active
    designer.right.tabs.selected_index = 1
    assert designer.initializers.active
    designer.close()


def test_the_initializer_list_shortens_while_a_tensor_is_open(resnet18_file: Path) -> None:
    editor = nj.InitializerEditor(nj.open_model(resnet18_file))
    rows = editor.table.rows
    name = editor.shown[0].name
    editor.preview(name)
    assert editor.tensor_editor.grid is not None and editor.table.rows < rows
    editor.tensor_editor.close_button.click()
    assert editor.tensor_editor.grid is None and editor.table.rows == rows
    editor.close()


def test_profile_from_here_profiles_the_rest_of_the_model(
    resnet18_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The canvas menu's "Profile from here" in the Designer: the model from that node on is
    written beside the file (a torch-style name with slashes stays a file in that folder) and
    profiled with onnxruntime in the Profile dock below the canvas; a second pick replaces it."""
    monkeypatch.chdir(tmp_path)  # where the onnxruntime trace is kept
    path = tmp_path / "resnet18.onnx"
    path.write_bytes(resnet18_file.read_bytes())
    doc = nj.open_model(path)
    designer = Designer(doc)
    start = next(n for n in doc.nodes if "layer4" in n and n.endswith("Conv"))
    assert "/" in start
    view = designer.graph
    sent: list[dict[str, object]] = []
    view.send = lambda content, buffers=None: sent.append(content)  # type: ignore[method-assign]
    request = {
        "kind": "nsdl.request",
        "id": "t:1",
        "name": "profile",
        "payload": {"nodes": [start]},
    }
    view._channel.receive(view, request, [])
    assert sent[-1]["ok"] is True, sent[-1]
    panel = designer.activity
    assert panel is not None
    report = panel.wait(timeout=120)
    assert report is not None, panel.error
    profiled = set(report.node_times())
    assert start in profiled and profiled <= set(doc.nodes)
    assert not any("layer1" in n for n in profiled)  # only what runs from `start` on
    written = [p for p in tmp_path.iterdir() if p.name != "resnet18.onnx" and p.suffix == ".onnx"]
    assert len(written) == 1 and written[0].parent == tmp_path
    dock = designer.dock
    assert dock.content is panel and dock.shown and start in dock.title.value
    assert designer.profile_from([start]) is not panel  # replaced in the same dock
    assert dock.content is designer.activity and panel not in designer.right.tabs.children
    assert designer.profile_from(["no such node"]) is None
    assert "no such node" in designer.status.value
    designer.activity.wait(timeout=120)
    designer.close()


def test_profile_from_here_never_replaces_an_existing_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A user's own `m.cat1.onnx` stays as it was: the profiled model is `-2`, then `-3`,
    and the status and the Profile tab name the file actually written."""
    monkeypatch.chdir(tmp_path)  # where the onnxruntime trace is kept
    onnx.save(_model(), tmp_path / "m.onnx")
    theirs = tmp_path / "m.cat1.onnx"
    theirs.write_bytes(b"the user's own file")
    designer = Designer(nj.open_model(tmp_path / "m.onnx"))
    for number in (2, 3):
        panel = designer.profile_from(["cat1"])
        assert panel is not None
        written = tmp_path / f"m.cat1-{number}.onnx"
        assert panel.model == written
        assert f"({written.name})" in designer.status.value
        report = panel.wait(timeout=120)
        assert report is not None, panel.error
        assert set(report.node_times()) == {"cat1", "add1"}
    assert theirs.read_bytes() == b"the user's own file"
    designer.close()


def test_a_refused_profile_from_here_leaves_no_file(tmp_path: Path) -> None:
    designer = Designer(nj.open_model(_unknown_type_model(tmp_path)))
    assert designer.profile_from(["relu1"]) is None
    assert "is unknown (shape inference cannot reach it)" in designer.status.value
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_file()) == ["c.onnx"]
    designer.close()
