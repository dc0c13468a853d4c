"""The canvas's quick add and palette drop, kernel side: the operator vocabulary sent once when
quick add opens (opsets, contrib ops, local functions), the ranking the browser restates (the
shared cases in js/test/quick_add_ranking.json), and a dropped operator added unlinked where
it lands, as one undo step."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import traitlets

import nsdl_jupyter as nj
from nsdl_jupyter.document import ModelDocument
from nsdl_jupyter.editors import PaletteIndex
from nsdl_jupyter.editors._palette import rank_keys
from nsdl_jupyter.widgets import GraphView
from nsdl_jupyter.widgets.designer._layer_palette import LayerPalette
from nsdl_jupyter.widgets.designer._operator_list import OperatorList
from tests.test_canvas_edit import ask, ok, rect

CASES = json.loads(
    (Path(__file__).resolve().parent.parent / "js" / "test" / "quick_add_ranking.json").read_text()
)


@pytest.mark.parametrize("case", CASES["cases"], ids=lambda c: repr(c["text"]))
def test_ranking_matches_the_cases_the_browser_passes(case: dict[str, Any]) -> None:
    assert rank_keys(CASES["vocabulary"], case["text"], case["limit"]) == case["expected"]


@pytest.fixture
def doc() -> ModelDocument:
    doc: ModelDocument = nj.new_model(opset=17, contrib_ops=True)
    doc.add_graph_input("x", "float", [1, 4])
    doc.add_node("Relu", inputs=["x"], name="first")
    doc.create_function("Scale2", "local", ["a"], ["b"])
    return doc


def test_operators_lists_opsets_contrib_ops_and_local_functions(doc: ModelDocument) -> None:
    view = GraphView(doc)
    answer = ok(view, "operators")
    keys = answer["keys"]
    assert (
        len(keys)
        == len(answer["categories"])
        == len(PaletteIndex(doc.opset_imports, doc.functions.values()))
    )
    assert {"Conv", "com.microsoft::Attention", "local::Scale2"} <= set(keys)
    assert answer["categories"][keys.index("local::Scale2")] == "local functions"
    read_only = GraphView(doc.graph)
    refused = ask(read_only, "operators")
    assert not refused["ok"] and "read-only" in refused["error"]["message"]


def test_a_dropped_operator_lands_unlinked_where_it_is_dropped(doc: ModelDocument) -> None:
    view = GraphView(doc)
    view.selected = ["first"]
    name = ok(view, "add_at", text="local::Scale2", x=120.0, y=-40.0, link=False)["message"]
    assert doc.nodes[name].op_type == "Scale2" and doc.nodes[name].domain == "local"
    assert list(doc.nodes[name].inputs) == []  # a drop is not fed from the selection
    assert rect(view, name) == (120.0, -40.0)
    assert doc.undo_description == "add Scale2"
    doc.undo()
    assert name not in doc.nodes
    linked = ok(view, "add_at", text="Sigmoid", x=0.0, y=0.0, link=True)["message"]
    assert doc.nodes[linked].inputs[0] is doc.nodes["first"].outputs[0]  # quick add is


def test_palette_lines_are_draggable_operator_lists(doc: ModelDocument) -> None:
    palette = LayerPalette(doc)
    palette.filter_box.value = "Scale2"
    [choice] = palette.groups.children
    assert isinstance(choice, OperatorList) and choice.options == [
        ("local::Scale2", "local::Scale2")
    ]
    choice.value = "local::Scale2"  # a click in the browser sets it
    assert palette.current is not None and palette.current.key == "local::Scale2"
    assert palette.add_current() == "Scale2"
    with pytest.raises(traitlets.TraitError, match="not in this list"):
        choice.value = "Conv"
