"""The Designer's layout in a real JupyterLab with the file browser open, measured through the
DOM at 1280x800 (first drawn) and 1400x1000 (the same notebook resized, the panes opened
again): the canvas gets most of the width, the toolbar is one row, nothing lies outside the
output area, the Layers rows and an opened initializer fit their pane, and collapsing a side
pane gives its width to the canvas."""

from __future__ import annotations

import json
from typing import Any

import pytest

pytestmark = [pytest.mark.ui, pytest.mark.slow]

NB = ".jp-NotebookPanel:not(.lm-mod-hidden)"
ROOT = f"{NB} .nsdl-designer"

MODEL = """
import tempfile, onnx, pathlib
import nsdl_jupyter as nj
from nsdl_jupyter.examples import small_transformer
folder = pathlib.Path(tempfile.mkdtemp())
onnx.save(small_transformer(layers=1), str(folder / "model.onnx"))
doc = nj.open_model(folder / "model.onnx")
designer = nj.Designer(doc)
designer
"""

# The visible part of an element: its box cut by every clipping ancestor up to `stop`.
_VISIBLE = """
const visibleRect = (el, stop) => {
  const r = el.getBoundingClientRect();
  let [l, t, rt, b] = [r.left, r.top, r.right, r.bottom];
  for (let a = el.parentElement; a && a !== stop.parentElement; a = a.parentElement) {
    const s = getComputedStyle(a);
    if (s.overflowX !== 'visible' || s.overflowY !== 'visible') {
      const c = a.getBoundingClientRect();
      l = Math.max(l, c.left); t = Math.max(t, c.top);
      rt = Math.min(rt, c.right); b = Math.min(b, c.bottom);
    }
  }
  return {l, t, r: rt, b, w: rt - l, h: b - t, full: r};
};
const shown = (el) => el.getClientRects().length > 0
  && getComputedStyle(el).visibility !== 'hidden';
"""

GEOMETRY = f"""() => {{
{_VISIBLE}
  const root = document.querySelector('{ROOT}');
  const area = root.closest('.jp-OutputArea-output').getBoundingClientRect();
  const box = root.getBoundingClientRect();
  const canvas = root.querySelector('.nsdl-graph-view canvas').getBoundingClientRect();
  const toolbar = root.querySelector('.nsdl-designer-toolbar');
  const parts = [...toolbar.children].filter(shown).map(e => e.getBoundingClientRect())
    .filter(r => r.width > 0 && r.height > 0);
  const outside = [];
  for (const el of root.querySelectorAll('*')) {{
    if (!shown(el)) continue;
    const v = visibleRect(el, root);
    if (v.w <= 0 || v.h <= 0) continue;
    if (v.l < area.left - 1 || v.r > area.right + 1)
      outside.push((el.className || el.tagName).toString().slice(0, 60) + ' ' + Math.round(v.l)
                   + '..' + Math.round(v.r));
  }}
  const list = root.querySelector('.nsdl-layer-list select');
  const tools = [...root.querySelectorAll('.nsdl-side-pane .widget-tab-contents > .nsdl-tool')]
    .filter(shown);
  return {{
    area: [Math.round(area.width), Math.round(area.height)],
    root: [Math.round(box.width), root.scrollWidth, root.clientWidth],
    canvas: [Math.round(canvas.width), Math.round(canvas.height)],
    toolbar: {{height: Math.round(toolbar.getBoundingClientRect().height),
               tallest: Math.max(...parts.map(r => r.height)),
               rows: new Set(parts.map(r => Math.round((r.top + r.bottom) / 2 / 12))).size}},
    outside: outside.slice(0, 12),
    layers: list ? [list.scrollWidth, list.clientWidth] : null,
    cut: tools.filter(t => t.scrollWidth > t.clientWidth + 1)
      .map(t => t.className.toString().slice(0, 60) + ' ' + t.scrollWidth + '>' + t.clientWidth),
  }};
}}"""

