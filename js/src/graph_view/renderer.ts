// Rendering orchestration: the camera, one paint per animation frame, fitting and scrolling,
// and the offscreen picture for image export. The drawing itself is render.ts's `draw`.
import { BREADCRUMB_HEIGHT } from "./breadcrumb";
import {
  boundsOf,
  type Camera,
  fitCamera,
  headBounds,
  type ReadableFit,
  readableScale,
  startCamera,
  worldViewport,
  zoomAt,
} from "./geometry";
import { KIND_FRAME } from "./graph";
import { type DrawOptions, draw } from "./render";
import type { SceneStore } from "./scene_store";
import { V } from "./vocabulary";

/** Least on-screen size (CSS px) of the smallest label text that "Fit" keeps. */
export const LEGIBLE_PX = V.canvas.fit.legiblePx;
/** Size (world px, so CSS px at scale 1) of the smallest label text. */
export const LABEL_PX = Math.min(V.label.title.size, V.label.sub.size);
/** As graph/_bands.py band_room takes it: the bands fill what a readable fit shows. */
export const READABLE: ReadableFit = {
  legible: LEGIBLE_PX / LABEL_PX,
  comfortable: V.canvas.fit.comfortable,
  margin: V.canvas.fit.margin,
  top: BREADCRUMB_HEIGHT,
};

/** Most collapse-and-relayout rounds one Fit makes (one per nesting level). */
const MAX_COLLAPSE_ROUNDS = 16;

/** Append `value` to a ring of the last 500 figures. */
function keepLast(ring: number[], value: number): void {
  ring.push(value);
  if (ring.length > 500) ring.shift();
}

export class Renderer {
  camera: Camera = { scale: 1, tx: 0, ty: 0 };
  width = 0;
  height = 0;
  hoverEdge = -1;
  hoverSlot = -1;
  // drawn over each frame in world coordinates, canvas only (edit mode: terminals, drag lines)
  readonly overlays: ((ctx: CanvasRenderingContext2D) => void)[] = [];
  private fitted = false;
  // where the last readable fit put the camera, and of what ("" = the whole graph)
  private readableView: { camera: Camera; of: string } | null = null;
  /** Asks the kernel to collapse groups (view.ts): Fit collapses the deepest open level
   *  when the whole drawing would not be legible, as Model Explorer does. */
  collapse: ((groups: number[]) => void) | null = null;
  private collapsingToFit = 0; // rounds left while a Fit waits for a collapsed layout
  // a group being opened or closed and where its box's corner is on screen: kept there when
  // the new layout moves it (an outline in bands becomes one flow when a module opens)
  private anchored: { group: number; sx: number; sy: number } | null = null;
  private room: string | null = null; // the room of the layout drawn (LayoutMeta.room)
  /** Run after every paint (the breadcrumb and the minimap follow the camera). */
  readonly afterPaint: (() => void)[] = [];
  private frame = 0;
  private patchUnpainted = false;
  lastTexts: string[] = []; // what the last paint wrote (test API)
  private readonly ctx: CanvasRenderingContext2D;
  readonly stats = {
    draws: 0,
    frameMs: [] as number[],
    afterPaintMs: [] as number[], // breadcrumb and minimap following the camera
    patchPaintedAt: 0, // wall clock (ms) of the first paint showing the last patch
    firstPaintAt: 0, // wall clock (ms) when the first paint ended (the benchmark's split)
  };

  constructor(
    readonly canvas: HTMLCanvasElement,
    private readonly root: HTMLElement,
    private readonly store: SceneStore,
    private readonly grid: () => boolean,
  ) {
    const ctx = canvas.getContext("2d");
    if (!ctx) throw new Error("GraphView: no 2D canvas context");
    this.ctx = ctx;
  }

  destroy(): void {
    cancelAnimationFrame(this.frame);
  }

