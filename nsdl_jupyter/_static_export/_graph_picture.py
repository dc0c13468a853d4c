"""The static picture of a GraphView: its last drawing as inline SVG, with what the canvas adds
on top of the plain `scene_svg` export (op-type colours, the overlay and its legend, the
selection, problem marks). Colours and shapes mirror js/src/graph_view/render.ts."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from nsdl_jupyter._display import html_text as _e
from nsdl_jupyter.graph import (
    CONSTANT,
    GRAPH_INPUT,
    GRAPH_OUTPUT,
    HEADER,
    KIND_FRAME,
    KIND_GROUP,
    MARGIN,
    PSEUDO,
    GraphScene,
    LayoutResult,
    is_group_ref,
    short_name,
    visible_edges,
)

# js/src/graph_view/colormap.ts
COLORMAPS: dict[str, tuple[str, ...]] = {
    "viridis": ("#440154", "#3b528b", "#21918c", "#5ec962", "#fde725"),
    "magma": ("#000004", "#51127c", "#b73779", "#fc8961", "#fcfdbf"),
    "reds": ("#fff5f0", "#fcbba1", "#fb6a4a", "#cb181d", "#67000d"),
    "blues": ("#f7fbff", "#c6dbef", "#6baed6", "#2171b5", "#08306b"),
    "coolwarm": ("#3b4cc0", "#8db0fe", "#dddddd", "#f49a7b", "#b40426"),
}
_CATEGORY = (
    (r"^(Conv|ConvTranspose|QLinearConv|ConvInteger)$", "#dbeafe"),
    (r"^(MatMul|Gemm|MatMulInteger|QLinearMatMul|Einsum|Attention|MultiHeadAttention)", "#e0e7ff"),
    (r"(Relu|Sigmoid|Tanh|Gelu|Softmax|LeakyRelu|Elu|Selu|HardSwish|Erf|Clip)", "#fce7f3"),
    (r"(Norm|Normalization)", "#dcfce7"),
    (r"(Pool)", "#cffafe"),
    (
        r"^(Reshape|Transpose|Flatten|Squeeze|Unsqueeze|Concat|Split|Slice|Gather|Expand|Shape"
        r"|Cast)$",
        "#f3f4f6",
    ),
    (r"^(Add|Sub|Mul|Div|Pow|Sqrt|Exp|Log|Neg|Abs|Reciprocal)$", "#fef9c3"),
    (r"^(If|Loop|Scan)$", "#ffedd5"),
)
_CATEGORY_RE = tuple((re.compile(pattern), color) for pattern, color in _CATEGORY)
SELECTION = "#f59e0b"
MAX_PICTURE_BOXES = 3000  # about 1.5 MB of SVG
MARK_COLORS = {"error": "#dc2626", "warning": "#f59e0b"}


def op_color(op: str) -> str:
    bare = op.split("::", 1)[1] if "::" in op else op
    for pattern, color in _CATEGORY_RE:
        if pattern.search(bare):
            return color
    return "#ede9fe"


def color_at(colormap: str, t: float) -> tuple[int, int, int]:
    """Colour of `t` in [0, 1] on the named map, linear between its stops."""
    stops = COLORMAPS.get(colormap, COLORMAPS["viridis"])
    u = min(1.0, max(0.0, t if math.isfinite(t) else 0.0)) * (len(stops) - 1)
    k = min(len(stops) - 2, math.floor(u))
    f = u - k
    a, b = (tuple(int(s[i : i + 2], 16) for i in (1, 3, 5)) for s in stops[k : k + 2])
    r, g, bl = (round(x + (y - x) * f) for x, y in zip(a, b, strict=True))
    return r, g, bl


def _text_on(rgb: tuple[int, int, int]) -> str:
    return "#1f2328" if 0.299 * rgb[0] + 0.587 * rgb[1] + 0.114 * rgb[2] > 140 else "#ffffff"


def _fit(text: str, width: float, char_width: float) -> str:
    room = max(1, int((width - 14) / char_width))
    return text if len(text) <= room else text[: max(0, room - 1)] + "…"


class _Slots:
    """Which drawn box (slot) stands for an item: itself, or the collapsed group around it."""

    def __init__(self, scene: GraphScene, result: LayoutResult) -> None:
        self._scene = scene
        self._kinds = result.kinds
        self._items: dict[int, int] = {}
        self._groups: dict[int, int] = {}
        for slot, ref in enumerate(result.refs.tolist()):
            if is_group_ref(ref):
                self._groups[~ref] = slot
            else:
                self._items[ref] = slot

    def of_item(self, item: int) -> int:
        if item in self._items:
            return self._items[item]
        hierarchy = self._scene.hierarchy
        group = hierarchy.item_group[item]
        while group >= 0:
            slot = self._groups.get(group)
            if slot is not None:
                return slot if self._kinds[slot] == KIND_GROUP else -1
            group = hierarchy.groups[group].parent
        return -1

    def of_names(self, names: Sequence[str]) -> list[int]:
        by_key = self._scene.table.by_key
        slots = (self.of_item(by_key[n]) for n in names if n in by_key)
        return [s for s in slots if s >= 0]


@dataclass
class _Overlay:
    values: npt.NDArray[np.float32] | None
    low: float = 0.0
    span: float = 1.0
    colormap: str = "viridis"

    def color(self, item: int) -> tuple[int, int, int] | None:
        if self.values is None or item >= len(self.values):
            return None
        value = float(self.values[item])
        return (
            color_at(self.colormap, (value - self.low) / self.span)
            if math.isfinite(value)
            else None
        )


def graph_svg(
    scene: GraphScene,
    *,
    selected: Sequence[str] = (),
    marks: Mapping[str, str] | None = None,
    overlay: Mapping[str, Any] | None = None,
    overlay_values: npt.NDArray[np.float32] | None = None,
    grid: bool = False,
    result: LayoutResult | None = None,
) -> str:
    """The drawing (of `result`, default: the scene's current layout) as one SVG element at
    the layout's natural size (1 unit = 1 px)."""
    result = scene.layout() if result is None else result
    rects = result.rects.astype(float)
    if len(rects):
        x0, y0 = float(rects[:, 0].min()), float(rects[:, 1].min())
        width = float((rects[:, 0] + rects[:, 2]).max()) - x0 + 2 * MARGIN
        height = float((rects[:, 1] + rects[:, 3]).max()) - y0 + 2 * MARGIN
    else:
        x0 = y0 = 0.0
        width = height = 2 * MARGIN
    slots = _Slots(scene, result)
    chosen = set(slots.of_names(selected))
    worst: dict[int, str] = {}
    for name, level in (marks or {}).items():
        for slot in slots.of_names([name]):
            if worst.get(slot) != "error":
                worst[slot] = level
    paint = _Overlay(None)
    if overlay and overlay_values is not None:
        low = float(overlay.get("min", 0.0))
        span = float(overlay.get("max", 1.0)) - low or 1.0
        paint = _Overlay(overlay_values, low, span, str(overlay.get("colormap", "viridis")))
    boxes = sum(1 for k in result.kinds.tolist() if k != KIND_FRAME)
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="nsdl-static-graph-svg" '
        f'width="{width:.0f}" height="{height:.0f}" viewBox="0 0 {width:.0f} {height:.0f}" '
        f'font-family="system-ui, -apple-system, Segoe UI, sans-serif" data-boxes="{boxes}">',
        '<rect width="100%" height="100%" fill="#ffffff"/>',
    ]
    if grid:
        out.append(
            '<defs><pattern id="nsdl-grid" width="40" height="40" patternUnits="userSpaceOnUse">'
            '<path d="M 40 0 L 0 0 0 40" fill="none" stroke="#64748b" stroke-opacity="0.15"/>'
            '</pattern></defs><rect width="100%" height="100%" fill="url(#nsdl-grid)"/>'
        )
    out.append(f'<g transform="translate({MARGIN - x0:.1f},{MARGIN - y0:.1f})">')
    out.extend(_frames(scene, result, rects))
    out.extend(_edges(scene, result, rects, chosen))
    for slot, (ref, kind) in enumerate(
        zip(result.refs.tolist(), result.kinds.tolist(), strict=True)
    ):
        if kind != KIND_FRAME:
            out.append(_box(scene, ref, kind, rects[slot], paint))
    for slot in sorted(chosen):
        x, y, w, h = rects[slot]
        out.append(
            f'<rect class="nsdl-selected" x="{x - 3:.1f}" y="{y - 3:.1f}" width="{w + 6:.1f}" '
            f'height="{h + 6:.1f}" fill="none" stroke="{SELECTION}" stroke-width="3"/>'
        )
    for slot, level in worst.items():
        x, y, w, _h = rects[slot]
        out.append(
            f'<g class="nsdl-mark-{_e(level)}"><circle cx="{x + w - 2:.1f}" cy="{y + 2:.1f}" '
            f'r="7" fill="{MARK_COLORS.get(level, SELECTION)}"/><text x="{x + w - 2:.1f}" '
            f'y="{y + 6:.1f}" font-size="11" font-weight="700" fill="#ffffff" '
            f'text-anchor="middle">!</text></g>'
        )
    out.append("</g></svg>")
    return "".join(out)


