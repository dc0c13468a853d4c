"""Editing an initializer's values in the Designer's tensor editor: dtype-checked numbers (never
code), one undo step per cell that gives back the exact bytes, and external data that stays in
its file (the model's saving rules)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnx_ir as ir
import pytest
from onnx import numpy_helper

import nsdl_jupyter as nj
from nsdl_jupyter.document import InitializerError, ModelDocument
from nsdl_jupyter.widgets.designer._initializer_editor import InitializerEditor
from tests.test_editors_initializers import conv_model


def _editor(doc: ModelDocument, name: str) -> InitializerEditor:
    editor = InitializerEditor(doc)
    editor.preview(name)
    assert editor.tensor_editor.editable
    return editor


def _bytes(doc: ModelDocument, name: str) -> bytes:
    tensor = doc.graph.initializers[name].const_value
    assert tensor is not None
    return tensor.tobytes()


def _cell(editor: InitializerEditor, row: int, column: int) -> str:
    """The text the grid shows in cell (row, column) of the current page."""
    grid = editor.tensor_editor.grid
    assert grid is not None
    return str(grid.page().cells[row - grid.row0][column - grid.col0])


def test_a_cell_edit_is_one_undo_step_and_undo_gives_back_the_bytes() -> None:
    doc = ModelDocument(ir.from_proto(conv_model()))
    before = _bytes(doc, "w")
    editor = _editor(doc, "w")
    assert editor.tensor_editor.set_cell(0, 1, "1.5") is None
    assert doc.undo_description == "edit values of w"
    assert float(doc.graph.initializers["w"].const_value.numpy()[0, 0, 0, 1]) == 1.5  # type: ignore[union-attr]
    assert _cell(editor, 0, 1) == "1.5"  # the grid follows the document
    doc.undo()
    assert _bytes(doc, "w") == before
    assert _cell(editor, 0, 1) != "1.5"
    doc.redo()
    assert _cell(editor, 0, 1) == "1.5"
    doc.delete_initializer("w")
    assert editor.tensor_editor.grid is None  # a deleted initializer closes the editor


@pytest.mark.parametrize(
    ("dtype", "text", "says"),
    [
        (np.int8, "abc", "'abc' is not a number for this int8 tensor"),
        (np.int8, "200", "200 is outside the int8 range -128..127"),
        (np.uint8, "-1", "-1 is outside the uint8 range 0..255"),
        (np.int8, "1.5", "'1.5' is not an integer (int8 tensor)"),
        (np.float16, "70000", "70000 is outside the float16 range (largest 65504)"),
        (np.float32, "__import__('os')", "is not a number for this float32 tensor"),
    ],
)
def test_text_that_does_not_fit_the_dtype_changes_nothing(
    dtype: type[np.generic], text: str, says: str
) -> None:
    doc = nj.new_model(opset=17)
    doc.create_initializer("k", np.zeros((2, 3), dtype=dtype))
    before, undo = _bytes(doc, "k"), doc.undo_description
    editor = _editor(doc, "k")
    problem = editor.tensor_editor.set_cell(1, 2, text)
    assert problem is not None and says in problem
    assert says in editor.tensor_editor.error.text
    assert (_bytes(doc, "k"), doc.undo_description) == (before, undo)


def test_float16_rounding_is_said() -> None:
    doc = nj.new_model(opset=17)
    doc.create_initializer("h", np.zeros(4, dtype=np.float16))
    editor = _editor(doc, "h")
    assert editor.tensor_editor.set_cell(0, 3, "0.1") is None
    assert editor.tensor_editor.error.text == (
        "stored as 0.0999755859375: the nearest float16 value"
    )
    assert doc.graph.initializers["h"].const_value.numpy()[3] == np.float16(0.1)  # type: ignore[union-attr]
    assert editor.tensor_editor.set_cell(0, 2, "0.5") is None
    assert editor.tensor_editor.error.text == ""  # exact in float16: nothing to say


def test_large_tensors_page_to_an_index_and_edit_the_shown_element() -> None:
    doc = nj.new_model(opset=17)
    doc.create_initializer("big", np.zeros((3, 40, 50), dtype=np.float32))
    editor = _editor(doc, "big")
    assert editor.tensor_editor.go_to("2, 30, 17") is None
    grid = editor.tensor_editor.grid
    assert grid is not None and (grid.row0, grid.col0) == (108, 16)  # row 2*40+30 = 110
    assert editor.tensor_editor.set_cell(110, 17, "-3") is None
    assert doc.graph.initializers["big"].const_value.numpy()[2, 30, 17] == -3  # type: ignore[union-attr]
    assert editor.tensor_editor.grid is not None
    assert (editor.tensor_editor.grid.row0, editor.tensor_editor.grid.col0) == (108, 16)
    problem = editor.tensor_editor.go_to("1, 2")
    assert problem is not None and "give 3 whole number(s)" in problem
    assert editor.tensor_editor.go_to("0, 40, 0") == "index 40 on axis 1 is past its size 40"


def test_the_document_refuses_another_shape_or_dtype_before_any_change() -> None:
    doc = ModelDocument(ir.from_proto(conv_model()))
    before, undo = _bytes(doc, "shape"), doc.undo_description
    with pytest.raises(InitializerError, match=r"shape \[2\], the new value \[3\]"):
        doc.set_initializer_value("shape", np.array([1, 2, 3], np.int64))
    with pytest.raises(InitializerError, match="holds INT64 values, the new value is float32"):
        doc.set_initializer_value("shape", np.array([1.0, 2.0], np.float32))
    assert (_bytes(doc, "shape"), doc.undo_description) == (before, undo)


def test_an_external_initializer_stays_in_its_data_file(tmp_path: Path) -> None:
    path = tmp_path / "m.onnx"
    model = conv_model()
    weights = {t.name: numpy_helper.to_array(t).copy() for t in model.graph.initializer}
    onnx.save(model, str(path), save_as_external_data=True, location="w.bin", size_threshold=0)
    data = (tmp_path / "w.bin").read_bytes()
    doc = nj.open_model(path)
    before = _bytes(doc, "w")
    editor = _editor(doc, "w")
    assert editor.tensor_editor.set_cell(0, 0, "7") is None
    assert (tmp_path / "w.bin").read_bytes() == data  # nothing on disk before a save
    doc.undo()
    assert _bytes(doc, "w") == before and doc.external_location("w") is not None
    doc.redo()
    assert "external: w.bin" in editor.tensor_editor.title.value
    doc.save()
    saved = onnx.load(str(path), load_external_data=False)
    stored = {t.name: t for t in saved.graph.initializer}
    assert all(t.data_location == onnx.TensorProto.EXTERNAL for t in stored.values())
    assert {e.value for e in stored["w"].external_data if e.key == "location"} == {"w.bin"}
    reloaded = {t.name: numpy_helper.to_array(t) for t in onnx.load(str(path)).graph.initializer}
    weights["w"][0, 0, 0, 0] = 7
    for name, array in weights.items():
        np.testing.assert_array_equal(reloaded[name], array)
