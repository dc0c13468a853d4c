"""LayerPalette: every operator of the model's imported opsets (ORT contrib ops when their
domain is imported) and its local functions, grouped by category, domain or name and
filterable and sortable (name, category, domain, or how many nodes use it); adding one (Add,
a double-click, or a drag onto the canvas, which places it where it is dropped) places
a new node with a generated unique name and selects it, so the graph view centres on it.
The quick-add box finds an operator by typing (Enter adds the best match)."""

from __future__ import annotations

import warnings
from typing import Any

import ipywidgets as widgets

from nsdl_jupyter._display import html_text
from nsdl_jupyter.document import ChangeEvent, ModelDocument
from nsdl_jupyter.editors import (
    PALETTE_SORTS,
    PaletteEntry,
    PaletteIndex,
    add_operator,
    entry_for_text,
    explain_missing,
    operator_counts,
)
from nsdl_jupyter.widgets.designer._operator_list import OperatorList
from nsdl_jupyter.widgets.designer._tool_window import (
    MessageLine,
    ToolWindow,
    button,
    sort_dropdown,
    style_widget,
)

_GROUPINGS = (("category", "category"), ("domain", "domain"), ("name", "name"))


class LayerPalette(ToolWindow):
    """Operators to add to the model."""

    css_name = "layer-palette"

    def __init__(self, doc: ModelDocument, *, selected: list[str] | None = None) -> None:
        super().__init__(doc)
        self.index = self._index()
        self.current: PaletteEntry | None = None
        self._functions = self._known()
        self.added: list[str] = []
        self._lists: list[OperatorList] = []
        self._binding = False
        self.filter_box = widgets.Text(
            placeholder="filter operators",
            continuous_update=True,
            layout=widgets.Layout(flex="1 1 auto", width="auto", min_width="0"),
        )
        self.filter_box.add_class("nsdl-palette-filter")
        self.group_by = widgets.ToggleButtons(options=list(_GROUPINGS), value="category")
        self.group_by.style.button_width = "84px"
        self.sort = sort_dropdown(PALETTE_SORTS, "nsdl-palette-sort")
        self.groups = widgets.Accordion()
        self.groups.add_class("nsdl-palette-list")
        self.details = widgets.HTML()
        self.add_button = button("Add", "add the chosen operator as a new node")
        self.add_button.add_class("nsdl-palette-add")
        self.link = widgets.Checkbox(
            value=False, description="feed from the selected node", indent=False,
            layout=widgets.Layout(width="auto"),
        )  # fmt: skip
        self.quick_add = widgets.Combobox(
            options=[e.key for e in self.index.entries],
            placeholder="quick add: type an operator, Enter",
            ensure_option=False,
            continuous_update=True,
            layout=widgets.Layout(width="auto", flex="1"),
        )
        self.quick_add.add_class("nsdl-quick-add")
        with warnings.catch_warnings():
            # ipywidgets 8 marks on_submit deprecated, yet it is the only "Enter" event
            warnings.simplefilter("ignore", DeprecationWarning)
            self.quick_add.on_submit(lambda box: self.add_by_text(box.value))
        self.message = MessageLine("nsdl-palette-message")
        # beside the quick-add box (the Designer shows both in its toolbar): a refusal is
        # seen where the user typed, not at the bottom of the Palette tab
        self.quick_message = MessageLine("nsdl-quick-message")
        self.filter_box.observe(lambda _c: self._render_groups(), names="value")
        self.group_by.observe(lambda _c: self._render_groups(), names="value")
        self.sort.observe(lambda _c: self._render_groups(), names="value")
        self.add_button.on_click(lambda _b: self.add_current())
        self.count = widgets.HTML()
        self.children = [
            style_widget(),
            self.quick_add,
            self.quick_message,
            widgets.HBox([self.filter_box]),
            self.group_by,
            self.sort,
            self.count,
            self.groups,
            self.details,
            widgets.HBox([self.add_button, self.link]),
            self.message,
        ]
        self._render_groups()
        if selected:
            self.selected = list(selected)

    def _index(self) -> PaletteIndex:
        return PaletteIndex(self.doc.opset_imports, self.doc.functions.values())

    def _on_document_event(self, event: ChangeEvent) -> None:
        # local functions come and go with plain edits (create, delete, undo): compare keys
        if self.sort.value.key == "count" and (event.added or event.removed):
            self._render_groups()
        if event.metadata or event.source == "load" or self._functions != self._known():
            self._functions = self._known()
            index = self._index()
            if [e.key for e in index.entries] != [e.key for e in self.index.entries]:
                self.index = index
                self.quick_add.options = [e.key for e in index.entries]
                self._render_groups()

    def _known(self) -> frozenset[tuple[str, str, str]]:
        return frozenset(self.doc.functions)

    # ------------------------------------------------------------------ drawing
    def _render_groups(self) -> None:
        order = self.sort.value
        counts = operator_counts(self.doc) if order.key == "count" else None
        groups = self.index.groups(self.group_by.value, self.filter_box.value, order, counts)
        for old in self._lists:
            old.close()
        lists = []
        for _title, entries in groups:
            choice = OperatorList(
                options=[(e.op_type if not e.domain else e.key, e.key) for e in entries],
                rows=min(8, max(2, len(entries))),
                layout=widgets.Layout(width="auto"),
            )
            choice.observe(self._on_choice, names="value")
            lists.append(choice)
        self._lists = lists
        self.groups.children = lists
        for position, (title, entries) in enumerate(groups):
            self.groups.set_title(position, f"{title} ({len(entries)})")
        # a filter that leaves few groups opens the first one
        self.groups.selected_index = 0 if groups and self.filter_box.value.strip() else None
        shown = sum(len(entries) for _, entries in groups)
        self.count.value = f"<span class='nsdl-note'>{shown} of {len(self.index)} operators</span>"

    def _on_choice(self, change: dict[str, Any]) -> None:
        if self._binding or change["new"] is None:
            return
        self._binding = True
        try:
            for other in self._lists:
                if other is not change["owner"]:
                    other.value = None
        finally:
            self._binding = False
        self.choose(change["new"])

    def choose(self, key: str) -> None:
        """Make operator `key` (``Conv``, ``com.microsoft::Attention``) the one Add adds."""
        entry = self.index.get(key)
        if entry is None:
            self.message.show(f"no operator {key!r} in this model's opsets")
            return
        self.current = entry
        self.details.value = (
            f"<b>{html_text(entry.key)}</b> <span class='nsdl-note'>{html_text(entry.category)}"
            f"{'' if entry.function else f' · since opset {entry.since_version}'}</span>"
            "<div class='nsdl-note'>"
            f"{html_text(entry.summary)}</div>"
        )

    # ------------------------------------------------------------------ adding
    def add_current(self) -> str | None:
        if self.current is None:
            self.message.show("choose an operator in the list first")
            return None
        return self.add(self.current.key)

    def add_by_text(self, text: str) -> str | None:
        """The quick-add box: the exact operator, else the best match of the typed text."""
        if not text.strip():
            return None  # Enter on an empty box
        entry, problem = entry_for_text(self.index, text, self.doc.opset_imports)
        if entry is None:
            self.quick_message.show(problem)
            return None
        name = self.add(entry.key, link=True, message=self.quick_message)
        if name is not None:
            self.quick_add.value = ""
        return name

    def add(
        self, key: str, *, link: bool | None = None, message: MessageLine | None = None
    ) -> str | None:
        """Add operator `key` as a new node and select it; returns its name (None on error).

        `link` (default: the "feed from the selected node" box) feeds it from the selected
        node; quick add always does, so a new node arrives connected.
        """
        message = message or self.message
        entry = self.index.get(key)
        if entry is None:
            message.show(
                explain_missing(key, self.doc.opset_imports)
                or f"no operator {key!r} in this model's opsets"
            )
            return None
        linked = self.link.value if link is None else link
        link_from = [n for n in self.selected if n in self.doc.nodes][:1] if linked else []
        name, problem = add_operator(self.doc, entry, link_from=link_from)
        if problem or name is None:
            message.show(problem)
            return None
        self.added.append(name)
        message.show(f"added {name}" + (f" after {link_from[0]}" if link_from else ""), "ok")
        self.selected = [name]
        return name