def _frames(scene: GraphScene, result: LayoutResult, rects: Any) -> list[str]:
    """Open groups: a tinted frame with the group's name in its header."""
    out = []
    for slot, (ref, kind) in enumerate(
        zip(result.refs.tolist(), result.kinds.tolist(), strict=True)
    ):
        if kind != KIND_FRAME:
            continue
        x, y, w, h = rects[slot]
        group = scene.hierarchy.groups[~ref]
        label = _fit(f"\u2212 {group.label}  ({group.size})", w, 7)
        out.append(
            f'<g class="nsdl-frame"><rect x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" '
            f'height="{h:.1f}" rx="8" fill="#6366f1" fill-opacity="0.05" stroke="#4f46e5" '
            f'stroke-opacity="0.35"/><text x="{x + 6:.1f}" y="{y + HEADER / 2 + 4:.1f}" '
            f'font-size="12" font-weight="600" fill="#3730a3">{_e(label)}</text></g>'
        )
    return out


def _edges(scene: GraphScene, result: LayoutResult, rects: Any, chosen: set[int]) -> list[str]:
    """Edges between visible boxes; those touching the selection in the selection colour."""
    table = scene.table
    plain: list[str] = []
    hot: list[str] = []
    lr = scene.direction == "LR"
    for a, b, k in visible_edges(scene, result):
        ax, ay, aw, ah = rects[a]
        bx, by, bw, bh = rects[b]
        if lr:
            x1, y1, x2, y2 = ax + aw, ay + ah / 2, bx, by + bh / 2
            d = max(24.0, abs(x2 - x1) / 2)
            c1, c2 = f"{x1 + d:.1f},{y1:.1f}", f"{x2 - d:.1f},{y2:.1f}"
        else:
            x1, y1, x2, y2 = ax + aw / 2, ay + ah, bx + bw / 2, by
            d = max(24.0, abs(y2 - y1) / 2)
            c1, c2 = f"{x1:.1f},{y1 + d:.1f}", f"{x2:.1f},{y2 - d:.1f}"
        tensor = table.tensors[table.edges[k].tensor]
        path = (
            f'<path d="M{x1:.1f},{y1:.1f} C{c1} {c2} {x2:.1f},{y2:.1f}"><title>'
            f"{_e(tensor.name)} {_e(tensor.dtype)} {_e(tensor.shape)}</title></path>"
        )
        (hot if a in chosen or b in chosen else plain).append(path)
    return [
        '<g fill="none" stroke="#94a3b8" stroke-width="1.2">' + "".join(plain) + "</g>",
        f'<g fill="none" stroke="{SELECTION}" stroke-width="2.2">' + "".join(hot) + "</g>",
    ]


