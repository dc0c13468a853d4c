"""GraphView: the interactive model canvas (one anywidget for the whole graph).

The topology crosses the wire once as binary columns; positions are computed in Python
(`nsdl_jupyter.graph`); expanding a group is a request answered by a new layout of the visible
boxes; a document edit becomes a small patch. The browser side is js/src/graph_view/.
"""

from __future__ import annotations

import concurrent.futures
import os
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

import anywidget
import numpy as np
import onnx
import onnx_ir as ir
import traitlets

from nsdl_jupyter._atomic import atomic_write_bytes
from nsdl_jupyter._errors import ArgumentError
from nsdl_jupyter._gc import gc_paused
from nsdl_jupyter._output_guard import guard_output, starts_with
from nsdl_jupyter._static_export import (
    GraphViewState,
    StaticPictureMixin,
    graph_view_html,
    overlay_of,
    track_static_picture,
)
from nsdl_jupyter.document import ModelDocument, UnknownNodeError
from nsdl_jupyter.graph import (
    COLORMAPS,
    EditSummary,
    GraphScene,
    GraphSkeleton,
    GroupProperties,
    NeedsRebuild,
    NodeProperties,
    Properties,
    TensorProperties,
    TensorStats,
    scene_svg,
)
from nsdl_jupyter.widgets._bundles import bundle
from nsdl_jupyter.widgets._errors import WidgetError, WidgetLookupError
from nsdl_jupyter.widgets._messages import (
    GRAPH_VIEW,
    Empty,
    ExportImage,
    GroupRef,
    Groups,
    ItemRef,
    Items,
    LayoutAnswer,
    OpenBody,
    TensorName,
    TensorRef,
)
from nsdl_jupyter.widgets._options import GraphViewOptions, check_options
from nsdl_jupyter.widgets._protocol import Endpoint, Reply, WidgetRequestError
from nsdl_jupyter.widgets.graph._canvas_edit import CanvasEdits
from nsdl_jupyter.widgets.graph._precision_badges import (
    precision_badges,
    precision_choices,
)

if TYPE_CHECKING:
    from typing_extensions import Unpack  # typing.Unpack from Python 3.11

_MAX_PATCHES = 64


@runtime_checkable
class _DocumentLike(Protocol):
    """What GraphView needs of nsdl_jupyter.document.ModelDocument."""

    @property
    def graph(self) -> ir.Graph: ...

    def subscribe(self, listener: Callable[[Any], None]) -> Callable[[], None]: ...


# how an earlier export of each format starts (it is replaced without overwrite=True)
_IMAGE_MAGIC = {"svg": (b"<svg", b"<?xml"), "png": (b"\x89PNG",), "jpeg": (b"\xff\xd8",)}


