"""LayerExplorer state and widget: rows, constants hidden by default with the choice kept in
user settings, grouping by type and scope, name/type/attribute filters with their count,
paging of a big model, and following renames and removals."""

from __future__ import annotations

import json
from pathlib import Path

import onnx_ir as ir
import pytest

from nsdl_jupyter.document import ModelDocument
from nsdl_jupyter.editors import (
    AttributeCondition,
    LayerExplorerState,
    LayerFilter,
    settings_path,
)
from nsdl_jupyter.examples import resnet18, synthetic_dag
from nsdl_jupyter.widgets.designer._layer_explorer import LayerExplorer

pytestmark = pytest.mark.usefixtures("settings_dir")


@pytest.fixture(scope="module")
def resnet_proto():  # type: ignore[no-untyped-def]
    return resnet18()


@pytest.fixture
def doc(resnet_proto) -> ModelDocument:  # type: ignore[no-untyped-def]
    model = ir.from_proto(resnet_proto)
    doc = ModelDocument(model)
    doc.add_node("Constant", name="a_constant", attributes={"value_float": 1.0})
    return doc


def test_constants_hidden_by_default_and_the_choice_is_remembered(
    doc: ModelDocument, settings_dir: Path
) -> None:
    state = LayerExplorerState(doc)
    assert len(state.rows) == 50 and len(state.matching) == 49
    assert "constants hidden" in state.summary()
    state.set_show_constants(True)
    assert len(state.matching) == 50
    assert json.loads(settings_path().read_text()) == {"layer_explorer.show_constants": True}
    assert settings_path().parent == settings_dir
    assert LayerExplorerState(doc).filter.show_constants
    state.set_show_constants(False)
    assert not LayerExplorerState(doc).filter.show_constants


def test_group_by_type_and_scope_with_headers(doc: ModelDocument) -> None:
    state = LayerExplorerState(doc)
    state.set_group_by("type")
    headers = [e.label for e in state.entries()]
    assert "▸ Conv (20)" in headers and all(e.node is None for e in state.entries())
    state.toggle("Conv")
    entries = state.entries()
    index = [e.label for e in entries].index("▾ Conv (20)")
    assert entries[index + 1].node == "/conv1/Conv" and entries[index + 1].label.startswith("    ")
    state.set_group_by("scope")
    keys = [e.group for e in state.entries()]
    assert "/layer1/layer1.0" in keys and "/layer1/layer1.0/conv1" in keys and "/" in keys
    state.toggle("/layer1/layer1.0")
    state.toggle("/")
    nodes = [e.node for e in state.entries() if e.node]
    # each node sits in its innermost scope; the hidden constant is not listed
    assert nodes == ["/Flatten", "/layer1/layer1.0/Add"]
    with pytest.raises(ValueError, match="group by"):
        state.set_group_by("size")  # type: ignore[arg-type]


def test_filters_by_name_type_and_attribute_values(doc: ModelDocument) -> None:
    state = LayerExplorerState(doc)
    state.set_filter(LayerFilter(text="LAYER4"))
    # layer4.0: conv1, relu, conv2, downsample, Add, relu_1; layer4.1: the same without downsample
    assert all("layer4" in r.name for r in state.matching) and len(state.matching) == 11
    state.set_filter(LayerFilter(op_types=frozenset({"Conv", "Gemm"})))
    assert len(state.matching) == 21
    strided = AttributeCondition("strides", "contains", "2")
    state.set_filter(LayerFilter(op_types=frozenset({"Conv"}), conditions=(strided,)))
    # stride-2 convs: the stem, and conv1 + downsample of layer2.0, layer3.0, layer4.0
    assert len(state.matching) == 7 and state.filter.active_count == 2
    # schema defaults count: no Conv sets group, each has group = 1
    state.set_filter(LayerFilter(conditions=(AttributeCondition("group", "=", "1"),)))
    assert {r.op_type for r in state.matching} == {"Conv"} and len(state.matching) == 20
    state.set_filter(LayerFilter(conditions=(AttributeCondition("kernel_shape", "=", "[3, 3]"),)))
    assert len(state.matching) == 17  # 16 convs and the max pool
    state.set_filter(LayerFilter(conditions=(AttributeCondition("alpha", ">", "0.5"),)))
    assert {r.op_type for r in state.matching} == {"Gemm"}  # alpha defaults to 1.0
    state.set_filter(LayerFilter(conditions=(AttributeCondition("alpha", "!=", "1.0"),)))
    assert state.matching == []
    state.set_filter(
        LayerFilter(text="x", conditions=(strided, AttributeCondition("group", "<", "2")))
    )
    assert state.filter.active_count == 3
    with pytest.raises(ValueError, match="comparison"):
        AttributeCondition("group", "~", "1")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="attribute name"):
        AttributeCondition(" ", "=", "1")


def test_paging_and_following_edits_on_a_big_model() -> None:
    doc = ModelDocument(ir.from_proto(synthetic_dag(3000, seed=2)))
    state = LayerExplorerState(doc, page_size=200)
    assert state.pages == 15 and len(state.entries()) == 200
    state.page = 99
    assert len(state.entries()) == 200 and state.page == 14
    names = list(doc.nodes)
    doc.rename_node(names[0], "first_node")
    assert state.follow(doc_event(doc))
    assert state.rows[0].name == "first_node"
    doc.remove_node(names[1])
    assert state.follow(doc_event(doc)) and len(state.rows) == 2999


