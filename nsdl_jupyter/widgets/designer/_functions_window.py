"""FunctionsWindow: the model's local functions (Local functions tool window of the Designer):
a filterable list, the chosen one's signature and attribute parameters, + to create one,
"-" to delete one (after a confirmation: its instances become custom operators), and Open,
which edits its body in a Designer tab."""

from __future__ import annotations

from collections.abc import Callable

import ipywidgets as widgets

from nsdl_jupyter._display import html_text
from nsdl_jupyter.document import ChangeEvent, ModelDocument
from nsdl_jupyter.editors import FunctionRow, create_function, delete_function, function_rows
from nsdl_jupyter.widgets.designer._tool_window import MessageLine, ToolWindow, button, style_widget


class FunctionsWindow(ToolWindow):
    """Local functions of the model: list, filter, create, delete, open."""

    css_name = "functions-window"

    def __init__(self, doc: ModelDocument) -> None:
        super().__init__(doc)
        self.rows: list[FunctionRow] = []
        self._open_callbacks: list[Callable[[str, str], object]] = []
        wide = widgets.Layout(width="auto", flex="1 1 auto", min_width="0")
        self.filter_box = widgets.Text(
            placeholder="filter functions", continuous_update=True, layout=wide
        )
        self.filter_box.add_class("nsdl-functions-filter")
        self.list = widgets.Select(options=[], rows=6, layout=widgets.Layout(width="auto"))
        self.list.add_class("nsdl-functions-list")
        self.count = widgets.HTML()
        self.details = widgets.HTML()
        self.details.add_class("nsdl-functions-details")
        self.new_button = button("+", "create a local function", width="32px")
        self.delete_button = button("\u2212", "delete the chosen function", width="32px")
        self.open_button = button("Open", "edit the chosen function's body in its own tab")
        for part, css in (
            (self.new_button, "new"),
            (self.delete_button, "delete"),
            (self.open_button, "open"),
        ):
            part.add_class(f"nsdl-functions-{css}")
        self.message = MessageLine("nsdl-functions-message")
        self._build_create_form()
        self._build_delete_confirmation()
        self.filter_box.observe(lambda _c: self.refresh(), names="value")
        self.list.observe(lambda _c: self._show_details(), names="value")
        self.new_button.on_click(lambda _b: self._show_form(True))
        self.delete_button.on_click(lambda _b: self.ask_delete())
        self.open_button.on_click(lambda _b: self.open_chosen())
        self.children = [
            style_widget(),
            widgets.HTML("<b>Local functions</b>"),
            self.filter_box,
            self.count,
            self.list,
            widgets.HBox([self.new_button, self.delete_button, self.open_button]),
            self.confirm_row,
            self.details,
            self.form,
            self.message,
        ]
        self.refresh()

    def _build_create_form(self) -> None:
        def text(description: str, placeholder: str, value: str = "") -> widgets.Text:
            box = widgets.Text(
                value=value,
                description=description,
                placeholder=placeholder,
                layout=widgets.Layout(width="auto"),
            )
            box.add_class(f"nsdl-fn-{description}")
            return box

        self.name_box = text("name", "MyBlock")
        self.domain_box = text("domain", "local", "local")
        self.inputs_box = text("inputs", "x, y")
        self.outputs_box = text("outputs", "z")
        self.parameters_box = text("params", "alpha=0.5, mode (no default)")
        self.create_button = button("Create", "add the function to the model (one undo step)")
        self.create_button.add_class("nsdl-fn-create")
        self.cancel_button = button("Cancel")
        self.create_button.on_click(lambda _b: self.create())
        self.cancel_button.on_click(lambda _b: self._show_form(False))
        self.form = widgets.VBox(
            [
                self.name_box,
                self.domain_box,
                self.inputs_box,
                self.outputs_box,
                self.parameters_box,
                widgets.HBox([self.create_button, self.cancel_button]),
            ]
        )
        self.form.add_class("nsdl-functions-form")
        self.form.layout.display = "none"

    def _build_delete_confirmation(self) -> None:
        self.confirm_text = widgets.HTML()
        self.confirm_delete = button("Delete", "delete it (undo brings it back)")
        self.confirm_delete.add_class("nsdl-functions-confirm-delete")
        self.confirm_delete.button_style = "danger"
        keep = button("Keep")
        self.confirm_delete.on_click(lambda _b: self.delete())
        keep.on_click(lambda _b: self._ask(None))
        self.confirm_row = widgets.VBox(
            [self.confirm_text, widgets.HBox([self.confirm_delete, keep])]
        )
        self.confirm_row.layout.display = "none"

    # ------------------------------------------------------------------ showing
    def _on_document_event(self, _event: ChangeEvent) -> None:
        self.refresh()

    def refresh(self) -> None:
        """Re-read the functions (after an edit, undo or a new filter), keeping the choice."""
        chosen = self.list.value
        self.rows = function_rows(self.doc, self.filter_box.value)
        keys = [r.key for r in self.rows]
        self.list.options = [(f"{r.key}  {r.signature}", r.key) for r in self.rows]
        self.list.value = chosen if chosen in keys else (keys[0] if keys else None)
        total = len(self.doc.functions)
        self.count.value = f"<span class='nsdl-note'>{len(keys)} of {total} functions</span>"
        self._show_details()

    def _show_details(self) -> None:
        row = self.current
        self.delete_button.disabled = self.open_button.disabled = row is None
        if row is None:
            self.details.value = (
                "<span class='nsdl-note'>no local function: + creates one</span>"
                if not self.doc.functions
                else ""
            )
            return
        params = (
            "".join(
                f"<tr><td>{html_text(n)}</td><td>"
                + (html_text(d) if d is not None else "<i>no default: set per instance</i>")
                + "</td></tr>"
                for n, d in row.parameters
            )
            or "<tr><td colspan=2 class='nsdl-note'>no attribute parameters</td></tr>"
        )
        self.details.value = (
            f"<b>{html_text(row.key)}</b><div class='nsdl-mono'>{html_text(row.signature)}</div>"
            f"<div class='nsdl-note'>{_count(row.nodes, 'node')} in its body · "
            f"{_count(row.instances, 'instance')}"
            f"</div><table class='nsdl-info-table'>{params}</table>"
        )

    @property
    def current(self) -> FunctionRow | None:
        return next((r for r in self.rows if r.key == self.list.value), None)

    def choose(self, key: str) -> None:
        """Choose function `key` (``local::Block``) in the list."""
        if key not in [r.key for r in self.rows]:
            self.filter_box.value = ""
        self.list.value = key

    # ------------------------------------------------------------------ actions
    def _show_form(self, show: bool) -> None:
        self.form.layout.display = "" if show else "none"
        self.message.show(None)

    def create(self) -> str | None:
        """Create the function the form describes; its key, or None (the error is shown)."""
        name, domain = self.name_box.value.strip(), self.domain_box.value.strip()
        problem = create_function(
            self.doc,
            name,
            domain,
            inputs=self.inputs_box.value,
            outputs=self.outputs_box.value,
            parameters=self.parameters_box.value,
        )
        if problem:
            self.message.show(problem)
            return None
        key = f"{domain}::{name}"
        self._show_form(False)
        self.name_box.value = ""
        self.choose(key)
        self.message.show(f"created {key}: Open edits its body, the palette adds instances", "ok")
        return key

    def ask_delete(self) -> None:
        """Ask before deleting the chosen function."""
        self._ask(self.current)

    def _ask(self, row: FunctionRow | None) -> None:
        self.confirm_row.layout.display = "none" if row is None else ""
        if row is not None:
            stay = (
                f": its {row.instances} instances become custom operators" if row.instances else ""
            )
            self.confirm_text.value = f"delete <b>{html_text(row.key)}</b>{html_text(stay)}?"

    def delete(self) -> bool:
        """Delete the chosen function (the confirmation's Delete button)."""
        row = self.current
        self._ask(None)
        if row is None:
            return False
        problem = delete_function(self.doc, row.name, row.domain)
        self.message.show(
            problem or f"deleted {row.key} (undo brings it back)", "ok" if not problem else "error"
        )
        return problem is None

    def on_open(self, callback: Callable[[str, str], object]) -> None:
        """Call `callback(name, domain)` when the user opens a function."""
        self._open_callbacks.append(callback)

    def open_chosen(self) -> bool:
        row = self.current
        if row is None:
            self.message.show("choose a function first")
            return False
        for callback in list(self._open_callbacks):
            callback(row.name, row.domain)
        return True


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"
