// One rendered view of a GraphView model: builds the DOM and ties the components together
// (scene_store: data; renderer: painting and camera; pointer + hit: interaction; toolbar;
// selection; requests: the kernel protocol). A model may have several views at once: each
// has its own protocol id, and `destroy` removes every listener this view added.
import type { AnyModel } from "@anywidget/types";
import { Disposables, div } from "./dom";
import { downloadPng } from "./export";
import { showLegend } from "./legend";
import type { GraphViewModel } from "./model";
import { Pointer } from "./pointer";
import { Renderer } from "./renderer";
import { Requests } from "./requests";
import { SceneStore } from "./scene_store";
import { Selection } from "./selection";
import { STYLE } from "./style";
import { testApi } from "./test_api";
import { Toolbar } from "./toolbar";
import { Tooltip } from "./tooltip";

export class GraphViewElement {
  readonly root: HTMLDivElement;
  private readonly disposables = new Disposables();

  constructor(model: AnyModel<GraphViewModel>, el: HTMLElement) {
    const root = document.createElement("div");
    this.root = root;
    root.className = "nsdl-graph-view";
    const style = document.createElement("style");
    style.textContent = STYLE;
    root.appendChild(style);
    const bar = div(root, "nsdl-gv-toolbar");
    const stage = div(root, "nsdl-gv-stage");
    const canvas = document.createElement("canvas");
    canvas.className = "nsdl-gv-canvas";
    stage.appendChild(canvas);
    const tooltip = new Tooltip(div(stage, "nsdl-gv-tooltip"));
    const legend = div(stage, "nsdl-gv-legend");
    const status = div(stage, "nsdl-gv-status");
    const band = div(stage, "nsdl-gv-band");

    const grid = () => !!model.get("show_grid");
    // the store's events run only from `store.loadTopology()` on, when every part exists
    const store: SceneStore = new SceneStore(model, root, {
      scene: (scene) => {
        status.textContent = `${scene.graph.nameIndex.size.toLocaleString()} nodes · ${scene.layout.ref.length.toLocaleString()} boxes shown`;
        renderer.sceneChanged();
      },
      layout: () => {
        renderer.layoutChanged();
        selection.layoutChanged();
      },
      paint: () => renderer.invalidate(),
      patched: () => renderer.patched(),
      legend: (meta) => showLegend(legend, meta),
    });
    const renderer = new Renderer(canvas, root, store, grid);
    const requests = new Requests(model, renderer, (message) => {
      if (message === null) delete root.dataset.error;
      else root.dataset.error = status.textContent = `⚠ ${message}`;
    });
    const selection = new Selection(model, store, renderer, requests);
    const toolbar = new Toolbar(bar, model, {
      renderer,
      graph: () => store.graph,
      request: (name) => void requests.send(name, {}),
      download: () => void downloadPng(renderer, grid()),
      jumpTo: (item) => selection.jumpTo(item),
    });
    const pointer = new Pointer(canvas, {
      store,
      renderer,
      tooltip,
      band,
      boxZoom: () => toolbar.boxZoom,
      selected: () => selection.current(),
      select: (names) => selection.select(names),
      toggleGroup: (kind, group) => void requests.send(kind, { groups: [group] }),
      openBody: (slot) => {
        const node = store.bodyOwner(slot);
        if (node !== null) requests.channel.notify("open_body", { node, attribute: "" });
        return node !== null;
      },
    });

    const d = this.disposables;
    const on = (trait: keyof GraphViewModel, fn: () => void) =>
      d.onModel(model, `change:${trait}`, fn);
    on("_topology", () => store.loadTopology());
    on("_layout", () => store.loadLayout());
    on("_edits", () => store.applyEdits());
    on("selected", () => selection.changed());
    on("show_grid", () => renderer.invalidate());
    on("_marks", () => store.loadMarks());
    on("_overlay", () => store.loadOverlay());
    on("_overlay_values", () => store.loadOverlay());
    const applyHeight = () =>
      root.style.setProperty("--nsdl-gv-height", `${model.get("height") || 560}px`);
    on("height", applyHeight);
    d.add(() => requests.close());
    d.add(() => toolbar.destroy());
    d.add(() => pointer.destroy());
    d.add(() => renderer.destroy());

    el.appendChild(root);
    (root as unknown as { __nsdl: unknown }).__nsdl = testApi(store, renderer, requests);
    applyHeight();
    store.loadTopology();
    const observer = new ResizeObserver(() => renderer.resize());
    observer.observe(stage);
    d.add(() => observer.disconnect());
  }

  destroy(): void {
    this.disposables.dispose();
    this.root.remove();
  }
}
