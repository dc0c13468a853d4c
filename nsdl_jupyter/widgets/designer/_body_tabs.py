"""The Designer's canvas tabs: "main" and one per open body (If/Loop/Scan body or local
function), each a workspace of its own document, graph and tool windows.

Opening a body (double click on a node's subgraph mark, the ParameterEditor's open button,
the Local functions window) opens it with `ModelDocument.open_subgraph` or `open_function`
and adds a tab with "Confirm edits" and "Discard". The tab that is shown binds the Designer's
panels: its tool windows take the places of the previous tab's in the Designer's widget tree,
wherever the layout put them. The document a body was opened from refuses edits until the
body is confirmed (one undo step there) or discarded, and its tab says so.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import ipywidgets as widgets
import onnx_ir as ir
import traitlets

from nsdl_jupyter._display import html_text
from nsdl_jupyter.document import BodyDocument, DocumentError, FunctionDocument, ModelDocument
from nsdl_jupyter.widgets.designer._initializer_editor import InitializerEditor
from nsdl_jupyter.widgets.designer._layer_explorer import LayerExplorer
from nsdl_jupyter.widgets.designer._layer_palette import LayerPalette
from nsdl_jupyter.widgets.designer._parameter_editor import ParameterEditor
from nsdl_jupyter.widgets.designer._tool_window import MessageLine, button
from nsdl_jupyter.widgets.designer._type_check_panel import TypeCheckPanel
from nsdl_jupyter.widgets.graph._graph_view import GraphView

if TYPE_CHECKING:
    from nsdl_jupyter.widgets.designer._designer import Designer

SEPARATOR = " \u203a "  # a small right angle quote
OpenBody = BodyDocument | FunctionDocument
LOCKED = " (locked)"  # plain text: an emoji lock renders as a box without an emoji font


@dataclass(eq=False)
class Workspace:
    """One tab: a document, its graph view and the tool windows bound to it."""

    doc: ModelDocument
    title: str  # the tab's name: "main", "If_3 > then_branch", "ƒ local::Block"
    path: str  # where it sits: "main > If_3 > then_branch"
    graph: GraphView
    parameters: ParameterEditor
    initializers: InitializerEditor
    palette: LayerPalette
    explorer: LayerExplorer
    type_check: TypeCheckPanel
    parent: Workspace | None = None
    lock_note: MessageLine = field(default_factory=lambda: MessageLine("nsdl-body-lock"))
    page: widgets.VBox = field(default_factory=widgets.VBox)
    links: list[Any] = field(default_factory=list)
    cleanups: list[Callable[[], None]] = field(default_factory=list)
    child: Workspace | None = None  # the body opened from this one (it is locked meanwhile)
    what: object = None  # what was opened: (node, attribute) or the function's title

    def panels(self) -> tuple[widgets.Widget, ...]:
        """The widgets a tab switch swaps, in a fixed order (the quick-add box sits in the
        Designer's toolbar)."""
        return (
            self.parameters,
            self.initializers,
            self.palette,
            self.palette.quick_add,
            self.palette.quick_message,
            self.explorer,
            self.type_check,
        )

    @property
    def body(self) -> OpenBody | None:
        return self.doc if isinstance(self.doc, BodyDocument | FunctionDocument) else None


class BodyTabs:
    """The tab strip over the Designer's canvas and the workspaces behind it."""

    def __init__(self, designer: Designer) -> None:
        self.designer = designer
        main = Workspace(
            doc=designer.doc,
            title="main",
            path="main",
            graph=designer.graph,
            parameters=designer.parameters,
            initializers=designer.initializers,
            palette=designer.palette,
            explorer=designer.explorer,
            type_check=designer.type_check,
        )
        main.page.children = [main.lock_note, main.graph]
        self._hook(main)
        self.workspaces: list[Workspace] = [main]
        self.active: Workspace = main
        self.tabs = widgets.Tab(children=[main.page])
        self.tabs.set_title(0, "main")
        self.tabs.add_class("nsdl-body-tabs")
        self.tabs.observe(self._on_tab, names="selected_index")

    @property
    def main(self) -> Workspace:
        return self.workspaces[0]

    # ------------------------------------------------------------------ opening
    def open_body(self, where: Workspace, node: str, attribute: str = "") -> Workspace | None:
        """Open graph attribute `attribute` of `node` in `where`'s document ("": its first
        body, or the local function the node calls) in a new tab; None when refused (the
        reason is shown in the Designer's status line)."""
        try:
            target = where.doc.node(node)
        except DocumentError as error:
            return self._refuse(str(error))
        graphs = [n for n, a in target.attributes.items() if a.type == ir.AttributeType.GRAPH]
        if not attribute and not graphs:
            key = (target.domain, target.op_type, target.overload)
            if key in where.doc.functions:
                return self.open_function(target.op_type, target.domain)
            return self._refuse(f"{node} ({target.op_type}) has no body and calls no function")
        # files list attributes alphabetically: an If opens its then_branch first all the same
        attribute = attribute or min(graphs, key=lambda name: name != "then_branch")
        title = f"{node}{SEPARATOR}{attribute}"
        return self._open(
            where, title, lambda: where.doc.open_subgraph(target, attribute), (node, attribute)
        )

    def open_function(self, name: str, domain: str) -> Workspace | None:
        """Open local function `domain::name` in a new tab; functions belong to the model, so
        they open from the main document."""
        where = self.main
        title = f"ƒ {domain}::{name}"
        return self._open(where, title, lambda: where.doc.open_function(name, domain), title)

    def _open(
        self, where: Workspace, title: str, opener: Callable[[], OpenBody], what: object
    ) -> Workspace | None:
        child = where.child
        if child is not None and child.what == what:
            self.show(child)  # already open: go there
            return child
        try:
            body = opener()
        except DocumentError as error:
            return self._refuse(str(error))
        workspace = self._workspace(where, body, title, what)
        where.child = workspace
        self.workspaces.append(workspace)
        self._refresh_tabs()
        self.show(workspace)
        self.designer.status.show(f"opened {workspace.path}: edit, then Confirm edits", "note")
        return workspace

    def _workspace(self, parent: Workspace, body: OpenBody, title: str, what: object) -> Workspace:
        main = self.designer.graph
        graph = GraphView(body, height=int(main.height), show_properties=False)
        graph.direction, graph.show_grid = main.direction, main.show_grid
        type_check = TypeCheckPanel(body, graph_view=graph, delay=self.designer.check_delay)
        workspace = Workspace(
            doc=body,
            title=title,
            path=f"{parent.path}{SEPARATOR}{title}",
            graph=graph,
            parameters=ParameterEditor(body),
            initializers=InitializerEditor(body),
            palette=LayerPalette(body),
            explorer=LayerExplorer(body),
            type_check=type_check,
            parent=parent,
            what=what,
        )
        workspace.initializers.active = True
        for old, new in zip(self.main.panels(), workspace.panels(), strict=True):
            new.layout.max_height, new.layout.overflow = old.layout.max_height, old.layout.overflow
        workspace.links = [
            traitlets.link((graph, "selected"), (tool, "selected"))
            for tool in (
                workspace.parameters,
                workspace.initializers,
                workspace.palette,
                workspace.explorer,
                workspace.type_check,
            )
        ]
        workspace.cleanups.append(body.subscribe(lambda _e: self.designer._sync_toolbar()))
        confirm = button("Confirm edits", "write this body back into its parent (one undo step)")
        confirm.add_class("nsdl-body-confirm")
        confirm.button_style = "primary"
        discard = button("Discard", "close this body and drop its edits")
        discard.add_class("nsdl-body-discard")
        confirm.on_click(lambda _b: self.confirm(workspace))
        discard.on_click(lambda _b: self.discard(workspace))
        kind = "function" if isinstance(body, FunctionDocument) else "body"
        where = widgets.HTML(
            f"<span class='nsdl-note'>{kind}</span> <b>{html_text(workspace.path)}</b>"
        )
        bar = widgets.HBox(
            [where, confirm, discard],
            layout=widgets.Layout(align_items="center", flex_flow="row wrap"),
        )
        bar.add_class("nsdl-body-bar")
        workspace.page.children = [bar, workspace.lock_note, graph]
        self._hook(workspace)
        return workspace

    def _hook(self, workspace: Workspace) -> None:
        """Bodies open from this workspace's graph (double click) and parameter editor."""

        def open_here(node: str, attribute: str) -> None:
            self.open_body(workspace, node, attribute)

        workspace.cleanups.append(workspace.graph.on_open_body(open_here))
        workspace.cleanups.append(workspace.parameters.on_open_body(open_here))

    # ------------------------------------------------------------------ closing
    def confirm(self, workspace: Workspace) -> bool:
        """Write the body back into its parent (one undo step there) and close its tab."""
        return self._finish(workspace, confirm=True)

    def discard(self, workspace: Workspace) -> bool:
        """Close the body's tab and drop its edits."""
        return self._finish(workspace, confirm=False)

    def _finish(self, workspace: Workspace, *, confirm: bool) -> bool:
        body = workspace.body
        if body is None or workspace.parent is None:
            return False
        try:
            if confirm:
                body.confirm()
            else:
                body.discard()
        except DocumentError as error:
            self.designer.status.show(str(error))
            return False
        parent = workspace.parent
        parent.child = None
        self.workspaces.remove(workspace)
        self._refresh_tabs()
        self.show(parent)
        self._close(workspace)
        done = "confirmed: one undo step of" if confirm else "discarded, back to"
        self.designer.status.show(f"{workspace.title} {done} {parent.title}", "ok")
        self.designer._sync_toolbar()
        return True

    def _close(self, workspace: Workspace) -> None:
        for link in workspace.links:
            link.unlink()
        for cleanup in workspace.cleanups:
            cleanup()
        if workspace is not self.main:
            for part in (workspace.graph, *workspace.panels()):
                part.close()

    def close(self) -> None:
        """Discard the bodies still open, innermost first (with the Designer gone nothing could
        confirm them, and the model would stay locked), and close the tabs' widgets (the main
        tab's belong to the Designer)."""
        for workspace in reversed(self.workspaces):
            body = workspace.body
            if body is not None:
                with contextlib.suppress(DocumentError):  # already closed from Python
                    body.discard()
            self._close(workspace)
        self.workspaces = self.workspaces[:1]

    # ------------------------------------------------------------------ showing
    def show(self, workspace: Workspace) -> None:
        self.tabs.selected_index = self.workspaces.index(workspace)
        self._bind(workspace)  # also when the index did not change (a tab closed before it)

    def _on_tab(self, change: dict[str, Any]) -> None:
        index = change["new"]
        if index is not None and 0 <= index < len(self.workspaces):
            self._bind(self.workspaces[index])

    def _bind(self, workspace: Workspace) -> None:
        """Put `workspace`'s tool windows where the shown ones are."""
        previous = self.active
        if previous is workspace:
            return
        for old, new in zip(previous.panels(), workspace.panels(), strict=True):
            replace_widget(self.designer, old, new)
        self.active = workspace
        self.designer._sync_toolbar()

    def _refresh_tabs(self) -> None:
        self.tabs.children = [w.page for w in self.workspaces]
        for index, workspace in enumerate(self.workspaces):
            child = workspace.child
            locked = child is not None
            self.tabs.set_title(index, workspace.title + (LOCKED if locked else ""))
            workspace.lock_note.show(
                f"locked while {child.path} is open: Confirm edits or Discard it there"
                if child is not None
                else None,
                "note",
            )

    def _refuse(self, message: str) -> Workspace | None:
        """Show why nothing opened; None, for the caller to return."""
        self.designer.status.show(message)
        return None


def replace_widget(root: widgets.Widget, old: widgets.Widget, new: widgets.Widget) -> bool:
    """Put `new` where `old` is in the widget tree under `root` (boxes, tabs, accordions);
    False when `old` is not in it."""
    for box in _boxes(root):
        children = list(box.children)
        if any(child is old for child in children):
            box.children = [new if child is old else child for child in children]
            return True
    return False


def _boxes(root: widgets.Widget) -> Iterator[widgets.Box]:
    if isinstance(root, widgets.Box):
        yield root
        for child in root.children:
            yield from _boxes(child)
