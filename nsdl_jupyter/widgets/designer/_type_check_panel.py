"""TypeCheckPanel: the diagnostics of `doc.check()`, refreshed after edits.

Checks are debounced and, for big models, run in a worker thread (results are applied on
the kernel's event loop). Clicking a diagnostic selects its node; with a GraphView, nodes
with problems carry an error or warning icon in the graph.
"""

from __future__ import annotations

from typing import Any

import ipywidgets as widgets

from nsdl_jupyter._display import html_text, neutralize
from nsdl_jupyter.document import Diagnostic, ModelDocument
from nsdl_jupyter.editors import TypeCheckRunner, diagnostic_label, marks_of, summary_of
from nsdl_jupyter.widgets.designer._tool_window import ToolWindow, button, style_widget


class TypeCheckPanel(ToolWindow):
    """Problems of the model (ONNX checker and strict shape inference), per node."""

    css_name = "type-check-panel"

    def __init__(
        self,
        doc: ModelDocument,
        *,
        graph_view: Any = None,
        selected: list[str] | None = None,
        delay: float = 0.4,
        background_nodes: int | None = None,
    ) -> None:
        super().__init__(doc)
        self.graph_view = graph_view
        self.diagnostics: list[Diagnostic] = []
        self._binding = False
        self.status = widgets.HTML()
        self.status.add_class("nsdl-check-status")
        self.check_button = button("Check now", "run the checks at once")
        self.list = widgets.Select(options=[], rows=5, layout=widgets.Layout(width="auto"))
        self.list.add_class("nsdl-check-list")
        self.list.layout.display = "none"  # shown when there is something to list
        self.list.observe(self._on_choice, names="value")
        self.check_button.on_click(lambda _b: self.check_now())
        self.children = [style_widget(), widgets.HBox([self.status, self.check_button]), self.list]
        options: dict[str, Any] = {"delay": delay, "on_start": self._on_start}
        if background_nodes is not None:
            options["background_nodes"] = background_nodes
        self.runner = TypeCheckRunner(doc, self._on_result, **options)
        if selected:
            self.selected = list(selected)
        if len(doc.graph) < self.runner.background_nodes:
            self.check_now()
        else:
            self._on_start()
            self.runner.schedule()

    def check_now(self) -> list[Diagnostic]:
        """Check at once on this thread and show the result."""
        self._on_start()
        return self.runner.run_now()

    def _on_start(self) -> None:
        self.status.value = "<span class='nsdl-note'>checking…</span>"

    def _on_result(self, diagnostics: list[Diagnostic]) -> None:
        self.diagnostics = list(diagnostics)
        summary = summary_of(self.diagnostics)
        kind = "ok" if not self.diagnostics else "error"
        self.status.value = f"<span class='nsdl-{kind}'>{html_text(summary)}</span>"
        self._binding = True
        try:
            self.list.options = [
                (neutralize(diagnostic_label(d)), i) for i, d in enumerate(self.diagnostics)
            ]
            self.list.value = None
        finally:
            self._binding = False
        self.list.layout.display = "" if self.diagnostics else "none"
        if self.graph_view is not None:
            self.graph_view.set_marks(_known(marks_of(self.diagnostics), self.doc))

    def _on_choice(self, change: dict[str, Any]) -> None:
        if self._binding or change["new"] is None:
            return
        self.go_to(change["new"])

    def go_to(self, index: int | None = None) -> None:
        """Select the node of diagnostic `index` (default: the chosen one)."""
        position = self.list.value if index is None else index
        if not isinstance(position, int) or not 0 <= position < len(self.diagnostics):
            return
        node = self.diagnostics[position].node
        if node is not None and node in self.doc.nodes:
            self.selected = [node]

    def close(self) -> None:
        runner = getattr(self, "runner", None)
        if runner is not None:
            runner.close()
        super().close()


def _known(marks: dict[str, str], doc: ModelDocument) -> dict[str, str]:
    """Marks for nodes that still exist (a check may finish after a removal)."""
    nodes = doc.nodes
    return {name: level for name, level in marks.items() if name in nodes}
