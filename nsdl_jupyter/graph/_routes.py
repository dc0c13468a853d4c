"""Edge routes: the line each edge is drawn along, from the laid-out boxes. The SVG renderer
draws them; js/src/graph_view/routes.ts computes the same for the canvas.

An edge between two boxes of one frame is one cubic curve along the flow. An edge into (out
of) opened frames bends between the outermost frames it enters (leaves) and crosses each
frame's border along the flow, at the frame's start (end), level by level inside:

- straight on to the next box inside, when nothing lies in between;
- else, for the edge's own box, through a lane in the frame's margin on the side away from
  the title, then across into the box, when nothing lies on that way;
- else, when frames inside lie on the way (the modules before the one it enters), round them
  along a lane in the frame's margin;
- else straight through the frame's title bar and margin, then curving to the next box.

Between its frames, too, an edge goes round the opened frames it would pass through (a
residual connection over an opened module, a mask feeding a late layer): along the lane of
the frame around them, or beside them at the top level, so that it does not run along their
title bars for a long way (where it would not be drawn, see below).

No part of a route is drawn where it passes the title bar of an opened frame: one the edge
enters or leaves (top-down, the title bar lies across the way in) or one it jumps over (a long
edge across a module drawn between its ends). The line stops at the bar's border and goes on
past it, so that no edge is drawn over a title.
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from nsdl_jupyter.graph._hierarchy import is_group_ref
from nsdl_jupyter.graph._layout import HEADER, KIND_FRAME, PAD, LayoutResult
from nsdl_jupyter.graph._vocabulary import VOCABULARY

Box = Sequence[float]  # x, y, w, h
Point = tuple[float, float]
# subpaths: [x0, y0, then (c1x, c1y, c2x, c2y, x, y) per cubic segment]; a straight segment is
# a cubic with its control points on its ends
Route = list[list[float]]
LANE = PAD / 2  # a lane runs in the middle of a frame's margin; its corners have this radius


@dataclass(frozen=True)
class Frames:
    """Which frames (opened groups) hold which boxes, by layout slot (routes.ts FrameIndex)."""

    chains: list[list[int]]  # per slot: the frames around it, outermost first
    children: dict[int, list[int]]  # per frame: the boxes and frames right inside it
    # per frame, and -1 for the top level: the frames right inside it
    nested: dict[int, list[int]] = field(default_factory=dict)
    # per (frame or -1, lr): its `nested` sorted by where they start along the flow, and those
    # starts (filled by the routes as they need them)
    by_start: dict[tuple[int, bool], tuple[list[float], list[int]]] = field(
        default_factory=dict, compare=False, repr=False
    )


def frames_of(
    result: LayoutResult, item_group: Sequence[int], group_parent: Sequence[int]
) -> Frames:
    """Per slot, the frames around it; per frame, the slots right inside it (routes.ts
    frameIndex)."""
    refs = result.refs.tolist()
    kinds = result.kinds.tolist()
    frame_of = {~r: s for s, (r, k) in enumerate(zip(refs, kinds, strict=True)) if k == KIND_FRAME}
    chains: list[list[int]] = []
    children: dict[int, list[int]] = {}
    nested: dict[int, list[int]] = {}
    for slot, ref in enumerate(refs):
        g = group_parent[~ref] if is_group_ref(ref) else item_group[ref]
        chain: list[int] = []
        while g >= 0:
            if g in frame_of:
                chain.append(frame_of[g])
            g = group_parent[g]
        chains.append(chain[::-1])
        if chain:
            children.setdefault(chain[0], []).append(slot)
        if kinds[slot] == KIND_FRAME:
            nested.setdefault(chain[0] if chain else -1, []).append(slot)
    return Frames(chains, children, nested)


class _Flow(NamedTuple):
    """A box in flow coordinates: u along the flow, v across it."""

    u: float
    v: float
    length: float
    width: float


def _holds(frame: Box, box: Box) -> bool:
    """A frame holds a box lying inside its rectangle (a node dragged out of it is not held)."""
    x, y, w, h = frame
    bx, by, bw, bh = box
    return x <= bx and y <= by and bx + bw <= x + w and by + bh <= y + h


def _line(p: Point, q: Point) -> list[float]:
    return [*p, *p, *q, *q]


def _along(p: Point, q: Point) -> list[float]:
    """The cubic from p to q leaving and arriving along the flow."""
    d = max(float(VOCABULARY["edge"]["bend"]), abs(q[0] - p[0]) / 2)
    return [*p, p[0] + d, p[1], q[0] - d, q[1], *q]


def _clear_along(others: list[_Flow], u0: float, u1: float, v: float) -> bool:
    """Nothing of `others` on the way along from u0 to u1 at v."""
    return not any(o.u < u1 and u0 < o.u + o.length and o.v < v < o.v + o.width for o in others)


def _clear_across(others: list[_Flow], u: float, v0: float, v1: float) -> bool:
    return not any(o.v < v1 and v0 < o.v + o.width and o.u < u < o.u + o.length for o in others)


def _passes(curve: list[float], box: _Flow) -> bool:
    """The cubic (flow coordinates) passes through the box: a point of it, sampled finer than
    a box is long, lies inside."""
    steps = max(8, math.ceil(abs(curve[6] - curve[0]) / max(box.length, 1.0)) * 4)
    for k in range(1, steps):
        u, v = _blossom(curve, k / steps, k / steps, k / steps)
        if box.u < u < box.u + box.length and box.v < v < box.v + box.width:
            return True
    return False


class _Router:
    """One edge's way into and out of its frames, in flow coordinates."""

    def __init__(self, rects: Sequence[Box], frames: Frames, lr: bool) -> None:
        self.rects, self.frames, self.lr = rects, frames, lr

    def flow(self, slot: int) -> _Flow:
        x, y, w, h = self.rects[slot]
        return _Flow(x, y, w, h) if self.lr else _Flow(y, x, h, w)

    def inside(self, frame: int, but: int) -> list[_Flow]:
        return [self.flow(s) for s in self.frames.children.get(frame, []) if s != but]

    def lanes(self, box: _Flow) -> tuple[float, float]:
        """The least and most v of a way inside `box`: in its margins, clear of its title."""
        return box.v + LANE + (HEADER if self.lr else 0.0), box.v + box.width - LANE

    def starts(self, parent: int) -> tuple[list[float], list[int]]:
        """The frames right inside `parent` in the order they start along the flow, and their
        starts."""
        key = (parent, self.lr)
        if key not in self.frames.by_start:
            slots = sorted(self.frames.nested.get(parent, []), key=lambda f: self.flow(f).u)
            self.frames.by_start[key] = ([self.flow(f).u for f in slots], slots)
        return self.frames.by_start[key]

    def round(self, parent: int, p: Point, q: Point) -> list[list[float]] | None:
        """The way along from `p` to `q` inside `parent` (-1: the top level) round the frames
        right inside it that the curve between them would pass through, or None when it
        passes none: along the parent's lane (at the top level, the line beside those
        frames) on the side nearer the ends. A point on the parent's border (`p` at its
        start, `q` at its end) moves to the lane there."""
        curve = _along(p, q)
        u0, u1 = min(p[0], q[0]), max(p[0], q[0])
        v0, v1 = min(curve[1::2]), max(curve[1::2])
        starts, slots = self.starts(parent)  # those starting strictly between u0 and u1:
        between = slots[bisect.bisect_right(starts, u0) : bisect.bisect_left(starts, u1)]
        across = [
            j
            for j in map(self.flow, between)
            if j.u + j.length < u1 and j.v < v1 and v0 < j.v + j.width and _passes(curve, j)
        ]
        if not across:
            return None
        if parent >= 0:
            lanes = self.lanes(self.flow(parent))
        else:
            lanes = (min(j.v for j in across) - LANE, max(j.v + j.width for j in across) + LANE)
        middle = (p[1] + q[1]) / 2
        lane = min(lanes, key=lambda at: abs(at - middle))
        first, last = min(j.u for j in across), max(j.u + j.length for j in across)
        if parent >= 0:
            f = self.flow(parent)
            if p[0] == f.u:
                p = (p[0], lane)
            if q[0] == f.u + f.length:
                q = (q[0], lane)
        # on the lane soon after p, off it late before q: over anything else in the way too
        reach = 2 * float(VOCABULARY["edge"]["bend"])
        on, off = p[0] + min(first - p[0], reach), q[0] - min(q[0] - last, reach)
        ways = (_along(p, (on, lane)), _line((on, lane), (off, lane)), _along((off, lane), q))
        return [way for way in ways if way[0:2] != way[6:8]]

    def way_in(self, b: int, entered: list[int], v_from: float) -> tuple[Point, list[list[float]]]:
        """Where the curve reaches the outermost frame entered, and the way from there into box
        `b`; a way curving inside a frame comes from `v_from` across."""
        box = self.flow(b)
        target, v = (box.u, box.v + box.width / 2), box.v + box.width / 2
        ways: list[list[float]] = []
        inner = b
        for frame in reversed(entered):
            f, others = self.flow(frame), self.inside(frame, inner)
            lane, mid = f.v + f.width - LANE, box.u + box.length / 2
            if _clear_along(others, f.u, target[0], v):
                ways.insert(0, _line((f.u, v), target))
            elif inner == b and _clear_across(others, mid, box.v + box.width, lane):
                v = lane
                ways = [
                    _line((f.u, lane), (mid - LANE, lane)),
                    [mid - LANE, lane, mid, lane, mid, lane, mid, lane - LANE],
                    _line((mid, lane - LANE), (mid, box.v + box.width)),
                ]
            elif (way := self.round(frame, (f.u, v_from), target)) is not None:
                v, ways[:0] = way[0][1], way
            else:
                lo, hi = self.lanes(f)
                v = min(max(v_from, lo), hi)
                start = (f.u + PAD + (0.0 if self.lr else HEADER), v)
                ways[:0] = [_line((f.u, v), start), _along(start, target)]
            target, inner = (f.u, v), frame
        return target, ways

    def way_out(self, a: int, left: list[int], v_to: float) -> tuple[Point, list[list[float]]]:
        """The way out of box `a` to the end of the outermost frame it leaves, and where the
        curve starts there; a way curving inside a frame heads for `v_to` across."""
        box = self.flow(a)
        source, v = (box.u + box.length, box.v + box.width / 2), box.v + box.width / 2
        ways: list[list[float]] = []
        inner = a
        for frame in reversed(left):
            f, others = self.flow(frame), self.inside(frame, inner)
            end = f.u + f.length
            lane, mid = f.v + f.width - LANE, box.u + box.length / 2
            if _clear_along(others, source[0], end, v):
                ways.append(_line(source, (end, v)))
            elif inner == a and _clear_across(others, mid, box.v + box.width, lane):
                v = lane
                ways = [
                    _line((mid, box.v + box.width), (mid, lane - LANE)),
                    [mid, lane - LANE, mid, lane, mid, lane, mid + LANE, lane],
                    _line((mid + LANE, lane), (end, lane)),
                ]
            elif (way := self.round(frame, source, (end, v_to))) is not None:
                v = way[-1][-1]
                ways += way
            else:
                lo, hi = self.lanes(f)
                v = min(max(v_to, lo), hi)
                ways += [_along(source, (end - PAD, v)), _line((end - PAD, v), (end, v))]
            source, inner = (end, v), frame
        return source, ways


