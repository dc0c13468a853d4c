"""LayerPalette state and widget: operators of the imported opsets, grouping, filtering,
quick-add ranking, and adding nodes with generated unique names."""

from __future__ import annotations

import onnx_ir as ir
import pytest

import nsdl_jupyter as nj
from nsdl_jupyter.document import ModelDocument
from nsdl_jupyter.editors import PaletteIndex, add_operator, explain_missing
from nsdl_jupyter.widgets.designer._layer_palette import LayerPalette


def test_index_follows_the_imported_opsets() -> None:
    old = PaletteIndex({"": 7})
    new = PaletteIndex({"": 21})
    assert old.get("LayerNormalization") is None and new.get("LayerNormalization") is not None
    assert new.get("Upsample") is None, "deprecated operators are left out"
    contrib = PaletteIndex({"": 17, "com.microsoft": 1})
    fused = contrib.get("com.microsoft::FusedConv")
    assert fused is not None and fused.domain_label == "com.microsoft"
    assert len(contrib) > len(PaletteIndex({"": 17})) + 100


def test_groups_by_category_domain_and_name() -> None:
    index = PaletteIndex({"": 17, "com.microsoft": 1})
    by_category = dict(index.groups("category"))
    assert "Relu" in [e.op_type for e in by_category["Activation"]]
    assert "Conv" in [e.op_type for e in by_category["Convolution"]]
    assert set(dict(index.groups("domain"))) == {"ai.onnx", "com.microsoft"}
    by_name = dict(index.groups("name"))
    assert all(e.op_type.upper().startswith(letter) for letter, es in by_name.items() for e in es)
    filtered = index.groups("category", "relu")
    assert sorted(e.key for _, es in filtered for e in es) == [
        "LeakyRelu",
        "PRelu",
        "Relu",
        "ThresholdedRelu",
        "com.microsoft::QLinearLeakyRelu",
    ]
    with pytest.raises(ValueError, match="group by"):
        index.groups("size")  # type: ignore[arg-type]


def test_quick_add_ranking() -> None:
    index = PaletteIndex({"": 17})
    assert index.search("relu")[0].op_type == "Relu"
    assert index.search("conv")[0].op_type == "Conv"
    assert [e.op_type for e in index.search("Conv")][:3] == ["Conv", "ConvInteger", "ConvTranspose"]
    norms = [e.op_type for e in index.search("norm")]
    assert "LayerNormalization" in norms and "BatchNormalization" in norms
    assert index.search("") == [] and index.search("zzz") == []


def test_add_operator_names_and_links() -> None:
    doc = nj.new_model(opset=17)
    doc.add_graph_input("x", "float", [1, 4])
    index = PaletteIndex(doc.opset_imports)
    relu = index.get("Relu")
    assert relu is not None
    first, problem = add_operator(doc, relu)
    second, _ = add_operator(doc, relu, link_from=[first or ""])
    assert problem is None and (first, second) == ("Relu", "Relu_1")
    assert doc.nodes["Relu_1"].inputs[0] is doc.nodes["Relu"].outputs[0]
    constant = index.get("Constant")
    assert constant is not None
    name, problem = add_operator(doc, constant, link_from=["Relu"])
    assert problem is None and name == "Constant" and len(doc.nodes["Constant"].inputs) == 0
    _, problem = add_operator(doc, relu, link_from=["ghost"])
    assert problem is not None and "ghost" in problem


def test_widget_quick_add_and_list_add_select_the_new_node() -> None:
    doc: ModelDocument = nj.new_model(opset=17)
    doc.add_graph_input("x", "float", [1, 4])
    doc.add_node("Relu", inputs=["x"], name="first")
    palette = LayerPalette(doc, selected=["first"])
    assert f"{len(palette.index)} of {len(palette.index)} operators" in palette.count.value
    assert palette.add_by_text("sigm") == "Sigmoid"  # quick add feeds it from the selection
    assert palette.selected == ["Sigmoid"] and palette.quick_add.value == ""
    assert doc.nodes["Sigmoid"].inputs[0] is doc.nodes["first"].outputs[0]
    assert palette.quick_message.text == "added Sigmoid after first"
    palette.selected = ["first"]
    palette.add("Tanh")  # the list's Add follows the "feed from the selected node" box
    assert len(doc.nodes["Tanh"].inputs) == 0
    palette.link.value = True
    palette.selected = ["first"]
    assert palette.add("Elu") == "Elu"
    assert doc.nodes["Elu"].inputs[0] is doc.nodes["first"].outputs[0]
    palette.filter_box.value = "leaky"
    assert palette.groups.selected_index == 0 and len(palette.groups.children) == 1
    chooser = palette.groups.children[0]
    chooser.value = "LeakyRelu"
    assert palette.current is not None and "LeakyRelu" in palette.details.value
    palette.add_button.click()
    assert palette.selected == ["LeakyRelu"] and "added LeakyRelu" in palette.message.text
    assert palette.add_by_text("qqqq") is None and "no operator" in palette.quick_message.text
    assert doc.undo_description == "add LeakyRelu LeakyRelu"
    assert isinstance(doc.nodes["LeakyRelu"], ir.Node)


def test_quick_add_says_at_once_why_an_operator_is_missing() -> None:
    """Gelu on an opset-17 model: the opset that has it, not a look-alike nor silence."""
    doc: ModelDocument = nj.new_model(opset=17, contrib_ops=True)  # FastGelu, BiasGelu match "gelu"
    doc.add_graph_input("x", "float", [1, 4])
    palette = LayerPalette(doc)
    before = len(doc.nodes)
    assert palette.add_by_text("Gelu") is None and len(doc.nodes) == before
    assert palette.quick_message.text == (
        "Gelu needs opset 20 of ai.onnx; this model imports opset 17: convert it first "
        "(nj.convert_opset(model, output, 20))"
    )
    plain: ModelDocument = nj.new_model(opset=17)
    explained = explain_missing("SkipLayerNormalization", plain.opset_imports)
    assert explained is not None and "domain com.microsoft" in explained
    assert "import_domain('com.microsoft'" in explained
    assert explain_missing("NoSuchOp", plain.opset_imports) is None
    assert LayerPalette(plain).add_by_text("NoSuchOp") is None
