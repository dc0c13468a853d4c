// One rendered view of a GraphView model: toolbar, canvas, tooltip, legend, interaction.
import type { AnyModel } from "@anywidget/types";
import { gradientCss } from "./colormap";
import {
  boundsOf,
  type Camera,
  curveBounds,
  curveDistance,
  edgeCurve,
  fitCamera,
  HEADER,
  hitTest,
  intersects,
  slotsInside,
  toWorld,
  worldViewport,
  zoomAt,
} from "./geometry";
import {
  ancestors,
  applyPatch,
  decodeGraph,
  decodeLayout,
  type Graph,
  KIND_FRAME,
  KIND_GROUP,
  type Layout,
  PSEUDO,
  representatives,
  visibleEdges,
} from "./graph";
import type { Answer, ExportRequest, GraphViewModel, MarkLevel, Request } from "./model";
import { type DrawOptions, draw, type Overlay, type Scene } from "./render";
import { STYLE } from "./style";

type Model = AnyModel<GraphViewModel>;

interface Pending {
  resolve: (a: Answer) => void;
  reject: (e: Error) => void;
}

export class GraphViewElement {
  readonly root: HTMLDivElement;
  private readonly canvas: HTMLCanvasElement;
  private readonly ctx: CanvasRenderingContext2D;
  private readonly tooltip: HTMLDivElement;
  private readonly legend: HTMLDivElement;
  private readonly status: HTMLDivElement;
  private readonly search: HTMLInputElement;
  private readonly searchInfo: HTMLSpanElement;
  private readonly band: HTMLDivElement;
  private graph: Graph | null = null;
  private layout: Layout | null = null;
  private scene: Scene | null = null;
  private camera: Camera = { scale: 1, tx: 0, ty: 0 };
  private width = 0;
  private height = 0;
  private fitted = false;
  private frame = 0;
  private hoverEdge = -1;
  private hoverSlot = -1;
  private selectedSlots = new Set<number>();
  private marks = new Map<number, MarkLevel>();
  private overlay: Overlay | null = null;
  private boxZoom = false;
  private drag: null | { mode: "pan" | "box" | "zoom"; x: number; y: number; moved: boolean } =
    null;
  private lastLocalSelection: string | null = null;
  private focusPending = false;
  private searchHits: number[] = [];
  private searchAt = -1;
  private nextId = 1;
  private pending = new Map<number, Pending>();
  private readonly cleanups: (() => void)[] = [];
  readonly stats = {
    draws: 0,
    topologyDecodes: 0,
    layoutDecodes: 0,
    patches: 0,
    frameMs: [] as number[],
    patchMs: [] as number[], // applying patches + rebuilding the visible edges
    patchPaintedAt: 0, // wall clock (ms) of the first paint showing the last patch
  };
  private patchUnpainted = false;

