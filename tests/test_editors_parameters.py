"""ParameterEditor state and widget, without a browser: forms, typed rows, literal errors that
change nothing, defaults that move up when set, resets, multi-selection in one undo step,
renames, model information, and the widget following edits made from Python."""

from __future__ import annotations

import numpy as np
import onnx
import onnx_ir as ir
import pytest
from onnx import TensorProto, helper, numpy_helper

from nsdl_jupyter.document import ModelDocument
from nsdl_jupyter.editors import (
    ModelInfo,
    NodeForm,
    apply_attribute,
    describe_selection,
    follow_event,
    rename,
    reset_attribute,
)
from nsdl_jupyter.widgets.designer._parameter_editor import ParameterEditor


def rich_model() -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "w")
    pads = numpy_helper.from_array(np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64), "pads")
    big = numpy_helper.from_array(np.arange(100, dtype=np.float32), "big_value")
    small = numpy_helper.from_array(np.array([1.5, 2.5], np.float32), "small_value")
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1], strides=[1, 1]),
        helper.make_node("Relu", ["c"], ["r"], name="relu"),
        helper.make_node("MaxPool", ["r"], ["p"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("LeakyRelu", ["p"], ["l"], name="leaky", alpha=0.2),
        helper.make_node("Pad", ["l", "pads"], ["y"], name="pad", mode="reflect"),
        helper.make_node("Constant", [], ["k"], name="big_const", value=big),
        helper.make_node("Constant", [], ["k2"], name="small_const", value=small),
    ]
    graph = helper.make_graph(
        nodes,
        "rich",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
        [
            helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 6, 6]),
            helper.make_tensor_value_info("k", TensorProto.FLOAT, [100]),
            helper.make_tensor_value_info("k2", TensorProto.FLOAT, [2]),
        ],
        initializer=[w, pads],
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="tests"
    )
    model.ir_version = 8
    helper.set_model_props(model, {"author": "editors test"})
    onnx.checker.check_model(model, full_check=True)
    return model


@pytest.fixture
def doc() -> ModelDocument:
    return ModelDocument(ir.from_proto(rich_model()))


def canonical(doc: ModelDocument) -> bytes:
    return ir.to_proto(doc.model).SerializeToString(deterministic=True)


def test_single_node_form_lists_set_values_then_defaults(doc: ModelDocument) -> None:
    form = describe_selection(doc, ["conv"])
    assert isinstance(form, NodeForm)
    assert (form.op_type, form.domain, form.names) == ("Conv", "ai.onnx", ("conv",))
    assert [r.name for r in form.set_rows] == ["pads", "strides"]
    assert all(r.is_set for r in form.set_rows)
    defaults = {r.name: r for r in form.default_rows}
    assert set(defaults) == {"auto_pad", "dilations", "group", "kernel_shape"}
    assert defaults["auto_pad"].text == "NOTSET" and defaults["auto_pad"].kind == "text"
    assert defaults["group"].kind == "int" and defaults["group"].value == 1
    assert defaults["dilations"].text == "" and not defaults["dilations"].is_set
    strides = form.row("strides")
    assert strides is not None and strides.kind == "literal" and strides.text == "[1, 1]"
    assert strides.grid and strides.type == ir.AttributeType.INTS
    assert form.inputs == ("x", "w") and form.outputs == ("c",)


def test_row_kinds_follow_attribute_types(doc: ModelDocument) -> None:
    leaky = describe_selection(doc, ["leaky"])
    assert isinstance(leaky, NodeForm)
    alpha = leaky.row("alpha")
    assert alpha is not None and alpha.kind == "float" and alpha.value == pytest.approx(0.2)
    pad = describe_selection(doc, ["pad"])
    assert isinstance(pad, NodeForm)
    mode = pad.row("mode")
    assert mode is not None and (mode.kind, mode.text) == ("text", "reflect")
    small = describe_selection(doc, ["small_const"])
    assert isinstance(small, NodeForm)
    value = small.row("value")
    assert value is not None and value.kind == "literal" and value.text == "[1.5, 2.5]"
    big = describe_selection(doc, ["big_const"])
    assert isinstance(big, NodeForm)
    value = big.row("value")
    # 100 values are not written into a text box: they are paged in the tensor editor
    assert value is not None and value.kind == "readonly" and value.grid
    assert "100 values" in value.text and "99" not in value.text


