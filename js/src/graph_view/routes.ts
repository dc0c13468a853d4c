// Edge routes: the line each edge is drawn along, from the laid-out boxes, as
// nsdl_jupyter/graph/_routes.py computes it for the SVG (tests/test_drawing_parity.py compares).
// An edge into (out of) opened frames bends between the outermost frames it enters (leaves)
// and crosses each frame's border along the flow: straight on when nothing lies in between,
// else through a lane in the frame's margin (the edge's own box, or round the opened frames on
// the way), else curving inside; between its frames it also goes round the opened frames it
// would pass through. No part of a route is drawn over the title bar of an opened frame, one
// it enters, leaves or jumps over: the line stops at the bar's border and goes on past it.
import { curveDistance, curvePoint, HEADER, type Rect } from "./geometry";
import { type Graph, KIND_FRAME, type Layout } from "./graph";
import { V } from "./vocabulary";

const PAD = V.frame.pad; // a frame's margin (graph/_layout.py PAD)
const LANE = PAD / 2; // a lane runs in the middle of a frame's margin; its corners have this radius

/** Subpaths: [x0, y0, then (c1x, c1y, c2x, c2y, x, y) per cubic segment]; a straight segment
 *  is a cubic with its control points on its ends. */
export type Route = number[][];
type Point = [number, number];
type Seg = number[]; // [x0, y0, c1x, c1y, c2x, c2y, x1, y1]

/** Which frames (opened groups) hold which boxes, by layout slot (_routes.py Frames). */
export interface FrameIndex {
  chains: number[][]; // per slot: the frames around it, outermost first
  children: Map<number, number[]>; // per frame: the boxes and frames right inside it
  nested: Map<number, number[]>; // per frame, and -1 for the top level: the frames right inside it
  // per frame (or -1) and direction: its `nested` sorted by where they start along the flow,
  // and those starts (filled by the routes as they need them)
  byStart?: Map<string, [number[], number[]]>;
}

/** Per slot, the frames around it; per frame, the slots right inside it. */
export function frameIndex(graph: Graph, layout: Layout): FrameIndex {
  const chains: number[][] = [];
  const children = new Map<number, number[]>();
  const nested = new Map<number, number[]>();
  const add = (to: Map<number, number[]>, key: number, slot: number) => {
    const list = to.get(key);
    if (list) list.push(slot);
    else to.set(key, [slot]);
  };
  for (let slot = 0; slot < layout.ref.length; slot++) {
    const ref = layout.ref[slot];
    let g = ref < 0 ? graph.groupParent[~ref] : graph.group[ref];
    const chain: number[] = [];
    while (g >= 0) {
      const f = layout.groupSlot.get(g);
      if (f !== undefined && layout.kind[f] === KIND_FRAME) chain.push(f);
      g = graph.groupParent[g];
    }
    if (chain.length) add(children, chain[0], slot);
    if (layout.kind[slot] === KIND_FRAME) add(nested, chain.length ? chain[0] : -1, slot);
    chains.push(chain.reverse());
  }
  return { chains, children, nested };
}

/** A box in flow coordinates: u along the flow, v across it. */
interface Flow {
  u: number;
  v: number;
  length: number;
  width: number;
}

function holds(layout: Layout, frame: number, box: number): boolean {
  const { x, y, w, h } = layout;
  return (
    x[frame] <= x[box] &&
    y[frame] <= y[box] &&
    x[box] + w[box] <= x[frame] + w[frame] &&
    y[box] + h[box] <= y[frame] + h[frame]
  );
}

function line(p: Point, q: Point): Seg {
  return [p[0], p[1], p[0], p[1], q[0], q[1], q[0], q[1]];
}

/** The cubic from p to q leaving and arriving along the flow. */
function along(p: Point, q: Point): Seg {
  const d = Math.max(V.edge.bend, Math.abs(q[0] - p[0]) / 2);
  return [p[0], p[1], p[0] + d, p[1], q[0] - d, q[1], q[0], q[1]];
}

/** Nothing of `others` on the way along from u0 to u1 at v. */
function clearAlong(others: Flow[], u0: number, u1: number, v: number): boolean {
  return !others.some((o) => o.u < u1 && u0 < o.u + o.length && o.v < v && v < o.v + o.width);
}

