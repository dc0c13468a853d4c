"""ParameterEditor: the selected node's name and attributes (or the model's information).

Set attributes first, schema defaults in a collapsible "default values" section; editing a
default sets it (it moves up), ↺ restores the default, ▦ opens list and tensor values in the
tensor editor. Several selected nodes show their common attributes, edited in one undo step.
Attribute rows are pooled widgets rebound on each selection, so clicking through a model
sends value updates rather than new widgets.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ipywidgets as widgets
import numpy as np
import onnx_ir as ir
import traitlets

from nsdl_jupyter._display import html_text, shown_path
from nsdl_jupyter.document import (
    NO_CONSTRAINT,
    PRECISIONS,
    ChangeEvent,
    DocumentError,
    ModelDocument,
)
from nsdl_jupyter.editors import (
    AttributeRow,
    ModelInfo,
    NodeForm,
    apply_attribute,
    describe_selection,
    follow_event,
    rename,
    reset_attribute,
)
from nsdl_jupyter.widgets.designer._tensor_editor import TensorEditor
from nsdl_jupyter.widgets.designer._tool_window import MessageLine, ToolWindow, button, style_widget

_LISTS = (ir.AttributeType.INTS, ir.AttributeType.FLOATS, ir.AttributeType.STRINGS)


class _AttributeRowWidgets:
    """The widgets of one attribute line, rebound to another attribute on each render."""

    def __init__(
        self,
        kind: str,
        on_commit: Callable[[_AttributeRowWidgets, Any], None],
        on_reset: Callable[[_AttributeRowWidgets], None],
        on_grid: Callable[[_AttributeRowWidgets], None],
        on_open: Callable[[_AttributeRowWidgets], None],
    ) -> None:
        self.kind = kind
        self.row: AttributeRow | None = None
        self.binding = False
        self.label = widgets.HTML(layout=widgets.Layout(width="112px", min_width="112px"))
        self.label.add_class("nsdl-attr-label")
        wide = widgets.Layout(flex="1 1 auto", width="auto", min_width="0")
        if kind == "int":
            self.input = widgets.IntText(continuous_update=False, layout=wide)
        elif kind == "float":
            self.input = widgets.FloatText(continuous_update=False, layout=wide)
        else:
            self.input = widgets.Text(
                continuous_update=False, layout=wide, disabled=kind == "readonly"
            )
            self.input.add_class("nsdl-mono")
        self.input.add_class("nsdl-attr-input")
        self.grid = button("▦", "show the values in the tensor editor", width="30px")
        self.reset = button("↺", "reset to the default value", width="30px")
        self.reset.add_class("nsdl-attr-reset")
        self.open = button("open", "open this body in its own tab to edit it")
        self.open.add_class("nsdl-attr-open")
        self.open.layout.display = "none"
        self.error = MessageLine("nsdl-attr-error")
        self.box = widgets.VBox(
            [widgets.HBox([self.label, self.input, self.open, self.grid, self.reset]), self.error],
            layout=widgets.Layout(margin="0 0 2px 0"),
        )
        self.input.observe(lambda change: self._changed(change, on_commit), names="value")
        self.reset.on_click(lambda _b: on_reset(self))
        self.grid.on_click(lambda _b: on_grid(self))
        self.open.on_click(lambda _b: on_open(self))

    def _changed(
        self, change: dict[str, Any], on_commit: Callable[[_AttributeRowWidgets, Any], None]
    ) -> None:
        if not self.binding and self.row is not None:
            on_commit(self, change["new"])

    def bind(self, row: AttributeRow, multiple: bool, can_open: bool = False) -> None:
        self.row = row
        self.binding = True
        try:
            state = "set" if row.is_set else "default"
            graph = ("nsdl-attr-graph",) if row.type == ir.AttributeType.GRAPH else ()
            self.box._dom_classes = (
                "nsdl-attr-row",
                f"nsdl-attr-{row.name}",
                f"nsdl-attr-{state}",
                *graph,
            )
            required = ' class="nsdl-attr-required"' if row.required else ""
            tip = html_text(
                f"{row.type_name}: {row.description}" if row.description else row.type_name
            )
            self.label.value = f'<span title="{tip}"{required}>{html_text(row.name)}</span>'
            if self.kind in ("int", "float"):
                self.input.value = row.value
            else:
                self.input.value = row.text
                if row.mixed:
                    self.input.placeholder = "(different values)"
                elif row.required and not row.is_set:
                    self.input.placeholder = f"required {row.type_name}"
                else:
                    self.input.placeholder = row.type_name
            self.input.tooltip = row.description or None
            self.grid.layout.display = "" if row.grid else "none"
            openable = can_open and not multiple and row.type == ir.AttributeType.GRAPH
            self.open.layout.display = "" if openable and row.is_set else "none"
            self.reset.layout.display = "" if row.is_set else "none"
            self.reset.disabled = row.required
            self.reset.tooltip = (
                "required: it has no default" if row.required else "reset to the default value"
            )
            self.error.show(None)
        finally:
            self.binding = False


class ParameterEditor(ToolWindow):
    """Edits the attributes of the selected node(s); nothing selected: model information."""

    css_name = "parameter-editor"

    def __init__(self, doc: ModelDocument, *, selected: list[str] | None = None) -> None:
        super().__init__(doc)
        self.form: NodeForm | ModelInfo | None = None
        self.renders = 0
        self._pool: dict[str, list[_AttributeRowWidgets]] = {}
        self._tensor_target: tuple[tuple[str, ...], str] | None = None
        self._body_callbacks: list[Callable[[str, str], None]] = []
        self.header = widgets.HTML()
        self.header.add_class("nsdl-param-header")
        self.name_box = widgets.Text(
            description="name", continuous_update=False, layout=widgets.Layout(width="auto")
        )
        self.name_box.add_class("nsdl-mono")
        self.name_box.add_class("nsdl-node-name")
        self.name_error = MessageLine("nsdl-name-error")
        self.trt_precision = widgets.Dropdown(
            options=[("no constraint", NO_CONSTRAINT)] + [(p, p) for p in PRECISIONS],
            value=NO_CONSTRAINT, description="TRT precision",
            tooltip="TensorRT layer precision constraint (TensorRT <= 10), kept beside the model",
            layout=widgets.Layout(width="auto"),
        )  # fmt: skip
        self.trt_precision.add_class("nsdl-trt-precision")
        self.trt_precision.observe(self._on_trt_precision, names="value")
        self.set_rows = widgets.VBox()
        self.set_rows.add_class("nsdl-set-attributes")
        self.default_rows = widgets.VBox()
        self.default_rows.add_class("nsdl-default-attributes")
        self.defaults = widgets.Accordion(children=[self.default_rows], selected_index=None)
        self.defaults.add_class("nsdl-defaults")
        self.connections = widgets.HTML()
        self.info = widgets.HTML()
        self.info.add_class("nsdl-model-info")
        self.tensor_editor = TensorEditor()
        self._binding = False
        self.name_box.observe(self._on_rename, names="value")
        self.children = [
            style_widget(),
            self.header,
            self.name_box,
            self.name_error,
            self.trt_precision,
            self.set_rows,
            self.defaults,
            self.connections,
            self.info,
            self.tensor_editor,
        ]
        if selected:
            self.selected = list(selected)
        else:
            self.render()

    # ------------------------------------------------------------------ follow
    @traitlets.observe("selected")
    def _on_selected(self, _change: dict[str, Any]) -> None:
        if self._tensor_target is not None and self._tensor_target[0] != tuple(self.selected):
            self._tensor_target = None
            self.tensor_editor.clear()
        self.render()

    def _on_document_event(self, event: ChangeEvent) -> None:
        if event.source == "save" and self.selected:
            return
        current = list(self.selected)
        followed = follow_event(current, event.renamed, event.removed, self.doc.nodes)
        if followed != current:
            self.selected = followed  # renders
            return
        touched = event.changed | event.removed | {new for _, new in event.renamed}
        if event.source == "load" or not current or touched & set(current) or event.tensorrt:
            self.render()

    # ------------------------------------------------------------------ render
    def render(self) -> None:
        form = describe_selection(self.doc, self.selected)
        self.form = form
        self.renders += 1
        with self.hold_sync():
            if isinstance(form, ModelInfo):
                self._render_info(form)
            else:
                self._render_form(form)

    def _render_info(self, info: ModelInfo) -> None:
        self.header.value = "<b>Model</b> <span class='nsdl-note'>(select a node to edit it)</span>"
        for part in (
            self.name_box,
            self.name_error,
            self.trt_precision,
            self.set_rows,
            self.defaults,
            self.connections,
        ):
            part.layout.display = "none"
        self.set_rows.children = ()
        self.default_rows.children = ()
        self.info.layout.display = ""
        rows = [
            ("file", shown_path(info.path) if info.path else "(not saved yet)"),
            ("IR version", str(info.ir_version)),
            ("opset imports", ", ".join(f"{d} {v}" for d, v in info.opset_imports)),
            ("producer", info.producer or "-"),
            ("graph", info.graph_name or "-"),
            ("nodes", f"{info.nodes:,}"),
            ("initializers", f"{info.initializers:,}"),
            ("inputs", ", ".join(info.inputs) or "-"),
            ("outputs", ", ".join(info.outputs) or "-"),
        ]
        rows += [(f"metadata: {k}", v) for k, v in info.metadata]
        if info.doc_string:
            rows.append(("doc", info.doc_string))
        body = "".join(
            f"<tr><td><b>{html_text(k)}</b></td><td>{html_text(_clip(v))}</td></tr>"
            for k, v in rows
        )
        self.info.value = f'<table class="nsdl-info-table">{body}</table>'
        self.tensor_editor.clear()

    def _render_form(self, form: NodeForm) -> None:
        self.info.layout.display = "none"
        label = f"{len(form.names)} nodes · " if form.multiple else ""
        self.header.value = (
            f"<b>{html_text(label + form.op_type)}</b> "
            f"<span class='nsdl-note'>{html_text(form.domain)}</span>"
            + ("" if form.has_schema else " <span class='nsdl-note'>(no schema known)</span>")
        )
        self._binding = True
        try:
            self.name_box.value = "" if form.multiple else form.names[0]
        finally:
            self._binding = False
        self.name_box.layout.display = "none" if form.multiple else ""
        self.name_error.show(None)
        self._show_trt_precision(form)
        cursors: dict[str, int] = {}
        self.set_rows.children = [self._bound(row, form, cursors).box for row in form.set_rows]
        self.default_rows.children = [
            self._bound(row, form, cursors).box for row in form.default_rows
        ]
        self.set_rows.layout.display = ""
        self.defaults.layout.display = "" if form.default_rows else "none"
        self.defaults.set_title(0, f"default values ({len(form.default_rows)})")
        if form.multiple:
            self.connections.layout.display = "none"
        else:
            self.connections.layout.display = ""
            self.connections.value = (
                "<div class='nsdl-note'>inputs: "
                + html_text(", ".join(n or "∅" for n in form.inputs) or "-")
                + "<br>outputs: "
                + html_text(", ".join(form.outputs) or "-")
                + "</div>"
            )
        if self._tensor_target is not None:
            self._refresh_tensor_editor(form)

    def _bound(
        self, row: AttributeRow, form: NodeForm, cursors: dict[str, int]
    ) -> _AttributeRowWidgets:
        kind = row.kind
        if kind in ("int", "float") and (row.value is None or row.mixed):
            kind = "literal"
        pool = self._pool.setdefault(kind, [])
        index = cursors.get(kind, 0)
        cursors[kind] = index + 1
        if index == len(pool):
            pool.append(
                _AttributeRowWidgets(
                    kind, self._commit, self._reset, self._open_grid, self._open_body
                )
            )
        widgets_row = pool[index]
        widgets_row.bind(row, form.multiple, bool(self._body_callbacks))
        return widgets_row

    # ------------------------------------------------------------------ bodies
    def on_open_body(self, callback: Callable[[str, str], None]) -> Callable[[], None]:
        """Show an "open" button on graph attributes (If branches, Loop/Scan bodies) that
        calls `callback(node, attribute)`; returns a function that removes the callback."""
        self._body_callbacks.append(callback)
        self.render()

        def remove() -> None:
            if callback in self._body_callbacks:
                self._body_callbacks.remove(callback)

        return remove

    def open_body(self, attribute: str) -> bool:
        """What the "open" button of graph attribute `attribute` does; False when no single
        node with that graph attribute is shown."""
        form = self.form
        if not isinstance(form, NodeForm) or form.multiple:
            return False
        row = form.row(attribute)
        if row is None or row.type != ir.AttributeType.GRAPH:
            return False
        for callback in list(self._body_callbacks):
            callback(form.names[0], attribute)
        return True

    def _open_body(self, row_widgets: _AttributeRowWidgets) -> None:
        if row_widgets.row is not None:
            self.open_body(row_widgets.row.name)

    # ------------------------------------------------------------------ edits
    def _names(self) -> list[str]:
        form = self.form
        return list(form.names) if isinstance(form, NodeForm) else []

    def _commit(self, row_widgets: _AttributeRowWidgets, value: Any) -> None:
        row = row_widgets.row
        if row is None:
            return
        if isinstance(value, str) and not value.strip() and not row.is_set:
            return  # an untouched default or required field left empty
        problem = apply_attribute(self.doc, self._names(), row.name, value)
        if problem:
            row_widgets.error.show(problem)

    def _reset(self, row_widgets: _AttributeRowWidgets) -> None:
        row = row_widgets.row
        if row is None:
            return
        problem = reset_attribute(self.doc, self._names(), row.name)
        if problem:
            row_widgets.error.show(problem)

    def _show_trt_precision(self, form: NodeForm) -> None:
        """The constraint of the selected top-level nodes (the first one's when they differ)."""
        top_level = all(name in self.doc.nodes for name in form.names)
        self.trt_precision.layout.display = "" if top_level else "none"
        if top_level:
            self._binding = True
            try:
                precision = self.doc.tensorrt.layer_precision(form.names[0])
                self.trt_precision.value = precision or NO_CONSTRAINT
            finally:
                self._binding = False

    def _on_trt_precision(self, change: dict[str, Any]) -> None:
        """Set or clear the selected nodes' TensorRT layer precision: one undo step."""
        if self._binding or not isinstance(self.form, NodeForm):
            return
        try:
            self.doc.tensorrt.set_layer_precisions(self.form.names, change["new"])
        except DocumentError as error:
            self.name_error.show(str(error))

    def _on_rename(self, change: dict[str, Any]) -> None:
        names = self._names()
        if self._binding or len(names) != 1 or change["new"] == names[0]:
            return
        problem = rename(self.doc, names[0], change["new"])
        self.name_error.show(problem)

    def set_value(self, attribute: str, value: Any) -> str | None:
        """Set an attribute as if typed into its box (literal text or a value).

        Returns the error shown inline, or None."""
        form = self.form
        if not isinstance(form, NodeForm) or form.row(attribute) is None:
            return f"the editor shows no attribute {attribute!r}"
        return apply_attribute(self.doc, list(form.names), attribute, value)

    # ------------------------------------------------------------------ tensor editor
    def _open_grid(self, row_widgets: _AttributeRowWidgets) -> None:
        row = row_widgets.row
        if row is None or not row.grid:
            return
        self._tensor_target = (tuple(self._names()), row.name)
        self._show_tensor(row)

    def _show_tensor(self, row: AttributeRow, keep_position: bool = False) -> None:
        names = self._names()
        value = row.value
        is_list = row.type in _LISTS
        array = np.asarray(
            value if value is not None else [],
            dtype=object if row.type == ir.AttributeType.STRINGS else None,
        )

        def edit(new: np.ndarray) -> str | None:
            return apply_attribute(self.doc, names, row.name, new.tolist() if is_list else new)

        title = f"{names[0] if len(names) == 1 else f'{len(names)} nodes'} · {row.name}"
        self.tensor_editor.show(array, title=title, on_edit=edit, keep_position=keep_position)

    def _refresh_tensor_editor(self, form: NodeForm) -> None:
        assert self._tensor_target is not None
        row = form.row(self._tensor_target[1])
        if row is None or not row.grid:
            self._tensor_target = None
            self.tensor_editor.clear()
            return
        self._show_tensor(row, keep_position=True)


def _clip(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
