"""InitializerEditor: every initializer of the model (upper part) and the initializer inputs
of the selected node (lower part).

Upper: filter by name and dtype; shape, size and location per initializer; create (literal,
.npy file, or generated with the fill methods the dtype allows, the others disabled);
delete (disconnects its users); open in the tensor editor (statistics and one page of values,
whose cells edit the initializer: one undo step each).
Lower: per input of the selected node, a searchable list to switch the initializer, a
disconnect button and a preview; free inputs get "connect initializer".
"""

from __future__ import annotations

from typing import Any

import ipywidgets as widgets
import numpy as np
import traitlets

from nsdl_jupyter._display import html_text, neutralize
from nsdl_jupyter.document import ChangeEvent, ModelDocument
from nsdl_jupyter.editors import (
    CREATE_DTYPES,
    FILL_METHODS,
    InitializerRow,
    InputSlot,
    allowed_fill_methods,
    candidates,
    connect_initializer,
    create_initializer,
    delete_initializer,
    disconnect_input,
    dtypes_present,
    filter_rows,
    initializer_rows,
    input_slots,
    set_initializer_value,
)
from nsdl_jupyter.widgets.designer._tensor_editor import TensorEditor
from nsdl_jupyter.widgets.designer._tool_window import MessageLine, ToolWindow, button, style_widget

MAX_LISTED = 500
_LIST_ROWS = 8
_ALL = "all dtypes"
_SOURCES = (("literal", "literal"), (".npy file", "npy"), ("generate", "generate"))


