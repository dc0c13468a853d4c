"""Designer: the default workspace in one widget: the graph in the centre, the palette and
layer explorer on the left, the parameter and initializer editors on the right, type
checking below, and a toolbar (save, save as, undo, redo, arrange, grid, export image, and
the whole-model actions: Profile Model, Export TensorRT Engine, Global Modifications, each
opened in a tab of the right pane).

Selection flows from the GraphView to every tool window and back (a tool window that picks
a node selects it in the graph, which brings it into view). Ctrl+Z / Ctrl+Y / Ctrl+S act on
the model while the focus is inside the Designer; "/" jumps to the quick-add box.
The canvas has tabs: "main" and one per open body or local function (`_body_tabs`), whose
tool windows take the panels' places while its tab is shown.
"""

from __future__ import annotations

import concurrent.futures
import itertools
import os
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import ipywidgets as widgets
import traitlets

from nsdl_jupyter._display import html_text
from nsdl_jupyter._errors import ArgumentError, OutputPathError
from nsdl_jupyter._static_export import StaticPictureMixin
from nsdl_jupyter.document import (
    ChangeEvent,
    DocumentError,
    ModelDocument,
    SavedWithErrorsWarning,
    open_model,
)
from nsdl_jupyter.transforms import TransformError
from nsdl_jupyter.widgets._errors import WidgetError
from nsdl_jupyter.widgets._main_shell import MainShellBox
from nsdl_jupyter.widgets._messages import Activate, Key, QuickAdd, ResizePane
from nsdl_jupyter.widgets._options import DesignerOptions, check_options
from nsdl_jupyter.widgets.designer._body_tabs import BodyTabs
from nsdl_jupyter.widgets.designer._functions_window import FunctionsWindow
from nsdl_jupyter.widgets.designer._initializer_editor import InitializerEditor
from nsdl_jupyter.widgets.designer._keys import DesignerKeys
from nsdl_jupyter.widgets.designer._layer_explorer import LayerExplorer
from nsdl_jupyter.widgets.designer._layer_palette import LayerPalette
from nsdl_jupyter.widgets.designer._parameter_editor import ParameterEditor
from nsdl_jupyter.widgets.designer._profile_dock import STYLE as DOCK_STYLE
from nsdl_jupyter.widgets.designer._profile_dock import ProfileDock
from nsdl_jupyter.widgets.designer._side_pane import STYLE as PANE_STYLE
from nsdl_jupyter.widgets.designer._side_pane import Side, SidePane
from nsdl_jupyter.widgets.designer._tool_window import (
    MessageLine,
    ToolWindow,
    button,
    icon_button,
    style_widget,
)
from nsdl_jupyter.widgets.designer._trt_profile_form import OptimizationProfileForm
from nsdl_jupyter.widgets.designer._type_check_panel import TypeCheckPanel
from nsdl_jupyter.widgets.graph._canvas_edit import extract_nodes
from nsdl_jupyter.widgets.graph._graph_view import GraphView

if TYPE_CHECKING:
    from typing_extensions import Unpack  # typing.Unpack from Python 3.11

    from nsdl_jupyter.widgets.designer._global_modifications import GlobalModifications
    from nsdl_jupyter.widgets.profile._activity_panel import ActivityPanel

_serial = itertools.count(1)
_Panel = TypeVar("_Panel")