def edge_route(rects: Sequence[Box], frames: Frames, a: int, b: int, lr: bool) -> Route:
    """The route of the edge from slot `a` to slot `b`: along the flow, or across it to a box
    that does not lie further along (the next band of a wrapped top level), from the side of
    `a` facing `b` to the facing side of `b`, through the gap between the bands."""
    held_a = [f for f in frames.chains[a] if _holds(rects[f], rects[a])]
    held_b = [f for f in frames.chains[b] if _holds(rects[f], rects[b])]
    k = 0
    while k < len(held_a) and k < len(held_b) and held_a[k] == held_b[k]:
        k += 1
    left, entered = held_a[k:], held_b[k:]
    router = _Router(rects, frames, lr)
    a_box, b_box = router.flow(a), router.flow(b)
    out_box = router.flow(left[0]) if left else a_box
    in_box = router.flow(entered[0]) if entered else b_box
    if in_box.u >= out_box.u + out_box.length:
        start, first = router.way_out(a, left, b_box.v + b_box.width / 2)
        end, last = router.way_in(b, entered, a_box.v + a_box.width / 2)
        common = held_a[k - 1] if k else -1
        curve = router.round(common, start, end) or [_along(start, end)]
    else:
        down = in_box.v >= out_box.v
        u0, u1 = a_box.u + a_box.length / 2, b_box.u + b_box.length / 2
        v0 = out_box.v + out_box.width if down else out_box.v
        v1 = in_box.v if down else in_box.v + in_box.width
        first = [_line((u0, a_box.v + a_box.width if down else a_box.v), (u0, v0))]
        last = [_line((u1, v1), (u1, b_box.v if down else b_box.v + b_box.width))]
        d = max(float(VOCABULARY["edge"]["bend"]), abs(v1 - v0) / 2) * (1 if down else -1)
        curve = [[u0, v0, u0, v0 + d, u1, v1 - d, u1, v1]]
    segs = [
        flat if lr else [c for k in range(0, 8, 2) for c in (flat[k + 1], flat[k])]
        for part in (first, curve, last)
        for flat in part
    ]
    titles = _titles_met(rects, frames, segs)
    route: Route = []
    for seg in segs:
        for piece in _cut(seg, titles) if titles else [seg]:
            _join(route, piece)
    return route


