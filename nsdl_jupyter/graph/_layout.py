"""Layered layout of the visible part of the hierarchy.

Each expanded group is laid out on its own: python-igraph's Sugiyama layering orders the
group's children (edges between descendants lifted to the children that hold them), which
gives every child a *unit position* (layer, order). Unit positions do not depend on box
sizes, so they are computed once per group, kept in the companion file, and survive expanding
and collapsing; a cheap packing pass then turns them into pixel rectangles using the current
size of every child (an expanded child group is as large as its own packed content).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

from nsdl_jupyter.document import layout_coordinate
from nsdl_jupyter.graph._bands import (
    MAX_BANDS,
    MIN_BANDED_LAYERS,
    band_room,
    cut_layers,
    is_module_chain,
    nested_room,
    shortest_cap,
)
from nsdl_jupyter.graph._extract import CONSTANT, FROM_CONSTANT, PSEUDO, GraphTable
from nsdl_jupyter.graph._hierarchy import Hierarchy, is_group_ref
from nsdl_jupyter.graph._sugiyama import sugiyama
from nsdl_jupyter.graph._vocabulary import VOCABULARY

Direction = Literal["LR", "TB"]

NODE_W, NODE_H = 150.0, 36.0
IO_W, IO_H = 110.0, 26.0
GROUP_W, GROUP_H = 170.0, 44.0
# an opened group's frame: its margin and title bar (the renderers and graph/_routes.py too)
PAD, HEADER = float(VOCABULARY["frame"]["pad"]), float(VOCABULARY["frame"]["headerHeight"])
# between layers and between boxes of a layer: the edge shape labels sit in these gaps
GAP_LAYER, GAP_ORDER = float(VOCABULARY["gap"]["layer"]), float(VOCABULARY["gap"]["order"])
# a node box grows by one line per weight shown inside it (W⟨64x3x7x7⟩), up to a maximum
WEIGHT_LINE = float(VOCABULARY["weights"]["line"])
MAX_WEIGHT_LINES = int(VOCABULARY["weights"]["max"])
# a module outline is cut into bands (TB: columns side by side) that fit the canvas at a legible
# scale (graph/_bands.py band_room)
GAP_BAND = GAP_LAYER  # between bands: the edges from one band to the next run there
# between the layers of a top-down band: the shape label under a box still fits (left to right,
# the label is written in that gap: it keeps GAP_LAYER)
GAP_BAND_LAYER = 26.0

# kinds of laid-out rectangles (mirrored in js/src/graph_view/graph.ts)
KIND_NODE, KIND_GROUP, KIND_FRAME = 0, 1, 2


def node_height(weights: int) -> float:
    """Height of a node box showing `weights` weight lines under its caption."""
    return NODE_H + min(weights, MAX_WEIGHT_LINES) * WEIGHT_LINE


@dataclass
class LayoutResult:
    refs: npt.NDArray[np.int32]  # item index, or ~group
    kinds: npt.NDArray[np.uint8]
    rects: npt.NDArray[np.float32]  # (n, 4): x, y, w, h (top-left corner)
    width: float
    height: float

    def rect_of(self) -> dict[int, tuple[float, float, float, float]]:
        return {
            int(r): (float(a), float(b), float(c), float(d))
            for r, (a, b, c, d) in zip(self.refs, self.rects, strict=True)
        }


def chain_matrix(hierarchy: Hierarchy) -> npt.NDArray[np.int32]:
    """Row g: the chain of group g (root first, g last), padded with -1."""
    chains = [hierarchy.group_chain(g) for g in range(len(hierarchy.groups))]
    depth = max(map(len, chains), default=1)
    matrix = np.full((len(chains), depth), -1, dtype=np.int32)
    for g, chain in enumerate(chains):
        matrix[g, : len(chain)] = chain
    return matrix


def chain_order(n: int, edges: list[tuple[int, int]]) -> list[int] | None:
    """The vertices 0..n-1 in path order when the edges form one path through all of them
    (layered, it is one vertex per layer), else None."""
    if n == 0 or len(edges) != n - 1:
        return None
    after: dict[int, int] = {}
    heads = set(range(n))
    for a, b in edges:
        if a in after or a == b or b not in heads:
            return None
        after[a] = b
        heads.discard(b)
    if len(heads) != 1:
        return None
    order = [heads.pop()]
    while order[-1] in after:
        order.append(after[order[-1]])
    return order if len(order) == n else None


class LiftedEdges:
    """Per group, the count of edges between its children (child ref -> child ref) that the
    items' edges induce: an edge between two items is counted at their deepest common group,
    between the children of it that hold them. Computed for all edges at once with numpy;
    a group's Counter is built when a layout (or an edit) first asks for it."""

    def __init__(
        self,
        groups: npt.NDArray[np.int64],
        pairs: npt.NDArray[np.int64],
    ) -> None:
        order = np.argsort(groups, kind="stable")  # edge order kept within a group
        self._groups = groups[order]
        self._pairs = pairs[order]
        self._built: dict[int, Counter[tuple[int, int]]] = {}

    @classmethod
    def of(
        cls, table: GraphTable, hierarchy: Hierarchy, chains: npt.NDArray[np.int32]
    ) -> LiftedEdges:
        rows = [e for e in table.edges if not e.flags & FROM_CONSTANT]
        if not rows:
            return cls(np.zeros(0, np.int64), np.zeros((0, 2), np.int64))
        src, dst, _, _ = (np.asarray(c, dtype=np.int64) for c in zip(*rows, strict=True))
        item_group = np.asarray(hierarchy.item_group, dtype=np.int64)
        ga, gb = item_group[src], item_group[dst]
        live = (ga >= 0) & (gb >= 0)  # a removed item has no group
        src, dst, ga, gb = src[live], dst[live], ga[live], gb[live]
        a, b = chains[ga], chains[gb]
        same = (a == b) & (a >= 0)
        width = chains.shape[1]
        # k: length of the common chain (root included); the common group is a[k - 1]
        k = np.where(same.all(axis=1), width, np.argmin(same, axis=1))
        rows_at = np.arange(len(k))
        below_a = a[rows_at, np.minimum(k, width - 1)]
        below_b = b[rows_at, np.minimum(k, width - 1)]
        # the children of the common group holding each end: a deeper group, else the item
        ca = np.where((k < width) & (below_a >= 0), ~below_a, src)
        cb = np.where((k < width) & (below_b >= 0), ~below_b, dst)
        keep = (k > 0) & (ca != cb)
        common = a[rows_at, np.maximum(k - 1, 0)]
        return cls(common[keep], np.stack([ca[keep], cb[keep]], axis=1))

    def get(self, group: int, default: Counter[tuple[int, int]]) -> Counter[tuple[int, int]]:
        found = self._counter(group)
        return found if found is not None else default

    def setdefault(self, group: int, default: Counter[tuple[int, int]]) -> Counter[tuple[int, int]]:
        found = self._counter(group)
        if found is None:
            found = self._built[group] = default
        return found

    def _counter(self, group: int) -> Counter[tuple[int, int]] | None:
        if group not in self._built:
            low, high = np.searchsorted(self._groups, [group, group + 1])
            if low == high:
                return None
            pairs = self._pairs[low:high].tolist()
            self._built[group] = Counter(map(tuple, pairs))
        return self._built[group]


