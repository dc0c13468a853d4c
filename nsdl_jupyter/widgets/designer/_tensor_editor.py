"""TensorEditor: statistics and a paged grid of a tensor's values.

Only the statistics and the current page reach the browser, never the whole tensor. With an
`on_edit` callback (tensor and list attributes, initializers) the cells are editable: a
changed cell is parsed for the tensor's dtype (numbers only, never evaluated as code) and
gives a new array to the callback, which applies it through the document (one undo step).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ipywidgets as widgets
import numpy as np

from nsdl_jupyter._display import html_text
from nsdl_jupyter.editors import TensorEditError, TensorGrid, as_array, tensor_stats
from nsdl_jupyter.widgets._main_shell import MainShellBox
from nsdl_jupyter.widgets.designer._tool_window import MessageLine, button, style_widget

EditCallback = Callable[[np.ndarray], "str | None"]


class TensorEditor(MainShellBox, widgets.VBox):  # type: ignore[misc]
    """``TensorEditor(value)``: an array, an onnx_ir tensor or an initializer Value."""

    def __init__(
        self,
        source: Any = None,
        *,
        title: str = "",
        on_edit: EditCallback | None = None,
        rows_per_page: int = 12,
        columns_per_page: int = 8,
    ) -> None:
        self._rows_per_page = rows_per_page
        self._columns_per_page = columns_per_page
        self.grid: TensorGrid | None = None
        self._on_edit: EditCallback | None = None
        self._cells: list[widgets.Text] = []
        self._binding = False
        self.title = widgets.HTML()
        self.stats = widgets.HTML()
        self.position = widgets.HTML()
        self.page_html = widgets.HTML()
        self.page_html.add_class("nsdl-tensor-page")
        self.cell_grid = widgets.GridBox()
        self.cell_grid.add_class("nsdl-tensor-cells")
        self.error = MessageLine("nsdl-tensor-error")
        self.up = button("▲", "previous rows", width="30px")
        self.down = button("▼", "next rows", width="30px")
        self.left = button("◀", "previous columns", width="30px")
        self.right = button("▶", "next columns", width="30px")
        self.close_button = button("✕", "close the tensor editor", width="30px")
        for b, delta in (
            (self.up, (-1, 0)),
            (self.down, (1, 0)),
            (self.left, (0, -1)),
            (self.right, (0, 1)),
        ):
            b.on_click(lambda _b, d=delta: self._move(*d))
        self.close_button.on_click(lambda _b: self.clear())
        # large tensors: jump to an element by its index instead of paging there
        self.index_box = widgets.Text(
            placeholder="go to index, e.g. 0, 3",
            continuous_update=False,
            layout=widgets.Layout(flex="1 1 auto", width="auto", min_width="0"),
        )
        self.index_box.add_class("nsdl-tensor-goto")
        self.index_box.observe(lambda c: c["new"].strip() and self.go_to(c["new"]), names="value")
        navigation = widgets.HBox(
            [self.up, self.down, self.left, self.right, self.index_box, self.close_button]
        )
        navigation.add_class("nsdl-tensor-navigation")
        # the one scroll area of the values (the buttons above it stay in view); the values
        # come before the statistics so that a short pane shows them without scrolling
        self.body = widgets.VBox([self.position, self.page_html, self.cell_grid, self.stats])
        self.body.add_class("nsdl-tensor-body")
        super().__init__([style_widget(), self.title, navigation, self.body, self.error])
        self.add_class("nsdl-tool")
        self.add_class("nsdl-tensor-editor")
        if source is None:
            self.clear()
        else:
            self.show(source, title=title, on_edit=on_edit)

    # ------------------------------------------------------------------ public
    def show(
        self,
        source: Any,
        *,
        title: str = "",
        on_edit: EditCallback | None = None,
        keep_position: bool = False,
    ) -> None:
        """Show `source`; `keep_position` stays on the current page (after an edit)."""
        array = as_array(source)
        old = self.grid
        self.grid = TensorGrid(array, self._rows_per_page, self._columns_per_page)
        if keep_position and old is not None:
            self.grid.go(old.row0, old.col0)
        self._on_edit = on_edit
        dtype = getattr(getattr(source, "dtype", None), "name", None)
        stats = tensor_stats(array, dtype.lower() if isinstance(dtype, str) else None)
        self.title.value = f"<b>{html_text(title)}</b>" if title else ""
        rows = "".join(
            f"<tr><td>{html_text(k)}</td><td>{html_text(v)}</td></tr>" for k, v in stats.lines()
        )
        self.stats.value = f'<table class="nsdl-info-table nsdl-tensor-stats">{rows}</table>'
        self.error.show(None)
        self.layout.display = ""
        self._render_page()

    def clear(self) -> None:
        self.grid = None
        self._on_edit = None
        self.layout.display = "none"

    @property
    def editable(self) -> bool:
        return self._on_edit is not None

    def set_cell(self, row: int, column: int, text: str) -> str | None:
        """Edit grid cell (row, column) from literal text; the error message, or None."""
        if self.grid is None or self._on_edit is None:
            return "this tensor is read-only here"
        try:
            edit = self.grid.edit_cell(row, column, text)
        except TensorEditError as error:
            self.error.show(str(error))
            self._render_page()  # the cell shows the value the tensor still holds
            return str(error)
        problem = self._on_edit(edit.array)
        if problem is None and edit.note:
            self.error.show(edit.note, "note")
        else:
            self.error.show(problem)
        return problem

    def go_to(self, text: str) -> str | None:
        """Show the page holding element index `text` (``2, 0, 17``); the error, or None."""
        if self.grid is None:
            return "no tensor is shown"
        try:
            self.grid.find(text)
        except TensorEditError as error:
            self.error.show(str(error))
            return str(error)
        self.error.show(None)
        self._render_page()
        return None

    # ------------------------------------------------------------------ drawing
    def _move(self, rows: int, columns: int) -> None:
        if self.grid is not None:
            self.grid.move(rows, columns)
            self._render_page()

    def _render_page(self) -> None:
        grid = self.grid
        if grid is None:
            return
        page = grid.page()
        self.position.value = f'<span class="nsdl-note">{html_text(page.describe())}</span>'
        down_pages, across_pages = grid.pages
        self.up.disabled = grid.row0 == 0
        self.down.disabled = grid.row0 + grid.rows_per_page >= grid.rows
        self.left.disabled = grid.col0 == 0
        self.right.disabled = grid.col0 + grid.columns_per_page >= grid.columns
        for b in (self.up, self.down):
            b.layout.display = "" if down_pages > 1 else "none"
        for b in (self.left, self.right):
            b.layout.display = "" if across_pages > 1 else "none"
        self.index_box.layout.display = "" if down_pages * across_pages > 1 else "none"
        if self._on_edit is None:
            self.cell_grid.layout.display = "none"
            self.page_html.layout.display = ""
            self.page_html.value = _table_html(page)
            return
        self.page_html.layout.display = "none"
        self.cell_grid.layout.display = ""
        self._render_cells(page)

    def _render_cells(self, page: Any) -> None:
        columns = len(page.column_labels)
        needed = len(page.row_labels) * columns
        while len(self._cells) < needed:
            cell = widgets.Text(continuous_update=False, layout=widgets.Layout(width="auto"))
            cell.add_class("nsdl-mono")
            cell.add_class("nsdl-tensor-cell")
            cell.observe(self._on_cell, names="value")
            self._cells.append(cell)
        children: list[widgets.Widget] = [widgets.HTML("")]
        children += [widgets.HTML(f"<b>{html_text(c)}</b>") for c in page.column_labels]
        self._binding = True
        try:
            index = 0
            for r, label in enumerate(page.row_labels):
                children.append(widgets.HTML(f"<b>{html_text(label)}</b>"))
                for c in range(columns):
                    cell = self._cells[index]
                    cell.value = page.cells[r][c]
                    cell._grid_at = (page.row0 + r, page.col0 + c)
                    children.append(cell)
                    index += 1
        finally:
            self._binding = False
        for old in self.cell_grid.children:
            if isinstance(old, widgets.HTML):
                old.close()
        self.cell_grid.layout.grid_template_columns = f"auto repeat({columns}, minmax(56px, 1fr))"
        self.cell_grid.children = children

    def _on_cell(self, change: dict[str, Any]) -> None:
        if self._binding:
            return
        at = getattr(change["owner"], "_grid_at", None)
        if at is not None:
            self.set_cell(at[0], at[1], change["new"])


def _table_html(page: Any) -> str:
    if not page.row_labels or not page.column_labels:
        return '<span class="nsdl-note">empty tensor</span>'
    head = "".join(f"<th>{html_text(c)}</th>" for c in page.column_labels)
    body = "".join(
        f"<tr><th>{html_text(label)}</th>"
        + "".join(f"<td>{html_text(v)}</td>" for v in row)
        + "</tr>"
        for label, row in zip(page.row_labels, page.cells, strict=True)
    )
    return f'<table class="nsdl-tensor-table"><tr><th></th>{head}</tr>{body}</table>'
