"""LayerExplorer: the model's layers as a list, grouped by type or name scope, sorted (graph
order, name, op type, or how many nodes share the op type; either direction), filtered by
name, by type and by attribute values (the Filters button shows how many are active).

Choosing a row and pressing "Go to" (or double-clicking it inside the Designer) selects the
node, which the graph view brings into sight. Group headers open and close their group.
Constants are hidden by default; the toggle's last state is kept in the user settings.
The TRT-Prec column shows each node's TensorRT layer precision constraint (`doc.tensorrt`);
the Filters panel filters by it, and "Set TRT precision" sets or clears it for the chosen row
(or, with none chosen, for the selected nodes: one undo step).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import ipywidgets as widgets

from nsdl_jupyter._display import html_text, neutralize
from nsdl_jupyter.document import NO_CONSTRAINT, ChangeEvent, DocumentError, ModelDocument
from nsdl_jupyter.editors import (
    COMPARISONS,
    LAYER_SORTS,
    AttributeCondition,
    LayerExplorerState,
    ListEntry,
)
from nsdl_jupyter.widgets.designer._tool_window import (
    MessageLine,
    ToolWindow,
    button,
    sort_dropdown,
    style_widget,
)

_GROUPINGS = (("flat", "none"), ("by type", "type"), ("by scope", "scope"))


class LayerExplorer(ToolWindow):
    """A searchable, filterable table of the model's layers."""

    css_name = "layer-explorer"

    def __init__(self, doc: ModelDocument, *, selected: list[str] | None = None) -> None:
        super().__init__(doc)
        self.state = LayerExplorerState(doc)
        self.entries: list[ListEntry] = []
        self._binding = False
        self.filter_box = widgets.Text(
            placeholder="filter by name",
            continuous_update=False,
            layout=widgets.Layout(flex="1 1 auto", width="auto", min_width="0"),
        )
        self.filter_box.add_class("nsdl-layer-filter")
        self.filters_button = widgets.ToggleButton(
            value=False,
            description="Filters",
            icon="filter",
            layout=widgets.Layout(width="auto", flex="0 0 auto"),
        )
        self.filters_button.add_class("nsdl-filters-button")
        self.group_by = widgets.ToggleButtons(options=list(_GROUPINGS), value="none")
        self.group_by.style.button_width = "78px"
        self.sort = sort_dropdown(LAYER_SORTS, "nsdl-layer-sort")
        self.show_constants = widgets.Checkbox(
            value=self.state.filter.show_constants, description="show constants", indent=False,
            layout=widgets.Layout(width="auto"),
        )  # fmt: skip
        self.show_constants.add_class("nsdl-show-constants")
        self.list = widgets.Select(options=[], rows=14, layout=widgets.Layout(width="auto"))
        self.list.add_class("nsdl-layer-list")
        self.summary = widgets.HTML()
        self.previous_page = button("◀", "previous page", width="34px")
        self.next_page = button("▶", "next page", width="34px")
        self.page_label = widgets.HTML()
        self.go_button = button("Go to", "select the node and bring it into view")
        self.go_button.add_class("nsdl-go-to")
        self.precision_choice = widgets.Dropdown(
            options=[("no constraint", NO_CONSTRAINT)]
            + [(p, p) for p in self.state.precision_choices()[1:]],
            value=NO_CONSTRAINT, description="TRT", style={"description_width": "auto"},
            layout=widgets.Layout(flex="1 1 auto", width="auto", min_width="0"),
        )  # fmt: skip
        self.precision_choice.add_class("nsdl-trt-precision")
        self.set_precision_button = button(
            "Set", "set (or clear) the TensorRT layer precision of the chosen row or selection"
        )
        self.set_precision_button.add_class("nsdl-set-trt-precision")
        self.message = MessageLine()
        self.advanced = self._build_advanced()
        self.advanced.add_class("nsdl-layer-filters")

        self.filter_box.observe(lambda _c: self._apply_filter(), names="value")
        self.group_by.observe(self._on_group_by, names="value")
        self.sort.observe(self._on_sort, names="value")
        self.show_constants.observe(self._on_constants, names="value")
        self.filters_button.observe(lambda c: self._show_advanced(c["new"]), names="value")
        self.list.observe(self._on_list, names="value")
        self.previous_page.on_click(lambda _b: self._turn(-1))
        self.next_page.on_click(lambda _b: self._turn(1))
        self.go_button.on_click(lambda _b: self.go_to())
        self.set_precision_button.on_click(lambda _b: self.set_precision())
        self.observe(lambda c: self._show_precision(c["new"][:1]), names="selected")
        self.children = [
            style_widget(),
            widgets.HBox([self.filter_box, self.filters_button]),
            self.advanced,
            self.group_by,
            self.sort,
            self.show_constants,
            widgets.HTML("<span class='nsdl-note'>layer  ·  type  ·  TRT-Prec</span>"),
            self.list,
            widgets.HBox([self.go_button, self.previous_page, self.page_label, self.next_page]),
            widgets.HBox([self.precision_choice, self.set_precision_button]),
            self.summary,
            self.message,
        ]
        self._show_advanced(False)
        self._render()
        if selected:
            self.selected = list(selected)

    def _build_advanced(self) -> widgets.VBox:
        self.type_filter = widgets.TagsInput(
            value=[], allowed_tags=self.state.op_types(), allow_duplicates=False,
            placeholder="op types",
        )  # fmt: skip
        self.type_filter.add_class("nsdl-type-filter")
        self.precision_filter = widgets.TagsInput(
            value=[], allowed_tags=self.state.precision_choices(), allow_duplicates=False,
            placeholder="TRT precisions (none: no constraint)",
        )  # fmt: skip
        self.precision_filter.add_class("nsdl-precision-filter")
        self.condition_attribute = widgets.Combobox(
            options=self.state.attribute_names(), placeholder="attribute",
            layout=widgets.Layout(width="130px"),
        )  # fmt: skip
        self.condition_op = widgets.Dropdown(
            options=list(COMPARISONS), value="=", layout=widgets.Layout(width="90px")
        )
        self.condition_value = widgets.Text(
            placeholder="value, e.g. 2 or [1, 1]",
            layout=widgets.Layout(flex="1 1 auto", width="auto", min_width="0"),
        )
        self.add_condition = button("+", "add this attribute condition", width="34px")
        self.conditions = widgets.SelectMultiple(
            options=[], rows=3, layout=widgets.Layout(width="auto")
        )
        self.remove_condition = button("Remove", "remove the chosen conditions")
        self.clear_filters = button("Clear all", "remove every filter")
        self.type_filter.observe(lambda _c: self._apply_filter(), names="value")
        self.precision_filter.observe(lambda _c: self._apply_filter(), names="value")
        self.add_condition.on_click(lambda _b: self._add_condition())
        self.remove_condition.on_click(lambda _b: self._remove_conditions())
        self.clear_filters.on_click(lambda _b: self.clear())
        return widgets.VBox(
            [
                widgets.HTML("<span class='nsdl-note'>types</span>"),
                self.type_filter,
                widgets.HTML("<span class='nsdl-note'>TensorRT layer precisions</span>"),
                self.precision_filter,
                widgets.HTML("<span class='nsdl-note'>attribute values</span>"),
                widgets.HBox([self.condition_attribute, self.condition_op, self.condition_value,
                              self.add_condition]),
                self.conditions,
                widgets.HBox([self.remove_condition, self.clear_filters]),
            ]
        )  # fmt: skip

    # ------------------------------------------------------------------ filters
    def _apply_filter(self, conditions: tuple[AttributeCondition, ...] | None = None) -> None:
        if self._binding:
            return
        flt = replace(
            self.state.filter,
            text=self.filter_box.value,
            op_types=frozenset(self.type_filter.value),
            precisions=frozenset(self.precision_filter.value),
            conditions=self.state.filter.conditions if conditions is None else conditions,
        )
        self.state.set_filter(flt)
        self._render()

    def _add_condition(self) -> None:
        try:
            condition = AttributeCondition(
                self.condition_attribute.value.strip(),
                self.condition_op.value,
                self.condition_value.value,
            )
        except ValueError as error:
            self.message.show(str(error))
            return
        self.message.show(None)
        self.add_filter(condition)
        self.condition_value.value = ""

    def add_filter(self, condition: AttributeCondition) -> None:
        """Keep only layers whose attribute satisfies `condition` (set values or defaults)."""
        self._apply_filter((*self.state.filter.conditions, condition))

    def _remove_conditions(self) -> None:
        doomed = set(self.conditions.value)
        kept = tuple(c for i, c in enumerate(self.state.filter.conditions) if i not in doomed)
        self._apply_filter(kept)

    def clear(self) -> None:
        """Remove every filter (name, types, attribute values)."""
        self._binding = True
        try:
            self.filter_box.value = ""
            self.type_filter.value = []
            self.precision_filter.value = []
        finally:
            self._binding = False
        self._apply_filter(())

    def _show_advanced(self, show: bool) -> None:
        self.advanced.layout.display = "" if show else "none"

    def _on_constants(self, change: dict[str, Any]) -> None:
        self.state.set_show_constants(bool(change["new"]))
        self._render()

    def _on_group_by(self, change: dict[str, Any]) -> None:
        self.state.set_group_by(change["new"])
        self._render()

    def _on_sort(self, change: dict[str, Any]) -> None:
        self.state.set_order(change["new"])
        self._render()

    def _turn(self, delta: int) -> None:
        self.state.page += delta
        self._render()

    # ------------------------------------------------------------------ drawing
    def _render(self) -> None:
        self.entries = self.state.entries()
        flt = self.state.filter
        active = flt.active_count
        self.filters_button.description = f"Filters ({active})" if active else "Filters"
        self.filters_button.button_style = "info" if active else ""
        self.conditions.options = [
            (neutralize(c.describe()), i) for i, c in enumerate(flt.conditions)
        ]
        self._binding = True
        try:
            self.list.options = [(neutralize(e.label), i) for i, e in enumerate(self.entries)]
            self.list.value = None
        finally:
            self._binding = False
        pages = self.state.pages
        self.page_label.value = (
            f"<span class='nsdl-note'>page {self.state.page + 1} of {pages}</span>"
        )
        for part in (self.previous_page, self.page_label, self.next_page):
            part.layout.display = "" if pages > 1 else "none"  # one row less in a short pane
        self.previous_page.disabled = self.state.page == 0
        self.next_page.disabled = self.state.page >= pages - 1
        self.summary.value = f"<span class='nsdl-note'>{html_text(self.state.summary())}</span>"

    def _show_precision(self, nodes: list[str]) -> None:
        """The dropdown shows the precision of the chosen node, ready to change or clear."""
        if nodes:
            self.precision_choice.value = (
                self.doc.tensorrt.layer_precision(nodes[0]) or NO_CONSTRAINT
            )

    def _on_list(self, change: dict[str, Any]) -> None:
        if self._binding or change["new"] is None:
            return
        entry = self.entries[change["new"]]
        if entry.node is not None:
            self._show_precision([entry.node])
        if entry.node is None and entry.group is not None:
            self.state.toggle(entry.group)
            self._render()

    @property
    def current(self) -> str | None:
        """The node of the chosen row (None for a group header or no choice)."""
        index = self.list.value
        if not isinstance(index, int) or index >= len(self.entries):
            return None
        return self.entries[index].node

    def activate(self, index: int | None = None) -> None:
        """A double-click on row `index` (default: the chosen row): go to its node."""
        position = self.list.value if index is None else index
        if not isinstance(position, int) or not 0 <= position < len(self.entries):
            self.message.show("choose a layer in the list first")
            return
        node = self.entries[position].node
        if node is not None:  # a group header opened or closed on the first click already
            self.go_to(node)

    def go_to(self, name: str | None = None) -> None:
        """Select node `name` (default: the chosen row), which the graph view centres on."""
        target = name if name is not None else self.current
        if target is None:
            self.message.show("choose a layer in the list first")
            return
        if target not in self.doc.nodes:
            self.message.show(f"no node named {target!r}")
            return
        self.message.show(None)
        self.selected = [target]

    def set_precision(self, precision: str | None = None) -> None:
        """Set the TensorRT layer precision (default: the dropdown's; 'none' clears) of the
        chosen row, else of the selected nodes, as one undo step."""
        wanted = self.precision_choice.value if precision is None else precision
        nodes = [self.current] if self.current is not None else list(self.selected)
        if not nodes:
            self.message.show("choose a layer in the list (or select nodes) first")
            return
        try:
            self.doc.tensorrt.set_layer_precisions(nodes, wanted)
        except DocumentError as error:
            self.message.show(str(error))
            return
        self.message.show(None)

    # ------------------------------------------------------------------ follow
    def _on_document_event(self, event: ChangeEvent) -> None:
        if self.state.follow(event):
            if event.added or event.removed or event.source == "load":
                self.type_filter.allowed_tags = self.state.op_types()
                self.condition_attribute.options = self.state.attribute_names()
            self._render()
