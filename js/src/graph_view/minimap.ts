// The minimap: an overview of the whole layout in a corner of the canvas with the viewport as
// a rectangle; a click or a drag on it centres the view there. It never covers a box: once the
// camera rests it takes the first corner of the canvas with no box under it, and hides when
// every corner has one, or when the canvas is too small to spare the room. The overview is drawn once per
// layout into its own canvas, when the browser is idle after the first paint; following the
// camera only moves the rectangle (a positioned div), so panning costs nothing per box.
import { Disposables, div } from "./dom";
import { boundsOf, type Rect, worldViewport } from "./geometry";
import { type Graph, KIND_FRAME, KIND_GROUP, type Layout, PSEUDO } from "./graph";
import type { Renderer } from "./renderer";
import type { SceneStore } from "./scene_store";
import { categoryFill, V } from "./vocabulary";

const LONG = 220; // the most CSS px the overview takes along the graph's long side
const SHORT = 120; // ... across it
const THIN = 36; // the least across it (a deep graph is stretched across rather than a line)
const SHARE_LONG = 0.35; // the most of the canvas's size it takes along ...
const SHARE_SHORT = 0.25; // ... and across
const MAX_SCALE = 0.06; // the most minimap px per layout px: a small graph gets a small overview
const MIN_CANVAS = [360, 260]; // CSS px: a smaller canvas shows no minimap
const SETTLE_MS = 120; // the camera at rest this long: look for a free corner
const INSET = 8; // CSS px from the canvas's edges

export class Minimap {
  private readonly canvas: HTMLCanvasElement;
  private readonly view: HTMLDivElement;
  private drawnFor: Layout | null = null;
  private drawnSize = ""; // the canvas size the overview was sized for
  private pending = 0;
  overviewMs = 0; // the last overview's drawing time
  overviews = 0; // how many overviews were drawn (panning must draw none)
  private bounds: Rect = { x: 0, y: 0, w: 1, h: 1 };
  private sx = 1;
  private sy = 1;
  private readonly disposables = new Disposables();
  private corner: string | null = "right bottom"; // where it sits; null: no free corner
  private settle = 0;

  constructor(
    readonly el: HTMLElement,
    private readonly store: SceneStore,
    private readonly renderer: Renderer,
    private readonly top: number,
  ) {
    this.canvas = document.createElement("canvas");
    el.appendChild(this.canvas);
    this.view = div(el, "nsdl-gv-minimap-view");
    el.style.display = "none";
    let dragging = false;
    const go = (ev: PointerEvent) => {
      const r = this.canvas.getBoundingClientRect();
      this.centreAt(ev.clientX - r.left, ev.clientY - r.top);
    };
    const on = (type: string, fn: (ev: PointerEvent) => void) =>
      this.disposables.listen(el, type, (ev) => fn(ev as PointerEvent));
    on("pointerdown", (ev) => {
      if (ev.button !== 0) return;
      dragging = true;
      el.setPointerCapture(ev.pointerId);
      ev.preventDefault();
      go(ev);
    });
    on("pointermove", (ev) => {
      if (dragging) go(ev);
    });
    on("pointerup", () => {
      dragging = false;
    });
    this.disposables.add(() => this.cancel());
  }

  destroy(): void {
    this.disposables.dispose();
  }

  private cancel(): void {
    if (this.pending) cancelIdleCallback(this.pending);
    this.pending = 0;
    clearTimeout(this.settle);
  }

  /** After a paint: redraw the overview when the layout or the canvas size changed; move
   *  the rectangle. */
  update(): void {
    const { graph, layout } = this.store;
    if (!graph || !layout || this.renderer.width === 0) return;
    const size = `${this.renderer.width}x${this.renderer.height}`;
    if (this.drawnFor !== layout || this.drawnSize !== size) {
      this.drawnFor = layout;
      this.drawnSize = size;
      this.cancel();
      // after the paint that shows the layout, not before it: the first view comes first
      this.pending = requestIdleCallback(() => this.drawOverview(graph, layout), { timeout: 500 });
    }
    this.follow();
  }

  /** Draw the overview of `layout` into the minimap's canvas and size it. */
  private drawOverview(graph: Graph, layout: Layout): void {
    this.pending = 0;
    if (this.store.layout !== layout) return;
    const t0 = performance.now();
    const b = boundsOf(layout);
    const wide = b.w >= b.h;
    const { width, height } = this.renderer;
    const long = Math.min(LONG, SHARE_LONG * (wide ? width : height));
    const short = Math.min(SHORT, SHARE_SHORT * (wide ? height : width));
    const [mw, mh] = wide ? [long, short] : [short, long];
    const k = Math.min(mw / b.w, mh / b.h, MAX_SCALE);
    const w = Math.max(Math.min(THIN, mw), b.w * k);
    const h = Math.max(Math.min(THIN, mh), b.h * k);
    this.bounds = b;
    this.sx = w / b.w;
    this.sy = h / b.h;
    const dpr = window.devicePixelRatio || 1;
    const canvas = this.canvas;
    canvas.style.width = `${w}px`;
    canvas.style.height = `${h}px`;
    canvas.width = Math.max(1, Math.round(w * dpr));
    canvas.height = Math.max(1, Math.round(h * dpr));
    const ctx = canvas.getContext("2d");
    if (!ctx) return;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    const frames = new Path2D();
    const byColor = new Map<string, Path2D>();
    for (let s = 0; s < layout.ref.length; s++) {
      const x = (layout.x[s] - b.x) * this.sx;
      const y = (layout.y[s] - b.y) * this.sy;
      const bw = Math.max(1, layout.w[s] * this.sx);
      const bh = Math.max(1, layout.h[s] * this.sy);
      const kind = layout.kind[s];
      if (kind === KIND_FRAME) {
        frames.rect(x, y, bw, bh);
        continue;
      }
      const ref = layout.ref[s];
      const color =
        kind === KIND_GROUP
          ? V.group.stroke
          : graph.flags[ref] & PSEUDO
            ? V.node.stroke
            : categoryFill(graph.category.get(graph.ops[ref]));
      let path = byColor.get(color);
      if (!path) {
        path = new Path2D();
        byColor.set(color, path);
      }
      path.rect(x, y, bw, bh);
    }
    ctx.fillStyle = V.frame.header;
    ctx.fill(frames);
    for (const [color, path] of byColor) {
      ctx.fillStyle = color;
      ctx.fill(path);
    }
    this.overviewMs = performance.now() - t0;
    this.overviews++;
    this.el.dataset.drawnSlots = String(layout.ref.length);
    this.follow();
  }