function clearAcross(others: Flow[], u: number, v0: number, v1: number): boolean {
  return !others.some((o) => o.v < v1 && v0 < o.v + o.width && o.u < u && u < o.u + o.length);
}

/** The cubic (flow coordinates) passes through the box: a point of it, sampled finer than a
 *  box is long, lies inside. */
function passes(curve: Seg, box: Flow): boolean {
  const steps = Math.max(8, Math.ceil(Math.abs(curve[6] - curve[0]) / Math.max(box.length, 1)) * 4);
  for (let k = 1; k < steps; k++) {
    const [u, v] = blossom(curve, k / steps, k / steps, k / steps);
    if (box.u < u && u < box.u + box.length && box.v < v && v < box.v + box.width) return true;
  }
  return false;
}

/** One edge's way into and out of its frames, in flow coordinates. */
class Router {
  constructor(
    private readonly layout: Layout,
    private readonly frames: FrameIndex,
    private readonly lr: boolean,
  ) {}

  flow(s: number): Flow {
    const { x, y, w, h } = this.layout;
    return this.lr
      ? { u: x[s], v: y[s], length: w[s], width: h[s] }
      : { u: y[s], v: x[s], length: h[s], width: w[s] };
  }

  inside(frame: number, but: number): Flow[] {
    return (this.frames.children.get(frame) ?? [])
      .filter((s) => s !== but)
      .map((s) => this.flow(s));
  }

  /** The least and most v of a way inside `box`: in its margins, clear of its title. */
  lanes(box: Flow): [number, number] {
    return [box.v + LANE + (this.lr ? HEADER : 0), box.v + box.width - LANE];
  }

  /** The frames right inside `parent` in the order they start along the flow, and their
   *  starts. */
  starts(parent: number): [number[], number[]] {
    const key = `${parent} ${this.lr}`;
    this.frames.byStart ??= new Map();
    let found = this.frames.byStart.get(key);
    if (!found) {
      const slots = [...(this.frames.nested.get(parent) ?? [])];
      slots.sort((f, g) => this.flow(f).u - this.flow(g).u);
      found = [slots.map((f) => this.flow(f).u), slots];
      this.frames.byStart.set(key, found);
    }
    return found;
  }

  /** The way along from `p` to `q` inside `parent` (-1: the top level) round the frames right
   *  inside it that the curve between them would pass through, or null when it passes none
   *  (_routes.py _Router.round). */
  round(parent: number, p: Point, q: Point): Seg[] | null {
    const curve = along(p, q);
    const u0 = Math.min(p[0], q[0]);
    const u1 = Math.max(p[0], q[0]);
    const v0 = Math.min(curve[1], curve[3], curve[5], curve[7]);
    const v1 = Math.max(curve[1], curve[3], curve[5], curve[7]);
    const [starts, slots] = this.starts(parent);
    let k = 0; // the first frame starting after u0 (bisect_right)
    for (let hi = starts.length; k < hi; ) {
      const m = (k + hi) >> 1;
      if (starts[m] <= u0) k = m + 1;
      else hi = m;
    }
    const across: Flow[] = [];
    for (; k < slots.length; k++) {
      const j = this.flow(slots[k]);
      if (j.u >= u1) break;
      if (j.u + j.length < u1 && j.v < v1 && v0 < j.v + j.width && passes(curve, j)) across.push(j);
    }
    if (!across.length) return null;
    const lanes =
      parent >= 0
        ? this.lanes(this.flow(parent))
        : [
            Math.min(...across.map((j) => j.v)) - LANE,
            Math.max(...across.map((j) => j.v + j.width)) + LANE,
          ];
    const middle = (p[1] + q[1]) / 2;
    const lane = Math.abs(lanes[0] - middle) <= Math.abs(lanes[1] - middle) ? lanes[0] : lanes[1];
    const first = Math.min(...across.map((j) => j.u));
    const last = Math.max(...across.map((j) => j.u + j.length));
    if (parent >= 0) {
      const f = this.flow(parent);
      if (p[0] === f.u) p = [p[0], lane];
      if (q[0] === f.u + f.length) q = [q[0], lane];
    }
    // on the lane soon after p, off it late before q: over anything else in the way too
    const reach = 2 * V.edge.bend;
    const on = p[0] + Math.min(first - p[0], reach);
    const off = q[0] - Math.min(q[0] - last, reach);
    return [along(p, [on, lane]), line([on, lane], [off, lane]), along([off, lane], q)].filter(
      (way) => way[0] !== way[6] || way[1] !== way[7],
    );
  }

