"""Name-scope hierarchy of a graph's items, with oversized levels grouped further.

Group 0 is the root (never drawn). Children of a group are stored as *item refs*: a node item
``i`` is ``i`` and a group ``g`` is ``~g`` (negative), in order of first appearance, which is
topological because ONNX graphs list nodes topologically.
"""

from __future__ import annotations

import itertools
from collections import Counter
from dataclasses import dataclass, field

from nsdl_jupyter.graph._extract import CONSTANT, GraphTable, short_name

# no level of the drawing shows more boxes than this side by side
MAX_CHILDREN = 48


def group_ref(group: int) -> int:
    return ~group


def is_group_ref(ref: int) -> bool:
    return ref < 0


@dataclass
class Group:
    key: str  # stable id: "/encoder/layer.3", range groups "/encoder#2"; root ""
    label: str
    parent: int
    children: list[int] = field(default_factory=list)  # item refs
    size: int = 0  # descendant items (nodes and graph I/O)
    synthetic: bool = False  # a range of siblings rather than a name scope


@dataclass
class Hierarchy:
    groups: list[Group]
    item_group: list[int]  # item index -> its group

    def chain(self, item: int) -> list[int]:
        """Groups from the root down to the group holding `item`."""
        chain: list[int] = []
        group = self.item_group[item]
        while group >= 0:
            chain.append(group)
            group = self.groups[group].parent
        chain.reverse()
        return chain

    def group_chain(self, group: int) -> list[int]:
        chain: list[int] = []
        while group >= 0:
            chain.append(group)
            group = self.groups[group].parent
        chain.reverse()
        return chain

    def by_key(self) -> dict[str, int]:
        return {g.key: i for i, g in enumerate(self.groups)}

    def first_item(self, ref: int) -> int:
        """Smallest item index under `ref` (its position in topological order)."""
        while is_group_ref(ref):
            children = self.groups[~ref].children
            if not children:
                return 1 << 30
            ref = min(children, key=lambda r: r if r >= 0 else self.first_item(r))
        return ref


def build_hierarchy(table: GraphTable, max_children: int = MAX_CHILDREN) -> Hierarchy:
    groups = [Group(key="", label="", parent=-1)]
    index: dict[tuple[str, ...], int] = {(): 0}
    item_group = [0] * len(table.items)
    for i, item in enumerate(table.items):
        if not item.alive:
            item_group[i] = -1
            continue
        parent = index.get(item.scope)  # most items share their scope with one before
        if parent is None:
            parent = 0
            for depth in range(1, len(item.scope) + 1):
                path = item.scope[:depth]
                g = index.get(path)
                if g is None:
                    g = len(groups)
                    groups.append(Group(key="/" + "/".join(path), label=path[-1], parent=parent))
                    groups[parent].children.append(~g)
                    index[path] = g
                parent = g
        groups[parent].children.append(i)
        item_group[i] = parent
    hierarchy = Hierarchy(groups, item_group)
    _inline_trivial(hierarchy, table)
    _inline_a_whole_model_module(hierarchy, table)
    _order_by_first_compute(hierarchy, table)
    _split_oversized(hierarchy, table, max_children)
    _count_sizes(hierarchy)
    return _compact(hierarchy)


def _inline_trivial(h: Hierarchy, table: GraphTable) -> None:
    """A scope holding a single box is noise: put that box in the parent instead (with the
    constants and weight aliases that feed it). A scope holding one scope only is merged with
    it ("model/encoder")."""
    for g in range(len(h.groups) - 1, 0, -1):
        group = h.groups[g]
        shown = [
            c for c in group.children if is_group_ref(c) or not table.items[c].flags & CONSTANT
        ]
        if len(shown) != 1 or (is_group_ref(shown[0]) and len(group.children) != 1):
            continue
        (child,) = shown
        parent = h.groups[group.parent]
        position = parent.children.index(~g)
        if is_group_ref(child):
            inner = h.groups[~child]
            inner.label = f"{group.label}/{inner.label}"
            inner.parent = group.parent
        for ref in group.children:
            if not is_group_ref(ref):
                h.item_group[ref] = group.parent
        parent.children[position : position + 1] = group.children
        group.children = []
        group.parent = -2  # dead, dropped by _compact


def _inline_a_whole_model_module(h: Hierarchy, table: GraphTable) -> None:
    """One module around everything (a wrapper such as HF's `model`) is the model itself: its
    children go to the top level, so the first view shows embeddings, encoder, pooler."""
    root = h.groups[0]
    groups = [ref for ref in root.children if is_group_ref(ref)]
    if len(groups) != 1 or h.groups[~groups[0]].synthetic:
        return
    if any(not is_group_ref(r) and table.items[r].is_node for r in root.children):
        return  # nodes beside it (a stem, a head): it is one module among others
    (ref,) = groups
    wrapper = h.groups[~ref]
    position = root.children.index(ref)
    for child in wrapper.children:
        if is_group_ref(child):
            h.groups[~child].parent = 0
        else:
            h.item_group[child] = 0
    root.children[position : position + 1] = wrapper.children
    wrapper.children = []
    wrapper.parent = -2


def _order_by_first_compute(h: Hierarchy, table: GraphTable) -> None:
    """Children in the order of their first node that computes (not of a constant or weight
    alias, which exporters write first): conv1 … layer1 … layer4 → fc."""
    rank: dict[int, int] = {}

    def first(ref: int) -> int:
        if not is_group_ref(ref):
            return ref if not table.items[ref].flags & CONSTANT else len(table.items) + ref
        if ref not in rank:
            children = h.groups[~ref].children
            rank[ref] = min((first(c) for c in children), default=2 * len(table.items))
        return rank[ref]

    for group in h.groups:
        if group.parent != -2 and len(group.children) > 1:
            group.children.sort(key=first)


