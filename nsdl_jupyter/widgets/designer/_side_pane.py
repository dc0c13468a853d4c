"""SidePane: a column of tool windows beside the Designer's canvas, as tabs, with a strip on
its canvas side that collapses it (the button) and resizes it (drag the strip; the browser
side is js/src/designer_keys/panes.ts). A dragged width is kept in the user settings.

Layout rules (CSS below): the pane takes the canvas's height and never grows with its
content; each tool window scrolls inside it and shrinks its rows to the pane's width. The
canvas's own Arrange, Grid and PNG buttons give way to the Designer's toolbar, which has them.
The canvas keeps at least half of the Designer's width: the panes give way first, down to
their least width.

One rule set for every form in the Designer (tool windows, the Profile dock, dialogs added
later): a labelled field keeps its box at least FIELD_MIN_WIDTH wide and wraps the box below
its label when both do not fit one line; in a narrow pane or dock (a CSS container) every
label sits above its box. Text too long for its place ends in an ellipsis (the Designer's
script gives it its full text as a tooltip, js/src/designer_keys/tooltips.ts); nothing breaks
inside a word.
"""

from __future__ import annotations

from typing import Literal

import ipywidgets as widgets
import traitlets

from nsdl_jupyter.editors import get_setting, set_setting
from nsdl_jupyter.widgets._main_shell import MainShellBox
from nsdl_jupyter.widgets.designer._tool_window import button

Side = Literal["left", "right"]
MIN_WIDTH = 160  # px; also the smallest width a drag can give (panes.ts)
FIELD_MIN_WIDTH = 120  # px: the least width of an input or a select in the Designer
NARROW = 300  # px: a pane or dock narrower than this puts every label above its box
# of the Designer, at least room for a field (left) and a field with its label (right): the
# canvas keeps 55% of an 850 px Designer (1280 px screen, file browser open) and more
_DEFAULT_WIDTH = {"left": f"max({MIN_WIDTH}px, 17%)", "right": "max(196px, 24%)"}
_GLYPH = {("left", True): "◀", ("left", False): "▶", ("right", True): "▶", ("right", False): "◀"}

_BOX = ":is(input, select:not([size]), textarea)"  # a list (select[size]) is no field
_FIELD = f".widget-inline-hbox:not(.nsdl-tensor-cell):has(> {_BOX})"  # a grid cell is no field
_TEXT = ".nsdl-note, .nsdl-info-table td, .widget-label, .widget-label-basic, .widget-html-content"
FORM_STYLE = f"""
.nsdl-designer {_FIELD} {{ flex-wrap: wrap; max-width: 100%; min-width: 0; height: auto;
  row-gap: 2px; }}
.nsdl-designer {_FIELD} > {_BOX} {{ flex: 1 1 {FIELD_MIN_WIDTH}px;
  min-width: {FIELD_MIN_WIDTH}px; }}
.nsdl-designer {_FIELD} > .widget-label {{ flex: 0 1 auto; }}
.nsdl-designer :is({_TEXT}, pre) {{ overflow-wrap: normal; word-break: normal; }}
.nsdl-designer :is(.nsdl-info-table td, .widget-label, .widget-label-basic) {{
  overflow: hidden; text-overflow: ellipsis; }}
.nsdl-designer .widget-label-basic > span {{ white-space: nowrap; }}
.nsdl-designer select[size] option {{ white-space: pre; overflow: hidden;
  text-overflow: ellipsis; }}
.nsdl-designer pre {{ white-space: pre; }}
.nsdl-designer .widget-html-content:has(> .nsdl-note) {{ line-height: 1.4; }}
.nsdl-designer .widget-html-content:has(> :is(.nsdl-mono, b):only-child) {{ overflow: hidden;
  text-overflow: ellipsis; white-space: nowrap; }}
@container nsdl-pane (max-width: {NARROW}px) {{
  .nsdl-designer {_FIELD} {{ flex-direction: column; align-items: stretch;
    width: auto !important; }}
  .nsdl-designer {_FIELD} > .widget-label {{ width: auto !important; max-width: 100%;
    text-align: left; margin-bottom: 0; }}
  .nsdl-designer {_FIELD} > {_BOX} {{ flex: 0 0 auto; width: 100%; margin-left: 0; }}
}}"""

