"""The one Python renderer of a graph: the scene the canvas draws (js/src/graph_view/render.ts)
as SVG at 1 px per layout unit, in the vocabulary of drawing.json. It serves
`GraphView.export_image("x.svg")` and the static HTML picture of a GraphView."""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
import numpy.typing as npt

from nsdl_jupyter._display import html_text
from nsdl_jupyter.graph._badges import pill_rect, pills
from nsdl_jupyter.graph._drawing import (
    VOCABULARY,
    Overlay,
    arrow,
    box_fill,
    count_text,
    edge_shape_at,
    edge_tip,
    fit_shape,
    fit_text,
    js_round,
    representatives,
    subgraph_icon,
    text_on,
    text_rows,
)
from nsdl_jupyter.graph._extract import FUNCTION_CALL, HAS_SUBGRAPH, OPTIONAL_INPUT, PSEUDO
from nsdl_jupyter.graph._layout import HEADER, KIND_FRAME, KIND_GROUP, LayoutResult
from nsdl_jupyter.graph._routes import Route, edge_route, frames_of, route_end
from nsdl_jupyter.graph._scene import GraphScene

MARGIN = 20.0
V = VOCABULARY
# op types, tooltips and labels repeat across thousands of boxes
_e = lru_cache(maxsize=8192)(html_text)


@dataclass(frozen=True)
class VisibleEdge:
    src: int  # layout slots
    dst: int
    edge: int  # the first merged edge (its tensor names the tooltip)
    optional: bool  # every merged edge goes to an optional input


def visible_edges(scene: GraphScene, rep: npt.NDArray[np.int32]) -> list[VisibleEdge]:
    """Edges between visible boxes, merged through collapsed groups (graph.ts visibleEdges),
    in the order of their first edge."""
    edges = scene.table.edges
    m = len(edges)
    src = rep[np.fromiter((e.src for e in edges), np.int64, m)].astype(np.int64)
    dst = rep[np.fromiter((e.dst for e in edges), np.int64, m)].astype(np.int64)
    optional = np.fromiter((e.flags & OPTIONAL_INPUT for e in edges), np.int64, m)
    keep = np.flatnonzero((src >= 0) & (dst >= 0) & (src != dst))
    keys = src[keep] * (len(rep) + 1) + dst[keep]
    _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    every = np.ones(len(first), dtype=np.int64)
    np.minimum.at(every, inverse, optional[keep])
    order = np.argsort(first, kind="stable")
    return [
        VisibleEdge(int(src[keep[f]]), int(dst[keep[f]]), int(keep[f]), bool(every[u]))
        for u, f in zip(order.tolist(), first[order].tolist(), strict=True)
    ]


Box = tuple[float, float, float, float]  # x, y, w, h


def _n(v: float) -> str:
    return f"{v:.1f}"


def _path_data(route: Route) -> str:
    """SVG path data of a route: a move, then its cubic segments, per subpath."""
    return " ".join(
        f"M{_n(sub[0])},{_n(sub[1])} "
        + " ".join(
            f"C{_n(sub[k])},{_n(sub[k + 1])} {_n(sub[k + 2])},{_n(sub[k + 3])} "
            f"{_n(sub[k + 4])},{_n(sub[k + 5])}"
            for k in range(2, len(sub), 6)
        )
        for sub in route
    )


def _rect(box: Box, attrs: str) -> str:
    x, y, w, h = box
    return f'<rect x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{h:.1f}" {attrs}/>'


def _text(text: str, at: tuple[float, float], spec: Mapping[str, Any], fill: str) -> str:
    """A line of text centred vertically on `at` (the canvas' textBaseline "middle")."""
    anchor = ' text-anchor="middle"' if spec.get("align") == "center" else ""
    return (
        f'<text x="{at[0]:.1f}" y="{at[1]:.1f}" font-size="{spec["size"]}" '
        f'font-weight="{spec["weight"]}" fill="{fill}" dominant-baseline="central"{anchor}>'
        f"{_e(text)}</text>"
    )


def _subgraph_icon(x: float, y: float) -> str:
    b = V["badge"]
    outline = f'stroke="{b["fill"]}" stroke-width="{b["strokeWidth"]}"'
    return "".join(
        _rect(box[:4], f'fill="{b["back"] if box[4] else "none"}" {outline}')
        for box in subgraph_icon(x, y)
    )


def _radius(r: float, w: float, h: float) -> float:
    """roundRect clamps the corner radius to half the box."""
    return min(r, w / 2, h / 2)


def _width(style: Mapping[str, Any]) -> float:
    """Line width at zoom 1 of a style with a world width and a least width on screen."""
    return float(max(style["width"], style["screenWidth"]))


