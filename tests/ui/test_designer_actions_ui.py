"""The Designer's whole-model actions in a real JupyterLab + headless Chromium at 1280x800:
each toolbar button opens its dialog in the right pane, and Global Modifications' FP16 runs
end to end from a click (progress, summary, the document changed as one undoable edit)."""

from __future__ import annotations

import re
from typing import Any

import pytest

pytestmark = [pytest.mark.ui, pytest.mark.slow]

NB = ".jp-NotebookPanel:not(.lm-mod-hidden)"
SETUP = """
import tempfile, onnx, pathlib
import nsdl_jupyter as nj
from nsdl_jupyter.examples import small_transformer
folder = pathlib.Path(tempfile.mkdtemp())
onnx.save(small_transformer(), str(folder / "bert.onnx"))
doc = nj.open_model(folder / "bert.onnx")
designer = nj.Designer(doc, height=420)
designer
"""
STATE = (
    "import onnx_ir as ir\n"
    "print('UNDO=' + repr(doc.undo_description), 'FP16=%d' % sum("
    "v.const_value is not None and v.const_value.dtype == ir.DataType.FLOAT16"
    " for v in doc.model.graph.initializers.values()))"
)


HIT = """e => { const r = e.getBoundingClientRect();
  const hit = document.elementFromPoint(r.x + r.width / 2, r.y + r.height / 2);
  return r.height > 10 && hit !== null && e.contains(hit); }"""


def click(nb: Any, css: str) -> None:
    nb.page.locator(f"{NB} {css}").first.click()


def test_each_action_opens_from_the_toolbar_and_fp16_runs(notebook: Any) -> None:
    nb = notebook([SETUP, STATE], width=1280, height=800)
    nb.run_cell(0)
    nb.wait_for('.nsdl-graph-view[data-ready="1"]')
    assert nb.error_outputs() == []

    click(nb, ".nsdl-tb-profile-model")
    nb.wait_for(".nsdl-activity-panel .nsdl-activity-run")
    click(nb, ".nsdl-tb-export-engine")
    nb.wait_for(".nsdl-activity-panel .nsdl-activity-export")
    nb.wait_for(".nsdl-activity-panel .nsdl-trt-prebuilt")  # the TensorRT profile's controls
    nb.screenshot("export_engine", ".nsdl-designer")
    # really on screen in the pane, not clipped away: the click point hits the button
    export = nb.page.locator(f"{NB} .nsdl-activity-panel .nsdl-activity-export").first
    export.scroll_into_view_if_needed()
    assert export.evaluate(HIT), "the Export button is hidden in the Profile tab"

    click(nb, ".nsdl-tb-modify")
    nb.wait_for(".nsdl-global-modifications .nsdl-modify-choice")
    nb.screenshot("modify_dialog", ".nsdl-designer")
    click(nb, ".nsdl-modify-run")
    summary = nb.wait_for(".nsdl-modify-summary", timeout_ms=180_000)
    text = summary.inner_text()
    assert re.search(r"FP16 conversion: nodes 191 → 192, initializers 48 → 48", text), text
    assert "max abs diff" in text
    nb.screenshot("fp16_done", ".nsdl-designer")
    state = nb.run_cell(1)
    assert "UNDO='FP16 conversion'" in state and "FP16=0" not in state, state
    assert nb.error_outputs() == []