# Inline layout styles from Python win over stylesheets: the rules that must beat them say
# !important; every rule is scoped to the Designer.
STYLE = f"""<style>
.nsdl-designer {{ box-sizing: border-box; max-width: 100%; min-width: 0; overflow: hidden; }}
.nsdl-designer-body {{ flex-wrap: nowrap; align-items: stretch; min-width: 0; }}
.nsdl-designer-body > .nsdl-body-tabs {{ flex: 1 1 0; min-width: 50%; }}
.nsdl-designer .nsdl-body-tabs > .widget-tab-contents {{ padding: 0 !important;
  border: none !important; }}
.nsdl-designer .nsdl-gv-arrange, .nsdl-designer .nsdl-gv-grid, .nsdl-designer .nsdl-gv-export
  {{ display: none; }}
.nsdl-body-tabs > .lm-TabBar:has(.lm-TabBar-tab:only-child) {{ display: none; }}
.nsdl-side-pane {{ flex: 0 1 auto; min-width: {MIN_WIDTH}px; max-width: 40%;
  display: flex; flex-direction: row; contain: size; box-sizing: border-box;
  overflow: hidden; }}
.nsdl-side-pane.nsdl-pane-closed {{ min-width: 0; }}
.nsdl-side-pane > .widget-tab {{ flex: 1 1 0; min-width: 0; height: 100%; display: flex;
  flex-direction: column; }}
.nsdl-side-pane .widget-tab > .lm-TabBar {{ height: auto; min-height: 0; flex: 0 0 auto; }}
.nsdl-side-pane .widget-tab > .lm-TabBar .lm-TabBar-content {{ flex-wrap: wrap; }}
.nsdl-side-pane .widget-tab > .lm-TabBar .lm-TabBar-tab {{ flex: 0 0 auto; min-width: 0;
  max-width: none; }}
.nsdl-side-pane .widget-tab > .widget-tab-contents {{ flex: 1 1 0; min-height: 0;
  overflow: hidden; box-sizing: border-box; padding: 4px 2px 4px 4px; }}
.nsdl-side-pane .widget-tab > .widget-tab-contents {{ container: nsdl-pane / inline-size; }}
.nsdl-side-pane .widget-tab-contents > .nsdl-tool {{ height: 100%; overflow-x: hidden;
  overflow-y: auto; box-sizing: border-box; }}
.nsdl-side-pane .nsdl-tool .jupyter-widgets {{ max-width: 100%; min-width: 0;
  box-sizing: border-box; }}
.nsdl-side-pane .nsdl-tool .widget-hbox, .nsdl-side-pane .widget-toggle-buttons
  {{ flex-wrap: wrap; }}
.nsdl-side-pane .widget-vbox > * {{ flex-shrink: 0; }}
.nsdl-side-pane .nsdl-tool select[size] {{ max-height: 24em; min-width: 0; }}
.nsdl-side-pane .nsdl-tool .nsdl-info-table {{ width: 100%; table-layout: fixed; }}
.nsdl-side-pane .nsdl-tool .nsdl-info-table td:first-child {{ width: 38%; }}
.nsdl-side-pane .widget-toggle-buttons > div {{ display: flex; flex-wrap: wrap; max-width: 100%; }}
.nsdl-side-pane .widget-toggle-buttons .widget-toggle-button {{ width: auto !important;
  flex: 1 1 auto; min-width: 0; padding: 0 6px; }}
{FORM_STYLE}
.nsdl-pane-strip {{ flex: 0 0 12px; width: 12px; display: flex; flex-direction: column;
  align-items: center; cursor: col-resize; touch-action: none; user-select: none;
  background: var(--jp-layout-color2, #eeeeee); }}
.nsdl-pane-strip:hover {{ background: var(--jp-brand-color3, #bbdefb); }}
.nsdl-pane-strip > .nsdl-pane-toggle {{ width: 12px !important; height: 28px; padding: 0;
  margin: 0; font-size: 9px; cursor: pointer; }}
.nsdl-pane-closed > .nsdl-pane-strip {{ cursor: default; }}
.nsdl-designer-toolbar {{ flex-wrap: nowrap !important; min-width: 0; overflow: hidden; }}
.nsdl-designer-toolbar > * {{ flex: 0 0 auto; }}
.nsdl-designer-toolbar > .nsdl-save-path {{ flex: 0 1 200px !important;
  min-width: {FIELD_MIN_WIDTH}px; }}
.nsdl-designer-toolbar > .nsdl-quick-add {{ flex: 0 1 240px !important;
  min-width: {FIELD_MIN_WIDTH}px; width: auto !important; }}
.nsdl-designer-toolbar > .nsdl-dirty {{ flex: 0 1 auto; min-width: 0; overflow: hidden;
  white-space: nowrap; text-overflow: ellipsis; }}
.nsdl-designer-toolbar > .nsdl-icon-button {{ width: 34px !important; padding: 0; }}
.nsdl-side-pane .widget-tab-contents > .nsdl-activity-panel {{ height: 100%;
  overflow-x: hidden; overflow-y: auto; }}
.nsdl-side-pane .nsdl-activity-panel .widget-tab > .widget-tab-contents {{ flex: 0 0 auto;
  overflow: visible; }}
</style>"""