def _box(scene: GraphScene, ref: int, kind: int, rect: Any, paint: _Overlay) -> str:
    """A node, a collapsed group or a graph input/output, coloured like the canvas."""
    x, y, w, h = (float(v) for v in rect)
    fg, sub_fg, stroke, width = "#1f2328", "#57606a", "#64748b", 1.0
    if kind == KIND_GROUP:
        group = scene.hierarchy.groups[~ref]
        size = group.size
        title, sub, tip = f"+ {group.label}", f"{size} node{'' if size == 1 else 's'}", group.key
        fill, stroke, width, name_attr = "#eef2ff", "#4f46e5", 2.0, ""
    else:
        item = scene.table.items[ref]
        rgb = paint.color(ref)
        tip, name_attr = f"{item.name} ({item.op})", f' data-name="{_e(item.name)}"'
        if rgb is not None:
            fill, fg = "rgb({},{},{})".format(*rgb), _text_on(rgb)
            sub_fg = fg if fg != "#1f2328" else sub_fg
            tip += f": {float(paint.values[ref]):.6g}" if paint.values is not None else ""
        elif item.flags & PSEUDO:
            fill = "#f1f5f9"
        elif item.flags & CONSTANT:
            fill = "#f8fafc"
        else:
            fill = op_color(item.op)
        if item.flags & PSEUDO:
            arrow = (
                "▶ " if item.flags & GRAPH_INPUT else "◀ " if item.flags & GRAPH_OUTPUT else "↰ "
            )
            return (
                f'<g{name_attr}><title>{_e(tip)}</title><rect x="{x:.1f}" y="{y:.1f}" '
                f'width="{w:.1f}" height="{h:.1f}" rx="{h / 2:.1f}" fill="{fill}" '
                f'stroke="{stroke}"/><text x="{x + 8:.1f}" y="{y + h / 2 + 4:.1f}" '
                f'font-size="11" font-weight="500" fill="{fg}">'
                f"{_e(_fit(arrow + item.name, w, 6.2))}</text></g>"
            )
        title, sub = item.op, short_name(item.name)
    return (
        f'<g{name_attr}><title>{_e(tip)}</title><rect x="{x:.1f}" y="{y:.1f}" '
        f'width="{w:.1f}" height="{h:.1f}" rx="6" fill="{fill}" stroke="{stroke}" '
        f'stroke-width="{width:g}"/><text x="{x + 8:.1f}" y="{y + h / 2 - 3:.1f}" '
        f'font-size="12" font-weight="600" fill="{fg}">{_e(_fit(title, w, 7))}</text>'
        f'<text x="{x + 8:.1f}" y="{y + h / 2 + 11:.1f}" font-size="11" fill="{sub_fg}">'
        f"{_e(_fit(sub, w, 6.2))}</text></g>"
    )