class GraphView(StaticPictureMixin, anywidget.AnyWidget):  # type: ignore[misc]
    """Draws a model's graph in a notebook and stays bound to its document.

    ``GraphView(doc)`` takes a ModelDocument (edits made through ``doc`` appear in place), or a
    read-only onnx_ir Model/Graph/Function, an onnx ModelProto, or a path to an .onnx file.
    """

    _esm = bundle("graph_view")

    _topology = traitlets.Bytes(b"").tag(sync=True)
    _layout = traitlets.Bytes(b"").tag(sync=True)
    # every tensor's type and shape after shape inference (GraphScene.shapes_bytes)
    _shapes = traitlets.Bytes(b"").tag(sync=True)
    _edits = traitlets.List(traitlets.Dict()).tag(sync=True)
    selected = traitlets.List(traitlets.Unicode()).tag(sync=True)
    direction = traitlets.Enum(("LR", "TB"), default_value="TB").tag(sync=True)
    show_constants = traitlets.Bool(False).tag(sync=True)
    show_grid = traitlets.Bool(False).tag(sync=True)
    _marks = traitlets.Dict().tag(sync=True)
    _overlay = traitlets.Dict().tag(sync=True)
    _overlay_values = traitlets.Bytes(b"").tag(sync=True)
    _precisions = traitlets.Dict().tag(sync=True)  # node -> TensorRT precision (badges)
    _precision_choices = traitlets.List(traitlets.Unicode()).tag(sync=True)
    height = traitlets.Int(560).tag(sync=True)
    # the canvas's height in CSS px as the browser drew it (0 before): the bands of a module
    # outline fill it, so a taller view gets longer columns
    _canvas_height = traitlets.Int(0).tag(sync=True)
    # the properties pane beside the canvas (what a click selected); False hides it
    show_properties = traitlets.Bool(True).tag(sync=True)
    # edit gestures on the canvas: on when the view shows an open document, off for a file
    _editable = traitlets.Bool(False).tag(sync=True)
    # SVG picture of the last state, redrawn after each cell that changed the view: the widget
    # state a notebook saves then carries it into static HTML exports (nsdl_jupyter.nbconvert)
    _static_html = traitlets.Unicode("").tag(sync=True)

    def __init__(self, source: Any, **options: Unpack[GraphViewOptions]) -> None:
        check_options("GraphView", options, GraphViewOptions)
        self._doc: _DocumentLike | None = None
        self._from_file = False
        graph, functions = self._resolve(source)
        editable = isinstance(self._doc, ModelDocument) and not self._from_file
        self._canvas = CanvasEdits(
            self._doc if isinstance(self._doc, ModelDocument) and editable else None,
            lambda: list(self.selected),
        )
        companion = self._companion()
        positions = dict(companion.get("positions") or {})
        collapsed = companion.get("collapsed")
        # no collector pass over the whole model before the first drawing (0.6 s at 100,000
        # nodes): what the scene and its buffers make is long-lived or freed by refcount
        with gc_paused():
            self._scene = GraphScene(
                graph,
                functions=functions,
                positions=positions,
                collapsed=collapsed if isinstance(collapsed, list) else None,
            )
            self._scene.direction = options.pop("direction", "TB")
            self._scene.show_constants = bool(options.pop("show_constants", False))
            if self._scene.set_canvas_height(options.get("height", 560), widget=True):
                first = self._scene.default_expanded()  # also: which modules open in bands
                if not isinstance(collapsed, list):
                    self._scene.expanded = first
            self._scene.engine.placed = self._canvas.moved
            topology, layout = self._scene.topology_bytes(), self._scene.layout_bytes()
        self._properties = Properties(self._scene)
        self._scene.types.listener = self._on_types_inferred
        self._unsubscribe: Callable[[], None] | None = None
        self._syncing = False
        self._body_callbacks: list[Callable[[str, str], None]] = []
        super().__init__(
            _topology=topology,
            _layout=layout,
            direction=self._scene.direction,
            show_constants=self._scene.show_constants,
            _precisions=precision_badges(self._doc),
            _precision_choices=precision_choices(self._doc),
            _editable=editable,
            **options,
        )
        self._save_companion()
        self._channel = Endpoint(
            self,
            GRAPH_VIEW,
            {
                "expand": self._on_expand,
                "collapse": self._on_collapse,
                "expand_all": self._on_expand_all,
                "collapse_all": self._on_collapse_all,
                "reveal": self._on_reveal,
                "arrange": self._on_arrange,
                "tensor_shapes": self._on_tensor_shapes,
                "node_properties": self._on_node_properties,
                "tensor_properties": self._on_tensor_properties,
                "group_properties": self._on_group_properties,
                "tensor_stats": self._on_tensor_stats,
                "open_body": self._on_open_body,
                **self._canvas.handlers(),
            },
        )
        self.observe(self._on_view_option, names=["direction", "show_constants"])
        self.observe(self._on_canvas_height, names=["_canvas_height"])
        track_static_picture(self, lambda: graph_view_html(self.picture_state()))
        if self._doc is not None:
            self._unsubscribe = self._doc.subscribe(self._on_change)

    def picture_state(self) -> GraphViewState:
        """What the view shows now, for its static picture (HTML export without JavaScript)."""
        return GraphViewState(
            scene=self._scene,
            selected=tuple(self.selected),
            marks=dict(self._marks),
            overlay=dict(self._overlay),
            overlay_values=bytes(self._overlay_values),
            show_grid=bool(self.show_grid),
            height=int(self.height),
            precisions=dict(self._precisions),
        )

    # ------------------------------------------------------------------ sources
    def _resolve(
        self, source: Any
    ) -> tuple[ir.Graph | ir.Function | GraphSkeleton, list[tuple[str, str, str]]]:
        if isinstance(source, (str, os.PathLike)):
            from nsdl_jupyter.document import open_model

            source = open_model(source)
            self._from_file = True  # nobody else holds this document: a read-only view
        if isinstance(source, onnx.ModelProto):
            source = ir.from_proto(source)
        if isinstance(source, ir.Model):
            return source.graph, list(source.functions)
        if isinstance(source, (ir.Graph, ir.Function)):
            return source, []
        # before the protocol check, which reads `graph` (it would build an unbuilt model)
        skeleton = self._skeleton(source) if isinstance(source, ModelDocument) else None
        if skeleton is not None:
            self._doc = source
            return skeleton, skeleton.function_keys
        if isinstance(source, _DocumentLike):
            self._doc = source
            # a body's document lists the model's functions, which its own model lacks
            return source.graph, list(getattr(source, "functions", None) or [])
        raise ArgumentError(
            f"GraphView() cannot show a {type(source).__name__}: pass a ModelDocument "
            "(nsdl_jupyter.open_model(path)), an onnx_ir Model or Graph, an onnx ModelProto "
            "or a path"
        )

    def _skeleton(self, doc: ModelDocument) -> GraphSkeleton | None:
        """A big file opened without its onnx_ir model draws from its protobuf; the scene is
        bound to the model when the document builds it (an edit, a pane that reads it)."""
        proto = doc.unbuilt_model()
        skeleton = GraphSkeleton.of(proto, build=lambda: doc.graph) if proto is not None else None
        if skeleton is not None:
            doc.on_built(lambda model: self._scene.bind(model.graph))
        return skeleton

    def _companion(self) -> Mapping[str, Any]:
        companion = getattr(self._doc, "companion", None)
        return companion if isinstance(companion, Mapping) else {}

    def _save_companion(self) -> None:
        update = getattr(self._doc, "update_companion", None)
        if update is None:
            return
        update("positions", dict(self._scene.positions))
        update("collapsed", self._scene.collapsed_keys)

    # ------------------------------------------------------------------ layout
    def _relayout(self) -> None:
        self._scene.engine.placed = self._canvas.moved
        self._layout = self._scene.layout_bytes()
        self._save_companion()

    def _on_view_option(self, change: dict[str, Any]) -> None:
        if change["name"] == "direction":
            self._scene.direction = change["new"]
        else:
            self._scene.show_constants = bool(change["new"])
        self._relayout()

    def _on_canvas_height(self, change: dict[str, Any]) -> None:
        # a new room always comes with its layout (the same cut or not): the view fits anew
        # only on a layout whose room differs from the one it drew
        if self._scene.set_canvas_height(int(change["new"])):
            self._layout = self._scene.layout_bytes()

    def expand(self, *groups: str) -> None:
        """Expand groups by key (``"/encoder/layer.0"``); no argument: expand all."""
        if groups:
            self._scene.expand(self._group_indexes(groups))
        else:
            self._scene.expand_all()
        self._relayout()

    def collapse(self, *groups: str) -> None:
        """Collapse groups by key; no argument: collapse all."""
        if groups:
            self._scene.collapse(self._group_indexes(groups))
        else:
            self._scene.collapse_all()
        self._relayout()

    def _group_indexes(self, keys: tuple[str, ...]) -> list[int]:
        by_key = self._scene.hierarchy.by_key()
        missing = [k for k in keys if k not in by_key]
        if missing:
            sample = ", ".join(repr(k) for k in list(by_key)[1:6])
            raise WidgetLookupError(
                f"no group {missing[0]!r}; groups are keyed by name scope, e.g. {sample}"
            )
        return [by_key[k] for k in keys]

    @property
    def groups(self) -> dict[str, bool]:
        """Every group key and whether it is expanded."""
        return {
            g.key: i in self._scene.expanded
            for i, g in enumerate(self._scene.hierarchy.groups)
            if i
        }

    def arrange(self) -> None:
        """Recompute the layout from scratch (forgets stored positions and, as one undo step
        of the document, where boxes were dragged)."""
        self._scene.arrange()
        self._canvas.forget_moves()
        self._relayout()

    def fit(self) -> None:
        """Fit the drawing to the view in every open view of this widget."""
        self._channel.notify("fit", {})

    # ------------------------------------------------------------------ selection
    @traitlets.validate("selected")
    def _validate_selected(self, proposal: dict[str, Any]) -> list[str]:
        names = list(proposal["value"])
        by_key = self._scene.table.by_key
        unknown = [
            n for n in names if n not in by_key or not self._scene.table.items[by_key[n]].is_node
        ]
        if unknown:
            raise traitlets.TraitError(
                f"no node named {unknown[0]!r} in this graph; select names from doc.nodes"
            )
        return names

    @traitlets.observe("selected")
    def _on_selected(self, change: dict[str, Any]) -> None:
        if self._syncing:
            return
        by_key = self._scene.table.by_key
        if self._scene.reveal(by_key[n] for n in change["new"]):
            self._relayout()

    # ------------------------------------------------------------------ overlays
    def set_marks(self, marks: Mapping[str, str]) -> None:
        """Problem icons on nodes: ``{node_name: "error" | "warning"}`` (replaces previous)."""
        bad = {k: v for k, v in marks.items() if v not in ("error", "warning")}
        if bad:
            name, level = next(iter(bad.items()))
            raise WidgetError(f"mark {level!r} for {name!r}: use 'error' or 'warning'")
        self._marks = dict(marks)

    def set_overlay(
        self,
        values: Mapping[str, float],
        *,
        label: str = "",
        colormap: str = "viridis",
        vmin: float | None = None,
        vmax: float | None = None,
    ) -> None:
        """Colour nodes by a per-node value (e.g. profiled time) with a legend."""
        if colormap not in COLORMAPS:
            raise WidgetError(f"unknown colormap {colormap!r}; use one of {', '.join(COLORMAPS)}")
        table = self._scene.table
        array = np.full(len(table.items), np.nan, dtype=np.float32)
        for name, value in values.items():
            index = table.by_key.get(name)
            if index is not None:
                array[index] = float(value)
        finite = array[np.isfinite(array)]
        low = float(vmin) if vmin is not None else (float(finite.min()) if finite.size else 0.0)
        high = float(vmax) if vmax is not None else (float(finite.max()) if finite.size else 1.0)
        with self.hold_sync():
            self._overlay_values = array.astype("<f4").tobytes()
            self._overlay = {"label": label, "colormap": colormap, "min": low, "max": high}

    def clear_overlay(self) -> None:
        with self.hold_sync():
            self._overlay_values = b""
            self._overlay = {}

    # ------------------------------------------------------------------ subgraphs
    def open_subgraph(self, node: str | ir.Node, attr: str | None = None) -> GraphView:
        """A new (read-only) GraphView of an If/Loop/Scan body or of a local function's graph."""
        name = node if isinstance(node, str) else node.name
        found = next((n for n in self._scene.graph if n.name == name), None)
        if found is None:
            raise UnknownNodeError(f"no node named {name!r} in this graph")
        graphs = {
            key: a.value
            for key, a in found.attributes.items()
            if isinstance(a, ir.Attr) and a.type == ir.AttributeType.GRAPH
        }
        if attr is not None:
            if attr not in graphs:
                raise WidgetLookupError(
                    f"node {name!r} has no graph attribute {attr!r}; it has {sorted(graphs)}"
                )
            return GraphView(graphs[attr])
        if len(graphs) == 1:
            return GraphView(next(iter(graphs.values())))
        if graphs:
            raise WidgetError(
                f"node {name!r} has several subgraphs; pass attr= one of {sorted(graphs)}"
            )
        model = getattr(self._doc, "model", None)
        functions = model.functions if model is not None else {}
        function = functions.get((found.domain, found.op_type, found.overload))
        if function is None:
            raise WidgetError(
                f"node {name!r} ({found.op_type}) has no subgraph and calls no local function"
            )
        return GraphView(function)

    def on_open_body(self, callback: Callable[[str, str], None]) -> Callable[[], None]:
        """Call `callback(node, attribute)` when the user asks to open a node's body (double
        click on its subgraph mark, or "Open subgraph"); `attribute` is "" when the gesture
        names none (the node's first body, or the local function it calls). Returns a function
        that removes the callback."""
        self._body_callbacks.append(callback)

        def remove() -> None:
            if callback in self._body_callbacks:
                self._body_callbacks.remove(callback)

        return remove

    def on_profile(self, callback: Callable[[list[str]], object]) -> Callable[[], None]:
        """Call `callback(nodes)` when the user picks "Profile from here" on the canvas (the
        chosen node names). Returns a function that removes the callback."""
        return self._canvas.on_profile(callback)

    def _on_open_body(self, payload: OpenBody) -> None:
        for callback in list(self._body_callbacks):
            callback(payload["node"], payload["attribute"])

    # ------------------------------------------------------------------ export
    def export_image(
        self,
        path: str | os.PathLike[str],
        format: Literal["png", "jpeg", "svg"] | None = None,
        *,
        background: str | None = "#ffffff",
        grid: bool = False,
        scale: float = 2.0,
        max_size: int = 8192,
        overwrite: bool = False,
    ) -> concurrent.futures.Future[Path]:
        """Write the whole graph as PNG, JPEG or SVG; returns a Future of the path.

        SVG is written at once by the Python renderer that draws what the canvas draws (op
        colours, overlay, selection, marks) for the whole layout. PNG and JPEG are rendered by the
        browser and written when its answer arrives: in a notebook that is right after the
        running cell finishes (a kernel handles widget messages between cells). An earlier
        image of the same format at `path` is replaced; another file only with
        `overwrite=True`, and never the model's own files (OutputPathError).
        """
        target = Path(path)
        fmt = (format or target.suffix.lstrip(".") or "png").lower()
        fmt = "jpeg" if fmt == "jpg" else fmt
        if fmt not in ("png", "jpeg", "svg"):
            raise WidgetError(f"unknown image format {fmt!r}: use 'png', 'jpeg' or 'svg'")
        guard_output(
            target,
            reading=[getattr(self._doc, "path", None)],
            overwrite=overwrite,
            earlier=lambda earlier: starts_with(earlier, *_IMAGE_MAGIC[fmt]),
            what="image path",
        )
        future: concurrent.futures.Future[Path] = concurrent.futures.Future()
        self._send_shapes()  # an exported picture shows every tensor shape
        if fmt == "svg":
            svg = scene_svg(
                self._scene,
                selected=list(self.selected),
                marks=dict(self._marks or {}),
                overlay=overlay_of(self._overlay, bytes(self._overlay_values or b"")),
                background=background,
                grid=grid,
                precisions=dict(self._precisions),
            )
            atomic_write_bytes(target, svg.encode())
            future.set_result(target)
            return future
        payload: ExportImage = {
            "format": "jpeg" if fmt == "jpeg" else "png",
            "background": background,
            "grid": grid,
            "scale": float(scale),
            "max_size": int(max_size),
        }
        reply = self._channel.request("export", payload)
        reply.add_done_callback(lambda done: self._write_export(target, done, future))
        return future

    # ------------------------------------------------------------------ messages
    @staticmethod
    def _write_export(
        target: Path,
        reply: concurrent.futures.Future[Reply],
        future: concurrent.futures.Future[Path],
    ) -> None:
        try:
            _value, buffers = reply.result()
            if not buffers:
                raise WidgetRequestError("the browser could not export: its answer held no image")
            atomic_write_bytes(target, buffers[0])
        except Exception as error:  # the caller reads it from the Future
            future.set_exception(error)
        else:
            future.set_result(target)

    def _layout_answer(self) -> LayoutAnswer:
        self._relayout()
        return {"layout_seq": self._scene.layout_seq}

    def _known_groups(self, payload: Groups) -> Iterator[int]:
        n_groups = len(self._scene.hierarchy.groups)
        return (g for g in payload["groups"] if 0 <= g < n_groups)

    def _on_tensor_shapes(self, _payload: Empty) -> None:
        self._send_shapes()

    def _send_shapes(self) -> None:
        """Send every tensor's type and shape to the views (shape inference runs if stale)."""
        shapes = self._scene.shapes_bytes()
        if shapes != self._shapes:
            self._shapes = shapes

    def _on_types_inferred(self) -> None:
        """Shape inference ran (say for the pane, after an edit): views that asked for shapes
        before get the fresh ones, without asking again."""
        if self._shapes:
            self._send_shapes()

    def _on_expand(self, payload: Groups) -> LayoutAnswer:
        self._scene.expand(self._known_groups(payload))
        return self._layout_answer()

    def _on_collapse(self, payload: Groups) -> LayoutAnswer:
        self._scene.collapse(self._known_groups(payload))
        return self._layout_answer()

    def _on_expand_all(self, _payload: Empty) -> LayoutAnswer:
        self._scene.expand_all()
        return self._layout_answer()

    def _on_collapse_all(self, _payload: Empty) -> LayoutAnswer:
        self._scene.collapse_all()
        return self._layout_answer()

    def _on_reveal(self, payload: Items) -> LayoutAnswer:
        self._scene.reveal(payload["items"])
        self._syncing = True
        try:
            self.show_constants = self._scene.show_constants
        finally:
            self._syncing = False
        return self._layout_answer()

    def _on_arrange(self, _payload: Empty) -> LayoutAnswer:
        self._scene.arrange()
        self._canvas.forget_moves()
        return self._layout_answer()

    def _on_node_properties(self, payload: ItemRef) -> NodeProperties:
        return self._properties.node(payload["item"])

    def _on_tensor_properties(self, payload: TensorRef) -> TensorProperties:
        return self._properties.tensor(payload["tensor"], payload["item"])

    def _on_group_properties(self, payload: GroupRef) -> GroupProperties:
        return self._properties.group(payload["group"])

    def _on_tensor_stats(self, payload: TensorName) -> TensorStats:
        return self._properties.stats(payload["name"])

    # ------------------------------------------------------------------ document edits
    def _on_change(self, event: Any) -> None:
        self._apply_change(event)
        engine = self._scene.engine
        if self._canvas.moved is not engine.placed:  # a box was dragged (or the drag undone)
            engine.placed = self._canvas.moved
            placed = engine.replaced()  # the last packing with the boxes moved: no relayout
            if placed is None:
                self._relayout()
            else:
                self._layout = self._scene.layout_bytes(placed)

    def _apply_change(self, event: Any) -> None:
        scene = self._scene
        self._precisions = precision_badges(self._doc)  # cheap: a dict of the constraints
        self._properties.invalidate()
        if getattr(event, "source", "do") == "load":
            self._rebuild()
            return
        edit = EditSummary(
            added=frozenset(getattr(event, "added", ())),
            removed=frozenset(getattr(event, "removed", ())),
            changed=frozenset(getattr(event, "changed", ())),
            renamed=tuple(getattr(event, "renamed", ())),
            edges=bool(getattr(event, "edges", False)),
            graph_io=bool(getattr(event, "graph_io", False)),
        )
        if not (
            edit.added
            or edit.removed
            or edit.changed
            or edit.renamed
            or edit.edges
            or edit.graph_io
        ):
            return
        if len(self._edits) >= _MAX_PATCHES:
            # the patch list is state (new views and saved notebooks replay it): fold it into
            # a fresh topology once in a while instead of letting it grow without bound
            self._rebuild()
            return
        nodes = _NodesByName(scene.graph)
        try:
            patch = scene.apply_edit(edit, nodes)
        except NeedsRebuild:
            self._rebuild()
            return
        with self.hold_sync():
            self._edits = [*self._edits, patch]
            renamed = dict(edit.renamed)
            if renamed or edit.removed:
                self._syncing = True
                try:
                    self.selected = [
                        renamed.get(n, n) for n in self.selected if n not in edit.removed
                    ]
                finally:
                    self._syncing = False
            if patch["layout"]:
                self._relayout()

    def _rebuild(self) -> None:
        self._scene.rebuild()
        self._properties.invalidate()
        with self.hold_sync():
            self._edits = []
            self._topology = self._scene.topology_bytes()
            self._syncing = True
            try:
                by_key = self._scene.table.by_key
                self.selected = [n for n in self.selected if n in by_key]
            finally:
                self._syncing = False
            self._relayout()

    def close(self) -> None:
        unsubscribe = getattr(self, "_unsubscribe", None)  # None when __init__ raised early
        if unsubscribe is not None:
            unsubscribe()
            self._unsubscribe = None
        super().close()


class _NodesByName(Mapping[str, ir.Node]):
    """Nodes of a graph by name, indexed only if an edit asks for a node it does not know yet
    (an attribute change or a rename never walks a 50,000-node graph)."""

    def __init__(self, graph: ir.Graph | ir.Function) -> None:
        self._graph = graph
        self._index: dict[str, ir.Node] | None = None

    def _nodes(self) -> dict[str, ir.Node]:
        if self._index is None:
            self._index = {n.name: n for n in self._graph if n.name}
        return self._index

    def __getitem__(self, name: str) -> ir.Node:
        return self._nodes()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._nodes())

    def __len__(self) -> int:
        return len(self._nodes())