  /** Place the viewport rectangle; hide the minimap while the whole graph is in view. */
  private follow(): void {
    if (this.drawnFor !== this.store.layout || this.pending) return;
    const { renderer } = this;
    const v = worldViewport(renderer.camera, renderer.width, renderer.height);
    const b = this.bounds;
    const all = v.x <= b.x && v.y <= b.y && v.x + v.w >= b.x + b.w && v.y + v.h >= b.y + b.h;
    const small = renderer.width < MIN_CANVAS[0] || renderer.height < MIN_CANVAS[1];
    this.el.style.display = all || small || this.corner === null ? "none" : "block";
    clearTimeout(this.settle);
    if (all || small) return;
    this.settle = window.setTimeout(() => this.place(), SETTLE_MS);
    if (this.corner === null) return;
    const w = b.w * this.sx;
    const h = b.h * this.sy;
    const x0 = Math.max(0, (v.x - b.x) * this.sx);
    const y0 = Math.max(0, (v.y - b.y) * this.sy);
    const x1 = Math.min(w, (v.x + v.w - b.x) * this.sx);
    const y1 = Math.min(h, (v.y + v.h - b.y) * this.sy);
    const style = this.view.style;
    style.left = `${x0}px`;
    style.top = `${y0}px`;
    style.width = `${Math.max(2, x1 - x0)}px`;
    style.height = `${Math.max(2, y1 - y0)}px`;
  }

  /** Put the minimap in the first corner where it covers no box, or hide it. */
  private place(): void {
    const { layout } = this.store;
    const { renderer } = this;
    if (!layout || this.drawnFor !== layout) return;
    const w = this.el.offsetWidth || Number.parseFloat(this.canvas.style.width) + 8;
    const h = this.el.offsetHeight || Number.parseFloat(this.canvas.style.height) + 8;
    const { scale, tx, ty } = renderer.camera;
    const free = (x: number, y: number) => {
      // the corner's rectangle in layout coordinates, against every box
      const [x0, y0] = [(x - tx) / scale, (y - ty) / scale];
      const [x1, y1] = [(x + w - tx) / scale, (y + h - ty) / scale];
      for (let s = 0; s < layout.ref.length; s++) {
        if (layout.kind[s] === KIND_FRAME) continue;
        const [bx, by] = [layout.x[s], layout.y[s]];
        if (bx < x1 && bx + layout.w[s] > x0 && by < y1 && by + layout.h[s] > y0) return false;
      }
      return true;
    };
    const right = renderer.width - INSET - w;
    const bottom = renderer.height - INSET - h;
    const top = this.top + INSET;
    const corners: [string, number, number][] = [
      ["right bottom", right, bottom],
      ["right top", right, top],
      ["left bottom", INSET, bottom],
      ["left top", INSET, top],
    ];
    const found = corners.find(([, x, y]) => free(x, y));
    this.corner = found ? found[0] : null;
    const style = this.el.style;
    if (found) {
      const [horizontal, vertical] = found[0].split(" ");
      style.left = horizontal === "left" ? `${INSET}px` : "auto";
      style.right = horizontal === "right" ? `${INSET}px` : "auto";
      style.top = vertical === "top" ? `${top}px` : "auto";
      style.bottom = vertical === "bottom" ? `${INSET}px` : "auto";
    }
    style.display = found ? "block" : "none";
    this.el.dataset.corner = this.corner ?? "none";
  }

  /** Centre the view on the world point under minimap point (mx, my) (CSS px). */
  private centreAt(mx: number, my: number): void {
    const { renderer } = this;
    const wx = this.bounds.x + mx / this.sx;
    const wy = this.bounds.y + my / this.sy;
    const s = renderer.camera.scale;
    renderer.setCamera({
      scale: s,
      tx: renderer.width / 2 - wx * s,
      ty: (this.top + renderer.height) / 2 - wy * s,
    });
  }

  /** For the tests: whether it is shown, its canvas's client rectangle, the viewport
   *  rectangle inside it (CSS px), how many overviews it drew. */
  probe(): { shown: boolean; canvas: Rect; view: Rect; overviews: number } {
    const r = this.canvas.getBoundingClientRect();
    const s = this.view.style;
    return {
      shown: this.el.style.display !== "none",
      overviews: this.overviews,
      canvas: { x: r.left, y: r.top, w: r.width, h: r.height },
      view: {
        x: Number.parseFloat(s.left) || 0,
        y: Number.parseFloat(s.top) || 0,
        w: Number.parseFloat(s.width) || 0,
        h: Number.parseFloat(s.height) || 0,
      },
    };
  }
}