class InitializerEditor(ToolWindow):
    """Lists, creates, deletes and previews initializers; links them to the selected node."""

    css_name = "initializer-editor"

    def __init__(self, doc: ModelDocument, *, selected: list[str] | None = None) -> None:
        super().__init__(doc)
        self.rows: list[InitializerRow] = []
        self.shown: list[InitializerRow] = []
        self.slots: list[InputSlot] = []
        self._slot_widgets: list[widgets.Widget] = []
        self._slot_errors: dict[int, MessageLine] = {}
        self._binding = False
        self._active = True
        self._slots_stale = False
        self._tensor_name: str | None = None  # the initializer the tensor editor shows
        # ---- upper part: the table
        self.filter_box = widgets.Text(
            placeholder="filter by name",
            continuous_update=False,
            layout=widgets.Layout(flex="1 1 auto", width="auto", min_width="0"),
        )
        self.dtype_filter = widgets.Dropdown(
            options=[_ALL], value=_ALL, layout=widgets.Layout(width="130px")
        )
        self.table = widgets.Select(
            options=[], rows=_LIST_ROWS, layout=widgets.Layout(width="auto")
        )
        self.table.add_class("nsdl-initializer-list")
        self.count = widgets.HTML()
        self.open_button = button("Open", "statistics and values in the tensor editor")
        self.open_button.add_class("nsdl-open-initializer")
        self.delete_button = button("Delete", "delete the initializer (its users are disconnected)")
        self.delete_button.add_class("nsdl-delete-initializer")
        self.table_error = MessageLine("nsdl-initializer-error")
        self._build_create_form()
        # ---- lower part: the selected node's inputs
        self.node_header = widgets.HTML()
        self.node_inputs = widgets.VBox()
        self.node_inputs.add_class("nsdl-node-inputs")
        self.tensor_editor = TensorEditor()
        self.tensor_editor.close_button.on_click(lambda _b: self._list_rows())
        # below the list and its buttons, which stay put: in the Designer this part scrolls
        self.details = widgets.VBox([self.create_section, self.node_header, self.node_inputs])
        self.details.add_class("nsdl-initializer-details")

        self.filter_box.observe(lambda _c: self._render_table(), names="value")
        self.dtype_filter.observe(lambda _c: self._render_table(), names="value")
        self.open_button.on_click(lambda _b: self.preview(self.table.value))
        self.delete_button.on_click(lambda _b: self.delete(self.table.value))
        self.create_button.on_click(lambda _b: self.create())
        self.new_dtype.observe(lambda _c: self._sync_form(), names="value")
        self.new_source.observe(lambda _c: self._sync_form(), names="value")
        self.children = [
            style_widget(),
            widgets.HBox([self.filter_box, self.dtype_filter]),
            self.table,
            widgets.HBox([self.open_button, self.delete_button, self.count]),
            self.table_error,
            self.tensor_editor,
            self.details,
        ]
        self._sync_form()
        self.refresh()
        if selected:
            self.selected = list(selected)
        else:
            self._render_slots()

    def _build_create_form(self) -> None:
        """The create form: name, dtype, shape, and a literal, a .npy file or a fill method."""
        self.new_name = widgets.Text(description="name", continuous_update=True)
        self.new_dtype = widgets.Dropdown(
            options=list(CREATE_DTYPES), value="float", description="dtype"
        )
        self.new_shape = widgets.Text(
            description="shape", placeholder="[64, 3, 7, 7]", continuous_update=True
        )
        self.new_source = widgets.ToggleButtons(options=list(_SOURCES), value="generate")
        self.new_source.style.button_width = "92px"
        self.new_value = widgets.Text(
            description="value", placeholder="[[1.0, 2.0], [3.0, 4.0]]", continuous_update=True
        )
        self.new_value.add_class("nsdl-mono")
        self.new_path = widgets.Text(description=".npy path", continuous_update=True)
        self.method_buttons = {
            method: widgets.ToggleButton(
                description=method,
                value=method == "zeros",
                layout=widgets.Layout(width="auto", flex="0 0 auto"),
            )
            for method in FILL_METHODS
        }
        for method, toggle in self.method_buttons.items():
            toggle.add_class(f"nsdl-fill-{method}")
            toggle.observe(lambda change, m=method: self._on_method(m, change), names="value")
        self.seed = widgets.IntText(
            value=0, description="seed", layout=widgets.Layout(width="160px")
        )
        self.methods_row = widgets.HBox([*self.method_buttons.values(), self.seed])
        self.create_button = button("Create", "create the initializer")
        self.create_button.add_class("nsdl-create-initializer")
        self.create_message = MessageLine("nsdl-create-message")
        for part, css in (
            (self.new_name, "name"),
            (self.new_dtype, "dtype"),
            (self.new_shape, "shape"),
            (self.new_source, "source"),
            (self.new_value, "value"),
            (self.new_path, "path"),
        ):
            part.add_class(f"nsdl-new-{css}")
        self.create_form = widgets.VBox(
            [
                self.new_name,
                self.new_dtype,
                self.new_shape,
                self.new_source,
                self.new_value,
                self.new_path,
                self.methods_row,
                self.create_button,
                self.create_message,
            ]
        )
        self.create_section = widgets.Accordion(children=[self.create_form], selected_index=None)
        self.create_section.set_title(0, "create initializer")
        self.create_section.add_class("nsdl-create-section")

    # ------------------------------------------------------------------ follow
    @traitlets.observe("selected")
    def _on_selected(self, _change: dict[str, Any]) -> None:
        self._render_slots()

    def _on_document_event(self, event: ChangeEvent) -> None:
        if event.source == "save":
            return
        if event.initializers or event.edges or event.source == "load" or event.renamed:
            self.refresh()
            self._follow_tensor(event)
        names = set(self.selected)
        renamed = dict(event.renamed)
        if any(old in names for old in renamed) or names & event.removed:
            self.selected = [renamed.get(n, n) for n in self.selected if n not in event.removed]
            return
        if event.source == "load" or event.edges or event.initializers or names & event.changed:
            self._render_slots()

    def refresh(self) -> None:
        """Re-read the initializer table from the document."""
        self.rows = initializer_rows(self.doc)
        present = [_ALL, *dtypes_present(self.rows)]
        self._binding = True
        try:
            current = self.dtype_filter.value
            self.dtype_filter.options = present
            self.dtype_filter.value = current if current in present else _ALL
        finally:
            self._binding = False
        self._render_table()

    # ------------------------------------------------------------------ table
    def _render_table(self) -> None:
        if self._binding:
            return
        dtype = None if self.dtype_filter.value == _ALL else self.dtype_filter.value
        matching = filter_rows(self.rows, self.filter_box.value, dtype)
        self.shown = matching[:MAX_LISTED]
        width = min(40, max((len(r.name) for r in self.shown), default=8))
        selected = self.table.value
        self.table.options = [(neutralize(row.label(width)), row.name) for row in self.shown]
        names = [row.name for row in self.shown]
        self.table.value = selected if selected in names else None
        more = len(matching) - len(self.shown)
        note = f"{len(matching):,} of {len(self.rows):,} initializers"
        if more > 0:
            note += f" ({more:,} more: refine the filter)"
        self.count.value = f"<span class='nsdl-note'>{html_text(note)}</span>"

    def preview(self, name: str | None) -> None:
        """Show initializer `name` in the tensor editor (statistics and one page of values)."""
        if not name:
            self.table_error.show("select an initializer in the list first")
            return
        value = self.doc.graph.initializers.get(name)
        if value is None:
            self.table_error.show(f"no initializer named {name!r}")
            return
        self.table_error.show(None)
        self._show_tensor(name)
        self._list_rows()

    def _show_tensor(self, name: str, keep_position: bool = False) -> None:
        value = self.doc.graph.initializers[name]
        location = self.doc.external_location(name)
        where = f" (external: {location.location})" if location else ""

        def edit(array: np.ndarray) -> str | None:
            return set_initializer_value(self.doc, name, array)

        self.tensor_editor.show(
            value.const_value, title=f"{name}{where}", on_edit=edit, keep_position=keep_position
        )
        self._tensor_name = name

    def _follow_tensor(self, event: ChangeEvent) -> None:
        """The shown initializer after an edit, an undo or a rename (closed when deleted)."""
        name = self._tensor_name
        if name is None or self.tensor_editor.grid is None:
            return
        name = dict(event.renamed).get(name, name)
        if name in self.doc.graph.initializers:
            self._show_tensor(name, keep_position=True)
        else:
            self._tensor_name = None
            self.tensor_editor.clear()
            self._list_rows()

    def _list_rows(self) -> None:
        """A shorter list while the tensor editor is open leaves its values more room."""
        self.table.rows = _LIST_ROWS // 2 if self.tensor_editor.grid is not None else _LIST_ROWS

    def delete(self, name: str | None) -> str | None:
        if not name:
            self.table_error.show("select an initializer in the list first")
            return "nothing selected"
        problem = delete_initializer(self.doc, name)
        self.table_error.show(problem)
        if problem is None and self.tensor_editor.title.value.startswith(f"<b>{html_text(name)}"):
            self.tensor_editor.clear()
            self._list_rows()
        return problem

    # ------------------------------------------------------------------ create
    def _on_method(self, method: str, change: dict[str, Any]) -> None:
        if self._binding:
            return
        self._binding = True
        try:
            if change["new"]:
                for other, toggle in self.method_buttons.items():
                    if other != method:
                        toggle.value = False
            else:
                change["owner"].value = True  # one method stays chosen
        finally:
            self._binding = False

    @property
    def method(self) -> str:
        return next((m for m, t in self.method_buttons.items() if t.value), "zeros")

    def _sync_form(self) -> None:
        source = self.new_source.value
        allowed = allowed_fill_methods(self.new_dtype.value)
        self._binding = True
        try:
            for method, toggle in self.method_buttons.items():
                toggle.disabled = method not in allowed
                toggle.tooltip = (
                    f"fill with {method}"
                    if method in allowed
                    else f"not available for {self.new_dtype.value}"
                )
            if self.method not in allowed or self.method_buttons[self.method].disabled:
                for method, toggle in self.method_buttons.items():
                    toggle.value = method == allowed[0]
        finally:
            self._binding = False
        self.new_value.layout.display = "" if source == "literal" else "none"
        self.new_path.layout.display = "" if source == "npy" else "none"
        self.methods_row.layout.display = "" if source == "generate" else "none"

    def create(self) -> str | None:
        """Create the initializer described by the form; the error shown, or None."""
        name = self.new_name.value.strip()
        problem = create_initializer(
            self.doc,
            name,
            self.new_dtype.value,
            self.new_shape.value,
            self.new_source.value,
            value_text=self.new_value.value,
            npy_path=self.new_path.value,
            method=self.method,
            seed=int(self.seed.value),
        )
        if problem:
            self.create_message.show(problem)
            return problem
        self.create_message.show(f"created {name}", "ok")
        self.filter_box.value = ""
        self._render_table()
        self.table.value = name if name in [r.name for r in self.shown] else None
        return None

    # ------------------------------------------------------------------ node inputs
    @property
    def active(self) -> bool:
        """False while hidden (a Designer tab in the back): the node inputs part waits."""
        return self._active

    @active.setter
    def active(self, value: bool) -> None:
        self._active = bool(value)
        if self._active and self._slots_stale:
            self._render_slots()

    def _render_slots(self) -> None:
        if not self._active:
            # built when shown: its dropdowns can list thousands of initializers
            self._slots_stale = True
            return
        self._slots_stale = False
        for old in self._slot_widgets:
            old.close()
        self._slot_widgets = []
        self._slot_errors = {}
        names = [n for n in self.selected if n in self.doc.nodes]
        if len(names) != 1:
            self.slots = []
            self.node_header.value = (
                "<span class='nsdl-note'>select one node to link initializers to its inputs</span>"
            )
            self.node_inputs.children = ()
            return
        node = names[0]
        self.slots = input_slots(self.doc, node)
        self.node_header.value = f"<b>inputs of {html_text(node)}</b>"
        rows = [self._slot_row(node, slot) for slot in self.slots]
        self.node_inputs.children = rows
        self._slot_widgets = rows

    def _slot_row(self, node: str, slot: InputSlot) -> widgets.Widget:
        label = widgets.HTML(
            f"<span class='nsdl-attr-label' title='{'optional' if slot.optional else 'required'}'>"
            f"{slot.index} {html_text(slot.label)}{'?' if slot.optional else ''}</span>",
            layout=widgets.Layout(width="70px", min_width="70px"),
        )
        error = MessageLine("nsdl-slot-error")
        self._slot_errors[slot.index] = error
        parts: list[widgets.Widget] = [label]
        if slot.tensor is not None and not slot.is_initializer:
            parts.append(widgets.HTML(f"<span class='nsdl-mono'>{html_text(slot.tensor)}</span>"))
        else:
            options = candidates(self.doc, slot)
            choose = widgets.Combobox(
                options=options,
                value=slot.tensor or "",
                placeholder="connect initializer…" if slot.free else "",
                ensure_option=True,
                continuous_update=False,
                layout=widgets.Layout(flex="1 1 auto", width="auto", min_width="0"),
            )
            choose.add_class("nsdl-mono")
            choose.add_class("nsdl-slot-choice")
            parts.append(choose)
            if slot.free:
                connect = button("Connect", "link the chosen initializer to this input")
                connect.add_class("nsdl-slot-connect")
                connect.on_click(lambda _b: self._connect(node, slot, choose.value))
                parts.append(connect)
            else:
                choose.observe(
                    lambda change: self._switch(node, slot, change["new"]), names="value"
                )
                unlink = button("Disconnect", "unlink the initializer from this input")
                unlink.add_class("nsdl-slot-disconnect")
                unlink.on_click(lambda _b: self._disconnect(node, slot))
                preview = button("Preview", "show it in the tensor editor")
                preview.on_click(lambda _b: self.preview(slot.tensor))
                parts += [unlink, preview]
        box = widgets.VBox([widgets.HBox(parts), error])
        box.add_class("nsdl-slot")
        box.add_class(f"nsdl-slot-{slot.index}")
        return box

    def _connect(self, node: str, slot: InputSlot, initializer: str) -> None:
        if not initializer:
            self._slot_errors[slot.index].show("choose an initializer in the box first")
            return
        self._slot_errors[slot.index].show(
            connect_initializer(self.doc, node, slot.index, initializer)
        )

    def _switch(self, node: str, slot: InputSlot, initializer: str) -> None:
        if not initializer or initializer == slot.tensor:
            return
        problem = connect_initializer(self.doc, node, slot.index, initializer, replace=True)
        if problem and slot.index in self._slot_errors:
            self._slot_errors[slot.index].show(problem)

    def _disconnect(self, node: str, slot: InputSlot) -> None:
        problem = disconnect_input(self.doc, node, slot.index)
        if problem and slot.index in self._slot_errors:
            self._slot_errors[slot.index].show(problem)

    # ------------------------------------------------------------------ scripting helpers
    def connect(self, node: str, index: int, initializer: str) -> str | None:
        """What "connect" / the dropdown do, for scripts and tests: the error, or None."""
        slot = next((s for s in input_slots(self.doc, node) if s.index == index), None)
        if slot is None:
            return f"{node} has no input {index}"
        return connect_initializer(self.doc, node, index, initializer, replace=not slot.free)
