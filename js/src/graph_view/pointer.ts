// Pointer interaction on the canvas: pan (drag), zoom (Ctrl/⌘+wheel, box zoom), select
// (click, Shift+click, Shift+drag box), expand/collapse groups (click), hover tooltips,
// double-click on blank space to fit, on a node with a body to open it. In edit mode a press
// on a terminal or a box starts an edit gesture instead of a pan (edit.ts).
import { Disposables } from "./dom";
import { fitCamera, slotsInside, toWorld } from "./geometry";
import { boxAt, clickAt, hoverAt } from "./hit";
import type { Inspect } from "./properties";
import type { Renderer } from "./renderer";
import type { SceneStore } from "./scene_store";
import { edgeTip, slotTip, type Tooltip } from "./tooltip";

export interface PointerHost {
  readonly store: SceneStore;
  readonly renderer: Renderer;
  readonly tooltip: Tooltip;
  readonly band: HTMLElement; // the rubber band of box zoom / box select
  boxZoom(): boolean;
  selected(): string[];
  select(names: string[]): void;
  toggleGroup(kind: "expand" | "collapse", group: number): void;
  badgeClick?(x: number, y: number): boolean; // badges.ts: a click on a precision badge
  inspect(target: Inspect): void; // the properties pane: what a click picked besides a node
  openBody(slot: number): boolean; // a node with a body or a function: ask to open it
  readonly edit: EditGestures;
}

/** What edit.ts's CanvasEditor does with the pointer (each false when not in edit mode). */
export interface EditGestures {
  down(x: number, y: number): boolean; // starts an edit gesture
  move(x: number, y: number): void;
  up(x: number, y: number): boolean; // it was a plain click
  hover(x: number, y: number): boolean; // over a terminal
  clickLink(x: number, y: number): boolean; // selected the link there
}

interface Drag {
  mode: "pan" | "box" | "zoom" | "edit";
  x: number;
  y: number;
  moved: boolean;
}

export class Pointer {
  private drag: Drag | null = null;
  private readonly disposables = new Disposables();

  constructor(
    private readonly canvas: HTMLCanvasElement,
    private readonly host: PointerHost,
  ) {
    const on = (type: string, fn: (ev: Event) => void, opts?: AddEventListenerOptions) =>
      this.disposables.listen(canvas, type, fn, opts);
    on("wheel", (ev) => this.onWheel(ev as WheelEvent), { passive: false });
    on("pointerdown", (ev) => this.onDown(ev as PointerEvent));
    on("pointermove", (ev) => this.onMove(ev as PointerEvent));
    on("pointerup", (ev) => this.onUp(ev as PointerEvent));
    on("pointerleave", () => host.tooltip.hide());
    on("dblclick", (ev) => this.onDoubleClick(ev as MouseEvent));
  }

  destroy(): void {
    this.disposables.dispose();
  }

  private local(ev: MouseEvent): [number, number] {
    const r = this.canvas.getBoundingClientRect();
    return [ev.clientX - r.left, ev.clientY - r.top];
  }

  private onWheel(ev: WheelEvent): void {
    if (!ev.ctrlKey && !ev.metaKey) return; // plain wheel scrolls the notebook
    ev.preventDefault();
    const [x, y] = this.local(ev);
    this.host.renderer.zoomBy(Math.exp(-ev.deltaY * 0.0025), x, y);
  }

  private onDown(ev: PointerEvent): void {
    if (ev.button !== 0) return;
    const [x, y] = this.local(ev);
    const edit = !this.host.boxZoom() && !ev.shiftKey && this.host.edit.down(x, y);
    const mode = this.host.boxZoom() ? "zoom" : ev.shiftKey ? "box" : edit ? "edit" : "pan";
    this.drag = { mode, x, y, moved: false };
    this.canvas.setPointerCapture(ev.pointerId);
  }

