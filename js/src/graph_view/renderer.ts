// Rendering orchestration: the camera, one paint per animation frame, fitting and scrolling,
// and the offscreen picture for image export. The drawing itself is render.ts's `draw`.
import { boundsOf, type Camera, fitCamera, worldViewport, zoomAt } from "./geometry";
import { type DrawOptions, draw } from "./render";
import type { SceneStore } from "./scene_store";

export class Renderer {
  camera: Camera = { scale: 1, tx: 0, ty: 0 };
  width = 0;
  height = 0;
  hoverEdge = -1;
  hoverSlot = -1;
  // drawn over each frame in world coordinates, canvas only (edit mode: terminals, drag lines)
  readonly overlays: ((ctx: CanvasRenderingContext2D) => void)[] = [];
  private fitted = false;
  private frame = 0;
  private patchUnpainted = false;
  private readonly ctx: CanvasRenderingContext2D;
  readonly stats = {
    draws: 0,
    frameMs: [] as number[],
    patchPaintedAt: 0, // wall clock (ms) of the first paint showing the last patch
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
    if (!this.fitted && this.width > 0) this.initialView();
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
    this.invalidate();
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
    };
  }

  private paint(): void {
    const scene = this.store.scene;
    if (!scene || this.width === 0) return;
    const result = draw(this.ctx, scene, this.drawOptions());
    for (const overlay of this.overlays) overlay(this.ctx);
    this.stats.draws++;
    if (this.patchUnpainted) {
      this.patchUnpainted = false;
      this.stats.patchPaintedAt = Date.now();
    }
    this.stats.frameMs.push(result.ms);
    if (this.stats.frameMs.length > 500) this.stats.frameMs.shift();
    this.root.dataset.draws = String(this.stats.draws);
    this.root.dataset.drawnBoxes = String(result.boxes);
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

  /** First view: the whole graph when it is readable that way, else its start (the graph
   *  inputs) at a readable zoom; "Fit" always shows everything. */
  private initialView(): void {
    const layout = this.store.layout;
    if (!layout || this.width === 0) return;
    this.fit();
    const readable = 0.6;
    if (this.camera.scale >= readable) return;
    const box = boundsOf(layout);
    const s = readable;
    if (layout.meta.direction === "LR") {
      const ty =
        box.h * s < this.height ? (this.height - box.h * s) / 2 - box.y * s : 24 - box.y * s;
      this.camera = { scale: s, tx: 24 - box.x * s, ty };
    } else {
      const tx = box.w * s < this.width ? (this.width - box.w * s) / 2 - box.x * s : 24 - box.x * s;
      this.camera = { scale: s, tx, ty: 24 - box.y * s };
    }
    this.invalidate();
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
