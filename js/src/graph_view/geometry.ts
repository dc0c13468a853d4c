// Pure geometry: camera (pan/zoom), cubic curves, hit testing. No DOM. Edge routes: routes.ts.
import { KIND_FRAME, type Layout } from "./graph";
import { V } from "./vocabulary";

export const HEADER = V.frame.headerHeight; // frame title bar height (graph/_layout.py HEADER)

export interface Camera {
  scale: number;
  tx: number; // screen = world * scale + t
  ty: number;
}

export interface Rect {
  x: number;
  y: number;
  w: number;
  h: number;
}

export const MIN_SCALE = 0.002;
export const MAX_SCALE = 4;

export function clampScale(s: number): number {
  return Math.min(MAX_SCALE, Math.max(MIN_SCALE, s));
}

/** Camera showing `box` (world) centred in a `width` x `height` screen with a margin. */
export function fitCamera(
  box: Rect,
  width: number,
  height: number,
  margin = 20,
  maxScale = 1.5,
): Camera {
  const w = Math.max(box.w, 1);
  const h = Math.max(box.h, 1);
  const scale = clampScale(Math.min((width - 2 * margin) / w, (height - 2 * margin) / h, maxScale));
  return {
    scale,
    tx: (width - w * scale) / 2 - box.x * scale,
    ty: (height - h * scale) / 2 - box.y * scale,
  };
}

/** How a view that keeps labels legible is placed: `legible` is the least scale at which
 *  label text reaches a readable size, `comfortable` the most a deep graph is enlarged to
 *  fill the canvas across its flow, `top` the screen height kept free above (breadcrumb). */
export interface ReadableFit {
  legible: number;
  comfortable: number;
  margin: number;
  top: number;
}

/** Scale of the readable fit of `box`: the whole box when it is legible that way (`whole`),
 *  else the scale that fills the canvas across the flow, kept between legible and comfortable. */
export function readableScale(
  box: Rect,
  width: number,
  height: number,
  direction: "LR" | "TB",
  o: ReadableFit,
): { scale: number; whole: boolean } {
  const across = Math.max(1, width - 2 * o.margin) / Math.max(box.w, 1);
  const down = Math.max(1, height - 2 * o.margin - o.top) / Math.max(box.h, 1);
  const whole = Math.min(across, down);
  if (whole >= o.legible) return { scale: clampScale(Math.min(whole, 1.5)), whole: true };
  const cross = direction === "TB" ? across : down;
  const most = Math.max(o.comfortable, o.legible);
  return { scale: clampScale(Math.min(most, Math.max(o.legible, cross))), whole: false };
}

/** Camera at `scale` showing the start of `box` (its top for TB, its left for LR); across
 *  the flow it centres the box when it fits, else `head` (what the first screen holds),
 *  never leaving blank space beyond the box's edges. */
export function startCamera(
  box: Rect,
  head: Rect,
  scale: number,
  width: number,
  height: number,
  direction: "LR" | "TB",
  o: ReadableFit,
): Camera {
  const place = (lo: number, hi: number, b0: number, bw: number, h0: number, hw: number) => {
    const room = hi - lo;
    if (bw * scale <= room) return lo + (room - bw * scale) / 2 - b0 * scale;
    const t = (lo + hi) / 2 - (h0 + hw / 2) * scale;
    return Math.min(lo - b0 * scale, Math.max(hi - (b0 + bw) * scale, t));
  };
  const m = o.margin;
  if (direction === "TB") {
    return {
      scale,
      tx: place(m, width - m, box.x, box.w, head.x, head.w),
      ty: o.top + m - box.y * scale,
    };
  }
  return {
    scale,
    tx: m - box.x * scale,
    ty: place(o.top + m, height - m, box.y, box.h, head.y, head.h),
  };
}

/** Zoom by `factor` keeping the world point under screen (sx, sy) in place. */
export function zoomAt(camera: Camera, factor: number, sx: number, sy: number): Camera {
  const scale = clampScale(camera.scale * factor);
  const k = scale / camera.scale;
  return { scale, tx: sx - (sx - camera.tx) * k, ty: sy - (sy - camera.ty) * k };
}

export function toWorld(camera: Camera, sx: number, sy: number): [number, number] {
  return [(sx - camera.tx) / camera.scale, (sy - camera.ty) / camera.scale];
}

export function worldViewport(camera: Camera, width: number, height: number): Rect {
  const [x0, y0] = toWorld(camera, 0, 0);
  return { x: x0, y: y0, w: width / camera.scale, h: height / camera.scale };
}

export function intersects(a: Rect, x: number, y: number, w: number, h: number): boolean {
  return x <= a.x + a.w && x + w >= a.x && y <= a.y + a.h && y + h >= a.y;
}

export function slotRect(layout: Layout, s: number): Rect {
  return { x: layout.x[s], y: layout.y[s], w: layout.w[s], h: layout.h[s] };
}