  constructor(
    private readonly model: Model,
    el: HTMLElement,
  ) {
    this.root = document.createElement("div");
    this.root.className = "nsdl-graph-view";
    const style = document.createElement("style");
    style.textContent = STYLE;
    this.root.appendChild(style);
    const toolbar = document.createElement("div");
    toolbar.className = "nsdl-gv-toolbar";
    this.root.appendChild(toolbar);
    const stage = document.createElement("div");
    stage.className = "nsdl-gv-stage";
    this.root.appendChild(stage);
    this.canvas = document.createElement("canvas");
    this.canvas.className = "nsdl-gv-canvas";
    stage.appendChild(this.canvas);
    const ctx = this.canvas.getContext("2d");
    if (!ctx) throw new Error("GraphView: no 2D canvas context");
    this.ctx = ctx;
    this.tooltip = this.div(stage, "nsdl-gv-tooltip");
    this.legend = this.div(stage, "nsdl-gv-legend");
    this.status = this.div(stage, "nsdl-gv-status");
    this.band = this.div(stage, "nsdl-gv-band");

    const button = (name: string, label: string, title: string, action: () => void) => {
      const b = document.createElement("button");
      b.className = `nsdl-gv-btn nsdl-gv-${name}`;
      b.textContent = label;
      b.title = title;
      b.addEventListener("click", action);
      toolbar.appendChild(b);
      return b;
    };
    button("zoom-in", "+", "Zoom in", () => this.zoomBy(1.25));
    button("zoom-out", "−", "Zoom out", () => this.zoomBy(0.8));
    button("fit", "Fit", "Fit the graph to the view", () => this.fit());
    const boxButton = button("box-zoom", "Box zoom", "Drag a rectangle to zoom into", () => {
      this.boxZoom = !this.boxZoom;
      boxButton.classList.toggle("nsdl-gv-on", this.boxZoom);
    });
    const gridButton = button("grid", "Grid", "Show the background grid", () => {
      model.set("show_grid", !model.get("show_grid"));
      model.save_changes();
    });
    const constButton = button("constants", "Constants", "Show Constant nodes", () => {
      model.set("show_constants", !model.get("show_constants"));
      model.save_changes();
    });
    button(
      "expand-all",
      "Expand all",
      "Expand every group",
      () => void this.request({ type: "expand_all" }),
    );
    button(
      "collapse-all",
      "Collapse all",
      "Collapse every group",
      () => void this.request({ type: "collapse_all" }),
    );
    const dirButton = button("direction", "LR", "Layout direction", () => {
      model.set("direction", model.get("direction") === "LR" ? "TB" : "LR");
      model.save_changes();
    });
    button(
      "arrange",
      "Arrange",
      "Recompute the layout",
      () => void this.request({ type: "arrange" }),
    );
    button("export", "PNG", "Download the graph as PNG", () => void this.download());
    this.search = document.createElement("input");
    this.search.className = "nsdl-gv-search";
    this.search.placeholder = "Search name or op type… (Enter: next)";
    toolbar.appendChild(this.search);
    this.searchInfo = document.createElement("span");
    this.searchInfo.className = "nsdl-gv-search-info";
    toolbar.appendChild(this.searchInfo);
    const syncToggles = () => {
      gridButton.classList.toggle("nsdl-gv-on", !!model.get("show_grid"));
      constButton.classList.toggle("nsdl-gv-on", !!model.get("show_constants"));
      dirButton.textContent = model.get("direction") ?? "LR";
    };
    syncToggles();
    el.appendChild(this.root);
    (this.root as unknown as { __nsdl: unknown }).__nsdl = this.testApi();

    this.listen(this.search, "input", () => this.runSearch());
    this.listen(this.search, "keydown", (ev) => {
      if ((ev as KeyboardEvent).key === "Enter") this.jumpNext();
    });
    this.listen(this.canvas, "wheel", (ev) => this.onWheel(ev as WheelEvent), { passive: false });
    this.listen(this.canvas, "pointerdown", (ev) => this.onDown(ev as PointerEvent));
    this.listen(this.canvas, "pointermove", (ev) => this.onMove(ev as PointerEvent));
    this.listen(this.canvas, "pointerup", (ev) => this.onUp(ev as PointerEvent));
    this.listen(this.canvas, "pointerleave", () => this.hideTooltip());
    this.listen(this.canvas, "dblclick", (ev) => this.onDoubleClick(ev as MouseEvent));

    const on = (name: string, fn: () => void) => {
      model.on(name, fn);
      this.cleanups.push(() => model.off(name as never, fn));
    };
    on("change:_topology", () => this.loadTopology());
    on("change:_layout", () => this.loadLayout());
    on("change:_edits", () => this.applyEdits());
    on("change:selected", () => this.onSelected());
    on("change:show_grid", () => {
      syncToggles();
      this.invalidate();
    });
    on("change:show_constants", syncToggles);
    on("change:direction", syncToggles);
    on("change:_marks", () => this.loadMarks());
    on("change:_overlay", () => this.loadOverlay());
    on("change:_overlay_values", () => this.loadOverlay());
    on("change:height", () => this.applyHeight());
    const onMsg = (msg: unknown, buffers: DataView[]) => this.onMessage(msg, buffers);
    model.on("msg:custom", onMsg);
    this.cleanups.push(() => model.off("msg:custom", onMsg));

    this.applyHeight();
    this.loadTopology();
    const observer = new ResizeObserver(() => this.resize());
    observer.observe(stage);
    this.cleanups.push(() => observer.disconnect());
  }