Rect = tuple[float, float, float, float]


def _titles_met(rects: Sequence[Box], frames: Frames, segs: list[list[float]]) -> list[Rect]:
    """The title bars that the box around the segments' points meets (a cubic lies inside its
    control points): frames walked down from the top level, a frame's inner frames only where
    the frame itself is met."""
    xs, ys = [c for s in segs for c in s[0::2]], [c for s in segs for c in s[1::2]]
    x0, y0, x1, y1 = min(xs), min(ys), max(xs), max(ys)
    titles: list[Rect] = []
    todo = list(frames.nested.get(-1, []))
    while todo:
        f = todo.pop()
        x, y, w, h = rects[f]
        if x < x1 and x0 < x + w and y < y1 and y0 < y + h:
            bar = (x, y, w, min(HEADER, h))
            if y0 < y + bar[3]:
                titles.append(bar)
            todo += frames.nested.get(f, [])
    return titles


def _cut(seg: list[float], titles: list[Rect]) -> list[list[float]]:
    """A segment less the parts inside the title bars."""
    if seg[0:2] == seg[2:4] and seg[4:6] == seg[6:8]:
        return _cut_line(seg, titles)
    return _cut_curve(seg, titles)


def _cut_line(seg: list[float], titles: list[Rect]) -> list[list[float]]:
    """A straight segment (along an axis) less the title bars it passes."""
    p, q = (seg[0], seg[1]), (seg[6], seg[7])
    vertical = p[0] == q[0]
    at = p[0] if vertical else p[1]
    a, b = (p[1], q[1]) if vertical else (p[0], q[0])
    lo, hi = min(a, b), max(a, b)
    cuts: list[tuple[float, float]] = []
    for x, y, w, h in titles:
        span, across = ((y, y + h), (x, x + w)) if vertical else ((x, x + w), (y, y + h))
        if across[0] < at < across[1] and span[0] < hi and lo < span[1]:
            cuts.append((max(span[0], lo), min(span[1], hi)))
    if not cuts:
        return [seg]
    pieces = _outside(lo, hi, cuts)
    if b < a:  # keep the direction p -> q
        pieces = [(e, s) for s, e in reversed(pieces)]
    return [_line((at, s), (at, e)) if vertical else _line((s, at), (e, at)) for s, e in pieces]


