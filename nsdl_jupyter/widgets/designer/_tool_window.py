"""What every tool window of the Designer shares: the document binding, the `selected`
traitlet, inline error labels and a little CSS. Built from plain ipywidgets so the tool
windows work in JupyterLab, Notebook 7 and VS Code without custom JavaScript."""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence
from typing import Any

import ipywidgets as widgets
import traitlets

from nsdl_jupyter._display import html_text
from nsdl_jupyter._errors import ArgumentError
from nsdl_jupyter._static_export import StaticPictureMixin
from nsdl_jupyter.document import ChangeEvent, ModelDocument
from nsdl_jupyter.editors import sort_choices
from nsdl_jupyter.widgets._main_shell import MainShellBox

_MONO = "font-family: var(--jp-code-font-family, monospace); font-size: 12px;"
_CELL = "border: 1px solid var(--jp-border-color2, #e0e0e0); padding: 1px 6px; text-align: right;"
STYLE = f"""<style>
.nsdl-tool {{ font-size: var(--jp-ui-font-size1, 13px); }}
.nsdl-tool select, .nsdl-mono, .nsdl-mono input {{ {_MONO} }}
.nsdl-error {{ color: var(--jp-error-color1, #d32f2f); font-size: 12px; white-space: pre-wrap; }}
.nsdl-note {{ color: var(--jp-ui-font-color2, #616161); font-size: 12px; }}
.nsdl-ok {{ color: var(--jp-success-color1, #388e3c); font-size: 12px; }}
.nsdl-attr-label {{ {_MONO} }}
.nsdl-attr-required {{ font-weight: 600; }}
.nsdl-tensor-table {{ border-collapse: collapse; {_MONO} }}
.nsdl-tensor-table td, .nsdl-tensor-table th {{ {_CELL} }}
.nsdl-tensor-table th {{ background: var(--jp-layout-color2, #eeeeee); font-weight: 500; }}
.nsdl-info-table td {{ padding: 1px 8px 1px 0; vertical-align: top; }}
.nsdl-designer:focus {{ outline: 1px dashed var(--jp-brand-color1, #1976d2); }}
.nsdl-tensor-body {{ overflow: auto; }}
.nsdl-tensor-navigation {{ flex-wrap: wrap; align-items: center; }}
.nsdl-side-pane .widget-tab-contents > .nsdl-tool.nsdl-initializer-editor {{ overflow: hidden;
  display: flex; flex-direction: column; }}
.nsdl-side-pane .nsdl-initializer-editor > * {{ flex: 0 0 auto; }}
.nsdl-side-pane .nsdl-initializer-editor > .nsdl-tensor-editor {{ flex: 0 1 auto;
  min-height: 120px; overflow: hidden; display: flex; flex-direction: column; }}
.nsdl-side-pane .nsdl-tensor-editor > * {{ flex: 0 0 auto; }}
.nsdl-side-pane .nsdl-tensor-editor > .nsdl-tensor-body {{ flex: 1 1 auto; min-height: 40px; }}
.nsdl-side-pane .nsdl-initializer-editor > .nsdl-initializer-details {{ flex: 0 1 auto;
  min-height: 40px; overflow-y: auto; overflow-x: hidden; }}
.nsdl-side-pane .widget-tab-contents > .nsdl-tool.nsdl-layer-explorer {{ overflow: hidden;
  display: flex; flex-direction: column; }}
.nsdl-side-pane .nsdl-layer-explorer > .nsdl-layer-filters {{ flex: 0 1 auto; min-height: 0;
  overflow-y: auto; }}
.nsdl-side-pane .nsdl-layer-explorer > .nsdl-layer-list {{ flex: 1 1 0; min-height: 120px; }}
.nsdl-side-pane .nsdl-tool.nsdl-layer-explorer > .nsdl-layer-list > select {{ height: auto;
  max-height: none; align-self: stretch; }}
</style>"""


def style_widget() -> widgets.HTML:
    """The CSS of the tool windows (each window carries it, so each also works alone)."""
    return widgets.HTML(STYLE, layout=widgets.Layout(display="none"))


def message_html(text: str | None, kind: str = "error") -> str:
    if not text:
        return ""
    return f'<div class="nsdl-{kind}">{html_text(text)}</div>'


class MessageLine(widgets.HTML):  # type: ignore[misc]
    """An inline error/note line; empty text hides it."""

    def __init__(self, css_class: str = "", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if css_class:
            self.add_class(css_class)
        self.show(None)

    def show(self, text: str | None, kind: str = "error") -> None:
        self.value = message_html(text, kind)
        self.layout.display = "" if text else "none"

    @property
    def text(self) -> str:
        return html.unescape(self.value.split(">", 1)[1].rsplit("<", 1)[0]) if self.value else ""


class ToolWindow(StaticPictureMixin, MainShellBox, widgets.VBox):  # type: ignore[misc]
    """A tool window bound to a ModelDocument. `selected` holds node names: in the Designer
    it is linked to the GraphView's selection; alone, set it from Python."""

    selected = traitlets.List(traitlets.Unicode())
    css_name = "tool"

    def __init__(self, doc: ModelDocument, **kwargs: Any) -> None:
        if not isinstance(doc, ModelDocument):
            raise ArgumentError(
                f"{type(self).__name__}() needs a ModelDocument (nsdl_jupyter.open_model(path) "
                f"or nsdl_jupyter.new_model()), got {type(doc).__name__}"
            )
        super().__init__(**kwargs)
        self.doc = doc
        self.add_class("nsdl-tool")
        self.add_class(f"nsdl-{self.css_name}")
        self._unsubscribe: Callable[[], None] | None = doc.subscribe(self._on_document_event)

    def _on_document_event(self, event: ChangeEvent) -> None:
        """Override: follow an edit made anywhere (this window, another one, or Python)."""

    def close(self) -> None:
        unsubscribe = getattr(self, "_unsubscribe", None)
        if unsubscribe is not None:
            unsubscribe()
            self._unsubscribe = None
        super().close()


def button(
    description: str, tooltip: str = "", *, icon: str = "", width: str = ""
) -> widgets.Button:
    """A button that keeps its size in a crowded row (flex items shrink and clip otherwise)."""
    layout = widgets.Layout(width=width or "auto", flex="0 0 auto")
    if width:
        layout.padding = "0"
    return widgets.Button(
        description=description, tooltip=tooltip or description, icon=icon, layout=layout
    )


def icon_button(name: str, tooltip: str, icon: str) -> widgets.Button:
    """A compact button that shows only `icon`; its tooltip starts with `name`."""
    part = widgets.Button(
        tooltip=f"{name}: {tooltip}", icon=icon, layout=widgets.Layout(width="34px", padding="0")
    )
    part.add_class("nsdl-icon-button")
    return part


def sort_dropdown(keys: Sequence[str], css_class: str) -> widgets.Dropdown:
    """A list's sort order: each key in both directions, labelled with the true direction."""
    choices = sort_choices(keys)
    dropdown = widgets.Dropdown(
        options=choices,
        value=choices[0][1],
        description="sort",
        style={"description_width": "auto"},
        layout=widgets.Layout(width="auto", max_width="100%"),
    )
    dropdown.add_class(css_class)
    return dropdown