class SidePane(MainShellBox, widgets.HBox):  # type: ignore[misc]
    """Tool windows as tabs, collapsible and resizable; `tabs` is the ipywidgets Tab."""

    expanded = traitlets.Bool(True)
    pane_width = traitlets.Unicode()  # a CSS width: a share of the Designer, or px once dragged

    def __init__(self, side: Side, tools: list[tuple[str, widgets.Widget]]) -> None:
        self.side: Side = side
        self.tabs = widgets.Tab()
        self.tabs.add_class("nsdl-pane-tabs")
        self.toggle = button("", f"hide or show the {side} pane", width="12px")
        self.toggle.add_class("nsdl-pane-toggle")
        self.toggle.on_click(lambda _b: setattr(self, "expanded", not self.expanded))
        strip = widgets.VBox([self.toggle])
        strip.add_class("nsdl-pane-strip")
        strip.add_class("nsdl-pane-grip")
        parts = [self.tabs, strip] if side == "left" else [strip, self.tabs]
        super().__init__(parts)
        self.add_class("nsdl-side-pane")
        self.add_class(f"nsdl-pane-{side}")
        for title, tool in tools:
            self.add(title, tool)
        stored = get_setting(self._setting, 0)
        self.pane_width = f"{stored}px" if stored >= MIN_WIDTH else _DEFAULT_WIDTH[side]
        self._show()

    @property
    def _setting(self) -> str:
        return f"designer.{self.side}_pane_width"

    def add(self, title: str, tool: widgets.Widget) -> int:
        """Append `tool` as a tab titled `title`; its index."""
        self.tabs.children = (*self.tabs.children, tool)
        index = len(self.tabs.children) - 1
        self.tabs.set_title(index, title)
        return index

    def resized(self, width: int) -> None:
        """A drag ended at `width` px: keep it (this pane and the next Designer)."""
        width = max(MIN_WIDTH, int(width))
        self.pane_width = f"{width}px"
        set_setting(self._setting, width)

    @traitlets.observe("expanded", "pane_width")
    def _on_change(self, _change: dict[str, object]) -> None:
        self._show()

    def _show(self) -> None:
        self.layout.width = self.pane_width if self.expanded else "12px"
        self.tabs.layout.display = "" if self.expanded else "none"
        self.toggle.description = _GLYPH[(self.side, self.expanded)]
        self.toggle.tooltip = f"{'hide' if self.expanded else 'show'} the {self.side} pane"
        if self.expanded:
            self.remove_class("nsdl-pane-closed")
        else:
            self.add_class("nsdl-pane-closed")