def _cut_curve(seg: list[float], titles: list[Rect]) -> list[list[float]]:
    """A cubic segment less the parts inside the title bars: cut where it crosses a bar's
    border, on the side of the crossing outside the bar (no drawn point lies inside)."""
    lo = min(seg[0::2]), min(seg[1::2])  # the cubic lies inside its control points
    hi = max(seg[0::2]), max(seg[1::2])
    cuts: list[tuple[float, float]] = []
    for bar in titles:
        x, y, w, h = bar
        if not (x < hi[0] and lo[0] < x + w and y < hi[1] and lo[1] < y + h):
            continue
        ts = [0.0, 1.0]
        for axis, at in ((0, x), (0, x + w), (1, y), (1, y + h)):
            if lo[axis] < at < hi[axis]:  # else the cubic never crosses it
                crossings = _crossings(seg, axis, at)
                ts += [t1 if _inside(seg, bar, t0) else t0 for t0, t1 in crossings]
        ts.sort()
        cuts += [(t0, t1) for t0, t1 in itertools.pairwise(ts) if _inside(seg, bar, (t0 + t1) / 2)]
    if not cuts:
        return [seg]
    return [_part(seg, t0, t1) for t0, t1 in _outside(0.0, 1.0, cuts)]


def _inside(seg: list[float], bar: Rect, t: float) -> bool:
    x, y, w, h = bar
    px, py = _blossom(seg, t, t, t)
    return x < px < x + w and y < py < y + h


