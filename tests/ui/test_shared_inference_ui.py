"""Edge labels and the properties pane share one shape inference, in a real JupyterLab +
headless Chromium: zoom and click infer once; an edit that changes a shape infers nothing and
leaves the labels as they were; the next click re-infers once and both show the new shape."""

from __future__ import annotations

from typing import Any

import pytest

from tests.ui.graph_probe import graph_api
from tests.ui.test_graph_view_ui import READY, VIEW, click_box
from tests.ui.test_properties_pane_ui import wait_pane

pytestmark = [pytest.mark.ui, pytest.mark.slow]

X = "\u00d7"
TRANSPOSE = "/encoder/layer.0/attention/self/Transpose"
OUT = f"{TRANSPOSE}_output_0"
RESHAPE = "/encoder/layer.0/attention/self/Reshape"
# the kernel counts the runs of the one inference function both readers use
SETUP = """
import tempfile, onnx
import nsdl_jupyter as nj
from nsdl_jupyter.examples import small_transformer
from nsdl_jupyter.graph import _shapes
runs = []
_infer = _shapes.infer_tensor_types
_shapes.infer_tensor_types = lambda graph: runs.append(1) or _infer(graph)
folder = tempfile.mkdtemp()
onnx.save(small_transformer(layers=2), folder + "/bert.onnx")
doc = nj.open_model(folder + "/bert.onnx")
view = nj.GraphView(doc, height=560)
view.expand()  # the first view is the outline of the modules
view
"""
EDIT = f"""print('RUNS', len(runs))
doc.set_attribute({TRANSPOSE!r}, "perm", [0, 1, 2, 3])
print('AFTER', len(runs))"""
COUNT = "print('RUNS', len(runs))"


def pane_output(nb: Any, shape: str) -> None:
    """Waits until the pane shows a node whose first output has `shape`."""
    nb.page.wait_for_function(
        """(s) => { const p = document.querySelector(
             '.jp-NotebookPanel:not(.lm-mod-hidden) .nsdl-graph-view .nsdl-gv-pane');
           return p && p.dataset.kind === 'node' && !p.dataset.loading
             && (p.textContent.split('Outputs')[1] || '').includes('float ' + s); }""",
        arg=shape,
    )


def drawn_shape(nb: Any) -> str:
    return str(graph_api(nb, "(a, n) => a.tensor(n).shape", OUT))


def test_an_edit_then_a_click_refresh_pane_and_edge_labels_with_one_inference(
    notebook: Any,
) -> None:
    nb = notebook([SETUP, EDIT, COUNT])
    nb.run_cell(0)
    nb.wait_for(READY)
    assert nb.error_outputs() == []
    # before: batch_size named again by onnxruntime's symbolic inference (graph/_shapes.py);
    # after: the edit leaves the attention's MatMul unfit, which that inference refuses, so
    # the dim onnx's inference lost stays "?"
    before, after = f"batch_size{X}4{X}16{X}16", f"?{X}16{X}4{X}16"
    click_box(nb, TRANSPOSE)  # zoomed in on it: the canvas asks for shapes, the pane too
    pane_output(nb, before)
    nb.page.wait_for_function(
        "(n) => document.querySelector('.nsdl-graph-view').__nsdl.tensor(n).shape !== ''", arg=OUT
    )
    assert drawn_shape(nb) == before
    assert "RUNS 1" in nb.run_cell(2)

    patched = nb.page.locator(READY).first.get_attribute("data-patch-seq")
    out = nb.run_cell(1)
    assert "RUNS 1" in out and "AFTER 1" in out, out  # the edit inferred nothing
    nb.page.wait_for_function(
        "(s) => document.querySelector('.nsdl-graph-view').dataset.patchSeq !== s", arg=patched
    )
    nb.two_frames()
    assert drawn_shape(nb) == before  # labels stay as they were until a reader needs types

    # the next click needs types (any node with an untyped tensor): one inference, whose
    # result the edges get too; the pane follows the selection, so click another node first
    click_box(nb, RESHAPE)
    wait_pane(nb, "node")
    nb.page.wait_for_function(
        "([n, s]) => document.querySelector('.nsdl-graph-view').__nsdl.tensor(n).shape === s",
        arg=[OUT, after],
    )
    assert "RUNS 2" in nb.run_cell(2)
    click_box(nb, TRANSPOSE)
    pane_output(nb, after)
    nb.two_frames()
    assert after in graph_api(nb, "(a) => a.texts()")  # drawn on the edge
    assert "RUNS 2" in nb.run_cell(2)
    nb.screenshot("after_edit_and_click", VIEW)