  invalidate(): void {
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      this.paint();
    });
  }

  /** The next paint shows newly applied patches (for the patch-to-screen figure). */
  patched(): void {
    this.patchUnpainted = true;
  }

  /** A new scene: hover marks refer to old slots. */
  sceneChanged(): void {
    this.hoverEdge = -1;
    this.hoverSlot = -1;
    this.invalidate();
  }

  /** A new layout: the first one decides the first view. */
  layoutChanged(): void {
    // bands cut anew for this canvas's size: a view nobody moved since its first fit fits anew
    const room = String(this.store.layout?.meta.room ?? "");
    const recut =
      room !== this.room && this.room !== null && !this.anchored && this.atReadableFit();
    this.room = room;
    this.readableView = null; // a new drawing: the next Fit is a first one
    this.keepAnchor();
    if (this.collapsingToFit > 0) this.fitReadable(undefined, true);
    else if ((!this.fitted || recut) && this.width > 0) this.initialView();
  }

  /** The camera is where the last readable fit of `of` ("": the whole drawing) put it. */
  private atReadableFit(of = ""): boolean {
    const last = this.readableView;
    const c = this.camera;
    return (
      last?.of === of &&
      last.camera.scale === c.scale &&
      last.camera.tx === c.tx &&
      last.camera.ty === c.ty
    );
  }

  resize(): void {
    const rect = this.canvas.getBoundingClientRect();
    if (rect.width < 2 || rect.height < 2) return;
    const dpr = window.devicePixelRatio || 1;
    this.width = rect.width;
    this.height = rect.height;
    this.canvas.width = Math.round(rect.width * dpr);
    this.canvas.height = Math.round(rect.height * dpr);
    if (!this.fitted && this.store.layout) this.initialView();
    if (this.stats.draws > 0) {
      this.invalidate();
      return;
    }
    // the first sizing (a ResizeObserver callback: after layout, before this frame's paint)
    // draws at once: waiting for the next animation frame would show the graph a frame later
    cancelAnimationFrame(this.frame);
    this.frame = 0;
    this.paint();
  }

  private drawOptions(): DrawOptions {
    return {
      camera: this.camera,
      width: this.width,
      height: this.height,
      dpr: window.devicePixelRatio || 1,
      grid: this.grid(),
      background: null,
      selectedSlots: this.store.selectedSlots,
      hoverEdge: this.hoverEdge,
      hoverSlot: this.hoverSlot,
      marks: this.store.marks,
      overlay: this.store.overlay,
      precisions: this.store.precisions,
    };
  }

  private paint(): void {
    const scene = this.store.scene;
    if (!scene || this.width === 0) return;
    if (this.camera.scale >= V.label.detailScale || this.hoverEdge >= 0) this.store.wantShapes();
    const result = draw(this.ctx, scene, this.drawOptions());
    for (const overlay of this.overlays) overlay(this.ctx);
    this.stats.draws++;
    this.lastTexts = result.texts;
    if (this.patchUnpainted) {
      this.patchUnpainted = false;
      this.stats.patchPaintedAt = Date.now();
    }
    const t0 = performance.now();
    for (const fn of this.afterPaint) fn();
    keepLast(this.stats.afterPaintMs, performance.now() - t0);
    keepLast(this.stats.frameMs, result.ms);
    this.root.dataset.draws = String(this.stats.draws);
    this.root.dataset.drawnBoxes = String(result.boxes);
    if (!this.stats.firstPaintAt)
      this.stats.firstPaintAt = performance.timeOrigin + performance.now();
    if (!this.root.dataset.ready) {
      // "drawn" for tests and the benchmark: after the paint of this frame reached the screen
      requestAnimationFrame(() => {
        this.root.dataset.ready = "1";
      });
    }
  }

  // ------------------------------------------------------------------ camera
  setCamera(camera: Camera): void {
    this.camera = camera;
    this.invalidate();
  }

  fit(slots?: number[]): void {
    const layout = this.store.layout;
    if (!layout || this.width === 0) return;
    const box = boundsOf(layout, slots);
    this.camera = fitCamera(box, this.width, this.height, 24, slots ? 1.2 : 1.5);
    this.fitted = true;
    this.invalidate();
  }

  /** "Fit": the whole of `slots` (all boxes when absent) if its labels stay legible that
   *  way; for the whole drawing and `collapse` set, else the deepest open groups are
   *  collapsed until it is (a user action: expanding undoes it); else the start at a legible
   *  scale, filling the canvas across the flow, the rest to scroll to. Asked again without
   *  moving in between, it shows everything. */
  fitReadable(slots?: number[], collapse = false): void {
    const layout = this.store.layout;
    const rounds = this.collapsingToFit;
    this.collapsingToFit = 0;
    if (!layout || this.width === 0) return;
    const of = slots ? slots.join(",") : "";
    if (this.atReadableFit(of)) {
      this.readableView = null;
      this.fit(slots);
      return;
    }
    const box = boundsOf(layout, slots);
    const dir = layout.meta.direction;
    const { scale, whole } = readableScale(box, this.width, this.height, dir, READABLE);
    const deepest = !whole && !slots && collapse && this.collapse ? this.deepestOpen() : [];
    if (deepest.length && rounds !== 1) {
      this.collapsingToFit = rounds > 0 ? rounds - 1 : MAX_COLLAPSE_ROUNDS;
      this.readableView = null;
      this.collapse?.(deepest);
      return;
    }
    if (whole) {
      const top = READABLE.top;
      const c = fitCamera(box, this.width, this.height - top, READABLE.margin, scale);
      this.camera = { ...c, ty: c.ty + top };
    } else {
      const reach = (dir === "TB" ? this.height - READABLE.top : this.width) / scale;
      const head = headBounds(layout, box, reach, dir);
      this.camera = startCamera(box, head, scale, this.width, this.height, dir, READABLE);
    }
    this.fitted = true;
    this.readableView = { camera: this.camera, of };
    this.invalidate();
  }

  /** Keep group `g`'s box where it is on screen through the next layout (opening or
   *  closing it by a click). */
  anchor(g: number): void {
    const slot = this.store.layout?.groupSlot.get(g);
    if (slot === undefined || !this.store.layout) return;
    const { scale, tx, ty } = this.camera;
    const { x, y } = this.store.layout;
    this.anchored = { group: g, sx: x[slot] * scale + tx, sy: y[slot] * scale + ty };
  }

  private keepAnchor(): void {
    const a = this.anchored;
    this.anchored = null;
    const layout = this.store.layout;
    if (!a || !layout) return;
    const slot = layout.groupSlot.get(a.group);
    if (slot === undefined) return;
    // the canvas may have narrowed meanwhile (the properties pane opened): as much of the box
    // as fits stays on it, its corner first
    const { scale } = this.camera;
    const m = READABLE.margin;
    const sx = Math.max(m, Math.min(a.sx, this.width - m - layout.w[slot] * scale));
    const sy = Math.max(READABLE.top + m, Math.min(a.sy, this.height - 4 * m));
    this.camera = { scale, tx: sx - layout.x[slot] * scale, ty: sy - layout.y[slot] * scale };
    this.invalidate();
  }

  /** Groups drawn open at the deepest level of the drawing (none when all are closed). */
  private deepestOpen(): number[] {
    const { layout, graph } = this.store;
    if (!layout || !graph) return [];
    let most = 0;
    let found: number[] = [];
    for (let s = 0; s < layout.kind.length; s++) {
      if (layout.kind[s] !== KIND_FRAME) continue;
      const g = ~layout.ref[s];
      let depth = 0;
      for (let p = graph.groupParent[g]; p > 0; p = graph.groupParent[p]) depth++;
      if (depth > most) [most, found] = [depth, []];
      if (depth === most) found.push(g);
    }
    return found;
  }

  /** First view: the readable fit of the whole graph. */
  private initialView(): void {
    this.fitReadable();
  }

  zoomBy(factor: number, x = this.width / 2, y = this.height / 2): void {
    this.setCamera(zoomAt(this.camera, factor, x, y));
  }

  panBy(dx: number, dy: number): void {
    this.setCamera({ ...this.camera, tx: this.camera.tx + dx, ty: this.camera.ty + dy });
  }

  /** Pan so that `slots` are in view (zooming out only when they do not fit). */
  scrollTo(slots: number[]): void {
    const layout = this.store.layout;
    if (!layout || !slots.length) return;
    const box = boundsOf(layout, slots);
    const view = worldViewport(this.camera, this.width, this.height);
    if (box.w > view.w * 0.9 || box.h > view.h * 0.9 || this.camera.scale < 0.45) {
      this.fit(slots);
      return;
    }
    const s = this.camera.scale;
    this.setCamera({
      scale: s,
      tx: this.width / 2 - (box.x + box.w / 2) * s,
      ty: this.height / 2 - (box.y + box.h / 2) * s,
    });
  }

  // ------------------------------------------------------------------ export
  /** Render the whole graph into an offscreen canvas (PNG/JPEG export). */
  renderImage(
    format: "png" | "jpeg",
    background: string | null,
    grid: boolean,
    scale: number,
    maxSize: number,
  ): Promise<Blob> {
    const scene = this.store.scene;
    if (!scene) return Promise.reject(new Error("nothing drawn yet"));
    const box = boundsOf(scene.layout);
    const margin = 20;
    const s = Math.min(scale, maxSize / (box.w + 2 * margin), maxSize / (box.h + 2 * margin));
    const width = Math.max(1, Math.ceil((box.w + 2 * margin) * s));
    const height = Math.max(1, Math.ceil((box.h + 2 * margin) * s));
    const canvas = document.createElement("canvas");
    canvas.width = width;
    canvas.height = height;
    const ctx = canvas.getContext("2d") as CanvasRenderingContext2D;
    draw(ctx, scene, {
      ...this.drawOptions(),
      camera: { scale: s, tx: (margin - box.x) * s, ty: (margin - box.y) * s },
      width,
      height,
      dpr: 1,
      grid,
      background: background ?? (format === "jpeg" ? "#ffffff" : null),
      hoverEdge: -1,
      hoverSlot: -1,
    });
    return new Promise((resolve, reject) =>
      canvas.toBlob(
        (b) => (b ? resolve(b) : reject(new Error("toBlob failed"))),
        `image/${format}`,
        0.92,
      ),
    );
  }
}