  wayIn(b: number, entered: number[], vFrom: number): [Point, Seg[]] {
    const box = this.flow(b);
    let target: Point = [box.u, box.v + box.width / 2];
    let v = box.v + box.width / 2;
    let ways: Seg[] = [];
    let inner = b;
    for (let i = entered.length - 1; i >= 0; i--) {
      const frame = entered[i];
      const f = this.flow(frame);
      const others = this.inside(frame, inner);
      const lane = f.v + f.width - LANE;
      const mid = box.u + box.length / 2;
      if (clearAlong(others, f.u, target[0], v)) {
        ways.unshift(line([f.u, v], target));
      } else if (inner === b && clearAcross(others, mid, box.v + box.width, lane)) {
        v = lane;
        ways = [
          line([f.u, lane], [mid - LANE, lane]),
          [mid - LANE, lane, mid, lane, mid, lane, mid, lane - LANE],
          line([mid, lane - LANE], [mid, box.v + box.width]),
        ];
      } else {
        const way = this.round(frame, [f.u, vFrom], target);
        if (way) {
          v = way[0][1];
          ways.unshift(...way);
        } else {
          const [lo, hi] = this.lanes(f);
          v = Math.min(Math.max(vFrom, lo), hi);
          const start: Point = [f.u + PAD + (this.lr ? 0 : HEADER), v];
          ways.unshift(line([f.u, v], start), along(start, target));
        }
      }
      target = [f.u, v];
      inner = frame;
    }
    return [target, ways];
  }

  wayOut(a: number, left: number[], vTo: number): [Point, Seg[]] {
    const box = this.flow(a);
    let source: Point = [box.u + box.length, box.v + box.width / 2];
    let v = box.v + box.width / 2;
    let ways: Seg[] = [];
    let inner = a;
    for (let i = left.length - 1; i >= 0; i--) {
      const frame = left[i];
      const f = this.flow(frame);
      const others = this.inside(frame, inner);
      const end = f.u + f.length;
      const lane = f.v + f.width - LANE;
      const mid = box.u + box.length / 2;
      if (clearAlong(others, source[0], end, v)) {
        ways.push(line(source, [end, v]));
      } else if (inner === a && clearAcross(others, mid, box.v + box.width, lane)) {
        v = lane;
        ways = [
          line([mid, box.v + box.width], [mid, lane - LANE]),
          [mid, lane - LANE, mid, lane, mid, lane, mid + LANE, lane],
          line([mid + LANE, lane], [end, lane]),
        ];
      } else {
        const way = this.round(frame, source, [end, vTo]);
        if (way) {
          v = way[way.length - 1][7];
          ways.push(...way);
        } else {
          const [lo, hi] = this.lanes(f);
          v = Math.min(Math.max(vTo, lo), hi);
          ways.push(along(source, [end - PAD, v]), line([end - PAD, v], [end, v]));
        }
      }
      source = [end, v];
      inner = frame;
    }
    return [source, ways];
  }
}

/** The route of the edge from slot `a` to slot `b`: along the flow, or across it to a box
 *  that does not lie further along (into the next band of a wrapped top level, or after a
 *  drag), from the side of `a` facing `b` to the facing side of `b`, through the gap between
 *  the bands (_routes.py edge_route). */