  destroy(): void {
    for (const fn of this.cleanups) fn();
    cancelAnimationFrame(this.frame);
    for (const p of this.pending.values()) p.reject(new Error("view closed"));
    this.root.remove();
  }

  // ------------------------------------------------------------------ plumbing
  private div(parent: HTMLElement, cls: string): HTMLDivElement {
    const d = document.createElement("div");
    d.className = cls;
    parent.appendChild(d);
    return d;
  }

  private listen(
    target: EventTarget,
    type: string,
    fn: (ev: Event) => void,
    opts?: AddEventListenerOptions,
  ) {
    target.addEventListener(type, fn, opts);
    this.cleanups.push(() => target.removeEventListener(type, fn, opts));
  }

  request(req: Request): Promise<Answer> {
    const id = this.nextId++;
    return new Promise<Answer>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.model.send({ ...req, id });
    }).catch((e: Error) => ({ type: "answer", id, ok: false, error: e.message }) as Answer);
  }

  private onMessage(msg: unknown, _buffers: DataView[]): void {
    const m = msg as { type?: string; id?: number };
    if (m.type === "answer" && m.id !== undefined) {
      const p = this.pending.get(m.id);
      this.pending.delete(m.id);
      p?.resolve(msg as Answer);
    } else if (m.type === "export") {
      void this.answerExport(msg as ExportRequest);
    } else if (m.type === "fit") {
      this.fit();
    }
  }

  private applyHeight(): void {
    this.root.style.setProperty("--nsdl-gv-height", `${this.model.get("height") || 560}px`);
  }

  private resize(): void {
    const rect = this.canvas.getBoundingClientRect();
    if (rect.width < 2 || rect.height < 2) return;
    const dpr = window.devicePixelRatio || 1;
    this.width = rect.width;
    this.height = rect.height;
    this.canvas.width = Math.round(rect.width * dpr);
    this.canvas.height = Math.round(rect.height * dpr);
    if (!this.fitted && this.layout) this.initialView();
    this.invalidate();
  }

  // ------------------------------------------------------------------ data
  private loadTopology(): void {
    const buffer = this.model.get("_topology");
    if (!buffer || buffer.byteLength === 0) return;
    this.graph = decodeGraph(buffer);
    this.stats.topologyDecodes++;
    this.root.dataset.topologyVersion = String(this.graph.version);
    this.applyEdits();
    this.loadLayout();
  }

  private applyEdits(): void {
    const graph = this.graph;
    if (!graph) return;
    const t0 = performance.now();
    for (const patch of this.model.get("_edits") ?? []) {
      if (patch.topology !== graph.version || patch.seq <= graph.patchSeq) continue;
      applyPatch(graph, patch);
      this.stats.patches++;
    }
    this.root.dataset.patchSeq = String(graph.patchSeq);
    this.rebuildScene();
    this.stats.patchMs.push(performance.now() - t0);
    this.patchUnpainted = true;
  }

  private loadLayout(): void {
    const buffer = this.model.get("_layout");
    if (!buffer || buffer.byteLength === 0 || !this.graph) return;
    const layout = decodeLayout(buffer);
    if (layout.meta.topology !== this.graph.version) return; // the matching topology is on its way
    this.layout = layout;
    this.stats.layoutDecodes++;
    this.root.dataset.layoutSeq = String(layout.meta.seq);
    this.rebuildScene();
    if (!this.fitted && this.width > 0) this.initialView();
    if (this.focusPending) this.focusSelection();
  }

  private rebuildScene(): void {
    const { graph, layout } = this;
    if (!graph || !layout) return;
    const n = layout.ref.length;
    for (let s = 0; s < n; s++) if (layout.ref[s] >= graph.names.length) return; // patch pending
    const rep = representatives(graph, layout);
    const initCount = new Map<number, number>();
    for (const item of graph.initItem) {
      const s = layout.itemSlot.get(item);
      if (s !== undefined) initCount.set(s, (initCount.get(s) ?? 0) + 1);
    }
    this.scene = { graph, layout, rep, edges: visibleEdges(graph, rep), initCount };
    this.hoverEdge = -1;
    this.hoverSlot = -1;
    this.selectionToSlots();
    this.loadMarks();
    this.loadOverlay();
    this.root.dataset.visibleBoxes = String(n);
    this.root.dataset.visibleNodes = String(layout.itemSlot.size);
    this.status.textContent = `${graph.nameIndex.size.toLocaleString()} nodes · ${n.toLocaleString()} boxes shown`;
    this.invalidate();
  }

  private selectionToSlots(): void {
    this.selectedSlots.clear();
    const { graph, scene } = this;
    if (!graph || !scene) return;
    for (const name of this.model.get("selected") ?? []) {
      const i = graph.nameIndex.get(name);
      if (i !== undefined && scene.rep[i] >= 0) this.selectedSlots.add(scene.rep[i]);
    }
    this.root.dataset.selected = (this.model.get("selected") ?? []).join("\n");
  }

  private loadMarks(): void {
    this.marks.clear();
    const { graph, scene } = this;
    if (!graph || !scene) return;
    for (const [name, level] of Object.entries(this.model.get("_marks") ?? {})) {
      const i = graph.nameIndex.get(name);
      if (i === undefined || scene.rep[i] < 0) continue;
      const s = scene.rep[i];
      if (this.marks.get(s) !== "error") this.marks.set(s, level);
    }
    this.invalidate();
  }

  private loadOverlay(): void {
    const meta = this.model.get("_overlay") ?? {};
    const raw = this.model.get("_overlay_values");
    if (!raw || raw.byteLength === 0 || meta.min === undefined) {
      this.overlay = null;
      this.legend.style.display = "none";
    } else {
      const values = new Float32Array(raw.byteLength / 4);
      new Uint8Array(values.buffer).set(new Uint8Array(raw.buffer, raw.byteOffset, raw.byteLength));
      const colormap = meta.colormap ?? "viridis";
      this.overlay = { values, colormap, min: meta.min ?? 0, max: meta.max ?? 1 };
      this.legend.style.display = "block";
      this.legend.innerHTML = "";
      const title = this.div(this.legend, "nsdl-gv-legend-title");
      title.textContent = meta.label ?? "";
      const bar = this.div(this.legend, "nsdl-gv-legend-bar");
      bar.style.background = gradientCss(colormap);
      const ticks = this.div(this.legend, "nsdl-gv-legend-ticks");
      ticks.innerHTML = `<span>${fmt(meta.min ?? 0)}</span><span>${fmt(meta.max ?? 1)}</span>`;
    }
    this.invalidate();
  }

  // ------------------------------------------------------------------ drawing
  invalidate(): void {
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      this.paint();
    });
  }

  private drawOptions(): DrawOptions {
    return {
      camera: this.camera,
      width: this.width,
      height: this.height,
      dpr: window.devicePixelRatio || 1,
      grid: !!this.model.get("show_grid"),
      background: null,
      selectedSlots: this.selectedSlots,
      hoverEdge: this.hoverEdge,
      hoverSlot: this.hoverSlot,
      marks: this.marks,
      overlay: this.overlay,
    };
  }

  private paint(): void {
    if (!this.scene || this.width === 0) return;
    const result = draw(this.ctx, this.scene, this.drawOptions());
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

  fit(slots?: number[]): void {
    if (!this.layout || this.width === 0) return;
    const box = boundsOf(this.layout, slots);
    this.camera = fitCamera(box, this.width, this.height, 24, slots ? 1.2 : 1.5);
    this.fitted = true;
    this.invalidate();
  }

  /** First view: the whole graph when it is readable that way, else its start (the graph
   *  inputs) at a readable zoom; "Fit" always shows everything. */
  private initialView(): void {
    if (!this.layout || this.width === 0) return;
    this.fit();
    const readable = 0.6;
    if (this.camera.scale >= readable) return;
    const box = boundsOf(this.layout);
    const s = readable;
    if (this.layout.meta.direction === "LR") {
      const ty =
        box.h * s < this.height ? (this.height - box.h * s) / 2 - box.y * s : 24 - box.y * s;
      this.camera = { scale: s, tx: 24 - box.x * s, ty };
    } else {
      const tx = box.w * s < this.width ? (this.width - box.w * s) / 2 - box.x * s : 24 - box.x * s;
      this.camera = { scale: s, tx, ty: 24 - box.y * s };
    }
    this.invalidate();
  }

  private zoomBy(factor: number): void {
    this.camera = zoomAt(this.camera, factor, this.width / 2, this.height / 2);
    this.invalidate();
  }

  /** Pan so that `slots` are in view (zooming out only when they do not fit). */
  private scrollTo(slots: number[]): void {
    if (!this.layout || !slots.length) return;
    const box = boundsOf(this.layout, slots);
    const view = worldViewport(this.camera, this.width, this.height);
    if (box.w > view.w * 0.9 || box.h > view.h * 0.9 || this.camera.scale < 0.45) {
      this.fit(slots);
      return;
    }
    const s = this.camera.scale;
    this.camera = {
      scale: s,
      tx: this.width / 2 - (box.x + box.w / 2) * s,
      ty: this.height / 2 - (box.y + box.h / 2) * s,
    };
    this.invalidate();
  }

  // ------------------------------------------------------------------ selection
  private setSelection(names: string[]): void {
    this.lastLocalSelection = JSON.stringify(names);
    this.model.set("selected", names);
    this.model.save_changes();
    this.selectionToSlots();
    this.invalidate();
  }

  private onSelected(): void {
    const names = this.model.get("selected") ?? [];
    this.selectionToSlots();
    this.invalidate();
    if (JSON.stringify(names) !== this.lastLocalSelection && names.length) {
      // set from Python: bring the nodes into view (the kernel opens their groups first)
      this.focusPending = true;
      this.focusSelection();
    }
    this.lastLocalSelection = null;
  }

  private focusSelection(): void {
    const { graph, scene } = this;
    if (!graph || !scene) return;
    const slots: number[] = [];
    let hidden = false;
    for (const name of this.model.get("selected") ?? []) {
      const i = graph.nameIndex.get(name);
      if (i === undefined) continue;
      if (scene.layout.itemSlot.has(i)) slots.push(scene.layout.itemSlot.get(i) as number);
      else hidden = true;
    }
    if (!hidden) this.focusPending = false;
    this.scrollTo(slots);
  }

  private itemsOfSlots(slots: Iterable<number>): string[] {
    const { graph, layout } = this;
    if (!graph || !layout) return [];
    const names: string[] = [];
    for (const s of slots) {
      const ref = layout.ref[s];
      if (ref >= 0 && !(graph.flags[ref] & PSEUDO)) names.push(graph.names[ref]);
    }
    return names;
  }

  // ------------------------------------------------------------------ search
  private runSearch(): void {
    const graph = this.graph;
    const q = this.search.value.trim().toLowerCase();
    this.searchHits = [];
    this.searchAt = -1;
    if (graph && q) {
      for (const [name, i] of graph.nameIndex) {
        if (name.toLowerCase().includes(q) || graph.ops[i].toLowerCase() === q)
          this.searchHits.push(i);
        if (this.searchHits.length >= 5000) break;
      }
    }
    this.searchInfo.textContent = q ? `${this.searchHits.length} found` : "";
  }

  private async jumpNext(): Promise<void> {
    if (!this.searchHits.length) this.runSearch();
    if (!this.searchHits.length || !this.graph) return;
    this.searchAt = (this.searchAt + 1) % this.searchHits.length;
    const item = this.searchHits[this.searchAt];
    this.searchInfo.textContent = `${this.searchAt + 1} / ${this.searchHits.length}`;
    await this.jumpTo(item);
  }

  async jumpTo(item: number): Promise<void> {
    if (!this.graph || !this.layout) return;
    if (!this.layout.itemSlot.has(item)) await this.request({ type: "reveal", items: [item] });
    this.setSelection([this.graph.names[item]]);
    const slot = this.layout?.itemSlot.get(item);
    if (slot !== undefined) this.scrollTo([slot]);
  }

  // ------------------------------------------------------------------ pointer
  private local(ev: MouseEvent): [number, number] {
    const r = this.canvas.getBoundingClientRect();
    return [ev.clientX - r.left, ev.clientY - r.top];
  }

  private onWheel(ev: WheelEvent): void {
    if (!ev.ctrlKey && !ev.metaKey) return; // plain wheel scrolls the notebook
    ev.preventDefault();
    const [x, y] = this.local(ev);
    this.camera = zoomAt(this.camera, Math.exp(-ev.deltaY * 0.0025), x, y);
    this.invalidate();
  }

  private onDown(ev: PointerEvent): void {
    if (ev.button !== 0) return;
    const [x, y] = this.local(ev);
    const mode = this.boxZoom ? "zoom" : ev.shiftKey ? "box" : "pan";
    this.drag = { mode, x, y, moved: false };
    this.canvas.setPointerCapture(ev.pointerId);
  }

  private onMove(ev: PointerEvent): void {
    const [x, y] = this.local(ev);
    const drag = this.drag;
    if (drag) {
      if (Math.abs(x - drag.x) + Math.abs(y - drag.y) > 3) drag.moved = true;
      if (!drag.moved) return;
      this.hideTooltip();
      if (drag.mode === "pan") {
        this.camera = {
          ...this.camera,
          tx: this.camera.tx + ev.movementX,
          ty: this.camera.ty + ev.movementY,
        };
        this.invalidate();
      } else {
        Object.assign(this.band.style, {
          display: "block",
          left: `${Math.min(x, drag.x)}px`,
          top: `${Math.min(y, drag.y)}px`,
          width: `${Math.abs(x - drag.x)}px`,
          height: `${Math.abs(y - drag.y)}px`,
        });
      }
      return;
    }
    this.hover(x, y, ev);
  }

  private onUp(ev: PointerEvent): void {
    const drag = this.drag;
    this.drag = null;
    if (!drag || !this.layout) return;
    const [x, y] = this.local(ev);
    this.band.style.display = "none";
    if (drag.moved && drag.mode !== "pan") {
      const [ax, ay] = toWorld(this.camera, Math.min(x, drag.x), Math.min(y, drag.y));
      const [bx, by] = toWorld(this.camera, Math.max(x, drag.x), Math.max(y, drag.y));
      const box = { x: ax, y: ay, w: bx - ax, h: by - ay };
      if (drag.mode === "zoom") {
        this.camera = fitCamera(box, this.width, this.height, 0, 4);
        this.invalidate();
      } else {
        const names = this.itemsOfSlots(slotsInside(this.layout, box));
        const current = ev.ctrlKey ? (this.model.get("selected") ?? []) : [];
        this.setSelection([...new Set([...current, ...names])]);
      }
      return;
    }
    if (!drag.moved) this.click(x, y, ev.shiftKey);
  }

  private click(x: number, y: number, shift: boolean): void {
    const layout = this.layout;
    if (!layout) return;
    const [wx, wy] = toWorld(this.camera, x, y);
    const hit = hitTest(layout, wx, wy);
    if (!hit) {
      if (!shift) this.setSelection([]);
      return;
    }
    const ref = layout.ref[hit.slot];
    const kind = layout.kind[hit.slot];
    if (kind === KIND_GROUP) {
      void this.request({ type: "expand", groups: [~ref] });
      return;
    }
    if (kind === KIND_FRAME) {
      if (hit.header) void this.request({ type: "collapse", groups: [~ref] });
      else if (!shift) this.setSelection([]);
      return;
    }
    const [name] = this.itemsOfSlots([hit.slot]);
    if (name === undefined) return;
    const current = this.model.get("selected") ?? [];
    if (shift) {
      this.setSelection(
        current.includes(name) ? current.filter((n) => n !== name) : [...current, name],
      );
    } else {
      this.setSelection([name]);
    }
  }

  private onDoubleClick(ev: MouseEvent): void {
    const layout = this.layout;
    if (!layout) return;
    const [x, y] = this.local(ev);
    const [wx, wy] = toWorld(this.camera, x, y);
    const hit = hitTest(layout, wx, wy);
    if (!hit) this.fit();
  }

  private hover(x: number, y: number, ev: MouseEvent): void {
    const scene = this.scene;
    if (!scene) return;
    const [wx, wy] = toWorld(this.camera, x, y);
    const hit = hitTest(scene.layout, wx, wy);
    let slot = hit && scene.layout.kind[hit.slot] !== KIND_FRAME ? hit.slot : -1;
    let edge = -1;
    if (slot < 0) {
      const tolerance = 5 / this.camera.scale;
      let best = tolerance;
      const e = scene.edges;
      const probe = { x: wx - tolerance, y: wy - tolerance, w: 2 * tolerance, h: 2 * tolerance };
      for (let k = 0; k < e.src.length; k++) {
        const c = edgeCurve(scene.layout, e.src[k], e.dst[k], scene.layout.meta.direction);
        const b = curveBounds(c);
        if (!intersects(probe, b.x, b.y, b.w, b.h)) continue;
        const d = curveDistance(c, wx, wy);
        if (d < best) {
          best = d;
          edge = k;
        }
      }
    }
    if (hit?.header) slot = -1;
    if (edge !== this.hoverEdge || slot !== this.hoverSlot) {
      this.hoverEdge = edge;
      this.hoverSlot = slot;
      this.invalidate();
    }
    if (edge >= 0) this.showTooltip(ev, this.edgeTip(edge));
    else if (slot >= 0) this.showTooltip(ev, this.slotTip(slot));
    else if (hit?.header) this.showTooltip(ev, "click to collapse");
    else this.hideTooltip();
  }

  private edgeTip(k: number): string {
    const scene = this.scene as Scene;
    const g = scene.graph;
    const e = scene.edges.edge[k];
    const t = g.edgeTensor[e];
    const more = scene.edges.count[k] > 1 ? `\n(+${scene.edges.count[k] - 1} more edges)` : "";
    return `${g.tensorName[t]}\n${g.tensorDtype[t] || "?"} ${g.tensorShape[t] || ""}${more}`;
  }

  private slotTip(s: number): string {
    const scene = this.scene as Scene;
    const g = scene.graph;
    const ref = scene.layout.ref[s];
    if (ref < 0) return `${g.groupKey[~ref]}\n${g.groupSize[~ref]} nodes — click to expand`;
    const inits = g.initItem
      .map((item, k) =>
        item === ref
          ? `  ${g.tensorName[g.initTensor[k]]}: ${g.tensorDtype[g.initTensor[k]]} ${g.tensorShape[g.initTensor[k]]}`
          : "",
      )
      .filter(Boolean);
    return `${g.names[ref]}\n${g.ops[ref]}${inits.length ? `\ninitializers:\n${inits.join("\n")}` : ""}`;
  }

  private showTooltip(ev: MouseEvent, text: string): void {
    const [x, y] = this.local(ev);
    this.tooltip.textContent = text;
    this.tooltip.style.display = "block";
    this.tooltip.style.left = `${Math.min(x + 14, this.width - 260)}px`;
    this.tooltip.style.top = `${y + 14}px`;
  }

  private hideTooltip(): void {
    this.tooltip.style.display = "none";
  }

  // ------------------------------------------------------------------ export
  /** Render the whole graph into an offscreen canvas (PNG/JPEG export). */
  private renderImage(
    format: "png" | "jpeg",
    background: string | null,
    grid: boolean,
    scale: number,
    maxSize: number,
  ): Promise<Blob> {
    const scene = this.scene;
    if (!scene) return Promise.reject(new Error("nothing drawn yet"));
    const box = boundsOf(scene.layout);
    const margin = 20;
    let s = scale;
    s = Math.min(s, maxSize / (box.w + 2 * margin), maxSize / (box.h + 2 * margin));
    const width = Math.max(1, Math.ceil((box.w + 2 * margin) * s));
    const height = Math.max(1, Math.ceil((box.h + 2 * margin) * s));
    const canvas = document.createElement("canvas");
    canvas.width = width;
    canvas.height = height;
    const ctx = canvas.getContext("2d") as CanvasRenderingContext2D;
    const bg = background ?? (format === "jpeg" ? "#ffffff" : null);
    draw(ctx, scene, {
      ...this.drawOptions(),
      camera: { scale: s, tx: (margin - box.x) * s, ty: (margin - box.y) * s },
      width,
      height,
      dpr: 1,
      grid,
      background: bg,
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

  private async answerExport(req: ExportRequest): Promise<void> {
    try {
      const blob = await this.renderImage(
        req.format,
        req.background,
        req.grid,
        req.scale,
        req.max_size,
      );
      const bytes = await blob.arrayBuffer();
      this.model.send({ type: "export_result", id: req.id, ok: true, mime: blob.type }, undefined, [
        bytes,
      ]);
    } catch (e) {
      this.model.send({ type: "export_result", id: req.id, ok: false, error: String(e) });
    }
  }

  private async download(): Promise<void> {
    const blob = await this.renderImage("png", "#ffffff", !!this.model.get("show_grid"), 2, 8192);
    const a = document.createElement("a");
    a.href = URL.createObjectURL(blob);
    a.download = "graph.png";
    a.click();
    setTimeout(() => URL.revokeObjectURL(a.href), 10_000);
  }

  // ------------------------------------------------------------------ test hooks
  /** Layout slot drawing a node (by name) or a group (by key); undefined when not drawn. */
  private slotOf(name: string): number | undefined {
    const { graph, layout, scene } = this;
    if (!graph || !layout || !scene) return undefined;
    const i = graph.nameIndex.get(name);
    if (i !== undefined) return scene.rep[i] >= 0 ? scene.rep[i] : undefined;
    const g = graph.groupKey.indexOf(name);
    return g >= 0 ? layout.groupSlot.get(g) : undefined;
  }

  private testApi() {
    return {
      stats: () => ({
        ...this.stats,
        frameMs: [...this.stats.frameMs],
        patchMs: [...this.stats.patchMs],
      }),
      /** client coordinates of the centre of the box drawing node `name` (or group key). */
      locate: (name: string): [number, number] | null => {
        const { layout } = this;
        const slot = this.slotOf(name);
        if (!layout || slot === undefined) return null;
        const r = this.canvas.getBoundingClientRect();
        const isFrame = layout.kind[slot] === KIND_FRAME;
        const cx = layout.x[slot] + layout.w[slot] / 2;
        const cy = isFrame ? layout.y[slot] + HEADER / 2 : layout.y[slot] + layout.h[slot] / 2;
        return [
          r.left + cx * this.camera.scale + this.camera.tx,
          r.top + cy * this.camera.scale + this.camera.ty,
        ];
      },
      fit: (names?: string[]) => {
        if (!names) return this.fit();
        const slots = names.map((n) => this.slotOf(n)).filter((s): s is number => s !== undefined);
        this.fit(slots);
      },
      camera: () => ({ ...this.camera }),
      nodeNames: () => [...(this.graph?.nameIndex.keys() ?? [])],
      visible: (name: string) => {
        const i = this.graph?.nameIndex.get(name);
        return i !== undefined && !!this.layout?.itemSlot.has(i);
      },
      pan: (dx: number, dy: number) => {
        this.camera = { ...this.camera, tx: this.camera.tx + dx, ty: this.camera.ty + dy };
        this.invalidate();
      },
      groupsOf: (name: string) => {
        const i = this.graph?.nameIndex.get(name);
        return i === undefined || !this.graph
          ? []
          : ancestors(this.graph, i).map((g) => this.graph?.groupKey[g]);
      },
    };
  }
}

function fmt(v: number): string {
  return Math.abs(v) >= 1000 || (Math.abs(v) < 0.01 && v !== 0)
    ? v.toExponential(2)
    : v.toPrecision(3);
}
