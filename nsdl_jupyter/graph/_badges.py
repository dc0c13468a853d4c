"""Badges on boxes: the TensorRT precision pill of a node with a layer precision constraint
(top right) and the "custom" pill of an operator without a schema (top left).

Geometry in the vocabulary's `pill` entry; js/src/graph_view/badges.ts restates `pill_rect`
for the canvas (drawing and the click that opens the precision chooser), and
tests/test_drawing_parity.py compares both renderers.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Literal

from nsdl_jupyter.graph._drawing import VOCABULARY
from nsdl_jupyter.graph._extract import CUSTOM_OP, PSEUDO, Item
from nsdl_jupyter.graph._layout import KIND_NODE

PillKind = Literal["precision", "custom"]
Rect = tuple[float, float, float, float]


def pill_rect(kind: PillKind, text: str, box: Sequence[float]) -> Rect:
    """x, y, w, h of a pill saying `text` on the box (x, y, w, h): it straddles the top edge,
    the precision one anchored right (clear of the problem mark), the custom one left."""
    p = VOCABULARY["pill"]
    x, y, w, _h = box
    width = len(text) * p["charWidth"] + 2 * p["padX"]
    left = x + w + p["precision"]["right"] - width if kind == "precision" else x + p[kind]["left"]
    return (left, y + p["dy"], width, float(p["h"]))


def pills(
    refs: Sequence[int],
    kinds: Sequence[int],
    items: Sequence[Item],
    precisions: Mapping[int, str],
) -> Iterator[tuple[int, PillKind, str]]:
    """(slot, kind, text) of every pill on a drawn node: `precisions` maps an item to its
    constraint; a node hidden in a collapsed group shows none."""
    for slot, (ref, kind) in enumerate(zip(refs, kinds, strict=True)):
        if kind != KIND_NODE or ref < 0 or items[ref].flags & PSEUDO:
            continue
        if items[ref].flags & CUSTOM_OP:
            yield slot, "custom", VOCABULARY["pill"]["custom"]["label"]
        precision = precisions.get(ref)
        if precision:
            yield slot, "precision", precision
