"""The Designer's side panes without a browser: tabs, collapse, a dragged width kept in the
user settings for the next Designer, a tool window added later linked to the selection, and
the initializer list that shortens while the tensor editor is open."""

from __future__ import annotations

from pathlib import Path

import pytest

import nsdl_jupyter as nj
from nsdl_jupyter.widgets._designer import Designer
from nsdl_jupyter.widgets._layer_explorer import LayerExplorer
from nsdl_jupyter.widgets._side_pane import MIN_WIDTH

pytestmark = pytest.mark.usefixtures("settings_dir")


def send(designer: Designer, name: str, **payload: object) -> None:
    """As the browser's DesignerKeys sends it."""
    event = {"kind": "nsdl.event", "name": name, "payload": payload}
    designer.shortcuts._channel.receive(None, event, [])


def test_panes_collapse_and_a_dragged_width_is_kept(resnet18_file: Path) -> None:
    designer = Designer(nj.open_model(resnet18_file))
    left, right = designer.left, designer.right
    assert [left.tabs.get_title(i) for i in range(2)] == ["Palette", "Layers"]
    assert left.layout.width.endswith("%") and right.layout.width.endswith("%")
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