# After "Open": the table's buttons and the tensor editor's own buttons are fully visible,
# the value grid's first cell is in view without scrolling, and the value grid has exactly one
# scrolling ancestor below the Designer root.
OPENED = f"""() => {{
{_VISIBLE}
  const root = document.querySelector('{ROOT}');
  const editor = root.querySelector('.nsdl-initializer-editor');
  const fully = (el) => {{ const v = visibleRect(el, root);
    return v.w >= v.full.width - 1 && v.h >= v.full.height - 1 && v.full.height > 0; }};
  const buttons = [...editor.querySelectorAll('.nsdl-open-initializer, .nsdl-delete-initializer,'
                                              + ' .nsdl-tensor-editor button')].filter(shown);
  const grid = [...editor.querySelectorAll('.nsdl-tensor-page, .nsdl-tensor-cells')].find(shown);
  const scrolling = [];
  for (let a = grid.parentElement; a && a !== root; a = a.parentElement) {{
    const s = getComputedStyle(a);
    const scrolls = (/(auto|scroll)/.test(s.overflowY) && a.scrollHeight > a.clientHeight + 1)
      || (/(auto|scroll)/.test(s.overflowX) && a.scrollWidth > a.clientWidth + 1);
    if (scrolls) scrolling.push(a.className.toString().slice(-40) + ' ' + a.scrollWidth + 'x'
      + a.scrollHeight + ' in ' + a.clientWidth + 'x' + a.clientHeight);
  }}
  const cell = editor.querySelector('.nsdl-tensor-cells input');
  return {{
    first_cell: cell ? fully(cell) : null,
    buttons: buttons.length,
    hidden: buttons.filter(b => !fully(b)).map(b => b.className.toString().slice(0, 60)),
    scrolling,
    editor: [editor.scrollWidth, editor.clientWidth],
  }};
}}"""


def open_file_browser(nb: Any) -> None:
    nb.page.evaluate("() => window.jupyterapp.commands.execute('filebrowser:activate')")
    nb.page.wait_for_function(
        "() => { const e = document.querySelector('#filebrowser');"
        " return e && e.getBoundingClientRect().width > 150; }",
        timeout=30_000,
    )


def settle(nb: Any) -> None:
    nb.page.locator(ROOT).first.scroll_into_view_if_needed()
    nb.page.wait_for_timeout(400)
    nb.two_frames()


def measure(nb: Any, name: str, log: dict[str, Any], shot: bool = True) -> dict[str, Any]:
    settle(nb)
    figures: dict[str, Any] = nb.page.evaluate(GEOMETRY)
    log[name] = figures
    (nb.shots / "geometry.json").write_text(json.dumps(log, indent=1))
    if shot:
        nb.screenshot(name)
    return figures


def check_layout(figures: dict[str, Any]) -> None:
    area_width = figures["area"][0]
    assert figures["canvas"][0] >= 0.55 * area_width, figures
    toolbar = figures["toolbar"]
    assert toolbar["rows"] == 1 and toolbar["height"] < 1.5 * toolbar["tallest"], toolbar
    width, scroll_width, client_width = figures["root"]
    assert width <= area_width + 1 and scroll_width <= client_width, figures["root"]
    assert figures["outside"] == [], figures["outside"]
    assert figures["cut"] == [], figures["cut"]


def test_designer_fits_the_output_area(notebook: Any) -> None:
    nb = notebook([MODEL], width=1280, height=800)
    open_file_browser(nb)
    nb.run_all()
    nb.wait_for('.nsdl-graph-view[data-ready="1"]')
    nb.wait_for('.nsdl-designer[data-keys-ready="1"]')
    nb.wait_idle()
    assert nb.error_outputs() == []
    log: dict[str, Any] = {}
    check_size(nb, "1280x800", log)
    # the same Designer in a larger window, its panes opened again
    nb.page.set_viewport_size({"width": 1400, "height": 1000})
    for side in ("right", "left"):
        toggle_pane(
            nb, side, measure(nb, f"1400x1000_before_open_{side}", log, shot=False), collapse=False
        )
    check_size(nb, "1400x1000", log)


def toggle_pane(nb: Any, side: str, before: dict[str, Any], *, collapse: bool) -> None:
    """Collapse (or open) a side pane: the canvas gains (or gives back) its width, 100+ px."""
    nb.page.locator(f"{ROOT} .nsdl-pane-{side} .nsdl-pane-toggle").first.click()
    nb.page.wait_for_function(
        "([css, w, sign]) => sign * (document.querySelector(css).getBoundingClientRect().width"
        " - w) > 100",
        arg=[f"{ROOT} .nsdl-graph-view canvas", before["canvas"][0], 1 if collapse else -1],
        timeout=30_000,
    )