export function edgeRoute(
  layout: Layout,
  frames: FrameIndex,
  a: number,
  b: number,
  direction: "LR" | "TB",
): Route {
  const lr = direction === "LR";
  const heldA = frames.chains[a].filter((f) => holds(layout, f, a));
  const heldB = frames.chains[b].filter((f) => holds(layout, f, b));
  let k = 0;
  while (k < heldA.length && k < heldB.length && heldA[k] === heldB[k]) k++;
  const left = heldA.slice(k);
  const entered = heldB.slice(k);
  const router = new Router(layout, frames, lr);
  const aBox = router.flow(a);
  const bBox = router.flow(b);
  const outBox = left.length ? router.flow(left[0]) : aBox;
  const inBox = entered.length ? router.flow(entered[0]) : bBox;
  let first: Seg[];
  let last: Seg[];
  let curve: Seg[];
  if (inBox.u >= outBox.u + outBox.length) {
    const [start, out] = router.wayOut(a, left, bBox.v + bBox.width / 2);
    const [end, into] = router.wayIn(b, entered, aBox.v + aBox.width / 2);
    first = out;
    last = into;
    curve = router.round(k ? heldA[k - 1] : -1, start, end) ?? [along(start, end)];
  } else {
    const down = inBox.v >= outBox.v;
    const u0 = aBox.u + aBox.length / 2;
    const u1 = bBox.u + bBox.length / 2;
    const v0 = down ? outBox.v + outBox.width : outBox.v;
    const v1 = down ? inBox.v : inBox.v + inBox.width;
    first = [line([u0, down ? aBox.v + aBox.width : aBox.v], [u0, v0])];
    last = [line([u1, v1], [u1, down ? bBox.v : bBox.v + bBox.width])];
    const d = Math.max(V.edge.bend, Math.abs(v1 - v0) / 2) * (down ? 1 : -1);
    curve = [[u0, v0, u0, v0 + d, u1, v1 - d, u1, v1]];
  }
  const segs = [...first, ...curve, ...last].map((flat) =>
    lr ? flat : [flat[1], flat[0], flat[3], flat[2], flat[5], flat[4], flat[7], flat[6]],
  );
  const titles = titlesMet(layout, frames, segs);
  const route: Route = [];
  for (const seg of segs) {
    if (titles.length) for (const piece of cut(seg, titles)) join(route, piece);
    else join(route, seg);
  }
  return route;
}

/** The title bars that the box around the segments' points meets (a cubic lies inside its
 *  control points): frames walked down from the top level, a frame's inner frames only where
 *  the frame itself is met (_routes.py _titles_met). */
function titlesMet(layout: Layout, frames: FrameIndex, segs: Seg[]): Rect[] {
  let [x0, y0, x1, y1] = [Infinity, Infinity, -Infinity, -Infinity];
  for (const seg of segs) {
    for (let k = 0; k < 8; k += 2) {
      x0 = Math.min(x0, seg[k]);
      y0 = Math.min(y0, seg[k + 1]);
      x1 = Math.max(x1, seg[k]);
      y1 = Math.max(y1, seg[k + 1]);
    }
  }
  const { x, y, w, h } = layout;
  const titles: Rect[] = [];
  const todo = [...(frames.nested.get(-1) ?? [])];
  for (let f = todo.pop(); f !== undefined; f = todo.pop()) {
    if (x[f] < x1 && x0 < x[f] + w[f] && y[f] < y1 && y0 < y[f] + h[f]) {
      const bar = { x: x[f], y: y[f], w: w[f], h: Math.min(HEADER, h[f]) };
      if (y0 < bar.y + bar.h) titles.push(bar);
      todo.push(...(frames.nested.get(f) ?? []));
    }
  }
  return titles;
}

/** A segment less the parts inside the title bars. */
function cut(seg: Seg, titles: Rect[]): Seg[] {
  const straight = seg[0] === seg[2] && seg[1] === seg[3] && seg[4] === seg[6] && seg[5] === seg[7];
  return straight ? cutLine(seg, titles) : cutCurve(seg, titles);
}

/** A straight segment (along an axis) less the title bars it passes. */
function cutLine(seg: Seg, titles: Rect[]): Seg[] {
  const vertical = seg[0] === seg[6];
  const at = vertical ? seg[0] : seg[1];
  const [a, b] = vertical ? [seg[1], seg[7]] : [seg[0], seg[6]];
  const lo = Math.min(a, b);
  const hi = Math.max(a, b);
  const cuts: [number, number][] = [];
  for (const t of titles) {
    const span = vertical ? [t.y, t.y + t.h] : [t.x, t.x + t.w];
    const across = vertical ? [t.x, t.x + t.w] : [t.y, t.y + t.h];
    if (across[0] < at && at < across[1] && span[0] < hi && lo < span[1])
      cuts.push([Math.max(span[0], lo), Math.min(span[1], hi)]);
  }
  if (!cuts.length) return [seg];
  let pieces = outside(lo, hi, cuts);
  if (b < a) pieces = pieces.reverse().map(([s, e]) => [e, s]); // keep the direction
  return pieces.map(([s, e]) => (vertical ? line([at, s], [at, e]) : line([s, at], [e, at])));
}

