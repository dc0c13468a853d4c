"""The Designer without a browser: selection shared by the graph and every tool window, the
toolbar (save, save as, undo, redo, grid, export), the messages its keyboard shortcuts and
double-clicks send, and closing."""

from __future__ import annotations

from pathlib import Path

import pytest

import nsdl_jupyter as nj
from nsdl_jupyter.widgets.designer._designer import Designer

pytestmark = pytest.mark.usefixtures("settings_dir")


def test_selection_is_shared_both_ways(resnet18_file: Path) -> None:
    designer = Designer(nj.open_model(resnet18_file))
    designer.graph.selected = ["/conv1/Conv"]
    for tool in designer.tools:
        assert tool.selected == ["/conv1/Conv"], type(tool).__name__
    assert "Conv" in designer.parameters.header.value
    assert designer.initializers.slots == [], "the hidden Initializers tab waits"
    designer.right.tabs.selected_index = 1
    assert designer.initializers.slots[0].tensor == "input"
    designer.explorer.go_to("/relu/Relu")
    assert designer.graph.selected == ["/relu/Relu"] == designer.parameters.selected
    name = designer.palette.add("Sigmoid")
    assert designer.graph.selected == [name] and name in designer.doc.nodes
    designer.doc.rename_node(name, "my_sigmoid")
    assert designer.graph.selected == ["my_sigmoid"] == designer.parameters.selected
    designer.close()


def test_toolbar_undo_redo_save_and_save_as(resnet18_file: Path, tmp_path: Path) -> None:
    doc = nj.open_model(resnet18_file)
    designer = Designer(doc)
    assert designer.undo_button.disabled and designer.redo_button.disabled
    assert "●" not in designer.dirty_label.value
    doc.set_attribute("/conv1/Conv", "strides", [1, 1])
    assert not designer.undo_button.disabled and "●" in designer.dirty_label.value
    assert "set /conv1/Conv.strides" in designer.undo_button.tooltip
    designer.undo_button.click()
    assert doc.nodes["/conv1/Conv"].attributes["strides"].value == (2, 2)
    assert not designer.redo_button.disabled
    designer.redo_button.click()
    assert doc.nodes["/conv1/Conv"].attributes["strides"].value == (1, 1)
    target = tmp_path / "copy.onnx"
    designer.save_as_path.value = str(target)
    designer.save_as_button.click()
    assert target.exists() and "saved" in designer.status.text and not doc.dirty
    reopened = nj.open_model(target)
    assert reopened.nodes["/conv1/Conv"].attributes["strides"].value == (1, 1)
    designer.grid_toggle.value = True
    assert designer.graph.show_grid
    designer.close()


def test_save_without_a_path_explains(tmp_path: Path) -> None:
    doc = nj.new_model(opset=17)
    designer = Designer(doc)
    assert designer.save() is None
    assert "type a path next to Save as" in designer.status.text
    assert designer.undo() is False and "nothing to undo" in designer.status.text
    designer.close()


def test_keyboard_and_double_click_messages(resnet18_file: Path) -> None:
    doc = nj.open_model(resnet18_file)
    designer = Designer(doc)

    def send(name: str, **payload: object) -> None:  # as the browser's DesignerKeys sends it
        event = {"kind": "nsdl.event", "name": name, "payload": payload}
        designer.shortcuts._channel.receive(None, event, [])

    doc.set_attribute("/conv1/Conv", "strides", [1, 1])
    send("key", action="undo")
    assert doc.nodes["/conv1/Conv"].attributes["strides"].value == (2, 2)
    send("key", action="redo")
    assert doc.nodes["/conv1/Conv"].attributes["strides"].value == (1, 1)
    send("key", action="save")
    assert not doc.dirty and "saved" in designer.status.text
    # a double-click names its row: the list's own sync may arrive later
    send("activate", target="explorer", index=2, label="")
    assert designer.graph.selected == [designer.explorer.entries[2].node]
    designer.explorer.list.value = 1
    send("activate", target="explorer", index=-1, label="")
    assert designer.graph.selected == [designer.explorer.entries[1].node]
    send("activate", target="palette", index=0, label="Tanh")
    assert designer.graph.selected == ["Tanh"] and "Tanh" in doc.nodes
    doc.add_node("Cast", inputs=["input"], name="bad_cast")
    designer.type_check.check_now()
    problem = [d.node for d in designer.type_check.diagnostics].index("bad_cast")
    send("activate", target="type_check", index=problem, label="")
    assert designer.graph.selected == ["bad_cast"]
    send("quick_add", text="sigm")
    assert designer.graph.selected == ["Sigmoid"]
    send("unknown")  # ignored
    designer.close()


def test_export_image_and_errors(resnet18_file: Path, tmp_path: Path) -> None:
    designer = Designer(nj.open_model(resnet18_file))
    future = designer.export_image(tmp_path / "graph.svg")
    assert future is not None and future.result(timeout=10).exists()
    assert "image written" in designer.status.text
    assert designer.export_image("") is None and "type the image path" in designer.status.text
    assert designer.export_image(tmp_path / "graph.bmp") is None
    assert "unknown image format" in designer.status.text
    designer.close()


def test_options_are_checked_and_close_unbinds(resnet18_file: Path) -> None:
    with pytest.raises(TypeError, match="valid ones are: height, selected, check_delay"):
        Designer(resnet18_file, hieght=300)
    with pytest.raises(TypeError, match="ModelDocument"):
        Designer(42)  # type: ignore[arg-type]
    designer = Designer(resnet18_file, selected=["/relu/Relu"])
    assert designer.parameters.selected == ["/relu/Relu"]
    renders = designer.parameters.renders
    designer.close()
    designer.doc.rename_node("/relu/Relu", "relu0")
    assert designer.parameters.renders == renders
