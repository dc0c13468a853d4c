// The sticky breadcrumb at the top of the canvas: the innermost name scope holding all in view
// (`bert › encoder › layer.3 › attention`), each part a link that zooms to that group. It
// follows every paint, so the lookup is one walk down the frame tree (scope.ts), and the DOM
// is only touched when the scope changes.
import { Disposables } from "./dom";
import { type Rect, toWorld } from "./geometry";
import { KIND_FRAME, type Layout } from "./graph";
import type { Renderer } from "./renderer";
import type { SceneStore } from "./scene_store";
import { ScopeIndex, scopePath } from "./scope";
import { V } from "./vocabulary";

/** Screen height the breadcrumb covers at the top of the canvas (CSS pixels). */
export const BREADCRUMB_HEIGHT = V.canvas.breadcrumb;
const ROOT_LABEL = "graph";
const SEPARATOR = " › ";

export class Breadcrumb {
  private index: ScopeIndex | null = null;
  private indexed: Layout | null = null;
  private shown = -1;
  private path: number[] = [];
  private readonly disposables = new Disposables();

  constructor(
    private readonly el: HTMLElement,
    private readonly store: SceneStore,
    private readonly renderer: Renderer,
  ) {
    this.disposables.listen(el, "click", (ev) => {
      const part = (ev.target as HTMLElement).closest<HTMLElement>("[data-group]");
      if (part) this.zoomTo(Number(part.dataset.group));
    });
  }

  destroy(): void {
    this.disposables.dispose();
  }

  /** Labels of the parts shown now, root first. */
  parts(): string[] {
    return this.path.map((g) => this.label(g));
  }

  /** After a paint: name the innermost scope holding everything in view ("graph" when the
   *  view shows more than one module). */
  update(): void {
    const { graph, layout } = this.store;
    const { renderer } = this;
    if (!graph || !layout || renderer.width === 0) return;
    if (this.indexed !== layout) {
      this.index = new ScopeIndex(graph, layout);
      this.indexed = layout;
      this.shown = -1;
    }
    const g = this.index?.around(this.inView(layout)) ?? 0;
    if (g === this.shown) return;
    this.shown = g;
    this.path = scopePath(graph, g);
    this.el.replaceChildren();
    this.path.forEach((p, k) => {
      if (k) this.el.append(SEPARATOR);
      const part = document.createElement("span");
      part.className = "nsdl-gv-crumb";
      part.dataset.group = String(p);
      part.textContent = this.label(p);
      part.title = p ? `Zoom to ${graph.groupKey[p]}` : "Show the start of the graph";
      this.el.appendChild(part);
    });
    this.el.dataset.scope = graph.groupKey[g] ?? "";
  }

  /** The part of the drawing in view (world): the boxes on the canvas under the breadcrumb,
   *  cut at its edges; the centre point when the view shows none. */
  private inView(layout: Layout): Rect {
    const { camera, width, height } = this.renderer;
    const [x0, y0] = toWorld(camera, 0, BREADCRUMB_HEIGHT);
    const [x1, y1] = toWorld(camera, width, height);
    let [left, top, right, bottom] = [x1, y1, x0, y0];
    const { x, y, w, h, kind } = layout;
    for (let s = 0; s < kind.length; s++) {
      if (kind[s] === KIND_FRAME) continue;
      if (x[s] > x1 || y[s] > y1 || x[s] + w[s] < x0 || y[s] + h[s] < y0) continue;
      left = Math.min(left, Math.max(x0, x[s]));
      top = Math.min(top, Math.max(y0, y[s]));
      right = Math.max(right, Math.min(x1, x[s] + w[s]));
      bottom = Math.max(bottom, Math.min(y1, y[s] + h[s]));
    }
    if (left > right) return { x: (x0 + x1) / 2, y: (y0 + y1) / 2, w: 0, h: 0 };
    return { x: left, y: top, w: right - left, h: bottom - top };
  }

  private label(g: number): string {
    return g > 0 ? (this.store.graph?.groupLabel[g] ?? "?") : ROOT_LABEL;
  }

  /** Zoom to group `g`'s frame, readably; the root (or a group not drawn as a frame) shows
   *  the start of the graph. */
  zoomTo(g: number): void {
    const slot = g > 0 ? this.store.layout?.groupSlot.get(g) : undefined;
    this.renderer.fitReadable(slot === undefined ? undefined : [slot]);
  }
}