/** A cubic segment less the parts inside the title bars: cut where it crosses a bar's border,
 *  on the side of the crossing outside the bar (no drawn point lies inside). */
function cutCurve(seg: Seg, titles: Rect[]): Seg[] {
  const xs = [seg[0], seg[2], seg[4], seg[6]]; // the cubic lies inside its control points
  const ys = [seg[1], seg[3], seg[5], seg[7]];
  const lo = [Math.min(...xs), Math.min(...ys)];
  const hi = [Math.max(...xs), Math.max(...ys)];
  const cuts: [number, number][] = [];
  for (const bar of titles) {
    const { x, y, w, h } = bar;
    if (!(x < hi[0] && lo[0] < x + w && y < hi[1] && lo[1] < y + h)) continue;
    const ts = [0, 1];
    for (const [axis, at] of [
      [0, x],
      [0, x + w],
      [1, y],
      [1, y + h],
    ]) {
      if (!(lo[axis] < at && at < hi[axis])) continue; // else the cubic never crosses it
      for (const [t0, t1] of crossings(seg, axis, at)) ts.push(inside(seg, bar, t0) ? t1 : t0);
    }
    ts.sort((p, q) => p - q);
    for (let k = 1; k < ts.length; k++) {
      if (inside(seg, bar, (ts[k - 1] + ts[k]) / 2)) cuts.push([ts[k - 1], ts[k]]);
    }
  }
  if (!cuts.length) return [seg];
  return outside(0, 1, cuts).map(([t0, t1]) => [
    ...blossom(seg, t0, t0, t0),
    ...blossom(seg, t0, t0, t1),
    ...blossom(seg, t0, t1, t1),
    ...blossom(seg, t1, t1, t1),
  ]);
}

function inside(seg: Seg, bar: Rect, t: number): boolean {
  const [px, py] = blossom(seg, t, t, t);
  return bar.x < px && px < bar.x + bar.w && bar.y < py && py < bar.y + bar.h;
}

/** The parts of lo..hi outside the cuts. */
function outside(lo: number, hi: number, cuts: [number, number][]): [number, number][] {
  cuts.sort((p, q) => p[0] - q[0] || p[1] - q[1]);
  const pieces: [number, number][] = [];
  let start = lo;
  for (const [c0, c1] of cuts) {
    if (c0 > start) pieces.push([start, c0]);
    start = Math.max(start, c1);
  }
  if (hi > start) pieces.push([start, hi]);
  return pieces;
}

/** The cubic's blossom at (t1, t2, t3): de Casteljau's steps with one parameter each; the
 *  point at t is the blossom at (t, t, t). */
function blossom(seg: Seg, t1: number, t2: number, t3: number): Point {
  const at: number[] = [];
  for (const axis of [0, 1]) {
    let [a, b, c] = [seg[axis], seg[axis + 2], seg[axis + 4]];
    const d = seg[axis + 6];
    [a, b, c] = [a + (b - a) * t1, b + (c - b) * t1, c + (d - c) * t1];
    [a, b] = [a + (b - a) * t2, b + (c - b) * t2];
    at.push(a + (b - a) * t3);
  }
  return [at[0], at[1]];
}

/** Where the cubic's coordinate `axis` crosses `at` for t in (0, 1): per crossing, two t close
 *  on either side of it. */
