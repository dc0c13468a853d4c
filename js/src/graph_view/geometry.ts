// Pure geometry: camera (pan/zoom), edge anchors and curves, hit testing. No DOM.
import { KIND_FRAME, type Layout } from "./graph";

export const HEADER = 22; // frame title bar height, as nsdl_jupyter/graph/_layout.py HEADER

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

/** Cubic curve of an edge from box `a` to box `b`: [x0, y0, c1x, c1y, c2x, c2y, x1, y1]. */
export function edgeCurve(layout: Layout, a: number, b: number, direction: "LR" | "TB"): number[] {
  if (direction === "LR") {
    const x0 = layout.x[a] + layout.w[a];
    const y0 = layout.y[a] + layout.h[a] / 2;
    const x1 = layout.x[b];
    const y1 = layout.y[b] + layout.h[b] / 2;
    const d = Math.max(24, Math.abs(x1 - x0) / 2);
    return [x0, y0, x0 + d, y0, x1 - d, y1, x1, y1];
  }
  const x0 = layout.x[a] + layout.w[a] / 2;
  const y0 = layout.y[a] + layout.h[a];
  const x1 = layout.x[b] + layout.w[b] / 2;
  const y1 = layout.y[b];
  const d = Math.max(24, Math.abs(y1 - y0) / 2);
  return [x0, y0, x0, y0 + d, x1, y1 - d, x1, y1];
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