  private onMove(ev: PointerEvent): void {
    const [x, y] = this.local(ev);
    const drag = this.drag;
    if (!drag) {
      this.hover(x, y);
      return;
    }
    if (drag.mode === "edit") {
      this.host.tooltip.hide();
      this.host.edit.move(x, y);
      return;
    }
    if (Math.abs(x - drag.x) + Math.abs(y - drag.y) > 3) drag.moved = true;
    if (!drag.moved) return;
    this.host.tooltip.hide();
    if (drag.mode === "pan") {
      this.host.renderer.panBy(ev.movementX, ev.movementY);
      return;
    }
    Object.assign(this.host.band.style, {
      display: "block",
      left: `${Math.min(x, drag.x)}px`,
      top: `${Math.min(y, drag.y)}px`,
      width: `${Math.abs(x - drag.x)}px`,
      height: `${Math.abs(y - drag.y)}px`,
    });
  }

  private onUp(ev: PointerEvent): void {
    const drag = this.drag;
    this.drag = null;
    const { store, renderer } = this.host;
    if (!drag || !store.layout) return;
    const [x, y] = this.local(ev);
    this.host.band.style.display = "none";
    if (drag.mode === "edit") {
      if (this.host.edit.up(x, y)) this.click(x, y, ev.shiftKey);
      return;
    }
    if (!drag.moved) {
      this.click(x, y, ev.shiftKey);
      return;
    }
    if (drag.mode === "pan") return;
    const [ax, ay] = toWorld(renderer.camera, Math.min(x, drag.x), Math.min(y, drag.y));
    const [bx, by] = toWorld(renderer.camera, Math.max(x, drag.x), Math.max(y, drag.y));
    const box = { x: ax, y: ay, w: bx - ax, h: by - ay };
    if (drag.mode === "zoom") {
      renderer.setCamera(fitCamera(box, renderer.width, renderer.height, 0, 4));
    } else {
      const names = store.itemsOfSlots(slotsInside(store.layout, box));
      const current = ev.ctrlKey ? this.host.selected() : [];
      this.host.select([...new Set([...current, ...names])]);
    }
  }

  private click(x: number, y: number, shift: boolean): void {
    const { store, renderer } = this.host;
    if (!store.layout || this.host.badgeClick?.(x, y)) return;
    const target = clickAt(store.layout, renderer.camera, x, y);
    if (target.kind === "expand" || target.kind === "collapse") {
      this.host.toggleGroup(target.kind, target.group);
      this.host.inspect({ kind: "group", group: target.group });
      return;
    }
    if (target.kind === "empty") {
      // in edit mode a click on a link selects it (for Delete); the pane shows its tensor
      const linked = !shift && this.host.edit.clickLink(x, y);
      if (!shift && !linked) this.host.select([]);
      const edge = store.scene ? hoverAt(store.scene, renderer.camera, x, y).edge : -1;
      if (edge >= 0 && store.scene)
        this.host.inspect({ kind: "edge", edge: store.scene.edges.edge[edge] });
      return;
    }
    const [name] = store.itemsOfSlots([target.slot]);
    if (name === undefined) {
      const ref = store.layout.ref[target.slot];
      if (ref >= 0) this.host.inspect({ kind: "item", item: ref }); // a graph input/output
      return;
    }
    const current = this.host.selected();
    if (!shift) this.host.select([name]);
    else if (current.includes(name)) this.host.select(current.filter((n) => n !== name));
    else this.host.select([...current, name]);
  }

  private onDoubleClick(ev: MouseEvent): void {
    const { store, renderer } = this.host;
    if (!store.layout) return;
    const [x, y] = this.local(ev);
    const hit = boxAt(store.layout, renderer.camera, x, y);
    if (!hit) renderer.fit();
    else this.host.openBody(hit.slot);
  }

  private hover(x: number, y: number): void {
    const { store, renderer, tooltip } = this.host;
    const scene = store.scene;
    if (!scene) return;
    if (this.host.edit.hover(x, y)) {
      tooltip.hide();
      return;
    }
    const { hit, slot, edge } = hoverAt(scene, renderer.camera, x, y);
    if (edge !== renderer.hoverEdge || slot !== renderer.hoverSlot) {
      renderer.hoverEdge = edge;
      renderer.hoverSlot = slot;
      renderer.invalidate();
    }
    if (edge >= 0) tooltip.show(x, y, renderer.width, edgeTip(scene, edge));
    else if (slot >= 0) tooltip.show(x, y, renderer.width, slotTip(scene, slot));
    else if (hit?.header) tooltip.show(x, y, renderer.width, "click to collapse");
    else tooltip.hide();
  }
}
