// Badges on boxes: the TensorRT precision pill of a node with a layer precision constraint and
// the "custom" pill of an operator without a schema. Geometry restates
// nsdl_jupyter/graph/_badges.py (tests/test_drawing_parity.py compares both renderers); a click
// on a precision pill opens a small chooser that changes or removes the constraint in Python.
import type { AnyModel } from "@anywidget/types";
import { Disposables, div } from "./dom";
import { type Camera, toWorld } from "./geometry";
import { CUSTOM_OP, KIND_NODE, type Layout, PSEUDO } from "./graph";
import type { GraphViewModel } from "./model";
import type { Scene } from "./render";
import type { Renderer } from "./renderer";
import type { Requests } from "./requests";
import type { SceneStore } from "./scene_store";
import { V } from "./vocabulary";

export type PillKind = "precision" | "custom";
export type Rect4 = [number, number, number, number];

/** x, y, w, h of a pill saying `text` on box `k`: straddles the top edge, the precision one
 *  anchored right (clear of the problem mark), the custom one left. */
export function pillRect(kind: PillKind, text: string, layout: Layout, k: number): Rect4 {
  const p = V.pill;
  const width = text.length * p.charWidth + 2 * p.padX;
  const left =
    kind === "precision"
      ? layout.x[k] + layout.w[k] + p.precision.right - width
      : layout.x[k] + p.custom.left;
  return [left, layout.y[k] + p.dy, width, p.h];
}

export interface Pill {
  slot: number;
  kind: PillKind;
  text: string;
}

/** Every pill on a drawn node; `precisions` maps an item to its constraint (a node hidden in
 *  a collapsed group shows none). */
export function pills(scene: Scene, precisions: Map<number, string>): Pill[] {
  const { graph, layout } = scene;
  const out: Pill[] = [];
  for (let k = 0; k < layout.ref.length; k++) {
    const ref = layout.ref[k];
    if (layout.kind[k] !== KIND_NODE || ref < 0 || graph.flags[ref] & PSEUDO) continue;
    if (graph.flags[ref] & CUSTOM_OP)
      out.push({ slot: k, kind: "custom", text: V.pill.custom.label });
    const precision = precisions.get(ref);
    if (precision) out.push({ slot: k, kind: "precision", text: precision });
  }
  return out;
}

/** The precision pill under screen point (x, y), or null (pills are drawn from the label
 *  zoom on, so smaller views have none to click). */
export function precisionPillAt(
  scene: Scene,
  precisions: Map<number, string>,
  camera: Camera,
  x: number,
  y: number,
): Pill | null {
  if (!precisions.size || camera.scale < V.label.minScale) return null;
  const [wx, wy] = toWorld(camera, x, y);
  for (const [item, text] of precisions) {
    const k = scene.layout.itemSlot.get(item);
    if (k === undefined || scene.layout.kind[k] !== KIND_NODE) continue;
    const [px, py, pw, ph] = pillRect("precision", text, scene.layout, k);
    if (wx >= px && wx <= px + pw && wy >= py && wy <= py + ph)
      return { slot: k, kind: "precision", text };
  }
  return null;
}

/** The precision badges of one view: the model's `_precisions` kept in the store, and the
 *  small chooser a click on a pill opens (one button per precision plus "no constraint"),
 *  whose pick goes to Python as the canvas edits' `precision` request. */
export class PrecisionBadges {
  readonly el: HTMLDivElement;
  private readonly disposables = new Disposables();

  constructor(
    stage: HTMLElement,
    private readonly model: AnyModel<GraphViewModel>,
    private readonly store: SceneStore,
    private readonly renderer: Renderer,
    private readonly requests: Requests,
  ) {
    this.el = div(stage, "nsdl-gv-chooser");
    const style = document.createElement("style");
    style.textContent = CHOOSER_STYLE;
    stage.appendChild(style);
    this.disposables.add(() => style.remove());
    this.disposables.onModel(model, "change:_precisions", () => store.loadPrecisions());
    this.disposables.listen(document, "pointerdown", (ev) => {
      if (!this.el.contains(ev.target as Node)) this.hide();
    });
    this.disposables.listen(this.el, "keydown", (ev) => {
      if ((ev as KeyboardEvent).key === "Escape") this.hide();
    });
  }

  /** The pointer's hook: a click at (x, y) on a precision pill opens the chooser (true). */
  click(x: number, y: number): boolean {
    const scene = this.store.scene;
    const pill = scene && precisionPillAt(scene, this.store.precisions, this.renderer.camera, x, y);
    const [name] = pill ? this.store.itemsOfSlots([pill.slot]) : [];
    return name !== undefined && this.open(name, x, y);
  }

  /** Open the chooser for node `node` at stage point (x, y) (also for a node without a
   *  badge, e.g. from a context menu); false when the view is read-only. */
  open(node: string, x: number, y: number): boolean {
    const choices = this.model.get("_precision_choices") ?? [];
    if (!choices.length) return false;
    const current = this.model.get("_precisions")?.[node] ?? "none";
    this.el.replaceChildren();
    this.el.dataset.node = node;
    for (const choice of choices) {
      const button = document.createElement("button");
      button.className = `nsdl-gv-btn${choice === current ? " nsdl-gv-on" : ""}`;
      button.dataset.precision = choice;
      button.textContent = choice === "none" ? "no constraint" : choice;
      button.addEventListener("click", () => {
        this.hide();
        this.choose(node, choice);
      });
      this.el.appendChild(button);
    }
    Object.assign(this.el.style, { display: "flex", left: `${x}px`, top: `${y}px` });
    (this.el.firstElementChild as HTMLElement | null)?.focus();
    return true;
  }

  private choose(node: string, precision: string): void {
    void this.requests.send("precision", { nodes: [node], precision });
  }

  hide(): void {
    this.el.style.display = "none";
    delete this.el.dataset.node;
  }

  destroy(): void {
    this.disposables.dispose();
    this.el.remove();
  }
}

const CHOOSER_STYLE = `
.nsdl-gv-chooser { position: absolute; display: none; flex-wrap: wrap; gap: 2px; max-width: 220px;
  padding: 4px; background: #ffffff; border: 1px solid #d0d7de; border-radius: 4px;
  box-shadow: 0 2px 8px rgba(31,35,40,0.15); z-index: 3; }
.nsdl-gv-chooser .nsdl-gv-btn { padding: 1px 6px; font-size: 11px; }
`;