class _Picture:
    """One drawing: the scene's boxes plus the view state painted over them."""

    def __init__(
        self,
        scene: GraphScene,
        result: LayoutResult,
        selected: Sequence[str],
        marks: Mapping[str, str],
        overlay: Overlay | None,
        *,
        precisions: Mapping[str, str],
    ) -> None:
        self.scene = scene
        self.result = result
        self.rects: list[list[float]] = result.rects.astype(np.float64).tolist()
        self.refs = result.refs.tolist()
        self.kinds = result.kinds.tolist()
        h = scene.hierarchy
        parents = [g.parent for g in h.groups]
        self.rep = representatives(h.item_group, parents, result)
        self.held = frames_of(result, h.item_group, parents)
        self.selected = self.slots_of(selected)
        self.marks: dict[int, str] = {}
        for name, level in marks.items():
            for slot in self.slots_of([name]):
                if self.marks.get(slot) != "error":
                    self.marks[slot] = level
        self.overlay = overlay
        by_key = scene.table.by_key
        self.precisions = {by_key[n]: p for n, p in precisions.items() if n in by_key}
        self.shapes = ""  # tensor shapes on the edges, drawn over the boxes: set by edges()

    def slots_of(self, names: Sequence[str]) -> list[int]:
        by_key, items, rep = self.scene.table.by_key, self.scene.table.items, self.rep
        found = (by_key.get(n) for n in names)
        slots = {
            int(rep[i])
            for i in found
            if i is not None and not items[i].flags & PSEUDO and rep[i] >= 0
        }
        return sorted(slots)

    # ------------------------------------------------------------------ parts
    def frames(self) -> Iterator[str]:
        """Open groups: a tinted frame, its header band and its title."""
        f = V["frame"]
        spec = V["label"]["frame"]
        prefix = V["label"]["expanded"]
        for slot, (ref, kind) in enumerate(zip(self.refs, self.kinds, strict=True)):
            if kind != KIND_FRAME:
                continue
            x, y, w, h = self.rects[slot]
            group = self.scene.hierarchy.groups[~ref]
            r = _radius(f["radius"], w, h)
            label = fit_text(
                f"{prefix}{group.label}  ({count_text(group.size)})",
                w - spec["padLeft"] - spec["padRight"],
                spec["charWidth"],
            )
            box = (x, y, w, h)
            outline = f'fill="none" stroke="{f["stroke"]}" stroke-width="{f["strokeWidth"]}"'
            yield (
                '<g class="nsdl-frame">'
                + _rect(box, f'rx="{_n(r)}" fill="{f["fill"]}"')
                + _rect((x, y, w, min(HEADER, h)), f'fill="{f["header"]}"')
                + _rect(box, f'rx="{_n(r)}" {outline}')
                + _text(label, (x + spec["padLeft"], y + HEADER / 2), spec, f["text"])
                + "</g>"
            )

    def edges(self) -> Iterator[str]:
        """Edges between visible boxes: plain, optional (dashed), touching the selection."""
        e = V["edge"]
        table, chosen = self.scene.table, set(self.selected)
        lr = self.scene.direction == "LR"
        plain: list[str] = []
        optional: list[str] = []
        hot: list[str] = []
        tips: dict[int, str] = {}
        shapes: list[str] = []
        spec = {**V["edgeShape"], "align": "left"}
        labelled: set[int] = set()  # one shape under a box, whatever it fans out to
        for edge in visible_edges(self.scene, self.rep):
            route = edge_route(self.rects, self.held, edge.src, edge.dst, lr)
            index = table.edges[edge.edge].tensor
            dtype, shape = self.scene.tensor_text(index)
            tip = tips.get(index)
            if tip is None:
                tip = tips[index] = _e(edge_tip(table.tensors[index].name, dtype, shape))
            if edge.src not in labelled:
                labelled.add(edge.src)
                x, y, room = edge_shape_at(self.rects[edge.src], route_end(route)[0], lr)
                shape = fit_shape(shape, room, spec["charWidth"])
                if shape:
                    shapes.append(_text(shape, (x, y), spec, spec["fill"]))
            path = f'<path d="{_path_data(route)}"><title>{tip}</title></path>'
            hit = edge.src in chosen or edge.dst in chosen
            (hot if hit else optional if edge.optional else plain).append(path)
        o, h = e["optional"], e["hot"]
        dash = " ".join(str(d) for d in o["dash"])
        yield (
            f'<g class="nsdl-edges" fill="none" stroke="{e["stroke"]}" '
            f'stroke-width="{_width(e)}">{"".join(plain)}</g>'
        )
        yield (
            f'<g class="nsdl-edges-optional" fill="none" stroke="{e["stroke"]}" '
            f'stroke-width="{_width(o)}" stroke-dasharray="{dash}">'
            f"{''.join(optional)}</g>"
        )
        yield (
            f'<g class="nsdl-edges-selected" fill="none" stroke="{V["selection"]["stroke"]}" '
            f'stroke-width="{_width(h)}">{"".join(hot)}</g>'
        )
        self.shapes = f'<g class="nsdl-edge-shapes">{"".join(shapes)}</g>'

    def boxes(self) -> Iterator[str]:
        for slot, (ref, kind) in enumerate(zip(self.refs, self.kinds, strict=True)):
            if kind != KIND_FRAME:
                yield self.box(slot, ref, kind)

    def box(self, slot: int, ref: int, kind: int) -> str:
        """A node, a collapsed group or a graph input/output with its labels."""
        x, y, w, h = self.rects[slot]
        box = (x, y, w, h)
        label, text = V["label"], V["text"]
        if kind == KIND_GROUP:
            group = self.scene.hierarchy.groups[~ref]
            g = V["group"]
            shape = _rect(
                box,
                f'class="nsdl-box" rx="{_n(_radius(g["radius"], w, h))}" fill="{g["fill"]}" '
                f'stroke="{g["stroke"]}" stroke-width="{g["strokeWidth"]}"',
            )
            lines = self.two_lines(
                box, label["collapsed"] + group.label, count_text(group.size), text["dark"]
            )
            return (
                f'<g data-group="{_e(group.key)}"><title>{_e(group.key)}</title>{shape}{lines}</g>'
            )
        item = self.scene.table.items[ref]
        paint = self.overlay.color(ref) if self.overlay is not None else None
        tip = f" ({item.op})"
        fg = text["dark"] if paint is None else text_on(paint)
        if paint is not None and self.overlay is not None:
            tip += f": {float(self.overlay.values[ref]):.6g}"
        node = V["node"]
        pseudo = bool(item.flags & PSEUDO)
        shape = _rect(
            box,
            f'class="nsdl-box" rx="{_n(_radius(h / 2 if pseudo else node["radius"], w, h))}" '
            f'fill="{box_fill(item.op, item.flags, kind, paint)}" stroke="{node["stroke"]}" '
            f'stroke-width="{node["strokeWidth"]}"',
        )
        room = w - label["padLeft"] - label["padRight"]
        if pseudo:
            spec = label["pseudo"]
            line = fit_text(arrow(item.flags) + item.name, room, spec["charWidth"])
            lines = _text(line, (x + label["padLeft"], y + h / 2 + spec["dy"]), spec, fg)
        else:
            lines = self.node_lines(box, ref, fg)
        if not pseudo and item.flags & (HAS_SUBGRAPH | FUNCTION_CALL):
            lines += _subgraph_icon(x + w + V["badge"]["dx"], y + h + V["badge"]["dy"])
        name = _e(item.name)
        return f'<g data-name="{name}"><title>{name}{_e(tip)}</title>{shape}{lines}</g>'

    def node_lines(self, box: Box, ref: int, fg: str) -> str:
        """The caption (``Conv conv1``) over the weights (``W⟨64x3x7x7⟩``), one block."""
        x, y, w, h = box
        label = V["label"]
        room = w - label["padLeft"] - label["padRight"]
        caption, weights = self.scene.texts[ref]
        rows = text_rows(y, h, len(weights))
        x += label["padLeft"]
        t, ws = label["title"], V["weights"]
        out = _text(fit_text(caption, room, t["charWidth"]), (x, rows[0]), t, fg)
        wfg = ws["fill"] if fg == V["text"]["dark"] else fg
        for line, at in zip(weights, rows[1:], strict=True):
            out += _text(fit_text(line, room, ws["charWidth"]), (x, at), ws, wfg)
        return out

    @staticmethod
    def two_lines(box: Box, title: str, sub: str, fg: str) -> str:
        """The title (op, or group name) above the subtitle (node name, or node count)."""
        x, y, w, h = box
        label, text = V["label"], V["text"]
        room = w - label["padLeft"] - label["padRight"]
        t, s = label["title"], label["sub"]
        sub_fg = text["sub"] if fg == text["dark"] else fg
        x += label["padLeft"]
        return _text(
            fit_text(title, room, t["charWidth"]), (x, y + h / 2 + t["dy"]), t, fg
        ) + _text(fit_text(sub, room, s["charWidth"]), (x, y + h / 2 + s["dy"]), s, sub_fg)

    def selection(self) -> Iterator[str]:
        sel = V["selection"]
        pad = sel["pad"]
        attrs = (
            f'class="nsdl-selected" fill="none" stroke="{sel["stroke"]}" '
            f'stroke-width="{_width(sel)}"'
        )
        for slot in self.selected:
            x, y, w, h = self.rects[slot]
            yield _rect((x - pad, y - pad, w + 2 * pad, h + 2 * pad), attrs)

    def problem_marks(self) -> Iterator[str]:
        m = V["mark"]
        r = max(m["radius"], m["screenRadius"])
        spec = {"size": js_round(r * 1.5), "weight": m["weight"], "align": "center"}
        for slot, level in self.marks.items():
            x, y, w, _h = self.rects[slot]
            cx, cy = x + w + m["dx"], y + m["dy"]
            bang = _text("!", (cx, cy + 0.5), spec, m["text"]) if r >= m["minTextRadius"] else ""
            yield (
                f'<g class="nsdl-mark-{_e(level)}"><circle cx="{_n(cx)}" cy="{_n(cy)}" '
                f'r="{_n(r)}" fill="{m.get(level, m["warning"])}"/>{bang}</g>'
            )

    def badges(self) -> Iterator[str]:
        """Pills on nodes: TensorRT layer precision, custom operator (graph/_badges.py)."""
        p = V["pill"]
        spec = {"size": p["size"], "weight": p["weight"], "align": "center"}
        for slot, kind, text in pills(
            self.refs, self.kinds, self.scene.table.items, self.precisions
        ):
            x, y, w, h = pill_rect(kind, text, self.rects[slot])
            shape = f'rx="{_n(_radius(p["radius"], w, h))}" fill="{p[kind]["fill"]}"'
            yield (
                f'<g class="nsdl-pill-{kind}">'
                + _rect((x, y, w, h), shape)
                + _text(text, (x + w / 2, y + h / 2), spec, p["text"])
                + "</g>"
            )

    def initializers(self) -> Iterator[str]:
        """Initializer-fed inputs: small squares on the input side of a box."""
        init = V["initializer"]
        side = init[self.scene.direction]
        own = {ref: slot for slot, ref in enumerate(self.refs) if ref >= 0}
        counts: dict[int, int] = {}
        for item, _tensor, _slot in self.scene.table.initializer_inputs:
            s = own.get(item)
            if s is not None:
                counts[s] = counts.get(s, 0) + 1
        attrs = f'class="nsdl-init" fill="{init["fill"]}"'
        for s, count in counts.items():
            x, y = self.rects[s][:2]
            for j in range(min(count, init["max"])):
                at = (x + side["x"] + j * side["dx"], y + side["y"] + j * side["dy"])
                yield _rect((*at, init["w"], init["h"]), attrs)