/** Union of the rectangles of `slots` (all boxes when empty). */
export function boundsOf(layout: Layout, slots?: Iterable<number>): Rect {
  let x0 = Number.POSITIVE_INFINITY;
  let y0 = Number.POSITIVE_INFINITY;
  let x1 = Number.NEGATIVE_INFINITY;
  let y1 = Number.NEGATIVE_INFINITY;
  const all = slots ?? layout.ref.keys();
  for (const s of all) {
    x0 = Math.min(x0, layout.x[s]);
    y0 = Math.min(y0, layout.y[s]);
    x1 = Math.max(x1, layout.x[s] + layout.w[s]);
    y1 = Math.max(y1, layout.y[s] + layout.h[s]);
  }
  if (!Number.isFinite(x0)) return { x: 0, y: 0, w: 1, h: 1 };
  return { x: x0, y: y0, w: x1 - x0, h: y1 - y0 };
}

export function curveBounds(c: number[]): Rect {
  const xs = [c[0], c[2], c[4], c[6]];
  const ys = [c[1], c[3], c[5], c[7]];
  const x = Math.min(...xs);
  const y = Math.min(...ys);
  return { x, y, w: Math.max(...xs) - x, h: Math.max(...ys) - y };
}

export function curvePoint(c: number[], t: number): [number, number] {
  const u = 1 - t;
  const a = u * u * u;
  const b = 3 * u * u * t;
  const d = 3 * u * t * t;
  const e = t * t * t;
  return [a * c[0] + b * c[2] + d * c[4] + e * c[6], a * c[1] + b * c[3] + d * c[5] + e * c[7]];
}

function segmentDistance(
  px: number,
  py: number,
  ax: number,
  ay: number,
  bx: number,
  by: number,
): number {
  const dx = bx - ax;
  const dy = by - ay;
  const len = dx * dx + dy * dy;
  const t = len > 0 ? Math.max(0, Math.min(1, ((px - ax) * dx + (py - ay) * dy) / len)) : 0;
  return Math.hypot(px - (ax + t * dx), py - (ay + t * dy));
}

/** Distance from a point to an edge curve (sampled as 16 segments). */
export function curveDistance(c: number[], px: number, py: number): number {
  let best = Number.POSITIVE_INFINITY;
  let [ax, ay] = curvePoint(c, 0);
  for (let k = 1; k <= 16; k++) {
    const [bx, by] = curvePoint(c, k / 16);
    best = Math.min(best, segmentDistance(px, py, ax, ay, bx, by));
    ax = bx;
    ay = by;
  }
  return best;
}

export interface Hit {
  slot: number;
  header: boolean; // on the title bar of an expanded group's frame
}

/** The box under world point (x, y): leaves first (drawn on top), then the innermost frame. */
export function hitTest(layout: Layout, x: number, y: number): Hit | null {
  let frame: Hit | null = null;
  let frameArea = Number.POSITIVE_INFINITY;
  for (let s = layout.ref.length - 1; s >= 0; s--) {
    const bx = layout.x[s];
    const by = layout.y[s];
    if (x < bx || y < by || x > bx + layout.w[s] || y > by + layout.h[s]) continue;
    if (layout.kind[s] !== KIND_FRAME) return { slot: s, header: false };
    const area = layout.w[s] * layout.h[s];
    if (area < frameArea) {
      frameArea = area;
      frame = { slot: s, header: y <= by + HEADER };
    }
  }
  return frame;
}

/** Slots of leaves (nodes, collapsed groups) inside the world rectangle `r`. */
export function slotsInside(layout: Layout, r: Rect): number[] {
  const out: number[] = [];
  for (let s = 0; s < layout.ref.length; s++) {
    if (layout.kind[s] === KIND_FRAME) continue;
    if (
      layout.x[s] >= r.x &&
      layout.y[s] >= r.y &&
      layout.x[s] + layout.w[s] <= r.x + r.w &&
      layout.y[s] + layout.h[s] <= r.y + r.h
    )
      out.push(s);
  }
  return out;
}

/** Bounds of the leaves inside `box` that start within `reach` world units of its start
 *  (top for TB, left for LR): what a view aligned to that start shows first. */
export function headBounds(layout: Layout, box: Rect, reach: number, direction: "LR" | "TB"): Rect {
  const inside: number[] = [];
  const tb = direction === "TB";
  const limit = (tb ? box.y : box.x) + reach;
  for (let s = 0; s < layout.ref.length; s++) {
    if (layout.kind[s] === KIND_FRAME) continue;
    const x = layout.x[s];
    const y = layout.y[s];
    if ((tb ? y : x) > limit || x < box.x || y < box.y) continue;
    if (x + layout.w[s] > box.x + box.w || y + layout.h[s] > box.y + box.h) continue;
    inside.push(s);
  }
  return inside.length ? boundsOf(layout, inside) : box;
}
