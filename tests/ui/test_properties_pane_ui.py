"""The properties pane of a plain GraphView in a real JupyterLab + headless Chromium, on a
model built in code shaped like a TorchScript export of Hugging Face BERT (name scopes, shape
helpers, Constants, no value_info: the shapes come from inference)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.ui.graph_probe import graph_api
from tests.ui.test_graph_view_ui import READY, VIEW, click_box

pytestmark = [pytest.mark.ui, pytest.mark.slow]

PANE = ".nsdl-gv-pane"
MATMUL = "/encoder/layer.0/attention/self/query/MatMul"
ADD = "/encoder/layer.0/attention/self/query/Add"
SETUP = """
import tempfile, onnx
import nsdl_jupyter as nj
from nsdl_jupyter.examples import small_transformer
folder = tempfile.mkdtemp()
onnx.save(small_transformer(layers=2), folder + "/bert.onnx")
doc = nj.open_model(folder + "/bert.onnx")
view = nj.GraphView(doc, height=560)
view.expand()  # the first view is the outline of the modules
view
"""


def pane_text(nb: Any) -> str:
    return str(nb.page.locator(f"{VIEW} {PANE}").first.inner_text())


def wait_pane(nb: Any, kind: str) -> str:
    nb.page.wait_for_function(
        """(kind) => { const p = document.querySelector(
             '.jp-NotebookPanel:not(.lm-mod-hidden) .nsdl-graph-view .nsdl-gv-pane');
           return p && p.dataset.kind === kind && !p.dataset.loading; }""",
        arg=kind,
    )
    return pane_text(nb)


def test_click_a_node_an_edge_and_a_group_then_hide_the_pane(notebook: Any) -> None:
    nb = notebook([SETUP, "print('SHOWN', view.show_properties)"])
    nb.run_cell(0)
    nb.wait_for(READY)
    assert nb.error_outputs() == []
    # the first view has the whole width: the pane opens on the first click
    assert not nb.page.locator(f"{VIEW} {PANE}").first.is_visible()

    # a node: op, full name, scope, inputs and outputs with type and shape, the weight
    click_box(nb, MATMUL)
    text = wait_pane(nb, "node")
    assert MATMUL in text and "MatMul" in text
    assert "/encoder/layer.0/attention/self/query" in text  # its scope
    assert "Inputs (2)" in text and "Outputs (1)" in text
    assert "A: /embeddings/LayerNorm/LayerNormalization_output_0" in text
    # inferred (the model has no value_info), batch_size named by onnxruntime's symbolic
    # inference where onnx's lost it (graph/_shapes.py)
    assert "float batch_size\u00d716\u00d764" in text
    assert "B: onnx::Weight_1" in text and "float 64\u00d764" in text
    assert "initializer, 4,096 values" in text
    nb.page.wait_for_function(  # the weight's statistics arrive in a second answer
        "() => /min -?[0-9.e-]+ +max/.test(document.querySelector("
        "'.jp-NotebookPanel:not(.lm-mod-hidden) .nsdl-gv-pane .nsdl-gv-stats').textContent)"
    )
    nb.screenshot("node", VIEW)

    # an edge: the tensor it carries, its producer and consumers
    graph_api(nb, "(a, names) => a.fit(names)", [MATMUL, ADD])
    nb.two_frames()
    at = graph_api(nb, "(a, [s, d]) => a.locateEdge(s, d)", [MATMUL, ADD])
    assert at is not None, "the MatMul -> Add edge is not drawn"
    nb.page.mouse.click(at[0], at[1])
    text = wait_pane(nb, "tensor")
    assert f"{MATMUL}_output_0" in text
    assert "float" in text and "batch_size\u00d716\u00d764" in text
    assert "Consumers (1)" in text and ADD in text
    assert MATMUL in text.split("producer", 1)[1]
    nb.screenshot("edge", VIEW)

    # the tooltip stays inside the canvas when the pointer is at its right edge
    canvas = nb.page.locator(f"{VIEW} canvas").first.bounding_box()
    # near the top: the minimap stands in the bottom right corner
    right, top = canvas["x"] + canvas["width"] - 12, canvas["y"] + 80
    graph_api(nb, "(a, [dx, dy]) => a.pan(dx, dy)", [right - at[0], top - at[1]])
    nb.two_frames()
    at = graph_api(nb, "(a, [s, d]) => a.locateEdge(s, d)", [MATMUL, ADD])
    nb.page.mouse.move(at[0], at[1])
    tip = nb.page.locator(f"{VIEW} .nsdl-gv-tooltip").first
    tip.wait_for(state="visible")
    box = tip.bounding_box()
    assert box["x"] >= canvas["x"] and box["x"] + box["width"] <= canvas["x"] + canvas["width"]
    nb.screenshot("tooltip_at_right_edge", VIEW)

    # a group header: its path, node count and op histogram (the click also collapses it)
    graph_api(nb, "(a) => a.fit()")
    scope = "/encoder/layer.0/attention/self/query"
    graph_api(nb, "(a, n) => a.fit([n])", scope)
    nb.two_frames()
    at = graph_api(nb, "(a, n) => a.locate(n)", scope)
    nb.page.mouse.click(at[0], at[1])
    text = wait_pane(nb, "group")
    assert scope in text and "nodes\n2" in text.replace("\t", "\n")
    assert "MatMul" in text and "Add" in text
    nb.screenshot("group", VIEW)

    # hiding: the canvas gets the width back, Python sees the trait, the button brings it back
    width = graph_api(nb, "(a, _, root) => root.querySelector('canvas').clientWidth")
    nb.page.locator(f"{VIEW} .nsdl-gv-pane-hide").first.click()
    nb.page.locator(f"{VIEW} {PANE}").first.wait_for(state="hidden")
    nb.page.wait_for_function(
        "(w) => document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden) "
        ".nsdl-graph-view canvas').clientWidth > w + 200",
        arg=width,
    )
    assert "SHOWN False" in nb.run_cell(1)
    nb.two_frames()
    nb.screenshot("hidden", VIEW)
    nb.page.locator(f"{VIEW} .nsdl-gv-pane-show").first.click()
    nb.page.locator(f"{VIEW} {PANE}").first.wait_for(state="visible")
    assert nb.error_outputs() == []


def test_on_a_narrow_output_area_the_pane_lies_over_the_canvas_only_when_needed(
    notebook: Any,
) -> None:
    narrow = SETUP.replace(
        "view\n", "import ipywidgets as w\nw.Box([view], layout=w.Layout(width='480px'))\n"
    )
    nb = notebook([narrow])
    nb.run_cell(0)
    nb.wait_for(READY)
    assert nb.error_outputs() == []
    pane = nb.page.locator(f"{VIEW} {PANE}").first
    assert not pane.is_visible()  # nothing picked yet: the whole width is the canvas
    assert not nb.page.locator(f"{VIEW} .nsdl-gv-pane-show").first.is_visible()
    # the view keeps to the Box: its one-row toolbar scrolls instead of widening it
    assert nb.page.locator(VIEW).first.bounding_box()["width"] <= 480
    bar = graph_api(
        nb,
        "(a, _, root) => { const b = root.querySelector('.nsdl-gv-toolbar');"
        " return [b.scrollWidth, b.clientWidth, b.offsetHeight]; }",
    )
    assert bar[0] > bar[1] and bar[2] < 40, bar  # one row, scrolled
    canvas = nb.page.locator(f"{VIEW} canvas").first
    width = canvas.bounding_box()["width"]
    click_box(nb, MATMUL)
    assert MATMUL in wait_pane(nb, "node")
    view, box = nb.page.locator(VIEW).first.bounding_box(), pane.bounding_box()
    assert box["x"] >= view["x"] and box["x"] + box["width"] <= view["x"] + view["width"] + 1
    assert canvas.bounding_box()["width"] == width  # over the canvas, not beside it
    nb.screenshot("narrow_node", VIEW)
    graph_api(nb, "(a) => a.fit()")
    nb.two_frames()
    at = canvas.bounding_box()  # its bottom left corner is blank (the foot line is below)
    nb.page.mouse.click(at["x"] + 10, at["y"] + at["height"] - 10)
    pane.wait_for(state="hidden")
    nb.screenshot("narrow_cleared", VIEW)
