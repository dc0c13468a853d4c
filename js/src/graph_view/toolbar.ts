// The toolbar above the canvas: zoom and fit, box zoom, grid / constants / direction
// toggles (traits), expand / collapse all and arrange (kernel requests), PNG download, and
// the search box (Enter jumps to the next match).
import type { AnyModel } from "@anywidget/types";
import { Disposables } from "./dom";
import type { Graph } from "./graph";
import type { GraphViewModel } from "./model";
import type { Renderer } from "./renderer";

const MAX_HITS = 5000;

export interface ToolbarHost {
  readonly renderer: Renderer;
  graph(): Graph | null;
  request(name: "expand_all" | "collapse_all" | "arrange"): void;
  download(): void;
  jumpTo(item: number): Promise<void>;
}

/** Toolbar width (CSS px) under which its buttons get smaller. */
const COMPACT_BELOW = 760;

export class Toolbar {
  boxZoom = false;
  private readonly search: HTMLInputElement;
  private readonly searchInfo: HTMLSpanElement;
  private hits: number[] = [];
  private at = -1;
  private readonly disposables = new Disposables();

  constructor(
    private readonly el: HTMLElement,
    model: AnyModel<GraphViewModel>,
    private readonly host: ToolbarHost,
  ) {
    const { renderer } = host;
    // a narrow view (the Designer's canvas) gets smaller buttons; a CSS container query
    // would give the view inline-size containment, which collapses it inside a flex box
    if (typeof ResizeObserver !== "undefined") {
      const fit = new ResizeObserver(() =>
        el.classList.toggle(
          "nsdl-gv-compact",
          el.clientWidth > 0 && el.clientWidth < COMPACT_BELOW,
        ),
      );
      fit.observe(el);
      this.disposables.add(() => fit.disconnect());
    }
    const toggle = (trait: "show_grid" | "show_constants") => () => {
      model.set(trait, !model.get(trait));
      model.save_changes();
    };
    this.button("zoom-in", "+", "Zoom in", () => renderer.zoomBy(1.25));
    this.button("zoom-out", "−", "Zoom out", () => renderer.zoomBy(0.8));
    this.button(
      "fit",
      "Fit",
      "Fit: the whole graph at a readable size, deeper levels collapsed when needed (press again: the whole graph at any size)",
      () => renderer.fitReadable(undefined, true),
    );
    const box = this.button("box-zoom", "Box zoom", "Drag a rectangle to zoom into", () => {
      this.boxZoom = !this.boxZoom;
      box.classList.toggle("nsdl-gv-on", this.boxZoom);
    });
    const grid = this.button("grid", "Grid", "Show the background grid", toggle("show_grid"));
    const constants = this.button(
      "constants",
      "Constants",
      "Show Constant nodes",
      toggle("show_constants"),
    );
    this.button("expand-all", "Expand all", "Expand every group", () => host.request("expand_all"));
    this.button("collapse-all", "Collapse all", "Collapse every group", () =>
      host.request("collapse_all"),
    );
    const direction = this.button("direction", "LR", "Layout direction", () => {
      model.set("direction", model.get("direction") === "LR" ? "TB" : "LR");
      model.save_changes();
    });
    this.button("arrange", "Arrange", "Recompute the layout", () => host.request("arrange"));
    this.button("export", "PNG", "Download the graph as PNG", () => host.download());
    this.search = document.createElement("input");
    this.search.className = "nsdl-gv-search";
    this.search.placeholder = "Search name or op type… (Enter: next)";
    el.appendChild(this.search);
    this.searchInfo = document.createElement("span");
    this.searchInfo.className = "nsdl-gv-search-info";
    el.appendChild(this.searchInfo);

    const sync = () => {
      grid.classList.toggle("nsdl-gv-on", !!model.get("show_grid"));
      constants.classList.toggle("nsdl-gv-on", !!model.get("show_constants"));
      direction.textContent = model.get("direction") ?? "LR";
    };
    sync();
    for (const trait of ["show_grid", "show_constants", "direction"]) {
      this.disposables.onModel(model, `change:${trait}`, sync);
    }
    this.disposables.listen(this.search, "input", () => this.runSearch());
    this.disposables.listen(this.search, "keydown", (ev) => {
      if ((ev as KeyboardEvent).key === "Enter") void this.jumpNext();
    });
  }

  destroy(): void {
    this.disposables.dispose();
  }

  private button(name: string, label: string, title: string, action: () => void) {
    const b = document.createElement("button");
    b.className = `nsdl-gv-btn nsdl-gv-${name}`;
    b.textContent = label;
    b.title = title;
    this.disposables.listen(b, "click", action);
    this.el.appendChild(b);
    return b;
  }

  private runSearch(): void {
    const graph = this.host.graph();
    const q = this.search.value.trim().toLowerCase();
    this.hits = [];
    this.at = -1;
    if (graph && q) {
      for (const [name, i] of graph.nameIndex) {
        if (name.toLowerCase().includes(q) || graph.ops[i].toLowerCase() === q) this.hits.push(i);
        if (this.hits.length >= MAX_HITS) break;
      }
    }
    this.searchInfo.textContent = q ? `${this.hits.length} found` : "";
  }

  private async jumpNext(): Promise<void> {
    if (!this.hits.length) this.runSearch();
    if (!this.hits.length || !this.host.graph()) return;
    this.at = (this.at + 1) % this.hits.length;
    this.searchInfo.textContent = `${this.at + 1} / ${this.hits.length}`;
    await this.host.jumpTo(this.hits[this.at]);
  }
}