def _split_oversized(h: Hierarchy, table: GraphTable, max_children: int) -> None:
    """Levels with more than `max_children` boxes shown (constants and weight aliases, hidden by
    default, do not count) are cut into ranges of siblings. A level holding modules keeps them
    and cuts only its longest runs of loose nodes, where that is enough (a detection model's
    post-processing between its `head` and `anchor_generator`): it stays an outline of its
    modules."""
    pending = [g for g, group in enumerate(h.groups) if group.parent != -2]
    while pending:
        g = pending.pop()
        group = h.groups[g]
        children = group.children
        shown = [is_group_ref(c) or not table.items[c].flags & CONSTANT for c in children]
        if sum(shown) <= max_children:
            continue
        parts = _loose_runs_cut(h, children, shown, max_children) or [
            (start, end, True) for start, end in _even_cut(shown, max_children)
        ]
        new_children: list[int] = []
        for k, (start, end, wrapped) in enumerate(parts):
            part = children[start:end]
            if not wrapped:  # a module, or a loose node left as it is
                new_children.extend(part)
                continue
            r = len(h.groups)
            named = [ref for ref, counted in zip(part, shown[start:end], strict=True) if counted]
            label = f"{_ref_label(h, table, named[0])} … {_ref_label(h, table, named[-1])}"
            h.groups.append(
                Group(key=f"{group.key}#{k}", label=label, parent=g, children=part, synthetic=True)
            )
            for ref in part:
                if is_group_ref(ref):
                    h.groups[~ref].parent = r
                else:
                    h.item_group[ref] = r
            new_children.append(~r)
        group.children = new_children
        pending.append(g)  # more chunks than max_children: split again one level up


def _even_cut(shown: list[bool], max_children: int) -> list[tuple[int, int]]:
    """Consecutive slices of about equal numbers of shown boxes, each a range."""
    n_chunks = -(-sum(shown) // max_children)
    chunk = -(-sum(shown) // n_chunks)
    cuts = [0]
    count = 0
    for position, counted in enumerate(shown):
        if counted:
            if count and count % chunk == 0:
                cuts.append(position)
            count += 1
    cuts.append(len(shown))
    return list(itertools.pairwise(cuts))


def _loose_runs_cut(
    h: Hierarchy, children: list[int], shown: list[bool], max_children: int
) -> list[tuple[int, int, bool]] | None:
    """Slices of `children`, each with whether it becomes a range: the modules and the short
    runs of loose nodes stay as they are, the longest runs become ranges (of at most
    `max_children` shown boxes) until the level fits; None when it holds no module or cutting
    its runs cannot make it fit."""
    module = [is_group_ref(c) and not h.groups[~c].synthetic for c in children]
    if not any(module):
        return None
    runs: list[tuple[int, int]] = []  # maximal runs of non-module children
    start = None
    for position, is_module in enumerate([*module, True]):
        if not is_module and start is None:
            start = position
        elif is_module and start is not None:
            runs.append((start, position))
            start = None
    total = sum(shown)
    cut: dict[tuple[int, int], list[tuple[int, int]]] = {}
    for run in sorted(runs, key=lambda r: -sum(shown[r[0] : r[1]])):
        if total <= max_children:
            break
        counted = sum(shown[run[0] : run[1]])
        if counted < 2:
            break
        slices = [
            (run[0] + a, run[0] + b) for a, b in _even_cut(shown[run[0] : run[1]], max_children)
        ]
        cut[run] = slices
        total += len(slices) - counted
    if total > max_children:
        return None
    parts: list[tuple[int, int, bool]] = []
    position = 0
    for run in runs:
        parts.append((position, run[0], False))
        parts.extend((a, b, True) for a, b in cut.get(run, []))
        if run not in cut:
            parts.append((run[0], run[1], False))
        position = run[1]
    parts.append((position, len(children), False))
    return [(a, b, wrapped) for a, b, wrapped in parts if b > a]


def _ref_label(h: Hierarchy, table: GraphTable, ref: int) -> str:
    if is_group_ref(ref):
        return h.groups[~ref].label.split(" … ")[0]
    return short_name(table.items[ref].name)


def _count_sizes(h: Hierarchy) -> None:
    """Each group's size: the items in it plus its child groups' sizes, deepest first (not one
    walk up the chain per item)."""
    sizes = [0] * len(h.groups)
    for g, count in Counter(h.item_group).items():
        if g >= 0:
            sizes[g] = count
    depth = [len(h.group_chain(g)) for g in range(len(h.groups))]
    for g in sorted(range(len(h.groups)), key=depth.__getitem__, reverse=True):
        parent = h.groups[g].parent
        if parent >= 0:
            sizes[parent] += sizes[g]
    for group, size in zip(h.groups, sizes, strict=True):
        group.size = size


def _compact(h: Hierarchy) -> Hierarchy:
    """Drop merged groups and renumber the rest (children refs and item_group follow)."""
    alive = [g for g, group in enumerate(h.groups) if group.parent != -2]
    new_index = {old: new for new, old in enumerate(alive)}
    groups: list[Group] = []
    for old in alive:
        group = h.groups[old]
        groups.append(
            Group(
                key=group.key,
                label=group.label,
                parent=new_index[group.parent] if group.parent >= 0 else -1,
                children=[ref if ref >= 0 else ~new_index[~ref] for ref in group.children],
                size=group.size,
                synthetic=group.synthetic,
            )
        )
    item_group = [new_index[g] if g >= 0 else -1 for g in h.item_group]
    return Hierarchy(groups, item_group)
