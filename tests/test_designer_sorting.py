"""Sorting the Layer Palette and the Layer Explorer: every key in both directions, and labels
that say the direction the list really shows."""

from __future__ import annotations

import pytest

import nsdl_jupyter as nj
from nsdl_jupyter.document import ModelDocument
from nsdl_jupyter.editors import EditorError, PaletteIndex, SortOrder, operator_counts
from nsdl_jupyter.widgets.designer._layer_explorer import LayerExplorer
from nsdl_jupyter.widgets.designer._layer_palette import LayerPalette


@pytest.fixture
def doc() -> ModelDocument:
    """Three Relus, one Tanh and one Sigmoid, in an order that no sort order repeats."""
    doc: ModelDocument = nj.new_model(opset=17)
    doc.add_graph_input("x", "float", [1, 4])
    for name, op in [
        ("m_b_relu", "Relu"),
        ("m_e_tanh", "Tanh"),
        ("n_a_relu", "Relu"),
        ("n_d_sigmoid", "Sigmoid"),
        ("n_c_relu", "Relu"),
    ]:
        doc.add_node(op, inputs=["x"], name=name)
    return doc


def _shown(explorer: LayerExplorer) -> list[str]:
    return [e.node or f"[{e.group}]" for e in explorer.entries]


def test_explorer_sorts_each_key_both_ways_with_true_labels(doc: ModelDocument) -> None:
    explorer = LayerExplorer(doc)
    orders = dict(explorer.sort.options)
    assert list(orders) == [
        "graph order",
        "graph order, last first",
        "name A→Z",
        "name Z→A",
        "op type A→Z",
        "op type Z→A",
        "count: most first",
        "count: fewest first",
    ]
    expected = {
        "graph order": ["m_b_relu", "m_e_tanh", "n_a_relu", "n_d_sigmoid", "n_c_relu"],
        "name A→Z": ["m_b_relu", "m_e_tanh", "n_a_relu", "n_c_relu", "n_d_sigmoid"],
        "op type A→Z": ["m_b_relu", "n_a_relu", "n_c_relu", "n_d_sigmoid", "m_e_tanh"],
        # equal counts (Sigmoid, Tanh: one each) stay in type order A→Z both ways
        "count: most first": ["m_b_relu", "n_a_relu", "n_c_relu", "n_d_sigmoid", "m_e_tanh"],
        "count: fewest first": ["n_d_sigmoid", "m_e_tanh", "m_b_relu", "n_a_relu", "n_c_relu"],
    }
    for label, rows in expected.items():
        explorer.sort.value = orders[label]
        assert _shown(explorer) == rows, label
    explorer.sort.value = orders["op type Z→A"]  # a type's rows stay in graph order
    assert _shown(explorer) == ["m_e_tanh", "n_d_sigmoid", "m_b_relu", "n_a_relu", "n_c_relu"]
    for label in ("graph order", "name A→Z"):
        reverse = label.replace("A→Z", "Z→A").replace("graph order", "graph order, last first")
        explorer.sort.value = orders[reverse]
        assert _shown(explorer) == expected[label][::-1], reverse


def test_explorer_groups_follow_the_order(doc: ModelDocument) -> None:
    explorer = LayerExplorer(doc)
    explorer.group_by.value = "type"
    orders = dict(explorer.sort.options)
    explorer.sort.value = orders["count: most first"]
    assert _shown(explorer) == ["[Relu]", "[Sigmoid]", "[Tanh]"]
    explorer.sort.value = orders["name Z→A"]
    assert _shown(explorer) == ["[Tanh]", "[Sigmoid]", "[Relu]"]
    explorer.list.value = 2  # a click on the Relu header opens it
    assert _shown(explorer) == ["[Tanh]", "[Sigmoid]", "[Relu]", "n_c_relu", "n_a_relu", "m_b_relu"]
    with pytest.raises(EditorError, match="sort by 'size'"):
        explorer.state.set_order(SortOrder("size"))


def test_palette_sorts_by_name_domain_and_use_count(doc: ModelDocument) -> None:
    palette = LayerPalette(doc)
    orders = dict(palette.sort.options)
    assert list(orders) == [
        "name A→Z",
        "name Z→A",
        "category A→Z",
        "category Z→A",
        "domain A→Z",
        "domain Z→A",
        "count: most first",
        "count: fewest first",
    ]
    palette.group_by.value = "category"
    palette.filter_box.value = "Relu"  # Relu, LeakyRelu, PRelu, ThresholdedRelu (Activation)
    palette.sort.value = orders["name Z→A"]
    [(title, entries)] = palette.index.groups("category", "Relu", palette.sort.value)
    names = [e.op_type for e in entries]
    assert title == "Activation" and names == sorted(names, key=str.lower, reverse=True)
    assert palette.groups.children[0].options[0][1] == names[0]  # the list shows that order
    palette.filter_box.value = ""
    palette.sort.value = orders["count: most first"]
    assert operator_counts(doc) == {"Relu": 3, "Tanh": 1, "Sigmoid": 1}
    first = palette.groups.children[0].options
    assert [key for _, key in first[:3]] == ["Relu", "Sigmoid", "Tanh"]
    doc.add_node("Tanh", inputs=["x"], name="t2")
    doc.add_node("Tanh", inputs=["x"], name="t3")
    doc.add_node("Tanh", inputs=["x"], name="t4")  # Tanh now leads: the list follows edits
    assert [key for _, key in palette.groups.children[0].options[:2]] == ["Tanh", "Relu"]


def test_palette_domain_order_and_groups() -> None:
    index = PaletteIndex({"": 17, "com.microsoft": 1})
    ascending = index.groups("name", "gelu", SortOrder("domain"))
    keys = [e.key for _, entries in ascending for e in entries]
    assert keys.index("com.microsoft::BiasGelu") < keys.index("com.microsoft::FastGelu")
    titles = [title for title, _ in index.groups("domain", "", SortOrder("name", True))]
    assert titles == ["com.microsoft", "ai.onnx"]  # the groups follow the order (Z→A) too
    with pytest.raises(EditorError, match="use one of name, category, domain, count"):
        index.groups("category", "", SortOrder("op type"))