def check_size(nb: Any, size: str, log: dict[str, Any]) -> None:
    """Opened, the Layers tab, an opened initializer, then each side pane collapsed."""
    check_layout(measure(nb, f"{size}_opened", log))

    nb.page.locator(f"{ROOT} .lm-TabBar-tab", has_text="Layers").first.click()
    layers = measure(nb, f"{size}_layers", log)
    assert layers["layers"] is not None
    scroll_width, client_width = layers["layers"]
    assert scroll_width <= client_width, "a Layers row is cut off"
    # the list is the one scroll area: the explorer itself stays put, its buttons in view
    explorer = nb.page.evaluate(
        f"""() => {{ const e = document.querySelector('{ROOT} .nsdl-layer-explorer');
            const go = e.querySelector('.nsdl-go-to').getBoundingClientRect();
            const box = e.getBoundingClientRect();
            return [e.scrollHeight, e.clientHeight, go.bottom <= box.bottom + 1]; }}"""
    )
    assert explorer[0] <= explorer[1] + 1 and explorer[2], explorer
    check_layout(layers)

    nb.page.locator(f"{ROOT} .lm-TabBar-tab", has_text="Initializers").first.click()
    nb.page.locator(f"{ROOT} .nsdl-initializer-list select").first.select_option(index=0)
    nb.page.locator(f"{ROOT} .nsdl-open-initializer").first.click()
    values = ":is(.nsdl-tensor-page, .nsdl-tensor-cells):visible"  # read-only or editable
    page = nb.page.locator(f"{ROOT} .nsdl-initializer-editor {values}").first
    page.wait_for(timeout=30_000)
    opened = measure(nb, f"{size}_initializer", log)
    check_layout(opened)
    inside = nb.page.evaluate(OPENED)
    log[f"{size}_initializer_buttons"] = inside
    (nb.shots / "geometry.json").write_text(json.dumps(log, indent=1))
    assert inside["buttons"] >= 3 and inside["hidden"] == [], inside
    assert inside["first_cell"] is True, inside
    assert len(inside["scrolling"]) <= 1, inside
    assert inside["editor"][0] <= inside["editor"][1], "the initializer editor overflows its pane"

    for side in ("right", "left"):
        toggle_pane(
            nb, side, measure(nb, f"{size}_before_collapse_{side}", log, shot=False), collapse=True
        )
        check_layout(measure(nb, f"{size}_collapsed_{side}", log, shot=side == "left"))


def test_drag_a_pane_strip_and_the_width_is_kept(notebook: Any) -> None:
    setup = "import os, tempfile\nos.environ['NSDL_CONFIG_DIR'] = tempfile.mkdtemp()\n" + MODEL
    nb = notebook(
        [setup, "print('WIDTH=' + nj.Designer(doc).left.pane_width)"], width=1280, height=800
    )
    open_file_browser(nb)
    nb.run_cell(0)
    nb.wait_for('.nsdl-graph-view[data-ready="1"]')
    nb.wait_for('.nsdl-designer[data-keys-ready="1"]')
    settle(nb)
    # the right pane closed first: the canvas keeps half the Designer, and at 1280x800 both
    # panes open leave it too little room for the left one to grow by the whole 100 px
    nb.page.locator(f"{ROOT} .nsdl-pane-right .nsdl-pane-toggle").first.click()
    nb.page.wait_for_selector(f"{ROOT} .nsdl-pane-right.nsdl-pane-closed", timeout=30_000)
    settle(nb)
    pane = nb.page.locator(f"{ROOT} .nsdl-pane-left").first
    canvas = nb.page.locator(f"{ROOT} .nsdl-graph-view canvas").first
    width0, canvas0 = pane.bounding_box()["width"], canvas.bounding_box()["width"]
    grip = nb.page.locator(f"{ROOT} .nsdl-pane-left .nsdl-pane-grip").first.bounding_box()
    x, y = grip["x"] + grip["width"] / 2, grip["y"] + grip["height"] - 40
    nb.page.mouse.move(x, y)
    nb.page.mouse.down()
    nb.page.mouse.move(x + 50, y, steps=5)
    nb.page.mouse.move(x + 100, y, steps=5)
    nb.page.mouse.up()
    settle(nb)
    nb.screenshot("dragged")
    width = pane.bounding_box()["width"]
    assert abs(width - (width0 + 100)) <= 2, (width0, width)
    assert canvas.bounding_box()["width"] < canvas0 - 90
    kept = f"WIDTH={round(width)}px"
    out = ""
    for _ in range(20):  # the message from the browser is asynchronous
        out = nb.run_cell(1)
        if kept in out:
            break
        nb.page.wait_for_timeout(250)
    assert kept in out, out
    assert nb.error_outputs() == []