def position_key(table: GraphTable, hierarchy: Hierarchy, ref: int) -> str:
    return f"group:{hierarchy.groups[~ref].key}" if is_group_ref(ref) else table.items[ref].key


class LayoutEngine:
    """Unit layouts per group (cached, persisted in `positions`) and the packing pass."""

    def __init__(
        self,
        table: GraphTable,
        hierarchy: Hierarchy,
        positions: MutableMapping[str, list[float]] | None = None,
        weight_lines: Mapping[int, int] | None = None,
    ) -> None:
        self.table = table
        self.weight_lines: Mapping[int, int] = weight_lines if weight_lines is not None else {}
        self.hierarchy = hierarchy
        self.positions: MutableMapping[str, list[float]] = (
            positions if positions is not None else {}
        )
        # node key -> top-left corner the user dragged it to: drawn there whatever the layout
        # says (the widget sets it from the document's companion "moved" entry)
        self.placed: Mapping[str, Sequence[float]] = {}
        self._computed: LayoutResult | None = None  # the last packing, before `placed`
        # cut a module export's outline (and opened chains of modules) into bands to fit the
        # screen; off for graphs edited box by box, where a new layer would move the cuts
        self.band_top = False
        # (width, height) the bands fill: the canvas at a legible scale (graph/_bands.py)
        self.band_room: tuple[float, float] = band_room()
        # keys of the modules the first view opened (graph/_bands.py first_screen_opens): their
        # parents stay in bands while they are open; a module opened by a click makes its
        # parent one flow again (the view keeps the opened module where it was on screen)
        self.opened_in_bands: frozenset[str] = frozenset()
        self._lifted: LiftedEdges | None = None
        self._chains: npt.NDArray[np.int32] | None = None  # see _chain_matrix
        self._units: dict[tuple[int, bool], dict[int, tuple[float, float]]] = {}
        self._with_shown: set[int] | None = None  # groups holding an item drawn by default

    # ------------------------------------------------------------------ lifted edges
    def lifted(self) -> LiftedEdges:
        """For each group, the edges between its children induced by the items' edges."""
        if self._lifted is None:
            self._lifted = LiftedEdges.of(self.table, self.hierarchy, self._chain_matrix())
        return self._lifted

    def _chain_matrix(self) -> npt.NDArray[np.int32]:
        """Row g: the groups from the root down to g, padded with -1 (the hierarchy's groups
        keep their parents for the life of the engine: a new scope rebuilds the scene)."""
        if self._chains is None:
            self._chains = chain_matrix(self.hierarchy)
        return self._chains

    @staticmethod
    def _lift(
        lifted: LiftedEdges,
        chains: Sequence[list[int]] | Mapping[int, list[int]],
        src: int,
        dst: int,
        count: int,
    ) -> None:
        LayoutEngine._lift_between(lifted, chains[src], chains[dst], src, dst, count)

    @staticmethod
    def _lift_between(  # noqa: PLR0917 (called per edge of an edit)
        lifted: LiftedEdges,
        a: list[int],
        b: list[int],
        src: int,
        dst: int,
        count: int,
    ) -> None:
        """Count edge src -> dst (group chains `a`, `b`) between the children of their
        deepest common group that hold them."""
        k = 0
        while k < len(a) and k < len(b) and a[k] == b[k]:
            k += 1
        if k == 0:
            return
        ca = ~a[k] if k < len(a) else src
        cb = ~b[k] if k < len(b) else dst
        if ca != cb:
            lifted.setdefault(a[k - 1], Counter())[(ca, cb)] += count

    def invalidate(self, groups: Iterable[int] | None = None) -> None:
        """Forget lifted edges (all) and the unit layouts of `groups` (all when None)."""
        self._lifted = None
        self._with_shown = None
        if groups is None:
            self._units.clear()
            return
        for g in groups:
            self._units.pop((g, True), None)
            self._units.pop((g, False), None)

    def invalidate_units(self, groups: Iterable[int]) -> None:
        """Forget the unit layouts of `groups` (their children changed); lifted edges stay."""
        self._with_shown = None
        for g in groups:
            self._units.pop((g, True), None)
            self._units.pop((g, False), None)

    def forget_positions(self) -> None:
        """`arrange`: drop stored unit positions and recompute every group on demand."""
        self.positions.clear()
        self._units.clear()

    # ------------------------------------------------------------------ unit layout
    def groups_with_shown_items(self) -> set[int]:
        """Groups holding an item that is drawn while constants are hidden: the others (a
        module of weights and constants only, BERT's `position_embeddings`) are not drawn."""
        if self._with_shown is None:
            flags = np.fromiter((it.flags for it in self.table.items), np.int64)
            start = np.asarray(self.hierarchy.item_group, dtype=np.int64)
            # sets, not np.unique: that imports numpy.ma on first use (8 ms in a fresh kernel)
            holding = sorted(set(start[(flags & CONSTANT == 0) & (start >= 0)].tolist()))
            self._with_shown = set(self._chain_matrix()[holding].ravel().tolist()) - {-1}
        return self._with_shown

    def _visible_children(self, g: int, show_constants: bool) -> list[int]:
        children = self.hierarchy.groups[g].children
        if show_constants:
            return list(children)
        items = self.table.items
        shown = self.groups_with_shown_items()
        return [
            r
            for r in children
            if (~r in shown if is_group_ref(r) else not items[r].flags & CONSTANT)
        ]

    def unit_layout(self, g: int, show_constants: bool) -> dict[int, tuple[float, float]]:
        cached = self._units.get((g, show_constants))
        if cached is not None:
            return cached
        children = self._visible_children(g, show_constants)
        keys = [position_key(self.table, self.hierarchy, r) for r in children]
        stored = [self.positions.get(k) for k in keys]
        if children and all(p is not None for p in stored):
            units = {
                r: (float(p[0]), float(p[1])) for r, p in zip(children, stored, strict=True) if p
            }
        else:
            units = self._sugiyama(g, children, stored)
            for r, k in zip(children, keys, strict=True):
                self.positions[k] = [units[r][0], units[r][1]]
        self._units[(g, show_constants)] = units
        return units

    def _sugiyama(
        self, g: int, children: list[int], stored: list[list[float] | None]
    ) -> dict[int, tuple[float, float]]:
        index = {r: i for i, r in enumerate(children)}
        edges = [
            (index[a], index[b])
            for (a, b), n in self.lifted().get(g, Counter()).items()
            if n > 0 and a in index and b in index
        ]
        known = {r: (p[0], p[1]) for r, p in zip(children, stored, strict=True) if p is not None}
        if known and len(known) >= len(children) // 2:
            return self._place_missing(children, edges, known)
        chain = chain_order(len(children), edges)
        if chain is not None:
            # what Sugiyama gives a chain, without igraph at all
            return {children[i]: (float(layer), 0.0) for layer, i in enumerate(chain)}
        # igraph appends the dummy vertices of long edges after the real ones
        coords = sugiyama(len(children), edges, maxiter=50)[: len(children)] if children else []
        return {r: (float(c[1]), float(c[0])) for r, c in zip(children, coords, strict=True)}

    @staticmethod
    def _place_missing(
        children: list[int], edges: list[tuple[int, int]], known: dict[int, tuple[float, float]]
    ) -> dict[int, tuple[float, float]]:
        """Place new children next to their neighbours without moving anyone (small edits)."""
        units = dict(known)
        preds: dict[int, list[int]] = {}
        succs: dict[int, list[int]] = {}
        for a, b in edges:
            preds.setdefault(children[b], []).append(children[a])
            succs.setdefault(children[a], []).append(children[b])
        for r in children:
            if r in units:
                continue
            before = [units[p] for p in preds.get(r, []) if p in units]
            after = [units[s] for s in succs.get(r, []) if s in units]
            if before:
                layer = max(p[0] for p in before) + 1
                order = sum(p[1] for p in before) / len(before)
            elif after:
                layer = min(s[0] for s in after) - 1
                order = sum(s[1] for s in after) / len(after)
            else:
                layer, order = 0.0, 0.0
            taken = [u[1] for u in units.values() if u[0] == layer]
            while any(abs(t - order) < 0.5 for t in taken):
                order = max(taken) + 1
            units[r] = (layer, order)
        return units

    # ------------------------------------------------------------------ packing
    def layout(
        self, expanded: set[int], direction: Direction = "LR", show_constants: bool = False
    ) -> LayoutResult:
        """Rectangles of every visible box: nodes, collapsed groups, expanded group frames."""
        sizes: dict[int, tuple[float, float]] = {}
        rel: dict[int, dict[int, tuple[float, float]]] = {}
        expanded = set(expanded) | {0}
        self._pack(0, expanded, direction, show_constants, sizes, rel)
        refs: list[int] = []
        kinds: list[int] = []
        rects: list[tuple[float, float, float, float]] = []
        leaves: list[tuple[int, int, tuple[float, float, float, float]]] = []

        stack: list[tuple[int, float, float]] = [(0, 0.0, 0.0)]
        while stack:
            g, ox, oy = stack.pop()
            for ref, (x, y) in rel[g].items():
                w, h = sizes[ref]
                ax, ay = ox + x, oy + y
                if is_group_ref(ref) and ~ref in expanded:
                    refs.append(ref)
                    kinds.append(KIND_FRAME)
                    rects.append((ax, ay, w, h))
                    stack.append((~ref, ax + PAD, ay + HEADER + PAD))
                else:
                    kind = KIND_GROUP if is_group_ref(ref) else KIND_NODE
                    leaves.append((ref, kind, (ax, ay, w, h)))
        for ref, kind, rect in leaves:
            refs.append(ref)
            kinds.append(kind)
            rects.append(rect)
        w0, h0 = sizes.get(~0, (0.0, 0.0))
        self._computed = LayoutResult(
            refs=np.asarray(refs, dtype=np.int32),
            kinds=np.asarray(kinds, dtype=np.uint8),
            rects=np.asarray(rects, dtype=np.float32).reshape(-1, 4),
            width=w0,
            height=h0,
        )
        return self._place(self._computed)

    def replaced(self) -> LayoutResult | None:
        """The last layout with the boxes in `placed` where the user put them, without packing
        again (a drag costs what the dragged boxes cost); None before the first layout."""
        return self._place(self._computed) if self._computed is not None else None

    def _place(self, computed: LayoutResult) -> LayoutResult:
        if not self.placed:
            return computed
        by_key = self.table.by_key
        # a point set in the companion by hand may be no place on the canvas: ignored
        wanted = {by_key[k]: p for k, p in self.placed.items() if k in by_key and _on_canvas(p)}
        rects = computed.rects.copy()
        width, height = computed.width, computed.height
        for row in np.flatnonzero(np.isin(computed.refs, list(wanted))):
            if computed.kinds[row] != KIND_NODE:
                continue
            x, y = wanted[int(computed.refs[row])]
            rects[row, 0], rects[row, 1] = x, y
            width = max(width, float(x) + float(rects[row, 2]))
            height = max(height, float(y) + float(rects[row, 3]))
        return LayoutResult(computed.refs, computed.kinds, rects, width, height)

    def _leaf_size(self, ref: int) -> tuple[float, float]:
        if is_group_ref(ref):
            return GROUP_W, GROUP_H
        if self.table.items[ref].flags & PSEUDO:
            return IO_W, IO_H
        return NODE_W, node_height(self.weight_lines.get(ref, 0))

    def _pack(  # noqa: PLR0917 (recursive helper threading its accumulators)
        self,
        g: int,
        expanded: set[int],
        direction: Direction,
        show_constants: bool,
        sizes: dict[int, tuple[float, float]],
        rel: dict[int, dict[int, tuple[float, float]]],
    ) -> tuple[float, float]:
        units = self.unit_layout(g, show_constants)
        for ref in units:
            if is_group_ref(ref) and ~ref in expanded:
                sizes[ref] = self._pack(~ref, expanded, direction, show_constants, sizes, rel)
            else:
                sizes[ref] = self._leaf_size(ref)
        lr = direction == "LR"
        by_layer: dict[float, list[int]] = {}
        for ref, (layer, _) in units.items():
            by_layer.setdefault(layer, []).append(ref)
        layers = [sorted(by_layer[k], key=lambda r: units[r][1]) for k in sorted(by_layer)]
        in_bands = self._in_bands(g, units, expanded)
        bands = self._bands(g, layers, units, sizes, lr) if in_bands else [layers]
        # bands side by side across the flow (TB: columns, LR: rows), each from the start
        positions: dict[int, tuple[float, float]] = {}
        along = across = 0.0
        for band in bands:
            placed, length, extent = _place_layers(band, units, sizes, lr, len(bands) > 1)
            positions.update({r: (a, across + c) for r, (a, c) in placed.items()})
            along = max(along, length)
            across += extent + GAP_BAND
        across = max(across - GAP_BAND, 0.0)
        rel[g] = {r: ((a, c) if lr else (c, a)) for r, (a, c) in positions.items()}
        content_w, content_h = (along, across) if lr else (across, along)
        size = (
            (content_w + 2 * PAD, content_h + 2 * PAD + HEADER)
            if g != 0
            else (content_w, content_h)
        )
        sizes[~g] = size
        return size

    def _in_bands(
        self,
        g: int,
        units: Mapping[int, tuple[float, float]],
        expanded: set[int],
    ) -> bool:
        """Whether group `g`'s children are laid out in bands: a module outline's top level
        and an opened chain of modules (ConvNeXt's features.0 … features.7), while every module
        open inside is one the first view opened."""
        if not self.band_top:
            return False
        groups = [~r for r in units if is_group_ref(r)]
        opened = [c for c in groups if c in expanded]
        keys = self.opened_in_bands
        if any(self.hierarchy.groups[c].key not in keys for c in opened):
            return False
        return g == 0 or bool(opened) or is_module_chain(len(groups), len(units))

    def _bands(
        self,
        g: int,
        layers: list[list[int]],
        units: Mapping[int, tuple[float, float]],
        sizes: Mapping[int, tuple[float, float]],
        lr: bool,
    ) -> list[list[list[int]]]:
        """Group `g`'s layers cut into consecutive bands (TB: columns, LR: rows) so that they
        fit the room at a legible scale (GPT-2's h.0 … h.11 in three columns, not one 2000 px
        column): the fewest bands that fit, else the best fit."""
        if len(layers) < MIN_BANDED_LAYERS:
            return [layers]
        thickness = [max((sizes[r][0] if lr else sizes[r][1]) for r in layer) for layer in layers]
        depth = len(self.hierarchy.group_chain(g)) - 1
        room_w, room_h = nested_room(self.band_room, depth, PAD, HEADER)
        room_along, room_across = (room_w, room_h) if lr else (room_h, room_w)
        best: list[list[list[int]]] = [layers]
        best_scale = -1.0
        for k in range(1, min(MAX_BANDS, len(layers)) + 1):
            gap = GAP_BAND_LAYER if k > 1 and not lr else GAP_LAYER
            total = sum(thickness) + gap * (len(layers) - 1)
            bands = cut_layers(layers, thickness, shortest_cap(thickness, k, gap, total), gap)
            length = along = 0.0
            for band in bands:
                _, band_length, extent = _place_layers(band, units, sizes, lr, k > 1)
                length = max(length, band_length)
                along += extent + GAP_BAND
            scale = min(room_along / max(length, 1.0), room_across / max(along - GAP_BAND, 1.0))
            if min(scale, 1.0) > best_scale + 1e-6:
                best, best_scale = bands, min(scale, 1.0)
        return best


