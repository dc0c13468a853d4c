"""The Designer on a real export at small screens, measured through the DOM: first drawn at
1024x768 without JupyterLab's left area, then resized to 1280x800 with the file browser open
(one notebook, one ResNet-50 and one profile for both sizes: the second size is reached as a
user reaches it, by a resize the Designer has to follow). At each size every input and select
in every pane, form and the Profile dock is at least 120 px wide, no word is split across two
lines (list rows included: the Layers list, the palette),
a cut label ends in an ellipsis with its full text as tooltip, both toolbars are one row,
and after "Profile from here" the canvas keeps at least half of the Designer's width and,
with the dock in view, as much height as the dock; the legend, minimap and status line stay
off the node boxes."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.ui.graph_probe import graph_api
from tests.ui.test_designer_layout import open_file_browser

pytestmark = [pytest.mark.ui, pytest.mark.slow]

NB = ".jp-NotebookPanel:not(.lm-mod-hidden)"
ROOT = f"{NB} .nsdl-designer"
MIN_FIELD = 120  # px: the least width of an input or select anywhere in the Designer
START = "/layer4/layer4.2/conv3/Conv"  # "Profile from here": the last block, a quick run

MODEL = """
import os, tempfile, pathlib
os.environ["NSDL_CONFIG_DIR"] = tempfile.mkdtemp()  # no pane width kept from another test
import nsdl_jupyter as nj
from tests import real_exports
folder = pathlib.Path(tempfile.mkdtemp())
os.chdir(folder)  # the profile trace lands here
doc = nj.open_model(real_exports.save("resnet50_torchscript", folder))
designer = nj.Designer(doc, selected=["/layer1/layer1.0/conv1/Conv"])
designer
"""
PROFILE = f"""
panel = designer.profile_from([{START!r}])
report = panel.wait(timeout=240)
print("PROFILED=" + panel.status)
"""

# Fields narrower than MIN_FIELD, words split over two lines, and labels cut without an
# ellipsis or without their full text as a tooltip; in what is shown of the Designer now.
TEXT_AND_FIELDS = f"""() => {{
  const root = document.querySelector('{ROOT}');
  const shown = (el) => el.getClientRects().length > 0
    && getComputedStyle(el).visibility !== 'hidden';
  const name = (el) => {{ const own = (e) => [...(e?.classList ?? [])]
      .filter(c => c.startsWith('nsdl-') || c.startsWith('widget-')).join('.');
    return (own(el.closest('[class*="nsdl-"]')) + ' ' + own(el)).slice(0, 80); }};
  const narrow = [...root.querySelectorAll(
      'input:not([type=checkbox]):not([type=radio]):not([type=hidden]):not([type=color]),'
      + ' select, textarea')]
    .filter(shown).map(e => [e, e.getBoundingClientRect().width])
    .filter(([, w]) => w < {MIN_FIELD} - 0.5)
    .map(([e, w]) => name(e) + ' ' + e.tagName + ' ' + Math.round(w) + 'px');
  // a field cut by an ancestor that hides its overflow (scrolling ones let it be reached)
  for (const e of root.querySelectorAll('input:not([type=checkbox]):not([type=radio]), select')) {{
    if (!shown(e)) continue;
    const r = e.getBoundingClientRect();
    for (let a = e.parentElement; a && a !== root; a = a.parentElement) {{
      const overflow = getComputedStyle(a).overflowX;
      if (overflow === 'visible') continue;
      const c = a.getBoundingClientRect();
      if (overflow === 'hidden' && (r.right > c.right + 1 || r.left < c.left - 1))
        narrow.push(name(e) + ' ' + e.tagName + ' cut by ' + name(a));
      break;
    }}
  }}
  const split = [];
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  for (let t = walker.nextNode(); t; t = walker.nextNode()) {{
    const el = t.parentElement;
    if (!el || el.closest('svg, option, .js-plotly-plot, .nsdl-gv-tooltip') || !shown(el))
      continue;
    for (const m of t.data.matchAll(/[^\\s-]+/g)) {{  // a break after a hyphen is no split
      const range = document.createRange();
      range.setStart(t, m.index); range.setEnd(t, m.index + m[0].length);
      const tops = new Set([...range.getClientRects()].filter(r => r.width > 0)
        .map(r => Math.round(r.top / 4)));
      if (tops.size > 1) split.push(m[0].slice(0, 40) + ' in ' + name(el));
    }}
  }}
  // a list's row (the Layers list) has no client rects for its words, and ipywidgets writes
  // its spaces as no-break spaces: a row on two lines broke inside a word
  for (const o of root.querySelectorAll('select[size] option')) {{
    const tall = o.getBoundingClientRect().height > 1.8 * parseFloat(getComputedStyle(o).fontSize);
    if (shown(o) && tall) split.push(o.textContent.slice(0, 40) + ' in ' + name(o) + ' (2 lines)');
  }}
  const cut = [];
  const labels = '.widget-label, .widget-label-basic, label, button, th, td, .nsdl-note,'
    + ' select[size] option, .nsdl-op-item';
  for (const el of root.querySelectorAll(labels)) {{
    if (!shown(el) || el.scrollWidth <= el.clientWidth + 1) continue;
    const text = el.textContent.trim();
    el.dispatchEvent(new PointerEvent('pointerover', {{bubbles: true}}));  // as a user points
    const s = getComputedStyle(el);
    const tip = el.closest('[title]')?.getAttribute('title') ?? '';
    if (s.textOverflow !== 'ellipsis' || !tip.includes(text))
      cut.push(text.slice(0, 40) + ' in ' + name(el) + ' (' + s.textOverflow + ', title '
               + JSON.stringify(tip.slice(0, 40)) + ')');
  }}
  return {{narrow: narrow.slice(0, 20), split: split.slice(0, 20), cut: cut.slice(0, 20)}};
}}"""

# One row: every shown child's vertical middle within one band of the first one.
ROWS = """(css) => {
  const bar = document.querySelector(css);
  const parts = [...bar.children].filter(e => e.getClientRects().length > 0)
    .map(e => e.getBoundingClientRect()).filter(r => r.width > 0 && r.height > 0);
  const mids = parts.map(r => (r.top + r.bottom) / 2);
  return {rows: mids.length ? 1 + mids.filter(m => Math.abs(m - mids[0]) > 8).length : 0,
          height: Math.round(bar.getBoundingClientRect().height),
          scrollable: bar.scrollWidth > bar.clientWidth + 1};
}"""


def settle(nb: Any) -> None:
    nb.page.locator(ROOT).first.scroll_into_view_if_needed()
    nb.page.wait_for_timeout(300)
    nb.two_frames()


def look(nb: Any, where: str, log: dict[str, Any]) -> dict[str, Any]:
    settle(nb)
    found: dict[str, Any] = nb.page.evaluate(TEXT_AND_FIELDS)
    log[where] = found
    (nb.shots / "fit.json").write_text(json.dumps(log, indent=1))
    return found


def tab(nb: Any, title: str) -> None:
    nb.page.locator(f"{ROOT} .nsdl-side-pane .lm-TabBar-tab", has_text=title).first.click()


def one_row(nb: Any, css: str) -> dict[str, Any]:
    found: dict[str, Any] = nb.page.evaluate(ROWS, f"{ROOT} {css}")
    return found


def overlaps(nb: Any) -> list[str]:
    """Node boxes on screen covered by the shown legend, minimap or status line."""
    boxes = graph_api(nb, "(api) => api.screenBoxes()")
    covers = nb.page.evaluate(
        f"""() => [...document.querySelectorAll(
              '{ROOT} :is(.nsdl-gv-legend, .nsdl-gv-minimap, .nsdl-gv-status)')]
              .filter(e => getComputedStyle(e).display !== 'none')
              .map(e => {{ const r = e.getBoundingClientRect();
                          return [e.className, r.left, r.top, r.right, r.bottom]; }})"""
    )
    hits = []
    for css, left, top, right, bottom in covers:
        for b in boxes:
            across = b["x"] < right - 1 and b["x"] + b["w"] > left + 1
            if across and b["y"] < bottom - 1 and b["y"] + b["h"] > top + 1:
                hits.append(f"{css} over a box at {round(b['x'])},{round(b['y'])}")
    return hits[:10]


class Checks:
    """What the test found, by place: the measurements (written to fit.json) and the problems."""

    def __init__(self, nb: Any) -> None:
        self.nb = nb
        self.log: dict[str, Any] = {}
        self.problems: dict[str, Any] = {}

    def check(self, where: str) -> None:
        found = look(self.nb, where, self.log)
        bad = {k: v for k, v in found.items() if v}
        if bad:
            self.problems[where] = bad

    def toolbars(self, where: str) -> None:
        for css in (".nsdl-designer-toolbar", ".nsdl-gv-toolbar"):
            rows = self.log[f"{where} {css}"] = one_row(self.nb, css)
            if rows["rows"] != 1:
                self.problems[f"{where} {css}"] = rows

    def panes(self, size: str) -> None:
        """Every side-pane tab, the new-function form and both toolbars."""
        nb = self.nb
        self.check(f"{size} opened")
        for title in ("Layers", "Functions"):
            tab(nb, title)
            self.check(f"{size} {title}")
        nb.page.locator(f"{ROOT} .nsdl-functions-new").first.click()
        nb.wait_for(".nsdl-functions-form")
        self.check(f"{size} functions form")
        nb.screenshot(f"{size}-functions-form")
        for title in ("Initializers", "TensorRT", "Parameters"):
            tab(nb, title)
            self.check(f"{size} {title}")
        nb.screenshot(f"{size}-parameters")
        self.toolbars(size)

    def profiled(self, size: str) -> None:
        """The canvas beside and above the Profile dock, the toolbars, the canvas overlays."""
        nb = self.nb
        settle(nb)
        self.check(f"{size} profiled")
        width = nb.page.evaluate(
            f"""() => [document.querySelector('{ROOT}').getBoundingClientRect().width,
                       document.querySelector('{ROOT} .nsdl-graph-view canvas')
                         .getBoundingClientRect().width]"""
        )
        self.log[f"{size} designer, canvas"] = width
        if width[1] < 0.5 * width[0]:
            self.problems[f"{size} designer, canvas"] = width
        # the dock scrolled into view at the bottom of the notebook: the canvas above it in
        # view is at least as tall as the dock
        heights = self.log[f"{size} canvas in view, dock"] = nb.page.evaluate(
            f"""() => {{
              const dock = document.querySelector('{ROOT} .nsdl-profile-dock');
              dock.scrollIntoView({{block: 'end'}});
              const port = document.querySelector('{NB} .jp-WindowedPanel-outer')
                .getBoundingClientRect();
              const c = document.querySelector('{ROOT} .nsdl-graph-view canvas')
                .getBoundingClientRect();
              return [Math.min(c.bottom, port.bottom) - Math.max(c.top, port.top),
                      dock.getBoundingClientRect().height]; }}"""
        )
        if heights[0] < heights[1]:
            self.problems[f"{size} canvas in view, dock"] = heights
        nb.two_frames()
        nb.screenshot(f"{size}-profiled-dock-in-view")
        self.toolbars(f"{size} profiled")
        covered = self.log[f"{size} overlaps"] = overlaps(nb)
        if covered:
            self.problems[f"{size} overlaps"] = covered
        (nb.shots / "fit.json").write_text(json.dumps(self.log, indent=1))


def test_designer_fits_small_screens(notebook: Any) -> None:
    nb = notebook([MODEL, PROFILE], width=1024, height=768)
    nb.page.evaluate("() => window.jupyterapp.commands.execute('application:toggle-left-area')")
    nb.run_cell(0)
    nb.wait_for('.nsdl-graph-view[data-ready="1"]')
    nb.wait_for('.nsdl-designer[data-keys-ready="1"]')
    assert nb.error_outputs() == []
    checks = Checks(nb)
    checks.panes("1024x768")
    out = nb.run_cell(1)
    assert "PROFILED=done" in out, out
    nb.wait_for(".nsdl-gv-legend")
    checks.profiled("1024x768")

    nb.page.set_viewport_size({"width": 1280, "height": 800})
    open_file_browser(nb)
    settle(nb)
    nb.screenshot("1280x800-file-browser")
    checks.panes("1280x800")
    checks.profiled("1280x800")
    assert checks.problems == {}, json.dumps(checks.problems, indent=1)
    assert nb.error_outputs() == []
