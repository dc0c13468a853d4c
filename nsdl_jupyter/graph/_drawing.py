"""The drawing vocabulary (drawing.json) and the rules both renderers follow: colour of a box,
its label text and how it is shortened, overlay colours, and which box draws a hidden item.

js/src/graph_view/vocabulary.ts imports the same JSON and restates these few rules in
TypeScript; tests/test_drawing_parity.py draws one model both ways and compares.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache, cached_property, lru_cache
from typing import Any

import numpy as np
import numpy.typing as npt

from nsdl_jupyter.graph import _vocabulary
from nsdl_jupyter.graph._extract import CONSTANT, GRAPH_INPUT, GRAPH_OUTPUT, PSEUDO, PSEUDO_OPS
from nsdl_jupyter.graph._hierarchy import is_group_ref
from nsdl_jupyter.graph._layout import KIND_GROUP, LayoutResult
from nsdl_jupyter.graph._shapes import TIMES
from nsdl_jupyter.ops import UnknownDomainError, UnknownOperatorError, get_schema

VOCABULARY: dict[str, Any] = _vocabulary.VOCABULARY
COLORMAPS: tuple[str, ...] = tuple(VOCABULARY["colormaps"])


@cache
def op_category(op: str) -> str:
    """Category (ops/_categories.py) of an op label as the graph table writes it
    (``Conv``, ``com.microsoft::FusedMatMul``); "Other" for unknown operators."""
    if op in PSEUDO_OPS.values():  # no schema: the lookup's error message would load onnxruntime
        return "Other"
    domain, _, op_type = op.rpartition("::")
    try:
        return get_schema(op_type, domain, allow_deprecated=True).category
    except (UnknownOperatorError, UnknownDomainError):
        return "Other"


def subgraph_icon(x: float, y: float) -> list[tuple[float, float, float, float, bool]]:
    """The subgraph mark left-centred on (x, y): (x, y, w, h, filled) squares, back first;
    the filled one is painted with the badge's back colour, both are outlined."""
    b = VOCABULARY["badge"]
    size, offset = b["size"], b["offset"]
    top = y - size / 2
    return [(x + offset, top - offset, size, size, False), (x, top, size, size, True)]


def category_fill(category: str) -> str:
    colors: dict[str, str] = VOCABULARY["category"]
    return colors.get(category, colors["Other"])


def font(spec: dict[str, Any], size: float | None = None) -> str:
    """CSS font of a vocabulary text style, as the canvas sets ``ctx.font``."""
    return f"{spec['weight']} {size if size is not None else spec['size']}px {VOCABULARY['font']}"


def colors_at(colormap: str, t: npt.NDArray[np.float64]) -> list[str]:
    """Colours of `t` in [0, 1] on the named map (linear between its stops), as
    ``rgb(r,g,b)``; a value that is not finite takes the low end (colormap.ts colorAt)."""
    maps: dict[str, list[str]] = VOCABULARY["colormaps"]
    stops = maps.get(colormap, maps["viridis"])
    rgb = np.array([[int(s[i : i + 2], 16) for i in (1, 3, 5)] for s in stops], dtype=np.float64)
    u = np.clip(np.where(np.isfinite(t), t, 0.0), 0.0, 1.0) * (len(stops) - 1)
    k = np.minimum(len(stops) - 2, np.floor(u)).astype(np.intp)
    f = (u - k)[:, None]
    a, b = rgb[k], rgb[k + 1]
    # Math.round: halves go up
    c = np.floor(a + (b - a) * f + 0.5).astype(np.int64).tolist()
    return [f"rgb({r},{g},{bl})" for r, g, bl in c]


def color_at(colormap: str, t: float) -> str:
    """Colour of one `t` on the named map (see `colors_at`)."""
    return colors_at(colormap, np.array([t], dtype=np.float64))[0]


def js_round(value: float) -> int:
    """Math.round: halves go up (Python's round goes to even)."""
    return math.floor(value + 0.5)


@lru_cache(maxsize=4096)
def text_on(rgb: str) -> str:
    """Readable text colour on a background made by `color_at`."""
    text = VOCABULARY["text"]
    try:
        r, g, b = (int(v) for v in rgb[4:-1].split(","))
    except ValueError:
        return str(text["dark"])
    return str(
        text["dark"] if 0.299 * r + 0.587 * g + 0.114 * b > text["lightBelow"] else text["light"]
    )


def fit_text(text: str, width: float, char_width: float) -> str:
    """`text` cut with an ellipsis to about `width` pixels."""
    room = math.floor(width / char_width)
    if len(text) <= room:
        return text
    return text[: room - 1] + VOCABULARY["label"]["ellipsis"] if room > 1 else ""


