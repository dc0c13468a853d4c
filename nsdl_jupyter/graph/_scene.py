"""GraphScene: everything a graph view shows, as data (no widget code).

It owns the item tables, the hierarchy, the layout engine and the view state (expanded
groups, direction, constants shown) and turns them into the buffers a widget sends: the
topology once, the layout of the visible boxes, and small patches for document edits.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import onnx_ir as ir

from nsdl_jupyter._gc import gc_paused
from nsdl_jupyter.graph._bands import MIN_CANVAS_H, band_room, canvas_height, first_screen_opens
from nsdl_jupyter.graph._columns import code_dtype, encode_columns
from nsdl_jupyter.graph._drawing import op_category
from nsdl_jupyter.graph._extract import (
    CONSTANT,
    FROM_CONSTANT,
    Edge,
    GraphTable,
    TableBuilder,
    build_table,
    scope_of,
)
from nsdl_jupyter.graph._hierarchy import MAX_CHILDREN, Hierarchy, build_hierarchy, is_group_ref
from nsdl_jupyter.graph._labels import item_texts, scopes_with_children
from nsdl_jupyter.graph._layout import Direction, LayoutEngine, LayoutResult, LiftedEdges
from nsdl_jupyter.graph._shapes import TensorTypes, display_shape
from nsdl_jupyter.graph._skeleton import GraphSkeleton
from nsdl_jupyter.graph._tensor_names import tensor_name_columns

# above this many items a graph opens collapsed; groups are expanded (largest first) while the
# number of visible boxes stays under VISIBLE_BUDGET
EXPAND_ALL_BELOW = 400
VISIBLE_BUDGET = 160
# a graph with more boxes than this (constants hidden) whose top level holds two modules or
# more opens on that outline (embeddings → encoder → pooler), every module collapsed
OUTLINE_ABOVE = 80


class NeedsRebuild(Exception):  # noqa: N818 (a signal to rebuild, not an error for users)
    """An edit the scene cannot patch in place (new name scope, graph I/O): rebuild it."""


@dataclass
class EditSummary:
    """What a document ChangeEvent means for the scene (mirrors its name sets)."""

    added: frozenset[str] = frozenset()
    removed: frozenset[str] = frozenset()
    changed: frozenset[str] = frozenset()
    renamed: tuple[tuple[str, str], ...] = ()
    edges: bool = False
    graph_io: bool = False
    extra: dict[str, Any] = field(default_factory=dict)


class GraphScene:
    def __init__(
        self,
        graph: ir.Graph | ir.Function | GraphSkeleton,
        *,
        functions: Iterable[tuple[str, str, str]] = (),
        positions: MutableMapping[str, list[float]] | None = None,
        collapsed: Iterable[str] | None = None,
        max_children: int = MAX_CHILDREN,
    ) -> None:
        self._graph = graph
        self._functions = tuple(functions)
        self.max_children = max_children
        self.positions: MutableMapping[str, list[float]] = (
            positions if positions is not None else {}
        )
        self.direction: Direction = "TB"  # as Netron and Model Explorer draw
        self.show_constants = False
        self.topology_version = 0
        self.layout_seq = 0
        self.patch_seq = 0
        # shape inference, shared with the properties pane: stale after an edit, kept for the
        # drawing until a reader asks for fresh types (so that an edit stays cheap)
        self.types = TensorTypes(graph)
        self._build()
        self.expanded = (
            self.default_expanded() if collapsed is None else self._expanded_except(collapsed)
        )
        if collapsed is not None and self.engine.band_top:  # which modules open in bands
            first_screen_opens(self.engine, self.direction, self.show_constants)

    @property
    def graph(self) -> ir.Graph | ir.Function:
        """The onnx_ir graph drawn (see `ensure_bound`)."""
        return self.ensure_bound()

    def ensure_bound(self) -> ir.Graph | ir.Function:
        """The onnx_ir graph, with the table's items' `node` in it. A scene read from a
        skeleton has the document build the graph now (the document then calls `bind`)."""
        graph = self._graph
        if isinstance(graph, GraphSkeleton):
            built = graph.build()
            if self._graph is graph:  # the document had no `bind` to call
                self.bind(built)
            return built
        return graph

    def bound_table(self) -> GraphTable:
        """The table with its items' `node` in the onnx_ir graph."""
        self.ensure_bound()
        return self.table

    def bind(self, graph: ir.Graph) -> None:
        """The document built the onnx_ir graph this scene's skeleton stands for."""
        self.builder.bind(graph)
        self.types.graph = graph
        self._graph = graph

    # ------------------------------------------------------------------ building
    def _build(self) -> None:
        with gc_paused():  # a row object per node, edge and tensor: all long-lived
            self.builder: TableBuilder = build_table(self._graph, self._functions)
            self.table = self.builder.table
            self.hierarchy: Hierarchy = build_hierarchy(self.table, self.max_children)
            self.inner_scopes = scopes_with_children(self.table.items)
            self.texts = item_texts(
                self.table, range(len(self.table.items)), self._opsets(), self.inner_scopes
            )
        self.weight_lines = {i: len(w) for i, (_, w) in self.texts.items() if w}
        self.engine = LayoutEngine(self.table, self.hierarchy, self.positions, self.weight_lines)
        self.engine.band_top = self.is_module_outline()
        self.topology_version += 1

    def _opsets(self) -> dict[str, int]:
        return dict(self._graph.opset_imports)

    @property
    def inferred(self) -> Mapping[str, tuple[str, str]] | None:
        """The types the drawing shows: the last inference, stale after an edit until a reader
        asks for fresh ones; None before any."""
        return self.types.last

    def infer(self) -> None:
        """Bring the shared inference up to date (runs only when stale); views ask for it after
        their first drawing so that it never delays one."""
        self.types.fresh()

    def tensor_text(self, index: int) -> tuple[str, str]:
        """(dtype, shape) of tensor `index` as drawn: the model's own type, else the inferred
        one (once `infer` ran); shapes written ``1x3x224x224``."""
        t = self.table.tensors[index]
        if (t.dtype and t.shape) or not self.inferred:
            return t.dtype, display_shape(t.shape)
        dtype, shape = self.inferred.get(t.name, ("", ""))
        return t.dtype or dtype, display_shape(t.shape) or shape

    def _tensor_columns(self, meta: dict[str, Any], columns: dict[str, tuple[str, Any]]) -> None:
        """Element type and shape of every tensor, as codes into meta's `dtypes`, `shapes`."""
        tensors = self.table.tensors
        if self.inferred:
            texts = [self.tensor_text(i) for i in range(len(tensors))]
        else:  # before inference: the model's own types (most tensors share a few)
            texts = [(t.dtype, display_shape(t.shape)) for t in tensors]
        dtypes: dict[str, int] = {}
        shapes: dict[str, int] = {}
        dtype_codes = [dtypes.setdefault(d, len(dtypes)) for d, _ in texts]
        shape_codes = [shapes.setdefault(s, len(shapes)) for _, s in texts]
        columns["tensor.dtype"] = (code_dtype(len(dtypes)), dtype_codes)
        columns["tensor.shape"] = (code_dtype(len(shapes)), shape_codes)
        meta.update(dtypes=list(dtypes), shapes=list(shapes))

    def shapes_bytes(self) -> bytes:
        """Every tensor's type and shape after shape inference, for views that drew first."""
        self.infer()
        meta: dict[str, Any] = {"topology": self.topology_version}
        columns: dict[str, tuple[str, Any]] = {}
        self._tensor_columns(meta, columns)
        return encode_columns(meta, columns)

    def _retext(self, items: set[int]) -> bool:
        """Recompute the texts of `items`; true when a box changed height."""
        self.texts.update(item_texts(self.table, items, self._opsets(), self.inner_scopes))
        resized = False
        for i in items:
            lines = len(self.texts[i][1])
            resized |= self.weight_lines.get(i, 0) != lines
            if lines:
                self.weight_lines[i] = lines
            else:
                self.weight_lines.pop(i, None)
        return resized

    def rebuild(self) -> None:
        """Re-extract everything (keeps unit positions, expanded groups by key)."""
        self.types.edited()
        keys = {self.hierarchy.groups[g].key for g in self.expanded}
        engine = self.engine
        self._build()
        self.engine.band_room = engine.band_room
        self.engine.opened_in_bands = engine.opened_in_bands
        by_key = self.hierarchy.by_key()
        self.expanded = {by_key[k] for k in keys if k in by_key}

    def _expanded_except(self, collapsed: Iterable[str]) -> set[int]:
        closed = set(collapsed)
        return {g for g, group in enumerate(self.hierarchy.groups) if group.key not in closed}

    def default_expanded(self) -> set[int]:
        """The first view: a module export's outline, a small graph whole, else the groups
        that fit VISIBLE_BUDGET boxes (smallest first)."""
        groups = self.hierarchy.groups
        if self.is_module_outline():
            return {0} | first_screen_opens(self.engine, self.direction, self.show_constants)
        if len(self.table.items) <= EXPAND_ALL_BELOW:
            return set(range(len(groups)))
        expanded = {0}
        visible = len(groups[0].children)
        frontier = [~r for r in groups[0].children if is_group_ref(r)]
        while frontier:
            frontier.sort(key=lambda g: groups[g].size)
            g = frontier.pop(0)  # smallest first: open as many as fit
            extra = len(groups[g].children) - 1
            if visible + extra > VISIBLE_BUDGET:
                continue
            expanded.add(g)
            visible += extra
            frontier.extend(~r for r in groups[g].children if is_group_ref(r))
        return expanded

    def is_module_outline(self) -> bool:
        """True for a torch/HF export too large to read whole: its top level holds modules
        (two or more, or one that holds most of the model: ViT's encoder, EfficientNet's
        features)."""
        groups = self.hierarchy.groups
        modules = [~r for r in groups[0].children if is_group_ref(r) and not groups[~r].synthetic]
        if not modules or (len(modules) == 1 and 2 * groups[modules[0]].size < groups[0].size):
            return False
        shown = sum(1 for it in self.table.items if it.alive and not it.flags & CONSTANT)
        return shown > OUTLINE_ABOVE

    @property
    def collapsed_keys(self) -> list[str]:
        return [g.key for i, g in enumerate(self.hierarchy.groups) if i and i not in self.expanded]

    # ------------------------------------------------------------------ view state
    def expand(self, groups: Iterable[int]) -> None:
        for g in groups:
            self.expanded.update(self.hierarchy.group_chain(g))

    def collapse(self, groups: Iterable[int]) -> None:
        self.expanded.difference_update(set(groups) - {0})

    def expand_all(self) -> None:
        self.expanded = set(range(len(self.hierarchy.groups)))

    def collapse_all(self) -> None:
        self.expanded = {0}

    def reveal(self, items: Iterable[int]) -> bool:
        """Expand the groups around `items`; true when something had to open."""
        before = len(self.expanded)
        for i in items:
            if 0 <= i < len(self.table.items) and self.table.items[i].alive:
                self.expanded.update(self.hierarchy.chain(i))
                if self.table.items[i].flags & CONSTANT:
                    self.show_constants = True
        return len(self.expanded) != before

    def arrange(self) -> None:
        self.engine.forget_positions()

    def set_canvas_height(self, height: float, *, widget: bool = False) -> bool:
        """The view's canvas is `height` CSS px high (`widget`: the whole GraphView is, before
        the browser measured its canvas): the bands fill it. True when that changed their room
        (lay out again); False for a graph without bands or a canvas too small to count."""
        height = canvas_height(height) if widget else height
        room = band_room(canvas_h=height)
        if not self.engine.band_top or height < MIN_CANVAS_H or room == self.engine.band_room:
            return False
        self.engine.band_room = room
        return True

    def layout(self) -> LayoutResult:
        return self.engine.layout(self.expanded, self.direction, self.show_constants)

    # ------------------------------------------------------------------ buffers
    def topology_bytes(self) -> bytes:
        # its columns are lists as long as the graph, alive until encoded: left to the
        # collector, they set off a full pass over the whole model (0.6 s at 100,000 nodes)
        with gc_paused():
            return self._topology_bytes()

    def _topology_bytes(self) -> bytes:
        table, h = self.table, self.hierarchy
        ops: dict[str, int] = {}
        items = table.items
        meta: dict[str, Any] = {
            "version": self.topology_version,
            "n_items": len(items),
            "n_groups": len(h.groups),
        }
        texts = self.texts
        op_codes = [ops.setdefault(it.op, len(ops)) for it in items]
        src, dst, tensor, edge_flags = _columns_of(table.edges, 4)
        init_item, init_tensor, init_slot = _columns_of(table.initializer_inputs, 3)
        # names and keys are paths sharing prefixes (pstrs); captions and weights repeat (dstrs)
        columns: dict[str, tuple[str, Any]] = {
            "item.name": ("pstrs", [it.name for it in items]),
            "item.label": ("dstrs", [texts[i][0] for i in range(len(items))]),
            "item.weights": ("dstrs", ["\n".join(texts[i][1]) for i in range(len(items))]),
            "item.op": (code_dtype(len(ops)), op_codes),
            "item.flags": ("u1", [it.flags for it in items]),
            "item.group": ("i4", h.item_group),
            "group.key": ("pstrs", [g.key for g in h.groups]),
            "group.label": ("dstrs", [g.label for g in h.groups]),
            "group.parent": ("i4", [g.parent for g in h.groups]),
            "group.size": ("i4", [g.size for g in h.groups]),
            "group.synthetic": ("u1", [g.synthetic for g in h.groups]),
            "edge.src": ("i4", src),
            "edge.dst": ("i4", dst),
            "edge.tensor": ("i4", tensor),
            "edge.flags": ("u1", edge_flags),
            "init.item": ("i4", init_item),
            "init.tensor": ("i4", init_tensor),
            "init.slot": ("i4", init_slot),
        }
        tensor_names = [t.name for t in table.tensors]
        columns.update(tensor_name_columns(tensor_names, columns["item.name"][1], src, tensor))
        self._tensor_columns(meta, columns)
        meta.update(ops=list(ops), categories=[op_category(op) for op in ops])
        return encode_columns(meta, columns)

    def layout_bytes(self, result: LayoutResult | None = None) -> bytes:
        result = result if result is not None else self.layout()
        self.layout_seq += 1
        meta = {
            "seq": self.layout_seq,
            "topology": self.topology_version,
            "direction": self.direction,
            "show_constants": self.show_constants,
            "width": result.width,
            "height": result.height,
            "expanded": sorted(self.expanded),
            "room": list(self.engine.band_room),  # a new room: the view fits the drawing anew
        }
        rects = result.rects
        columns: dict[str, tuple[str, Any]] = {
            "ref": ("i4", result.refs),
            "kind": ("u1", result.kinds),
            "x": ("f4", rects[:, 0]),
            "y": ("f4", rects[:, 1]),
            "w": ("f4", rects[:, 2]),
            "h": ("f4", rects[:, 3]),
        }
        return encode_columns(meta, columns)

    # ------------------------------------------------------------------ edits
    def apply_edit(  # noqa: PLR0915 (one pass over the event's name sets, in order)
        self, edit: EditSummary, nodes: Mapping[str, ir.Node]
    ) -> dict[str, Any]:
        """Update the tables for one document edit and return the patch for the browser.

        Raises NeedsRebuild when the edit cannot be patched in place.
        """
        table, h, builder = self.table, self.hierarchy, self.builder
        if edit.graph_io:
            raise NeedsRebuild("graph inputs/outputs changed")
        if edit.added or edit.removed or edit.edges or edit.changed - {n for _, n in edit.renamed}:
            self.types.edited()  # a rename alone changes no type
        tensors_before = len(table.tensors)
        touched: set[int] = set()
        groups_changed: set[int] = set()
        for old, new in edit.renamed:
            index = table.by_key.pop(old, None)
            if index is None:
                raise NeedsRebuild(f"unknown node {old!r}")
            item = table.items[index]
            item.name = item.key = new
            table.by_key[new] = index
            if old in self.positions:
                self.positions[new] = self.positions.pop(old)
            touched.add(index)
        edge_refresh: set[int] = set()
        for name in edit.removed:
            index = table.by_key.pop(name, None)
            if index is None:
                continue
            table.items[index].alive = False
            g = h.item_group[index]
            h.groups[g].children.remove(index)
            h.item_group[index] = -1
            self._resize(g, -1, groups_changed)
            touched.add(index)
            edge_refresh.add(index)
            edge_refresh.update(e.dst for e in table.edges if e.src == index)
            self.positions.pop(name, None)
        by_key = None
        added = (
            sorted(edit.added, key=lambda n: _node_order(nodes, n))
            if len(edit.added) > 1
            else edit.added
        )
        for name in added:
            node = nodes.get(name)
            if node is None or name in table.by_key:
                raise NeedsRebuild(f"added node {name!r} not found")
            scope = scope_of(node)
            by_key = by_key or h.by_key()
            found = by_key.get("/" + "/".join(scope)) if scope else 0
            if found is None:
                raise NeedsRebuild(f"new name scope {scope!r}")
            g = found
            index = builder.add_node_item(node)
            h.item_group.append(g)
            h.groups[g].children.append(index)
            self._resize(g, 1, groups_changed)
            touched.add(index)
            edge_refresh.add(index)
        for name in edit.changed:
            index = table.by_key.get(name)
            if index is None:
                continue
            touched.add(index)
            node = table.items[index].node
            if node is not None:
                fresh = TableBuilder(self.graph, self._functions)
                probe = fresh.add_node_item(node)
                table.items[index].op = fresh.table.items[probe].op
                table.items[index].flags = fresh.table.items[probe].flags
            if edit.edges:
                edge_refresh.add(index)
        if edge_refresh:
            old_edges = [e for e in table.edges if e.src in edge_refresh or e.dst in edge_refresh]
            boxes = len(table.items)
            builder.refresh_edges(edge_refresh)
            if len(table.items) != boxes:  # a box for a tensor nobody produces: not in a group
                raise NeedsRebuild("an edge from a tensor of no node or input")
            new_edges = [e for e in table.edges if e.src in edge_refresh or e.dst in edge_refresh]
            self._relift(old_edges, -1)
            self._relift(new_edges, 1)
            for e in new_edges:
                touched.update((e.src, e.dst))
            groups_changed.update(h.item_group[i] for i in edge_refresh if h.item_group[i] >= 0)
        resized = self._retext(touched)
        self.engine.invalidate_units(groups_changed)
        self.patch_seq += 1
        return {
            "seq": self.patch_seq,
            "topology": self.topology_version,
            "items": {
                str(i): [
                    table.items[i].name,
                    table.items[i].op,
                    table.items[i].flags,
                    h.item_group[i],
                    self.texts[i][0],
                    "\n".join(self.texts[i][1]),
                ]
                for i in sorted(touched)
            },
            "edges_of": sorted(edge_refresh),
            "edges": [
                [e.src, e.dst, e.tensor, e.flags]
                for e in table.edges
                if e.src in edge_refresh or e.dst in edge_refresh
            ],
            "tensors": {
                str(i): [table.tensors[i].name, *self.tensor_text(i)]
                for i in range(tensors_before, len(table.tensors))
            },
            "inits": [list(s) for s in table.initializer_inputs if s[0] in edge_refresh],
            "categories": {table.items[i].op: op_category(table.items[i].op) for i in touched},
            "groups": {str(g): h.groups[g].size for g in sorted(groups_changed)},
            "layout": bool(edit.added or edit.removed or resized),
        }

    def _resize(self, g: int, delta: int, changed: set[int]) -> None:
        while g >= 0:
            self.hierarchy.groups[g].size += delta
            changed.add(g)
            g = self.hierarchy.groups[g].parent

    def _relift(self, edges: list[Edge], count: int) -> None:
        lifted = self.engine.lifted()
        chains: dict[int, list[int]] = {}
        for e in edges:
            if e.flags & FROM_CONSTANT:
                continue
            for i in (e.src, e.dst):
                if i not in chains:
                    chains[i] = self.hierarchy.chain(i) if self.hierarchy.item_group[i] >= 0 else []
            if chains[e.src] and chains[e.dst]:
                _lift_into(lifted, chains, e.src, e.dst, count)


def _lift_into(
    lifted: LiftedEdges,
    chains: Mapping[int, list[int]],
    src: int,
    dst: int,
    count: int,
) -> None:
    LayoutEngine._lift(lifted, chains, src, dst, count)


def _columns_of(rows: Sequence[tuple[int, ...]], width: int) -> list[tuple[int, ...]]:
    """The columns of equally long `rows` (edges, initializer stubs), read at C speed."""
    return list(zip(*rows, strict=True)) if rows else [()] * width


def _node_order(nodes: Mapping[str, ir.Node], name: str) -> int:
    for i, key in enumerate(nodes):
        if key == name:
            return i
    return 0
