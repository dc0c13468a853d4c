"""InitializerEditor state and widget: the table (dtype, shape, size, location), filters,
create from literal / .npy / generated fills with only the allowed methods, delete, and the
selected node's inputs (switch, disconnect, connect a free input)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnx_ir as ir
import pytest
from onnx import TensorProto, helper, numpy_helper

import nsdl_jupyter as nj
from nsdl_jupyter.document import DocumentError, ModelDocument
from nsdl_jupyter.editors import (
    allowed_fill_methods,
    candidates,
    connect_initializer,
    create_initializer,
    delete_initializer,
    disconnect_input,
    filter_rows,
    initializer_rows,
    input_slots,
    parse_shape,
)
from nsdl_jupyter.widgets.designer._initializer_editor import InitializerEditor


def conv_model() -> onnx.ModelProto:
    """Conv without bias (input 2 free) then Add of an int64 shape-like constant via Reshape."""
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "w")
    other_w = numpy_helper.from_array(np.ones((4, 3, 3, 3), np.float32), "other_w")
    shape = numpy_helper.from_array(np.array([1, -1], np.int64), "shape")
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
        helper.make_node("Reshape", ["c", "shape"], ["y"], name="flat"),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 256])],
        initializer=[w, other_w, shape],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    return model


@pytest.fixture
def doc() -> ModelDocument:
    return ModelDocument(ir.from_proto(conv_model()))


def test_rows_describe_each_initializer(doc: ModelDocument) -> None:
    rows = {r.name: r for r in initializer_rows(doc)}
    assert rows["w"].dtype == "float" and rows["w"].shape == (4, 3, 3, 3)
    assert (rows["w"].size, rows["w"].nbytes, rows["w"].location) == (108, 432, "inline")
    assert rows["shape"].dtype == "int64" and rows["w"].users == 1 and rows["other_w"].users == 0
    assert "432 B" in rows["w"].label() and "[4, 3, 3, 3]" in rows["w"].label()
    assert [r.name for r in filter_rows(rows.values(), "W")] == ["w", "other_w"]
    assert [r.name for r in filter_rows(rows.values(), "", "int64")] == ["shape"]
    assert filter_rows(rows.values(), "nothing") == []


def test_external_initializers_show_their_file(tmp_path: Path) -> None:
    path = tmp_path / "m.onnx"
    onnx.save(
        conv_model(),
        str(path),
        save_as_external_data=True,
        location="weights.bin",
        size_threshold=0,
    )
    doc = nj.open_model(path)
    rows = {r.name: r for r in initializer_rows(doc)}
    assert rows["w"].location == "external: weights.bin" and rows["w"].nbytes == 432


def test_shapes_and_fill_methods() -> None:
    assert parse_shape("[1, 3, 224, 224]") == (1, 3, 224, 224)
    assert parse_shape("64") == (64,) and parse_shape("2x3") == (2, 3) and parse_shape("[]") == ()
    assert parse_shape("  ") is None
    with pytest.raises(DocumentError, match="not a non-negative integer"):
        parse_shape("[1, -1]")
    assert allowed_fill_methods("float") == ("zeros", "normal")
    assert allowed_fill_methods("int64") == ("zeros", "uniform")
    assert allowed_fill_methods("bool") == ("zeros",)
    with pytest.raises(DocumentError, match="unknown dtype"):
        allowed_fill_methods("complex7")


def test_create_from_each_source(doc: ModelDocument, tmp_path: Path) -> None:
    assert create_initializer(doc, "zeros_b", "float", "[4]", "generate", method="zeros") is None
    assert np.all(doc.graph.initializers["zeros_b"].const_value.numpy() == 0)
    assert create_initializer(doc, "noise", "float16", "2, 2", "generate", method="normal") is None
    assert doc.graph.initializers["noise"].const_value.dtype == ir.DataType.FLOAT16
    assert (
        create_initializer(doc, "ints", "int32", "[8]", "generate", method="uniform", seed=3)
        is None
    )
    values = doc.graph.initializers["ints"].const_value.numpy()
    assert values.dtype == np.int32 and np.abs(values).max() <= 100
    assert (
        create_initializer(doc, "lit", "int64", "", "literal", value_text="[[1, 2], [3, 4]]")
        is None
    )
    assert doc.graph.initializers["lit"].const_value.numpy().tolist() == [[1, 2], [3, 4]]
    npy = tmp_path / "v.npy"
    np.save(npy, np.arange(6, dtype=np.float32).reshape(2, 3))
    assert create_initializer(doc, "from_file", "float", "", "npy", npy_path=str(npy)) is None
    assert doc.graph.initializers["from_file"].const_value.shape.numpy() == (2, 3)


def test_create_errors_change_nothing(doc: ModelDocument, tmp_path: Path) -> None:
    before = ir.to_proto(doc.model).SerializeToString(deterministic=True)
    cases = [
        (("w", "float", "[4]", "generate"), {}, "already used"),
        (("b", "bool", "[4]", "generate"), {"method": "normal"}, "not available for BOOL"),
        (("b", "float", "", "generate"), {}, "give a shape"),
        (("b", "float", "[2]", "literal"), {"value_text": "[1, 2, x]"}, "column 8"),
        (("b", "float", "[3]", "literal"), {"value_text": "[1, 2]"}, "needs 3"),
        (("b", "float", "", "npy"), {"npy_path": str(tmp_path / "missing.npy")}, "no such"),
        (("b", "float", "", "npy"), {"npy_path": "data.txt"}, "not a .npy"),
        (("", "float", "[1]", "generate"), {}, "non-empty"),
    ]
    for args, extra, expected in cases:
        problem = create_initializer(doc, *args, **extra)  # type: ignore[arg-type]
        assert problem is not None and expected in problem, (args, problem)
    assert ir.to_proto(doc.model).SerializeToString(deterministic=True) == before
    assert not doc.can_undo


def test_node_inputs_switch_disconnect_and_connect(doc: ModelDocument) -> None:
    slots = input_slots(doc, "conv")
    assert [(s.label, s.tensor, s.is_initializer, s.optional) for s in slots] == [
        ("X", "x", False, False),
        ("W", "w", True, False),
        ("B", None, False, True),
    ]
    assert slots[1].allowed == ("float16", "float", "double")
    assert candidates(doc, slots[1]) == ["other_w", "w"]  # the int64 'shape' does not fit
    assert connect_initializer(doc, "conv", 1, "other_w", replace=True) is None
    assert doc.nodes["conv"].inputs[1].name == "other_w"
    assert create_initializer(doc, "bias", "float", "[4]", "generate") is None
    assert connect_initializer(doc, "conv", 2, "bias") is None
    assert input_slots(doc, "conv")[2].tensor == "bias"
    problem = connect_initializer(doc, "conv", 2, "w")
    assert problem is not None and "already linked" in problem
    assert disconnect_input(doc, "conv", 2) is None
    assert len(doc.nodes["conv"].inputs) == 2
    assert "not connected" in (disconnect_input(doc, "conv", 2) or "")
    assert "no initializer" in (connect_initializer(doc, "conv", 2, "nope") or "")
    # deleting disconnects the users; undo restores the link
    assert delete_initializer(doc, "other_w") is None
    assert input_slots(doc, "conv")[1].tensor is None
    doc.undo()
    assert input_slots(doc, "conv")[1].tensor == "other_w"


def test_widget_create_generate_zeros_connect_and_follow(doc: ModelDocument) -> None:
    editor = InitializerEditor(doc, selected=["conv"])
    assert "3 of 3 initializers" in editor.count.value
    assert [s.tensor for s in editor.slots] == ["x", "w", None]
    editor.new_dtype.value = "int64"
    assert (
        editor.method_buttons["normal"].disabled and not editor.method_buttons["uniform"].disabled
    )
    editor.method_buttons["uniform"].value = True
    assert editor.method == "uniform" and not editor.method_buttons["zeros"].value
    editor.new_dtype.value = "bool"
    assert editor.method == "zeros" and editor.method_buttons["uniform"].disabled
    editor.new_dtype.value = "float"
    editor.new_name.value = "bias"
    editor.new_shape.value = "[4]"
    assert editor.create() is None
    assert "created bias" in editor.create_message.text and editor.table.value == "bias"
    assert "4 of 4 initializers" in editor.count.value
    assert editor.create() is not None and "already used" in editor.create_message.text
    # the free input gets a searchable box and a Connect button
    free_row = editor.node_inputs.children[2]
    box, connect = free_row.children[0].children[1], free_row.children[0].children[2]
    assert "bias" in box.options and box.placeholder.startswith("connect")
    box.value = "bias"
    connect.click()
    assert doc.nodes["conv"].inputs[2].name == "bias"
    assert [s.tensor for s in editor.slots] == ["x", "w", "bias"]
    # switch through the dropdown of a linked input
    weight_box = editor.node_inputs.children[1].children[0].children[1]
    weight_box.value = "other_w"
    assert doc.nodes["conv"].inputs[1].name == "other_w"
    editor.preview("other_w")
    assert "other_w" in editor.tensor_editor.title.value
    assert editor.tensor_editor.cell_grid.children[5].value == "1.0"  # first cell, editable
    editor.table.value = "bias"
    editor.delete_button.click()
    assert "bias" not in doc.graph.initializers and editor.slots[2].tensor is None
    editor.filter_box.value = "w"
    assert [value for _label, value in editor.table.options] == ["w", "other_w"]
    doc.undo()
    assert doc.nodes["conv"].inputs[2].name == "bias"
    assert editor.slots[2].tensor == "bias"
    editor.selected = []
    assert editor.node_inputs.children == () and "select one node" in editor.node_header.value
