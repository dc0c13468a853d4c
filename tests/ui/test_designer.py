"""The Designer in a real JupyterLab + headless Chromium: what a user clicks and types reaches
the document, errors show inline, undo/redo/save work from the toolbar and the keyboard, and
an initializer created and connected in the editor shows on the graph."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.ui.graph_probe import graph_api, pixels_near_node

pytestmark = [pytest.mark.ui, pytest.mark.slow]

NB = ".jp-NotebookPanel:not(.lm-mod-hidden)"
GRAPH_READY = '.nsdl-graph-view[data-ready="1"]'
KEYS_READY = '.nsdl-designer[data-keys-ready="1"]'

RESNET = """
import tempfile, onnx, pathlib
import nsdl_jupyter as nj
from nsdl_jupyter.examples import resnet18
folder = pathlib.Path(tempfile.mkdtemp())
onnx.save(resnet18(), str(folder / "model.onnx"))
doc = nj.open_model(folder / "model.onnx")
designer = nj.Designer(doc, height=460)
designer
"""
STATE = (
    "print('STRIDES=' + repr(doc.nodes['/conv1/Conv'].attributes['strides'].value),"
    " 'SEL=' + repr(designer.graph.selected), 'DIRTY=' + repr(doc.dirty))"
)
REOPEN = (
    "again = nj.open_model(folder / 'model.onnx')\n"
    "print('REOPENED=' + repr(again.nodes['/conv1/Conv'].attributes['strides'].value))"
)

SMALL_CONV = """
import numpy as np, onnx, tempfile, pathlib
from onnx import TensorProto, helper, numpy_helper
import nsdl_jupyter as nj
w = numpy_helper.from_array(np.ones((4, 3, 3, 3), np.float32), "w")
graph = helper.make_graph(
    [helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
     helper.make_node("Relu", ["c"], ["y"], name="relu")],
    "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])], initializer=[w])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
folder = pathlib.Path(tempfile.mkdtemp())
onnx.save(model, str(folder / "conv.onnx"))
doc = nj.open_model(folder / "conv.onnx")
designer = nj.Designer(doc, height=420)
designer
"""
INPUTS = (
    "print('INPUTS=' + repr([v.name if v is not None else None for v in doc.nodes['conv'].inputs]))"
)

# teal squares mark initializer-fed inputs on the left edge of a box (graph_view render.ts)
TEAL_PIXELS = pixels_near_node(((-5, 35), (98, 138), (90, 130)), (160, 45, 200, 90))


def click_node(nb: Any, name: str) -> None:
    nb.wait_for(GRAPH_READY).scroll_into_view_if_needed()
    nb.two_frames()
    at = graph_api(nb, "(a, name) => a.locate(name)", name)
    assert at is not None, f"{name} is not drawn"
    nb.page.mouse.click(at[0], at[1])


def field(nb: Any, css: str) -> Any:
    return nb.page.locator(f"{NB} {css}").first


def wait_value(nb: Any, css: str, value: str) -> None:
    nb.page.wait_for_function(
        "([css, v]) => { const e = document.querySelector(css); return e && e.value === v; }",
        arg=[f"{NB} {css}", value],
        timeout=30_000,
    )


def state_of(nb: Any, cell: int) -> str:
    return re.sub(r"\s+", " ", nb.run_cell(cell))


def wait_state(nb: Any, cell: int, expected: str, tries: int = 20) -> str:
    """Re-run a print cell until its output holds `expected` (kernel messages are async)."""
    out = ""
    for _ in range(tries):
        out = state_of(nb, cell)
        if expected in out:
            return out
        nb.page.wait_for_timeout(250)
    raise AssertionError(f"expected {expected!r}, the cell printed {out!r}")


def test_edit_attribute_error_undo_redo_save_reopen(notebook: Any) -> None:
    nb = notebook([RESNET, STATE, REOPEN], width=1600, height=1100)
    nb.run_all()
    nb.wait_for(GRAPH_READY)
    nb.wait_for(KEYS_READY)
    nb.wait_idle()
    assert nb.error_outputs() == []
    nb.screenshot("opened", ".nsdl-designer")

    # select a node in the browser: the ParameterEditor fills in
    click_node(nb, "/conv1/Conv")
    wait_value(nb, ".nsdl-node-name input", "/conv1/Conv")
    strides = field(nb, ".nsdl-attr-strides input")
    assert strides.input_value() == "[2, 2]"
    assert "SEL=['/conv1/Conv'] DIRTY=False" in state_of(nb, 1)
    nb.screenshot("selected", ".nsdl-designer")

    # change an attribute: the document has it
    strides.fill("[1, 1]")
    strides.press("Enter")
    out = wait_state(nb, 1, "STRIDES=(1, 1)")
    assert "DIRTY=True" in out

    # an invalid literal: inline error, nothing changes
    strides = field(nb, ".nsdl-attr-strides input")
    strides.fill("[1, x]")
    strides.press("Enter")
    error = field(nb, ".nsdl-attr-strides .nsdl-attr-error")
    error.wait_for(state="visible", timeout=30_000)
    assert "column 5" in error.inner_text() and "strides" in error.inner_text()
    nb.screenshot("invalid_literal", ".nsdl-designer")
    assert "STRIDES=(1, 1)" in state_of(nb, 1)

    # undo from the toolbar
    field(nb, ".nsdl-tb-undo").click()
    wait_value(nb, ".nsdl-attr-strides input", "[2, 2]")
    assert "STRIDES=(2, 2)" in wait_state(nb, 1, "STRIDES=(2, 2)")

    # redo with Ctrl+Y while the Designer has the focus, then save with Ctrl+S
    field(nb, ".nsdl-dirty").click()
    nb.page.keyboard.press("Control+y")
    wait_value(nb, ".nsdl-attr-strides input", "[1, 1]")
    field(nb, ".nsdl-dirty").click()
    nb.page.keyboard.press("Control+s")
    out = wait_state(nb, 1, "DIRTY=False")
    assert "STRIDES=(1, 1)" in out
    field(nb, ".nsdl-designer-status .nsdl-ok").wait_for(state="visible", timeout=30_000)
    nb.screenshot("saved", ".nsdl-designer")

    # Ctrl+Z undoes in the model; the notebook did not react to the shortcuts
    field(nb, ".nsdl-dirty").click()
    nb.page.keyboard.press("Control+z")
    wait_value(nb, ".nsdl-attr-strides input", "[2, 2]")
    field(nb, ".nsdl-tb-redo").click()
    wait_value(nb, ".nsdl-attr-strides input", "[1, 1]")
    field(nb, ".nsdl-tb-save").click()
    wait_state(nb, 1, "DIRTY=False")

    # reopen the file: the change is there
    assert "REOPENED=(1, 1)" in state_of(nb, 2)
    assert nb.error_outputs() == []
    assert len(nb.page.locator(f"{NB} .jp-Cell").all()) == 3, "a shortcut reached the notebook"


def test_generate_zeros_initializer_connect_and_see_the_terminal(notebook: Any) -> None:
    nb = notebook([SMALL_CONV, INPUTS], width=1600, height=1100)
    nb.run_all()
    nb.wait_for(GRAPH_READY)
    nb.wait_idle()
    assert nb.error_outputs() == []
    click_node(nb, "conv")
    wait_value(nb, ".nsdl-node-name input", "conv")
    nb.two_frames()
    before = nb.page.evaluate(TEAL_PIXELS, "conv")
    assert before > 0, "the weight input should already carry a teal square"
    nb.screenshot("before", ".nsdl-graph-view")

    nb.page.locator(f"{NB} .nsdl-designer .lm-TabBar-tab", has_text="Initializers").first.click()
    field(nb, ".nsdl-create-section .jupyter-widget-Collapse-header").click()
    field(nb, ".nsdl-new-name input").fill("bias0")
    field(nb, ".nsdl-new-shape input").fill("[4]")
    assert field(nb, ".nsdl-fill-normal").is_enabled()  # float allows normal
    field(nb, ".nsdl-new-dtype select").select_option("bool")
    nb.page.wait_for_function(
        f"() => document.querySelector('{NB} .nsdl-fill-normal').disabled === true"
    )
    nb.screenshot("bool_methods", ".nsdl-initializer-editor")
    field(nb, ".nsdl-new-dtype select").select_option("float")
    nb.page.wait_for_function(
        f"() => document.querySelector('{NB} .nsdl-fill-normal').disabled === false"
    )
    field(nb, ".nsdl-create-initializer").click()
    field(nb, ".nsdl-create-message .nsdl-ok").wait_for(state="visible", timeout=30_000)

    choice = field(nb, ".nsdl-slot-2 .nsdl-slot-choice input")
    choice.fill("bias0")
    choice.press("Enter")
    field(nb, ".nsdl-slot-2 .nsdl-slot-connect").click()
    assert "INPUTS=['x', 'w', 'bias0']" in wait_state(nb, 1, "'bias0'")
    field(nb, ".nsdl-slot-2 .nsdl-slot-disconnect").wait_for(state="visible", timeout=30_000)
    # one more initializer square (edit mode also paints initializer-fed terminals teal, so
    # the count starts higher than the squares alone)
    nb.page.wait_for_function(
        f"([n, b]) => ({TEAL_PIXELS})(n) > 1.25 * b", arg=["conv", before], timeout=30_000
    )
    after = nb.page.evaluate(TEAL_PIXELS, "conv")
    assert after > 1.25 * before
    nb.screenshot("after", ".nsdl-graph-view")
    nb.screenshot("initializers", ".nsdl-initializer-editor")
    assert nb.error_outputs() == []


def test_double_click_a_layer_and_quick_add_with_the_slash_key(notebook: Any) -> None:
    nb = notebook([RESNET, "print('SEL=' + repr(designer.graph.selected), len(doc.nodes))"],
                  width=1600, height=1100)  # fmt: skip
    nb.run_all()
    nb.wait_for(GRAPH_READY)
    nb.wait_for(KEYS_READY)
    nb.wait_idle()
    nb.page.locator(f"{NB} .nsdl-designer .lm-TabBar-tab", has_text="Layers").first.click()
    search = field(nb, ".nsdl-layer-filter input")
    search.fill("downsample.0/Conv")
    search.press("Enter")
    nb.page.locator(f"{NB} .nsdl-layer-explorer", has_text="3 of 49 layers").first.wait_for(
        timeout=30_000
    )
    option = nb.page.locator(f"{NB} .nsdl-layer-list select option").nth(1)
    option.wait_for(state="attached", timeout=30_000)
    target = option.inner_text().split("·")[0].strip()
    assert target == "/layer3/layer3.0/downsample/downsample.0/Conv"
    option.dblclick()
    nb.page.wait_for_function(
        f"(n) => document.querySelector('{NB} .nsdl-graph-view').dataset.selected === n",
        arg=target,
        timeout=30_000,
    )
    wait_value(nb, ".nsdl-node-name input", target)
    nb.screenshot("double_clicked", ".nsdl-designer")
    assert f"SEL=['{target}'] 49" in state_of(nb, 1)

    # "/" inside the Designer jumps to the quick-add box; Enter adds the best match
    field(nb, ".nsdl-dirty").click()
    nb.page.keyboard.press("/")
    nb.page.wait_for_function(
        "() => document.activeElement?.closest('.nsdl-quick-add') !== null", timeout=10_000
    )
    nb.page.keyboard.type("sigmo")
    nb.page.keyboard.press("Enter")
    wait_value(nb, ".nsdl-node-name input", "Sigmoid")
    assert "SEL=['Sigmoid'] 50" in state_of(nb, 1)
    nb.screenshot("quick_added", ".nsdl-designer")
    assert nb.error_outputs() == []
