"""Badges on boxes in a real JupyterLab + headless Chromium: a TensorRT precision set from
Python appears as a pill, a click on it opens the chooser, the pick reaches doc.tensorrt and
undo brings the old badge back; a custom operator shows its "custom" pill."""

from __future__ import annotations

from typing import Any

import pytest

from tests.ui.graph_probe import VIEW, graph_api, pixels_near_node

pytestmark = [pytest.mark.ui, pytest.mark.slow]

READY = '.nsdl-graph-view[data-ready="1"]'
CHOOSER = ".nsdl-gv-chooser"

SETUP = """
import tempfile, onnx
from onnx import helper, TensorProto
import nsdl_jupyter as nj
folder = tempfile.mkdtemp()
nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"),
         helper.make_node("MyPlugin", ["r"], ["p"], name="plugin", domain="trt.plugins"),
         helper.make_node("Sigmoid", ["p"], ["y"], name="sigmoid")]
x, y = (helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, 4]) for n in "xy")
graph = helper.make_graph(nodes, "g", [x], [y])
onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                  helper.make_opsetid("trt.plugins", 1)]),
          folder + "/model.onnx")
doc = nj.open_model(folder + "/model.onnx")
view = nj.GraphView(doc, height=360)
view
"""

# canvas pixels of the precision pill's purple (drawing.json pill.precision.fill, #7c3aed) over
# a node's box and the strip above it
PURPLE_NEAR = pixels_near_node(((100, 145), (35, 80), (200, 255)), (90, 30, 180, 55))


def badge(nb: Any, name: str, kind: str) -> Any:
    return graph_api(nb, "(a, [n, k]) => a.badge(n, k)", [name, kind])


def test_precision_badge_set_from_python_changed_by_click_and_undone(notebook: Any) -> None:
    nb = notebook([
        SETUP,
        'doc.tensorrt.set_layer_precision("relu", "fp16")',
        "print('PREC=' + repr(doc.tensorrt.layer_precisions))",
        "doc.undo(); print('UNDO=' + repr(doc.tensorrt.layer_precisions))",
    ])  # fmt: skip
    nb.run_cell(0)
    nb.wait_for(READY).scroll_into_view_if_needed()
    graph_api(nb, "(a) => a.fit()")
    nb.two_frames()
    assert nb.error_outputs() == []
    custom = badge(nb, "plugin", "custom")
    assert custom is not None and custom["text"] == "custom"
    assert badge(nb, "relu", "custom") is None and badge(nb, "relu", "precision") is None

    nb.run_cell(1)  # the precision set from Python appears on the box
    nb.page.wait_for_function(
        f"() => document.querySelector('{VIEW}').__nsdl.badge('relu', 'precision')?.text === 'fp16'"
    )
    nb.two_frames()
    pill = badge(nb, "relu", "precision")
    assert nb.page.evaluate(PURPLE_NEAR, "relu") > 20
    assert nb.page.evaluate(PURPLE_NEAR, "sigmoid") == 0  # no pill there
    nb.screenshot("badges", ".nsdl-graph-view")

    nb.page.mouse.click(*pill["at"])
    chooser = nb.wait_for(CHOOSER)
    assert chooser.get_attribute("data-node") == "relu"
    assert nb.page.locator(f"{CHOOSER} .nsdl-gv-on").inner_text() == "fp16"
    nb.screenshot("chooser", ".nsdl-graph-view")
    nb.page.locator(f'{CHOOSER} [data-precision="int8"]').click()
    nb.page.wait_for_function(
        f"() => document.querySelector('{VIEW}').__nsdl.badge('relu', 'precision')?.text === 'int8'"
    )
    assert not chooser.is_visible()
    assert "PREC={'relu': 'int8'}" in nb.run_cell(2)
    nb.two_frames()
    nb.screenshot("changed", ".nsdl-graph-view")

    assert "UNDO={'relu': 'fp16'}" in nb.run_cell(3)
    nb.page.wait_for_function(
        f"() => document.querySelector('{VIEW}').__nsdl.badge('relu', 'precision')?.text === 'fp16'"
    )
    # "no constraint" removes the badge
    nb.page.mouse.click(*badge(nb, "relu", "precision")["at"])
    nb.page.locator(f'{CHOOSER} [data-precision="none"]').click()
    nb.page.wait_for_function(
        f"() => document.querySelector('{VIEW}').__nsdl.badge('relu', 'precision') === null"
    )
    assert "PREC={}" in nb.run_cell(2)
    assert nb.error_outputs() == []