function crossings(seg: Seg, axis: number, at: number): [number, number][] {
  const [p0, p1, p2, p3] = [seg[axis], seg[axis + 2], seg[axis + 4], seg[axis + 6]];
  // as a polynomial k3 t^3 + k2 t^2 + k1 t + p0; its derivative / 3 as a t^2 + b t + c
  const [k1, k2, k3] = [3 * (p1 - p0), 3 * (p0 - 2 * p1 + p2), p3 - p0 + 3 * (p1 - p2)];
  const [a, b, c] = [k3, (2 * k2) / 3, k1 / 3];
  let turns: number[] = [];
  if (a !== 0 && b * b >= 4 * a * c) {
    const r = Math.sqrt(b * b - 4 * a * c);
    turns = [(-b - r) / (2 * a), (-b + r) / (2 * a)];
  } else if (a === 0 && b !== 0) turns = [-c / b];
  // monotone between these
  const ends = [0, ...turns.filter((t) => 0 < t && t < 1).sort((p, q) => p - q), 1];
  const below = (t: number): boolean => ((k3 * t + k2) * t + k1) * t + p0 < at;
  const found: [number, number][] = [];
  for (let k = 1; k < ends.length; k++) {
    let [lo, hi] = [ends[k - 1], ends[k]];
    const side = below(lo);
    if (side === below(hi)) continue;
    while (hi - lo > 1e-7) {
      // a thousandth of a unit along a route of 10k units
      const mid = (lo + hi) / 2;
      if (below(mid) === side) lo = mid;
      else hi = mid;
    }
    found.push([lo, hi]);
  }
  return found;
}

/** Adds a segment to a route: to its last subpath when it starts where that ends, else as a
 *  new one; a segment of no length is left out. */
function join(route: Route, seg: Seg): void {
  let empty = true;
  for (let k = 2; k < 8; k++) empty &&= seg[k] === seg[k % 2];
  if (empty) return;
  const sub = route[route.length - 1];
  if (sub && sub[sub.length - 2] === seg[0] && sub[sub.length - 1] === seg[1]) {
    for (let k = 2; k < 8; k++) sub.push(seg[k]);
  } else route.push(seg);
}

/** Each cubic segment of a route as [x0, y0, c1x, c1y, c2x, c2y, x1, y1]. */
export function routeSegments(route: Route): Seg[] {
  const out: Seg[] = [];
  for (const sub of route) {
    for (let k = 2; k < sub.length; k += 6)
      out.push([sub[k - 2], sub[k - 1], ...sub.slice(k, k + 6)]);
  }
  return out;
}

/** Adds a route to a path: `straight` draws each segment as a line (far zoomed out). */
export function traceRoute(
  path: Path2D | CanvasRenderingContext2D,
  route: Route,
  straight: boolean,
): void {
  for (const sub of route) {
    path.moveTo(sub[0], sub[1]);
    for (let k = 2; k < sub.length; k += 6) {
      if (straight) path.lineTo(sub[k + 4], sub[k + 5]);
      else path.bezierCurveTo(sub[k], sub[k + 1], sub[k + 2], sub[k + 3], sub[k + 4], sub[k + 5]);
    }
  }
}

/** Where the route reaches its target box. */
export function routeEnd(route: Route): Point {
  const sub = route[route.length - 1];
  return [sub[sub.length - 2], sub[sub.length - 1]];
}

/** The box around a route's points and control points (a cubic lies inside them). */
export function routeBounds(route: Route): Rect {
  let [x0, y0, x1, y1] = [Infinity, Infinity, -Infinity, -Infinity];
  for (const sub of route) {
    for (let k = 0; k < sub.length; k += 2) {
      x0 = Math.min(x0, sub[k]);
      y0 = Math.min(y0, sub[k + 1]);
      x1 = Math.max(x1, sub[k]);
      y1 = Math.max(y1, sub[k + 1]);
    }
  }
  return { x: x0, y: y0, w: x1 - x0, h: y1 - y0 };
}

/** Distance from a point to the drawn route. */
export function routeDistance(route: Route, px: number, py: number): number {
  return Math.min(...routeSegments(route).map((seg) => curveDistance(seg, px, py)));
}

/** The middle of the route's longest segment: a point on the edge away from the boxes. */
export function routeMiddle(route: Route): Point {
  let best: Seg = routeSegments(route)[0];
  for (const seg of routeSegments(route)) {
    if (
      Math.hypot(seg[6] - seg[0], seg[7] - seg[1]) >
      Math.hypot(best[6] - best[0], best[7] - best[1])
    )
      best = seg;
  }
  return curvePoint(best, 0.5);
}