class Designer(StaticPictureMixin, MainShellBox, widgets.VBox):  # type: ignore[misc]
    """``Designer(doc)``: edit a model with the graph and all tool windows around it."""

    def __init__(
        self, doc: ModelDocument | str | os.PathLike[str], **options: Unpack[DesignerOptions]
    ) -> None:
        check_options("Designer", options, DesignerOptions)
        if isinstance(doc, str | os.PathLike):
            doc = open_model(doc)
        if not isinstance(doc, ModelDocument):
            raise ArgumentError(
                "Designer() needs a ModelDocument (nsdl_jupyter.open_model(path)) or a path to "
                f"an .onnx file, got {type(doc).__name__}"
            )
        self.doc = doc
        height = options.get("height", 620)
        # the Designer's own Parameters pane shows the selection; its pane opens on request
        self.graph = GraphView(doc, height=height, show_properties=False)
        self.parameters = ParameterEditor(doc)
        self.initializers = InitializerEditor(doc)
        self.palette = LayerPalette(doc)
        self.explorer = LayerExplorer(doc)
        self.trt_profiles = OptimizationProfileForm(doc)
        self.check_delay = options.get("check_delay", 0.4)
        self.type_check = TypeCheckPanel(doc, graph_view=self.graph, delay=self.check_delay)
        self.functions = FunctionsWindow(doc)
        self.tools: tuple[ToolWindow, ...] = (
            self.parameters,
            self.initializers,
            self.palette,
            self.explorer,
            self.type_check,
            self.trt_profiles,
            self.functions,
        )
        self._links = [
            traitlets.link((self.graph, "selected"), (tool, "selected")) for tool in self.tools
        ]
        self.exports: list[concurrent.futures.Future[Path]] = []
        self._build_toolbar()
        self.root_class = f"nsdl-designer-{next(_serial)}"
        self.shortcuts = DesignerKeys(
            self.root_class,
            {
                "key": self._on_key,
                "quick_add": self._on_quick_add,
                "activate": self._on_activate,
                "resize_pane": self._on_resize_pane,
            },
        )
        self.shortcuts.layout.display = "none"
        self.left = SidePane("left", [("Palette", self.palette), ("Layers", self.explorer)])
        self.right = SidePane(
            "right",
            [
                ("Parameters", self.parameters),
                ("Initializers", self.initializers),
                ("TensorRT", self.trt_profiles),
            ],
        )
        self.left.add("Functions", self.functions)
        self.initializers.active = False
        self.right.tabs.observe(self._on_right_tab, names="selected_index")
        self.bodies = BodyTabs(self)
        self.functions.on_open(self.bodies.open_function)
        self.activity: ActivityPanel | None = None  # the profile shown (tab or dock)
        self.dock = ProfileDock()  # "Profile from here": below the canvas, the whole width
        self.modifications: GlobalModifications | None = None  # the Modify tab
        self._remove_profile = self.graph.on_profile(self.profile_from)
        body = widgets.HBox([self.left, self.bodies.tabs, self.right])
        body.add_class("nsdl-designer-body")
        super().__init__(
            [
                style_widget(),
                widgets.HTML(
                    PANE_STYLE + f"<style>{DOCK_STYLE}</style>",
                    layout=widgets.Layout(display="none"),
                ),
                self.toolbar,
                self.status,
                self.palette.quick_message,
                body,
                self.dock,
                self.type_check,
                self.shortcuts,
            ],
            layout=widgets.Layout(width="100%"),
        )
        self.add_class("nsdl-designer")
        self.add_class(self.root_class)
        self._unsubscribe: Callable[[], None] | None = doc.subscribe(self._on_document_event)
        self._sync_toolbar()
        if selected := options.get("selected"):
            self.graph.selected = list(selected)

    # ------------------------------------------------------------------ toolbar
    def _build_toolbar(self) -> None:
        """One row: icon buttons (their tooltips name them), the path box and quick add shrink."""
        self.save_button = icon_button("Save", "save the model (Ctrl+S)", "save")
        self.save_as_path = widgets.Text(placeholder="path for save as / export")
        self.save_as_path.add_class("nsdl-save-path")
        self.save_as_button = button("Save as", "save the model to the path")
        self.undo_button = icon_button("Undo", "undo (Ctrl+Z)", "undo")
        self.redo_button = icon_button("Redo", "redo (Ctrl+Y)", "repeat")
        self.arrange_button = icon_button("Arrange", "recompute the layout", "sitemap")
        self.grid_toggle = widgets.ToggleButton(
            value=self.graph.show_grid, icon="th", tooltip="Grid: show the layout grid"
        )
        self.grid_toggle.add_class("nsdl-icon-button")
        self.export_button = icon_button(
            "Export image", "write the canvas as PNG, JPEG or SVG to the path", "image"
        )
        self.profile_button = icon_button(
            "Profile Model", "profile the whole model with ONNX Runtime or TensorRT", "tachometer"
        )
        self.engine_button = icon_button(
            "Export TensorRT Engine", "build a TensorRT engine of the model", "cogs"
        )
        self.modify_button = icon_button(
            "Global Modifications", "FP16, sanitize, opset, tensor dtype, user tools", "magic"
        )
        for part, css in (
            (self.save_button, "save"),
            (self.save_as_button, "save-as"),
            (self.undo_button, "undo"),
            (self.redo_button, "redo"),
            (self.arrange_button, "arrange"),
            (self.grid_toggle, "grid"),
            (self.export_button, "export"),
            (self.profile_button, "profile-model"),
            (self.engine_button, "export-engine"),
            (self.modify_button, "modify"),
        ):
            part.add_class(f"nsdl-tb-{css}")
        widgets.link((self.grid_toggle, "value"), (self.graph, "show_grid"))
        self.save_button.on_click(lambda _b: self.save())
        self.save_as_button.on_click(lambda _b: self.save(self.save_as_path.value))
        self.undo_button.on_click(lambda _b: self.undo())
        self.redo_button.on_click(lambda _b: self.redo())
        self.arrange_button.on_click(lambda _b: self.bodies.active.graph.arrange())
        self.export_button.on_click(lambda _b: self.export_image(self.save_as_path.value))
        self.profile_button.on_click(lambda _b: self.profile_model())
        self.engine_button.on_click(lambda _b: self.export_engine())
        self.modify_button.on_click(lambda _b: self.global_modifications())
        self.status = MessageLine("nsdl-designer-status")
        self.dirty_label = widgets.HTML()
        self.dirty_label.add_class("nsdl-dirty")
        self.toolbar = widgets.HBox(
            [
                self.save_button,
                self.save_as_path,
                self.save_as_button,
                self.undo_button,
                self.redo_button,
                self.arrange_button,
                self.grid_toggle,
                self.export_button,
                self.profile_button,
                self.engine_button,
                self.modify_button,
                self.palette.quick_add,
                self.dirty_label,
            ],
            layout=widgets.Layout(align_items="center"),
        )
        self.toolbar.add_class("nsdl-designer-toolbar")

    @property
    def active_doc(self) -> ModelDocument:
        """The document of the tab shown: the model, or a body open for editing."""
        bodies = getattr(self, "bodies", None)
        return self.doc if bodies is None else bodies.active.doc

    def _sync_toolbar(self) -> None:
        doc = self.active_doc
        self.undo_button.disabled = not doc.can_undo
        self.redo_button.disabled = not doc.can_redo
        self.undo_button.tooltip = (
            f"Undo {doc.undo_description} (Ctrl+Z)" if doc.can_undo else "Undo: nothing to undo"
        )
        self.redo_button.tooltip = (
            f"Redo {doc.redo_description} (Ctrl+Y)" if doc.can_redo else "Redo: nothing to redo"
        )
        where = html_text(self.doc.path.name) if self.doc.path else "unsaved model"
        mark = " <b title='unsaved changes'>●</b>" if self.doc.dirty else ""
        self.dirty_label.value = f"<span class='nsdl-note'>{where}</span>{mark}"

    def _on_document_event(self, _event: ChangeEvent) -> None:
        self._sync_toolbar()

    def _on_right_tab(self, change: dict[str, Any]) -> None:
        self.initializers.active = self.right.tabs.children[change["new"]] is self.initializers

    def _on_resize_pane(self, payload: ResizePane) -> None:
        (self.left if payload["pane"] == "left" else self.right).resized(payload["width"])

    def add_tool(self, title: str, tool: ToolWindow, side: Side = "left") -> None:
        """Add `tool` as a tab of the `side` pane, its selection linked to the graph's."""
        self.tools = (*self.tools, tool)
        self._links.append(traitlets.link((self.graph, "selected"), (tool, "selected")))
        (self.left if side == "left" else self.right).add(title, tool)

    # ------------------------------------------------------------------ actions
    def save(self, path: str | os.PathLike[str] | None = None) -> Path | None:
        """Save (to `path` when given: save as); the path written, None on error (shown)."""
        target = str(path).strip() if path is not None else ""
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", SavedWithErrorsWarning)
                written = self.doc.save(target or None)
        except (DocumentError, OutputPathError, OSError) as error:
            message = str(error)
            if self.doc.path is None and not target:
                message += ": type a path next to Save as"
            self.status.show(message)
            return None
        finally:
            for other in caught:  # the companion's warnings still reach the notebook
                if not issubclass(other.category, SavedWithErrorsWarning):
                    warnings.warn_explicit(
                        other.message, other.category, other.filename, other.lineno
                    )
        flagged = [w for w in caught if issubclass(w.category, SavedWithErrorsWarning)]
        if flagged:  # saved, and said as loudly as an error: the Type Check panel has them
            self.status.show(str(flagged[0].message))
        else:
            self.status.show(f"saved {written}", "ok")
        self._sync_toolbar()
        return written

    def undo(self) -> bool:
        try:
            done = self.active_doc.undo()
        except DocumentError as error:  # a body of this document is open
            self.status.show(str(error))
            return False
        self.status.show(None if done else "nothing to undo", "note")
        return done

    def redo(self) -> bool:
        try:
            done = self.active_doc.redo()
        except DocumentError as error:
            self.status.show(str(error))
            return False
        self.status.show(None if done else "nothing to redo", "note")
        return done

    def export_image(self, path: str | os.PathLike[str]) -> concurrent.futures.Future[Path] | None:
        """Write the graph canvas to `path` (.png, .jpg or .svg).

        PNG and JPEG are rendered by the browser: the returned Future completes when they arrive.
        """
        target = str(path).strip()
        if not target:
            self.status.show("type the image path (.png, .jpg or .svg) next to Save as first")
            return None
        try:
            future = self.graph.export_image(target)
        except ValueError as error:
            self.status.show(str(error))
            return None
        self.exports.append(future)
        self.status.show(f"exporting {target}…", "note")
        future.add_done_callback(self._export_done)
        return future

    def _export_done(self, future: concurrent.futures.Future[Path]) -> None:
        error = future.exception()
        if error is not None:
            self.status.show(f"export failed: {error}")
        else:
            self.status.show(f"image written to {future.result()}", "ok")

    def _on_key(self, payload: Key) -> None:
        if payload["action"] == "undo":
            self.undo()
        elif payload["action"] == "redo":
            self.redo()
        else:
            self.save()

    def _on_quick_add(self, payload: QuickAdd) -> None:
        self.bodies.active.palette.add_by_text(payload["text"])

    def _on_activate(self, payload: Activate) -> None:
        # the double-clicked option comes with the message (see js/src/designer_keys)
        index = payload["index"]
        position = index if index >= 0 else None
        shown = self.bodies.active
        if payload["target"] == "explorer":
            shown.explorer.activate(position)
        elif payload["target"] == "type_check":
            shown.type_check.go_to(position)
        elif payload["target"] == "parameters":
            shown.parameters.open_body(payload["label"])
        elif payload["label"].strip():
            shown.palette.add(payload["label"].strip())
        else:
            shown.palette.add_current()

    def profile_from(self, nodes: list[str]) -> ActivityPanel | None:
        """The canvas menu's "Profile from here": the model from `nodes` on, written beside
        this one, profiled with ONNX Runtime in the Profile dock below the canvas; its per-node
        times colour this canvas. None when the extraction is refused (the status says why)."""
        from nsdl_jupyter.profiling import OrtProfileSettings
        from nsdl_jupyter.widgets.profile._activity_panel import (
            ActivityPanel,  # imports pandas: late
        )

        # the part's cut dims that no inference tells are measured at the profile's sizes
        settings = OrtProfileSettings()
        try:
            path, count = extract_nodes(
                self.doc, nodes, downstream=True, dim_sizes=settings.dim_sizes
            )
        except (DocumentError, TransformError, WidgetError) as error:
            self.status.show(str(error))
            return None
        panel = self._show_profile(
            ActivityPanel(path, graph_view=self.graph, settings=settings),
            dock=f"Profile from {nodes[0]}",
        )
        self.status.show(f"profiling {count} nodes from {nodes[0]} ({path.name})", "note")
        panel.run()
        return panel

    def profile_model(self, framework: str = "ort") -> ActivityPanel:
        """Profile Model: the whole model in the Profile tab, on `framework` ("ort" or
        "tensorrt": passes, prebuilt engine, clocks), ready to run (its Profile button)."""
        from nsdl_jupyter.widgets.profile._activity_panel import ActivityPanel

        panel = self.activity
        if panel is None or panel.model is not self.doc or panel.status == "running":
            panel = ActivityPanel(self.doc, graph_view=self.graph, framework=framework)
        panel.framework = framework
        return self._show_profile(panel)

    def export_engine(self) -> ActivityPanel:
        """Export TensorRT Engine: the Profile tab on TensorRT (builder settings, engine path,
        Export with progress and cancel; the result names the file, its size, the build time)."""
        return self.profile_model("tensorrt")

    def global_modifications(self) -> GlobalModifications:
        """The Global Modifications dialog in the Modify tab (FP16, sanitize, opset, tensor
        dtype, user tools; one undo step each)."""
        from nsdl_jupyter.widgets.designer._global_modifications import GlobalModifications

        if self.modifications is None:
            self.modifications = GlobalModifications(self.doc)
        return self._show_in_right("Modify", self.modifications)

    def _show_profile(self, panel: ActivityPanel, dock: str | None = None) -> ActivityPanel:
        """Show `panel` in place of the profile shown before: in the Profile dock below the
        canvas titled `dock` (Profile from here), else in the right pane's Profile tab."""
        tabs = self.right.tabs
        former = self.activity
        if former is not None and former is not panel:
            former.close()
            if self.dock.content is former:
                self.dock.hide()
            if former in tabs.children:
                index = tabs.children.index(former)
                rest = () if dock else (panel,)  # replaced in place, or its tab goes
                tabs.children = (*tabs.children[:index], *rest, *tabs.children[index + 1 :])
                if not dock:
                    tabs.set_title(index, "Profile")
        self.activity = panel
        if dock:
            self.dock.show(panel, dock)
            return panel
        return self._show_in_right("Profile", panel)

    def _show_in_right(self, title: str, panel: _Panel) -> _Panel:
        """Select `panel`'s tab of the right pane (added as `title` if new), expanded."""
        tabs = self.right.tabs
        if panel in tabs.children:
            index = tabs.children.index(panel)
        else:
            index = self.right.add(title, panel)
        tabs.selected_index = index
        self.right.expanded = True
        return panel

    def close(self) -> None:
        remove = getattr(self, "_remove_profile", None)
        if remove is not None:
            remove()
        unsubscribe = getattr(self, "_unsubscribe", None)
        if unsubscribe is not None:
            unsubscribe()
            self._unsubscribe = None
        for link in getattr(self, "_links", []):
            link.unlink()
        self._links = []
        bodies = getattr(self, "bodies", None)
        if bodies is not None:
            bodies.close()
        for part in (
            *getattr(self, "tools", ()),
            getattr(self, "graph", None),
            getattr(self, "shortcuts", None),
            getattr(self, "activity", None),
            getattr(self, "modifications", None),
        ):
            if part is not None:
                part.close()
        super().close()
