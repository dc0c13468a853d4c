"""Bands: a long chain of modules cut into columns (top-down) or rows (left to right) that fit
the view at a legible scale, and which modules the first view opens so that the screen holds
more than a few boxes.

The room a band fills is the widget's canvas (its real size, sent by the browser; until then
the default GraphView's) less the renderer's margins, at a scale a little above the one that
keeps labels legible (renderer.ts READABLE): a taller widget gives longer columns, fewer bands.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nsdl_jupyter.graph._vocabulary import VOCABULARY

if TYPE_CHECKING:
    from nsdl_jupyter.graph._layout import Direction, LayoutEngine

# the default GraphView's canvas (its height 560 px) in JupyterLab at 1280x800 with the file
# browser open, measured by tests/ui/test_graph_first_screen_ui.py
CANVAS_W, CANVAS_H = 846.0, 510.0
WIDGET_H = 560.0  # GraphView.height by default: the toolbar and the line below take the rest
# as renderer.ts READABLE: margins, the breadcrumb over the canvas's top, the least label size
_CANVAS = VOCABULARY["canvas"]
MARGIN, TOP = float(_CANVAS["fit"]["margin"]), float(_CANVAS["breadcrumb"])
LEGIBLE_PX = float(_CANVAS["fit"]["legiblePx"])
LABEL_PX = float(min(VOCABULARY["label"]["title"]["size"], VOCABULARY["label"]["sub"]["size"]))
SLACK = 1.015  # bands fill the room at a scale this much above the legible one
# a canvas reported smaller (hidden, collapsed output) is not a room (view.ts does not report it)
MIN_CANVAS_H = float(_CANVAS["minHeight"])
MIN_BANDED_LAYERS, MAX_BANDS = 4, 12
# a first view with fewer boxes than this is mostly empty canvas: it opens the largest module
# while the whole drawing stays legible (ConvNeXt's 5-box outline opens `features`)
FEW_BOXES = 16
MAX_OPENS = 4  # modules opened one inside another at most (ViT: encoder, then its layers)


def band_room(canvas_w: float = CANVAS_W, canvas_h: float = CANVAS_H) -> tuple[float, float]:
    """(width, height) in layout px that a canvas of that size shows at the banding scale."""
    scale = LEGIBLE_PX / LABEL_PX * SLACK
    return (max(canvas_w - 2 * MARGIN, 1.0) / scale, max(canvas_h - TOP - 2 * MARGIN, 1.0) / scale)


def canvas_height(widget_height: float) -> float:
    """The canvas height of a GraphView `widget_height` px high (before the browser says)."""
    return max(widget_height - (WIDGET_H - CANVAS_H), MIN_CANVAS_H)


def nested_room(
    room: tuple[float, float], depth: int, pad: float, header: float
) -> tuple[float, float]:
    """The room inside a frame `depth` levels down: each level's padding and title cut it."""
    return (
        max(room[0] - 2 * pad * depth, 1.0),
        max(room[1] - (2 * pad + header) * depth, 1.0),
    )


def is_module_chain(groups: int, children: int) -> bool:
    """An opened module whose inside is mostly modules, enough to be worth cutting."""
    return groups >= MIN_BANDED_LAYERS and 2 * groups >= children


def shortest_cap(thickness: list[float], k: int, gap: float, total: float) -> float:
    """The least band length that cuts layers of `thickness` into at most `k` bands (greedy
    filling is optimal for consecutive cuts: bisect on the length)."""
    low, high = max(thickness), total
    for _ in range(32):
        cap = (low + high) / 2
        bands, length = 1, 0.0
        for t in thickness:
            if length and length + t > cap:
                bands, length = bands + 1, 0.0
            length += t + gap
        low, high = (cap, high) if bands > k else (low, cap)
    return high


def cut_layers(
    layers: list[list[int]], thickness: list[float], most: float, gap: float
) -> list[list[list[int]]]:
    """Consecutive layers in bands about `most` long (a band holds at least one layer)."""
    bands: list[list[list[int]]] = [[]]
    length = 0.0
    for layer, t in zip(layers, thickness, strict=True):
        if bands[-1] and length + t > most + 1e-6:
            bands.append([])
            length = 0.0
        bands[-1].append(layer)
        length += t + gap
    return bands


def first_screen_opens(
    engine: LayoutEngine, direction: Direction, show_constants: bool
) -> set[int]:
    """The modules a module outline's first view opens: the largest closed one, again and
    again, while the screen holds fewer than FEW_BOXES boxes (at most MAX_OPENS); the last
    opening whose whole drawing fits the room (every label legible) is kept. Their insides and
    their parents are laid out in bands."""
    # imported here: _layout imports this module
    from nsdl_jupyter.graph._layout import KIND_FRAME, KIND_GROUP

    groups = engine.hierarchy.groups
    room_w, room_h = engine.band_room
    opened: list[int] = []
    kept: list[int] = []
    result = engine.layout({0}, direction, show_constants)
    for _ in range(MAX_OPENS):
        closed = [~int(r) for r in result.refs[result.kinds == KIND_GROUP]]
        if not closed or int((result.kinds != KIND_FRAME).sum()) >= FEW_BOXES:
            break
        opened.append(max(closed, key=lambda c: groups[c].size))
        engine.opened_in_bands = frozenset(groups[c].key for c in opened)
        result = engine.layout({0, *opened}, direction, show_constants)
        if result.width <= room_w and result.height <= room_h:
            kept = list(opened)
    engine.opened_in_bands = frozenset(groups[c].key for c in kept)
    return set(kept)