def _place_layers(
    layers: list[list[int]],
    units: Mapping[int, tuple[float, float]],
    sizes: Mapping[int, tuple[float, float]],
    lr: bool,
    banded: bool = False,
) -> tuple[dict[int, tuple[float, float]], float, float]:
    """(along, across) corner of every box of `layers` (along = the layer axis, x for LR;
    across = the order axis, from 0), the length along and the extent across. In a band, the
    boxes of a layer sit side by side around the band's middle and layers are closer: the
    Sugiyama orders there zig-zag around the long edges of the whole graph (GPT-2's mask feeds
    every block), which would make each band as wide as the graph."""
    unit_across = (NODE_H if lr else NODE_W) + GAP_ORDER
    gap = GAP_BAND_LAYER if banded and not lr else GAP_LAYER
    positions: dict[int, tuple[float, float]] = {}
    along = 0.0
    for members in layers:
        thickness = max((sizes[r][0] if lr else sizes[r][1]) for r in members)
        cursor = -1e18
        if banded:
            span = sum((sizes[r][1] if lr else sizes[r][0]) for r in members)
            cursor = -(span + GAP_ORDER * (len(members) - 1)) / 2
        for ref in members:
            w, h = sizes[ref]
            start = cursor if banded else max(units[ref][1] * unit_across, cursor)
            positions[ref] = (along + (thickness - (w if lr else h)) / 2, start)
            cursor = start + (h if lr else w) + GAP_ORDER
        along += thickness + gap
    if not positions:
        return positions, 0.0, 0.0
    low = min(c for _, c in positions.values())
    extent = max(c - low + (sizes[r][1] if lr else sizes[r][0]) for r, (_, c) in positions.items())
    return (
        {r: (a, c - low) for r, (a, c) in positions.items()},
        max(along - gap, 0.0),
        extent,
    )


def _on_canvas(point: Sequence[float]) -> bool:
    return len(point) == 2 and all(layout_coordinate(v) is not None for v in point)