def doc_event(doc: ModelDocument):  # type: ignore[no-untyped-def]
    """The last event the document emitted (collected by a listener added on the fly)."""
    events = []
    unsubscribe = doc.subscribe(events.append)
    doc.undo()
    doc.redo()
    unsubscribe()
    return events[-1]


def test_widget_go_to_header_toggle_and_badge(doc: ModelDocument) -> None:
    explorer = LayerExplorer(doc)
    assert explorer.filters_button.description == "Filters"
    assert "49 of 50 layers, constants hidden" in explorer.summary.value
    explorer.list.value = 0
    explorer.go_button.click()
    assert explorer.selected == ["/conv1/Conv"]
    explorer.group_by.value = "type"
    conv_header = next(i for i, e in enumerate(explorer.entries) if e.group == "Conv")
    explorer.list.value = conv_header
    assert explorer.entries[conv_header].label.startswith("▾ Conv")
    explorer.list.value = conv_header + 2
    explorer.go_to()
    assert explorer.selected == ["/layer1/layer1.0/conv1/Conv"]
    explorer.type_filter.value = ["Conv"]
    explorer.condition_attribute.value = "strides"
    explorer.condition_op.value = "contains"
    explorer.condition_value.value = "2"
    explorer.add_condition.click()
    assert explorer.filters_button.description == "Filters (2)"
    assert "7 of 50 layers" in explorer.summary.value
    explorer.filter_box.value = "downsample"
    assert explorer.filters_button.description == "Filters (3)"
    assert [e.node for e in explorer.entries if e.node] == [
        "/layer2/layer2.0/downsample/downsample.0/Conv",
        "/layer3/layer3.0/downsample/downsample.0/Conv",
        "/layer4/layer4.0/downsample/downsample.0/Conv",
    ]
    explorer.condition_attribute.value = ""
    explorer.add_condition.click()
    assert "attribute name" in explorer.message.text
    explorer.clear_filters.click()
    assert explorer.filters_button.description == "Filters"
    explorer.show_constants.value = True
    assert "50 of 50 layers" in explorer.summary.value
    doc.rename_node("/conv1/Conv", "stem")
    assert "stem" in [r.name for r in explorer.state.rows]
    explorer.go_to("nope")
    assert "no node named" in explorer.message.text


def test_trt_precision_column_and_filter_follow_the_document(doc: ModelDocument) -> None:
    state = LayerExplorerState(doc)
    assert all(e.precision is None for e in state.entries())
    doc.tensorrt.set_layer_precisions(["/conv1/Conv", "/relu/Relu"], "fp16")
    doc.tensorrt.set_layer_precision("/fc/Gemm", "fp32")
    assert state.follow(_tensorrt_event())
    column = {e.node: e.precision for e in state.entries()}
    assert column["/conv1/Conv"] == "fp16" and column["/fc/Gemm"] == "fp32"
    assert column["/maxpool/MaxPool"] is None
    assert "TRT fp16" in next(e.label for e in state.entries() if e.node == "/conv1/Conv")
    state.set_filter(LayerFilter(precisions=frozenset({"fp16"})))
    assert [r.name for r in state.matching] == ["/conv1/Conv", "/relu/Relu"]
    assert state.filter.active_count == 1
    state.set_filter(LayerFilter(precisions=frozenset({"fp32", "none"})))
    assert len(state.matching) == 49 - 2
    assert state.precision_choices()[:3] == ["none", "fp32", "fp16"]


def _tensorrt_event():  # type: ignore[no-untyped-def]
    from nsdl_jupyter.document import ChangeEvent

    return ChangeEvent("trt", tensorrt=True)


def test_widget_sets_clears_and_filters_trt_precision(doc: ModelDocument) -> None:
    explorer = LayerExplorer(doc)
    explorer.list.value = 0  # /conv1/Conv
    explorer.precision_choice.value = "int8"
    explorer.set_precision_button.click()
    assert doc.tensorrt.layer_precisions == {"/conv1/Conv": "int8"}
    assert explorer.entries[0].precision == "int8"  # redrawn from the document event
    explorer.selected = ["/relu/Relu", "/maxpool/MaxPool"]
    explorer.set_precision("bf16")  # no row chosen after the redraw: the selection, one step
    assert doc.tensorrt.layer_precision("/maxpool/MaxPool") == "bf16"
    doc.undo()
    assert doc.tensorrt.layer_precisions == {"/conv1/Conv": "int8"}
    explorer.selected = ["/conv1/Conv"]
    assert explorer.precision_choice.value == "int8"  # shows the node's precision
    explorer.precision_choice.value = "none"
    explorer.set_precision_button.click()
    assert doc.tensorrt.layer_precisions == {}
    doc.undo()
    explorer.precision_filter.value = ["int8"]
    assert [e.node for e in explorer.entries] == ["/conv1/Conv"]
    assert explorer.filters_button.description == "Filters (1)"
    doc.rename_node("/conv1/Conv", "stem")
    assert [e.node for e in explorer.entries] == ["stem"]
    explorer.selected = []
    explorer.set_precision()
    assert "choose a layer" in explorer.message.text