def scene_svg(
    scene: GraphScene,
    *,
    result: LayoutResult | None = None,
    selected: Sequence[str] = (),
    marks: Mapping[str, str] | None = None,
    overlay: Overlay | None = None,
    background: str | None = "#ffffff",
    grid: bool = False,
    precisions: Mapping[str, str] | None = None,
) -> str:
    """The drawing of `result` (default: the scene's current layout) as one SVG document at the
    layout's natural size: what the canvas shows at zoom 1, without viewport or hover (edge
    shapes from inference once `scene.infer` ran, as the canvas has them once it asked)."""
    result = scene.layout() if result is None else result
    picture = _Picture(scene, result, selected, marks or {}, overlay, precisions=precisions or {})
    rects = result.rects.astype(np.float64)
    if len(rects):
        x0, y0 = float(rects[:, 0].min()), float(rects[:, 1].min())
        width = float((rects[:, 0] + rects[:, 2]).max()) - x0 + 2 * MARGIN
        height = float((rects[:, 1] + rects[:, 3]).max()) - y0 + 2 * MARGIN
    else:
        x0 = y0 = 0.0
        width = height = 2 * MARGIN
    boxes = sum(1 for k in picture.kinds if k != KIND_FRAME)
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="nsdl-static-graph-svg" '
        f'width="{math.ceil(width)}" height="{math.ceil(height)}" '
        f'viewBox="0 0 {math.ceil(width)} {math.ceil(height)}" '
        f'font-family="{_e(V["font"])}" data-boxes="{boxes}">'
    ]
    if background:
        out.append(f'<rect width="100%" height="100%" fill="{_e(background)}"/>')
    if grid:
        g = V["grid"]
        step = g["step"]
        out.append(
            f'<defs><pattern id="nsdl-grid" width="{step}" height="{step}" '
            f'patternUnits="userSpaceOnUse"><path d="M {step} 0 L 0 0 0 {step}" fill="none" '
            f'stroke="{g["stroke"]}"/></pattern></defs>'
            '<rect width="100%" height="100%" fill="url(#nsdl-grid)"/>'
        )
    out.append(f'<g transform="translate({_n(MARGIN - x0)},{_n(MARGIN - y0)})">')
    out.extend(picture.frames())
    out.extend(picture.edges())
    out.extend(picture.boxes())
    out.append(picture.shapes)
    out.extend(picture.initializers())
    out.extend(picture.selection())
    out.extend(picture.problem_marks())
    out.extend(picture.badges())
    out.append("</g></svg>")
    return "".join(out)