def legend_html(overlay: Mapping[str, Any]) -> str:
    stops = ", ".join(COLORMAPS.get(str(overlay.get("colormap")), COLORMAPS["viridis"]))
    low, high = float(overlay.get("min", 0.0)), float(overlay.get("max", 1.0))
    return (
        '<div class="nsdl-static-legend" style="display:flex;align-items:center;gap:6px;'
        'font-size:12px;margin:4px 0">'
        f"<span>{_e(overlay.get('label') or 'value')}</span><span>{low:.4g}</span>"
        f'<span style="display:inline-block;width:160px;height:10px;border-radius:2px;'
        f'background:linear-gradient(to right, {stops})"></span><span>{high:.4g}</span></div>'
    )


# Optional: where scripts run, bring the selection into view as the live widget does; the
# picture itself needs no JavaScript.
_SCROLL_TO_SELECTION = (
    "<script>(function (s) { var box = s && s.previousElementSibling;"
    " var hit = box && box.querySelector('.nsdl-selected'); if (!hit) return;"
    " var b = box.getBoundingClientRect(), r = hit.getBoundingClientRect();"
    " box.scrollLeft += r.left - b.left - (b.width - r.width) / 2;"
    " box.scrollTop += r.top - b.top - (b.height - r.height) / 2;"
    " })(document.currentScript);</script>"
)


@dataclass(frozen=True)
class GraphViewState:
    """What a GraphView shows now, as its static picture needs it (`GraphView.picture_state()`)."""

    scene: GraphScene
    selected: tuple[str, ...]
    marks: Mapping[str, str]
    overlay: Mapping[str, Any]
    overlay_values: bytes  # little-endian float32, one per overlay key
    show_grid: bool
    height: int


def graph_view_html(view: GraphViewState) -> str:
    """What a GraphView shows now, as HTML that needs no JavaScript: the SVG in a scroll box of
    the widget's height, the overlay legend and a one-line caption."""
    scene = view.scene
    overlay = dict(view.overlay)
    raw = view.overlay_values
    values = np.frombuffer(raw, dtype="<f4") if overlay and raw else None
    result = scene.layout()
    boxes = int((result.kinds != KIND_FRAME).sum())
    note = ""
    if boxes > MAX_PICTURE_BOXES:
        # tens of thousands of open boxes make a picture of many megabytes that nobody reads:
        # draw the default overview (big groups closed) and say so
        result = scene.engine.layout(
            scene.default_expanded(), scene.direction, scene.show_constants
        )
        note = f" · {boxes} boxes are open in the view, the picture shows groups closed"
    svg = graph_svg(
        scene,
        selected=list(view.selected),
        marks=dict(view.marks),
        overlay=overlay,
        overlay_values=values,
        grid=bool(view.show_grid),
        result=result,
    )
    natural = float(svg.split('width="', 1)[1].split('"', 1)[0])
    # fit the width when that keeps 3/4 of the size (text stays readable), else scroll
    style = f"width:max(100%, {natural * 0.75:.0f}px);max-width:{natural:.0f}px;height:auto"
    svg = svg.replace("<svg ", f'<svg style="{style}" ', 1)
    nodes = sum(1 for item in scene.table.items if item.alive and item.is_node)
    caption = f"{nodes} nodes"
    if view.selected:
        caption += " · selected: " + ", ".join(view.selected[:5])
        caption += " …" if len(view.selected) > 5 else ""
    caption += note
    return (
        '<div class="nsdl-static-graph">'
        f'<div style="max-height:{int(view.height)}px;overflow:auto;border:1px solid #d0d7de;'
        f'border-radius:4px;background:#fff">{svg}</div>'
        + (_SCROLL_TO_SELECTION if view.selected else "")
        + (legend_html(overlay) if values is not None else "")
        + f'<div class="nsdl-static-caption">{_e(caption)} · static picture of the graph '
        "(interactive in Jupyter)</div></div>"
    )