def fit_shape(shape: str, width: float, char_width: float) -> str:
    """A tensor shape (`batch_sizex16x64`) in about `width` pixels: its named dims cut with an
    ellipsis, longest first (`batch_s…x16x64`), so the numbers stay whole; where even that
    does not fit, the shape cut at its end (`fit_text`). vocabulary.ts fitShape does the
    same."""
    room = math.floor(width / char_width)
    excess = len(shape) - room
    if excess <= 0:
        return shape
    dims = shape.split(TIMES)
    ellipsis = VOCABULARY["label"]["ellipsis"]
    for k in sorted(range(len(dims)), key=lambda k: -len(dims[k])):
        kept = max(1, len(dims[k]) - 1 - excess)  # characters left before the ellipsis
        if (dims[k].isascii() and dims[k].isdigit()) or kept >= len(dims[k]) - 1:
            continue
        excess -= len(dims[k]) - kept - 1
        dims[k] = dims[k][:kept] + ellipsis
        if excess <= 0:
            break
    cut = TIMES.join(dims)
    return cut if len(cut) <= room else fit_text(shape, width, char_width)


@dataclass(frozen=True)
class Overlay:
    """Per-item values painted with a colour map between `low` and `high` (NaN: none)."""

    values: npt.NDArray[np.float32]
    colormap: str = "viridis"
    low: float = 0.0
    high: float = 1.0

    @cached_property
    def colors(self) -> list[str | None]:
        """The colour of every item, None where it has no value."""
        values = self.values.astype(np.float64)
        painted = colors_at(self.colormap, (values - self.low) / (self.high - self.low or 1.0))
        return [None if math.isnan(v) else c for v, c in zip(values.tolist(), painted, strict=True)]

    def color(self, item: int) -> str | None:
        return self.colors[item] if item < len(self.values) else None


def box_fill(op: str, flags: int, kind: int, overlay_color: str | None) -> str:
    """Fill of a leaf box: collapsed group, overlay value, pseudo node, constant, op category."""
    if kind == KIND_GROUP:
        return str(VOCABULARY["group"]["fill"])
    if overlay_color is not None:
        return overlay_color
    node = VOCABULARY["node"]["fill"]
    if flags & PSEUDO:
        return str(node["pseudo"])
    if flags & CONSTANT:
        return str(node["constant"])
    return category_fill(op_category(op))


def arrow(flags: int) -> str:
    arrows = VOCABULARY["label"]["arrow"]
    key = "input" if flags & GRAPH_INPUT else "output" if flags & GRAPH_OUTPUT else "outer"
    return str(arrows[key])


def count_text(size: int) -> str:
    return f"{size} node{'' if size == 1 else 's'}"


def edge_tip(name: str, dtype: str, shape: str) -> str:
    """An edge's tooltip: its tensor, element type and shape (tooltip.ts edgeTip)."""
    return f"{name}\n{dtype or 'unknown type'} {shape or 'unknown shape'}"


def text_rows(y: float, h: float, weights: int) -> list[float]:
    """Centre lines of a node box's caption and its `weights` weight lines: one block, centred
    (render.ts textRows)."""
    line = VOCABULARY["weights"]["line"]
    top = y + h / 2 - weights * line / 2
    return [top + k * line for k in range(weights + 1)]


def edge_shape_at(source: Sequence[float], end_x: float, lr: bool) -> tuple[float, float, float]:
    """Where an edge's tensor shape is written, left-aligned and centred on y, and how wide it
    may be: just past its source box (x, y, w, h), in the gap between layers (TB: under the
    box, beside the edge, as wide as the gap to the next box of the layer allows; LR: above the
    edge, as wide as the gap to the next layer, ending before the edge's end at `end_x`), so
    that it never lies on a box, a group title or another label (render.ts edgeShapeAt)."""
    spec, gap = VOCABULARY["edgeShape"], VOCABULARY["gap"]
    x, y, w, h = source
    if lr:
        reach = min(end_x - x - w, gap["layer"]) if end_x > x + w else gap["layer"]
        return x + w + spec["pad"], y + h / 2 + spec["dy"], reach - 2 * spec["pad"]
    top = y + h + spec["pad"] + spec["size"] / 2
    return x + w / 2 + spec["dx"], top, w / 2 - spec["dx"] + gap["order"] - spec["pad"]


def representatives(
    item_group: list[int], group_parent: list[int], result: LayoutResult
) -> npt.NDArray[np.int32]:
    """For every item, the layout slot of the box that draws it: itself, or the collapsed
    group around it; -1 when hidden. js/src/graph_view/graph.ts `representatives` is the same."""
    refs = result.refs.tolist()
    kinds = result.kinds.tolist()
    rep = np.full(len(item_group), -1, dtype=np.int32)
    group_slot: dict[int, int] = {}
    for slot, ref in enumerate(refs):
        if is_group_ref(ref):
            group_slot[~ref] = slot
        else:
            rep[ref] = slot
    known: dict[int, int] = {}

    def of_group(g: int) -> int:
        if g in known:
            return known[g]
        slot = group_slot.get(g)
        if slot is not None:
            found = slot if kinds[slot] == KIND_GROUP else -1
        else:
            found = of_group(group_parent[g]) if g > 0 and group_parent[g] >= 0 else -1
        known[g] = found
        return found

    for item, g in enumerate(item_group):
        if rep[item] < 0 and g >= 0:
            rep[item] = of_group(g)
    return rep