def _outside(lo: float, hi: float, cuts: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """The parts of lo..hi outside the cuts."""
    pieces: list[tuple[float, float]] = []
    start = lo
    for c0, c1 in sorted(cuts):
        if c0 > start:
            pieces.append((start, c0))
        start = max(start, c1)
    if hi > start:
        pieces.append((start, hi))
    return pieces


def _blossom(seg: list[float], t1: float, t2: float, t3: float) -> Point:
    """The cubic's blossom at (t1, t2, t3): de Casteljau's steps with one parameter each; the
    point at t is the blossom at (t, t, t)."""
    at: list[float] = []
    for axis in (0, 1):
        a, b, c, d = seg[axis::2]
        a, b, c = a + (b - a) * t1, b + (c - b) * t1, c + (d - c) * t1
        a, b = a + (b - a) * t2, b + (c - b) * t2
        at.append(a + (b - a) * t3)
    return at[0], at[1]


def _part(seg: list[float], t0: float, t1: float) -> list[float]:
    """The cubic from t0 to t1 of a cubic segment."""
    ends = ((t0, t0, t0), (t0, t0, t1), (t0, t1, t1), (t1, t1, t1))
    return [c for ts in ends for c in _blossom(seg, *ts)]


def _crossings(seg: list[float], axis: int, at: float) -> list[tuple[float, float]]:
    """Where the cubic's coordinate `axis` crosses `at` for t in (0, 1): per crossing, two t
    close on either side of it."""
    p0, p1, p2, p3 = seg[axis::2]
    # as a polynomial k3 t^3 + k2 t^2 + k1 t + p0; its derivative / 3 as a t^2 + b t + c
    k1, k2, k3 = 3 * (p1 - p0), 3 * (p0 - 2 * p1 + p2), p3 - p0 + 3 * (p1 - p2)
    a, b, c = k3, 2 * k2 / 3, k1 / 3
    turns: list[float] = []
    if a != 0 and b * b >= 4 * a * c:
        r = math.sqrt(b * b - 4 * a * c)
        turns = [(-b - r) / (2 * a), (-b + r) / (2 * a)]
    elif a == 0 and b != 0:
        turns = [-c / b]
    ends = [0.0, *sorted(t for t in turns if 0 < t < 1), 1.0]  # monotone between these

    def below(t: float) -> bool:
        return ((k3 * t + k2) * t + k1) * t + p0 < at

    found: list[tuple[float, float]] = []
    for start, stop in itertools.pairwise(ends):
        side, lo, hi = below(start), start, stop
        if side == below(stop):
            continue
        while hi - lo > 1e-7:  # a thousandth of a unit along a route of 10k units
            mid = (lo + hi) / 2
            if below(mid) == side:
                lo = mid
            else:
                hi = mid
        found.append((lo, hi))
    return found


def _join(route: Route, seg: list[float]) -> None:
    """Adds a segment to a route: to its last subpath when it starts where that ends, else as
    a new one; a segment of no length is left out."""
    if all(seg[k] == seg[k % 2] for k in range(2, 8)):
        return
    if route and route[-1][-2:] == seg[:2]:
        route[-1].extend(seg[2:])
    else:
        route.append(seg)


def route_end(route: Route) -> Point:
    """Where the route reaches its target box."""
    return route[-1][-2], route[-1][-1]
