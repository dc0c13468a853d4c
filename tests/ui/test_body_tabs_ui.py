"""Body tabs and local functions in a real JupyterLab + headless Chromium: a double click on
an If of the torch control-flow export opens its then-branch in a tab, an attribute edited
there and confirmed changes the model as one undo step (opened again from the canvas's
context menu and confirmed); a local function created in the
Local functions window is added twice from the palette."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from nsdl_jupyter.widgets.designer._body_tabs import SEPARATOR
from tests.ui.test_designer import KEYS_READY, NB, field, wait_state, wait_value

pytestmark = [pytest.mark.ui, pytest.mark.slow]

CONTROL_FLOW = Path(__file__).parents[1] / "fixtures" / "exports" / "control_flow_torchscript.onnx"
OPEN = f"""
import shutil, tempfile, pathlib
import nsdl_jupyter as nj
folder = pathlib.Path(tempfile.mkdtemp())
shutil.copy({str(CONTROL_FLOW)!r}, folder / "model.onnx")
doc = nj.open_model(folder / "model.onnx")
designer = nj.Designer(doc, height=420)
designer
"""
ALPHA = (
    "gemm = next(n for n in doc.nodes['/If'].attributes['then_branch'].as_graph()"
    " if n.op_type == 'Gemm')\n"
    "print('ALPHA=' + repr(gemm.attributes['alpha'].value), 'UNDO=' + repr(doc.undo_description),"
    " 'TABS=' + repr(designer.bodies.tabs.titles))"
)
FUNCTIONS = (
    "print('FUNCS=' + repr(sorted(f'{d}::{n}' for d, n, _ in doc.functions)),"
    " 'CALLS=' + repr(sorted(n.name for n in doc.graph if n.domain == 'local')))"
)
# the graph view drawn in the tab shown (the other tabs' views are hidden)
SHOWN_VIEW = (
    f"[...document.querySelectorAll('{NB} .nsdl-graph-view')].find(v => v.offsetParent !== null)"
)


def shown_graph(nb: Any, expression: str, arg: Any = None) -> Any:
    return nb.page.evaluate(
        f"([arg]) => {{ const root = {SHOWN_VIEW}; return ({expression})(root.__nsdl, arg); }}",
        [arg],
    )


def wait_node_drawn(nb: Any, name: str) -> tuple[float, float]:
    nb.page.wait_for_function(
        f"(n) => {{ const r = {SHOWN_VIEW}; return !!(r && r.dataset.ready === '1'"
        " && r.__nsdl.locate(n)); }",
        arg=name,
        timeout=30_000,
    )
    shown_graph(nb, "(a, n) => a.fit([n])", name)  # into view, as the user would scroll
    nb.two_frames()
    at = shown_graph(nb, "(a, n) => a.locate(n)", name)
    assert at is not None
    return at[0], at[1]


def test_double_click_an_if_edit_its_branch_confirm_and_undo(notebook: Any) -> None:
    nb = notebook([OPEN, ALPHA], width=1600, height=1100)
    nb.run_all()
    nb.wait_for(KEYS_READY)
    nb.wait_idle()
    assert nb.error_outputs() == []
    before = wait_state(nb, 1, "ALPHA=")
    alpha = re.search(r"ALPHA=([0-9.]+)", before)
    assert alpha is not None and "TABS=('main',)" in before
    nb.page.locator(f"{NB} .nsdl-designer").first.scroll_into_view_if_needed()

    x, y = wait_node_drawn(nb, "/If")
    nb.page.mouse.dblclick(x, y)
    tab = nb.page.locator(f"{NB} .nsdl-body-tabs .lm-TabBar-tab", has_text="then_branch").first
    tab.wait_for(timeout=30_000)
    field(nb, ".nsdl-body-confirm").wait_for(state="visible", timeout=30_000)
    x, y = wait_node_drawn(nb, "/then_proj/Gemm")
    nb.screenshot("body_tab_opened", ".nsdl-designer")

    nb.page.mouse.click(x, y)
    wait_value(nb, ".nsdl-node-name input", "/then_proj/Gemm")
    box = field(nb, ".nsdl-attr-alpha input")
    box.fill("2.5")
    box.press("Enter")
    # the main tab says it is locked while the body is open
    main_tab = nb.page.locator(f"{NB} .nsdl-body-tabs .lm-TabBar-tab", has_text="main").first
    assert "locked" in main_tab.inner_text()
    assert "ALPHA=" + alpha.group(1) in wait_state(nb, 1, "ALPHA=")  # not written back yet
    nb.screenshot("body_edited", ".nsdl-designer")

    field(nb, ".nsdl-body-confirm").click()
    out = wait_state(nb, 1, "ALPHA=2.5")
    assert "UNDO='edit /If.then_branch'" in out and "TABS=('main',)" in out
    nb.page.locator(f"{NB} .nsdl-body-tabs .lm-TabBar-tab", has_text="then_branch").first.wait_for(
        state="detached", timeout=30_000
    )
    nb.screenshot("confirmed", ".nsdl-designer")

    field(nb, ".nsdl-tb-undo").click()
    assert "ALPHA=" + alpha.group(1) in wait_state(nb, 1, "ALPHA=" + alpha.group(1))

    # a double click on a graph attribute in the Parameters tab opens that body; Discard
    x, y = wait_node_drawn(nb, "/If")
    nb.page.mouse.click(x, y)
    wait_value(nb, ".nsdl-node-name input", "/If")
    field(nb, ".nsdl-attr-else_branch .nsdl-attr-label").dblclick()
    else_tab = nb.page.locator(f"{NB} .nsdl-body-tabs .lm-TabBar-tab", has_text="else_branch")
    else_tab.first.wait_for(timeout=30_000)
    out = wait_state(nb, 1, "else_branch")
    assert f"TABS=('main (locked)', '/If{SEPARATOR}else_branch')" in out
    nb.screenshot("else_branch_opened", ".nsdl-designer")
    field(nb, ".nsdl-body-discard").click()
    else_tab.first.wait_for(state="detached", timeout=30_000)
    assert "ALPHA=" + alpha.group(1) in wait_state(nb, 1, "TABS=('main',)")

    # the canvas's context menu opens the body too; Confirm with no edit is one undo step
    x, y = wait_node_drawn(nb, "/If")
    nb.page.mouse.click(x, y, button="right")
    menu = nb.page.locator(f"{NB} .nsdl-gv-menu").first
    menu.wait_for(state="visible", timeout=30_000)
    menu.locator("[data-label='Open subgraph']").click()
    tab.wait_for(timeout=30_000)
    field(nb, ".nsdl-body-confirm").wait_for(state="visible", timeout=30_000)
    nb.screenshot("body_opened_from_menu", ".nsdl-designer")
    field(nb, ".nsdl-body-confirm").click()
    out = wait_state(nb, 1, "TABS=('main',)")
    assert "ALPHA=" + alpha.group(1) in out
    assert nb.error_outputs() == []


def test_create_a_local_function_and_add_two_instances_from_the_palette(notebook: Any) -> None:
    nb = notebook([OPEN, FUNCTIONS], width=1600, height=1100)
    nb.run_all()
    nb.wait_for(KEYS_READY)
    nb.wait_idle()
    assert "FUNCS=[] CALLS=[]" in wait_state(nb, 1, "FUNCS=")

    tabs = nb.page.locator(f"{NB} .nsdl-designer .lm-TabBar-tab")
    tabs.filter(has_text="Functions").first.click()
    field(nb, ".nsdl-functions-new").click()
    field(nb, ".nsdl-fn-name input").fill("Scale2")
    field(nb, ".nsdl-fn-inputs input").fill("a")
    field(nb, ".nsdl-fn-outputs input").fill("b")
    field(nb, ".nsdl-fn-params input").fill("factor=2.0")
    field(nb, ".nsdl-fn-create").click()
    field(nb, ".nsdl-functions-message .nsdl-ok").wait_for(state="visible", timeout=30_000)
    assert "FUNCS=['local::Scale2']" in wait_state(nb, 1, "Scale2")
    nb.screenshot("function_created", ".nsdl-functions-window")

    tabs.filter(has_text="Palette").first.click()
    field(nb, ".nsdl-palette-filter input").fill("Scale2")
    group = nb.page.locator(f"{NB} .nsdl-palette-list", has_text="local functions").first
    group.wait_for(timeout=30_000)
    line = field(nb, '.nsdl-palette-list .nsdl-op-item[data-key="local::Scale2"]')
    line.wait_for(state="visible", timeout=30_000)
    line.click()
    add = field(nb, ".nsdl-palette-add")
    add.click()
    field(nb, ".nsdl-palette-message .nsdl-ok").wait_for(state="visible", timeout=30_000)
    add.click()
    out = wait_state(nb, 1, "'Scale2_1'")
    assert "CALLS=['Scale2', 'Scale2_1']" in out, out
    wait_node_drawn(nb, "Scale2_1")
    nb.screenshot("two_instances", ".nsdl-designer")
    assert nb.error_outputs() == []