def test_graph_attributes_are_read_only() -> None:
    branch = helper.make_graph(
        [helper.make_node("Identity", ["a"], ["o"], name="inner")],
        "branch",
        [],
        [helper.make_tensor_value_info("o", TensorProto.FLOAT, [1])],
    )
    graph = helper.make_graph(
        [
            helper.make_node(
                "If", ["cond"], ["out"], name="choose", then_branch=branch, else_branch=branch
            )
        ],
        "g",
        [
            helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
            helper.make_tensor_value_info("a", TensorProto.FLOAT, [1]),
        ],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    doc = ModelDocument(ir.from_proto(model))
    form = describe_selection(doc, ["choose"])
    assert isinstance(form, NodeForm)
    then = form.row("then_branch")
    assert then is not None and then.kind == "readonly" and not then.grid
    assert "graph" in then.text


def test_bad_literal_is_reported_and_changes_nothing(doc: ModelDocument) -> None:
    before = canonical(doc)
    problem = apply_attribute(doc, ["conv"], "strides", "[1, x]")
    assert problem is not None and "column 5" in problem and "strides" in problem
    assert canonical(doc) == before
    assert not doc.dirty and not doc.can_undo
    problem = apply_attribute(doc, ["conv"], "strides", "[1.5, 2]")
    assert problem is not None and "INTS" in problem
    assert apply_attribute(doc, ["leaky"], "alpha", "'text'") is not None
    assert canonical(doc) == before


def test_setting_a_default_moves_it_up_and_reset_moves_it_back(doc: ModelDocument) -> None:
    assert apply_attribute(doc, ["conv"], "group", 1) is None
    form = describe_selection(doc, ["conv"])
    assert isinstance(form, NodeForm)
    assert "group" in [r.name for r in form.set_rows]
    assert "group" not in [r.name for r in form.default_rows]
    assert reset_attribute(doc, ["conv"], "group") is None
    form = describe_selection(doc, ["conv"])
    assert isinstance(form, NodeForm)
    assert "group" in [r.name for r in form.default_rows]
    doc.undo()
    form = describe_selection(doc, ["conv"])
    assert isinstance(form, NodeForm) and form.row("group") in form.set_rows


def test_required_attribute_without_value_comes_first_and_cannot_be_reset(
    doc: ModelDocument,
) -> None:
    doc.add_node("Cast", inputs=["y"], name="cast")
    form = describe_selection(doc, ["cast"])
    assert isinstance(form, NodeForm)
    first = form.default_rows[0]
    assert (first.name, first.required, first.kind, first.text) == ("to", True, "literal", "")
    assert apply_attribute(doc, ["cast"], "to", 10) is None
    problem = reset_attribute(doc, ["cast"], "to")
    assert problem is not None and "required" in problem
    assert doc.nodes["cast"].attributes["to"].value == 10


def test_multi_selection_shows_common_attributes_and_edits_in_one_step(doc: ModelDocument) -> None:
    form = describe_selection(doc, ["conv", "pool"])
    assert isinstance(form, NodeForm) and form.multiple
    assert form.op_type == "Conv, MaxPool"
    names = {r.name for r in (*form.set_rows, *form.default_rows)}
    assert names == {"auto_pad", "dilations", "kernel_shape", "pads", "strides"}
    strides = form.row("strides")
    assert strides is not None and strides.mixed and strides.is_set  # [1, 1] vs [2, 2]
    auto_pad = form.row("auto_pad")
    assert auto_pad is not None and not auto_pad.mixed and auto_pad.text == "NOTSET"
    pads = form.row("pads")
    assert pads is not None and pads.mixed and pads.text == "" and not pads.grid
    assert apply_attribute(doc, ["conv", "pool"], "strides", "[2, 2]") is None
    assert doc.nodes["conv"].attributes["strides"].value == (2, 2)
    assert doc.nodes["pool"].attributes["strides"].value == (2, 2)
    doc.undo()
    assert doc.nodes["conv"].attributes["strides"].value == (1, 1)
    assert doc.nodes["pool"].attributes["strides"].value == (2, 2)
    # nothing in common but the op type set
    unrelated = describe_selection(doc, ["relu", "pad"])
    assert isinstance(unrelated, NodeForm) and not unrelated.set_rows
    assert reset_attribute(doc, ["conv", "pool"], "strides") is None
    assert doc.undo_description == "reset strides on 2 nodes"


def test_rename_checks_names_and_selection_follows(doc: ModelDocument) -> None:
    assert "C identifier" in (rename(doc, "conv", "conv-1") or "")
    assert "already exists" in (rename(doc, "conv", "relu") or "")
    assert rename(doc, "conv", "stem") is None
    assert follow_event(["conv", "relu"], [("conv", "stem")], frozenset(), doc.nodes) == [
        "stem",
        "relu",
    ]
    assert follow_event(["relu"], [], frozenset({"relu"}), doc.nodes) == []


def test_empty_selection_gives_model_information(doc: ModelDocument) -> None:
    info = describe_selection(doc, [])
    assert isinstance(info, ModelInfo)
    assert info.ir_version == 8 and info.opset_imports == (("ai.onnx", 17),)
    assert info.producer == "tests" and info.nodes == 7 and info.initializers == 2
    assert info.metadata == (("author", "editors test"),)
    assert describe_selection(doc, ["no_such_node"]) == info


# ---------------------------------------------------------------------- the widget
def _rows(editor: ParameterEditor) -> dict[str, object]:
    return {
        w.row.name: w
        for pool in editor._pool.values()
        for w in pool
        if w.row is not None and w.box in (*editor.set_rows.children, *editor.default_rows.children)
    }


def test_widget_edits_show_errors_inline_and_follow_python_edits(doc: ModelDocument) -> None:
    editor = ParameterEditor(doc, selected=["conv"])
    rows = _rows(editor)
    strides = rows["strides"]
    strides.input.value = "[1, x]"  # what typing + Enter does
    assert "column 5" in strides.error.text and strides.error.layout.display == ""
    assert not doc.dirty
    strides.input.value = "[2, 2]"
    assert doc.nodes["conv"].attributes["strides"].value == (2, 2)
    assert _rows(editor)["strides"].input.value == "[2, 2]"
    # a default edited in the box becomes a set value
    group = _rows(editor)["group"]
    assert group.box in editor.default_rows.children
    group.input.value = 2
    assert doc.nodes["conv"].attributes["group"].value == 2
    assert _rows(editor)["group"].box in editor.set_rows.children
    # an edit from Python shows up in the widget
    doc.set_attribute("conv", "pads", [0, 0, 0, 0])
    assert _rows(editor)["pads"].input.value == "[0, 0, 0, 0]"
    doc.undo()
    assert _rows(editor)["pads"].input.value == "[1, 1, 1, 1]"
    reset = _rows(editor)["group"].reset
    reset.click()
    assert "group" not in doc.nodes["conv"].attributes


def test_widget_pools_rows_and_renames_follow(doc: ModelDocument) -> None:
    editor = ParameterEditor(doc)
    assert "IR version" in editor.info.value and editor.info.layout.display == ""
    editor.selected = ["conv"]
    first = set(map(id, (w for pool in editor._pool.values() for w in pool)))
    editor.selected = ["pool"]
    editor.selected = ["conv"]
    again = set(map(id, (w for pool in editor._pool.values() for w in pool)))
    assert first <= again and len(again) - len(first) <= 2, "rows are reused, not rebuilt"
    editor.name_box.value = "bad name"
    assert "C identifier" in editor.name_error.text and "conv" in doc.nodes
    editor.name_box.value = "stem"
    assert editor.selected == ["stem"] and "stem" in doc.nodes
    doc.undo()
    assert editor.selected == ["conv"] and editor.name_box.value == "conv"
    editor.selected = ["conv", "pool"]
    assert editor.name_box.layout.display == "none"
    assert editor.set_value("strides", "[3, 3]") is None
    assert doc.undo_description == "set strides on 2 nodes"
    renders = editor.renders
    editor.close()
    doc.set_attribute("conv", "strides", [1, 1])
    assert editor.renders == renders, "a closed editor no longer follows the document"


def test_tensor_editor_edits_a_list_attribute_cell(doc: ModelDocument) -> None:
    editor = ParameterEditor(doc, selected=["conv"])
    _rows(editor)["pads"].grid.click()
    tensor = editor.tensor_editor
    assert tensor.layout.display == "" and tensor.editable
    cells = [c for c in tensor.cell_grid.children if hasattr(c, "_grid_at")]
    assert [c.value for c in cells] == ["1", "1", "1", "1"]
    cells[2].value = "x"
    assert "unknown word" in tensor.error.text and not doc.dirty
    cells[2].value = "0"
    assert doc.nodes["conv"].attributes["pads"].value == (1, 1, 0, 1)
    shown = [c for c in tensor.cell_grid.children if hasattr(c, "_grid_at")]
    assert [c.value for c in shown] == ["1", "1", "0", "1"]
    editor.selected = ["relu"]
    assert tensor.layout.display == "none"


def test_widget_sets_and_clears_the_trt_precision_of_the_selection(doc: ModelDocument) -> None:
    editor = ParameterEditor(doc, selected=["conv"])
    assert editor.trt_precision.value == "none" and editor.trt_precision.layout.display == ""
    editor.trt_precision.value = "fp16"
    assert doc.tensorrt.layer_precisions == {"conv": "fp16"}
    editor.selected = ["relu", "pool"]
    assert editor.trt_precision.value == "none"  # shows the selection's, sets nothing
    assert doc.tensorrt.layer_precisions == {"conv": "fp16"}
    editor.trt_precision.value = "int8"
    assert doc.tensorrt.layer_precisions == {"conv": "fp16", "relu": "int8", "pool": "int8"}
    doc.undo()  # the two nodes were one step; the form follows
    assert doc.tensorrt.layer_precisions == {"conv": "fp16"}
    assert editor.trt_precision.value == "none"
    editor.selected = ["conv"]
    doc.tensorrt.set_layer_precision("conv", "bf16")  # from Python: the form follows
    assert editor.trt_precision.value == "bf16"
    editor.trt_precision.value = "none"
    assert doc.tensorrt.layer_precisions == {}
    editor.selected = []
    assert editor.trt_precision.layout.display == "none"  # model information, no node
