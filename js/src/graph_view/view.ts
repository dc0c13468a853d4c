// One rendered view of a GraphView model: builds the DOM and ties the components together
// (scene_store: data; renderer: painting and camera; pointer + hit: interaction; toolbar;
// breadcrumb and minimap: where the view is; selection; requests: the kernel protocol). A
// model may have several views at once: each has its own protocol id, and `destroy` removes
// every listener this view added.
import type { AnyModel } from "@anywidget/types";
import { PrecisionBadges } from "./badges";
import { BREADCRUMB_HEIGHT, Breadcrumb } from "./breadcrumb";
import { MENU_STYLE } from "./context_menu";
import { Disposables, div } from "./dom";
import { CanvasEditor } from "./edit";
import { downloadPng } from "./export";
import { showLegend } from "./legend";
import { Minimap } from "./minimap";
import type { GraphViewModel } from "./model";
import { Pointer } from "./pointer";
import { PropertiesPane } from "./properties";
import { Renderer } from "./renderer";
import { Requests } from "./requests";
import { SceneStore } from "./scene_store";
import { Selection } from "./selection";
import { HOST, STYLE } from "./style";
import { testApi } from "./test_api";
import { Toolbar } from "./toolbar";
import { Tooltip } from "./tooltip";
import { V } from "./vocabulary";

export class GraphViewElement {
  readonly root: HTMLDivElement;
  private readonly disposables = new Disposables();

  constructor(model: AnyModel<GraphViewModel>, el: HTMLElement) {
    const root = document.createElement("div");
    this.root = root;
    root.className = "nsdl-graph-view";
    const style = document.createElement("style");
    style.textContent = STYLE + MENU_STYLE;
    root.appendChild(style);
    const bar = div(root, "nsdl-gv-toolbar");
    const stage = div(root, "nsdl-gv-stage");
    const canvas = document.createElement("canvas");
    canvas.className = "nsdl-gv-canvas";
    stage.appendChild(canvas);
    const tooltip = new Tooltip(div(stage, "nsdl-gv-tooltip"));
    const band = div(stage, "nsdl-gv-band");
    const crumbs = div(stage, "nsdl-gv-breadcrumb");
    const map = div(stage, "nsdl-gv-minimap");
    // the line below the stage: the legend and the status never cover a box
    const foot = div(root, "nsdl-gv-foot");
    const legend = div(foot, "nsdl-gv-legend");
    const status = div(foot, "nsdl-gv-status");
    showLegend(legend, null);

    const grid = () => !!model.get("show_grid");
    // the store's events run only from `store.loadTopology()` on, when every part exists
    const store: SceneStore = new SceneStore(model, root, {
      scene: (scene) => {
        status.textContent = `${scene.graph.nameIndex.size.toLocaleString()} nodes · ${scene.layout.ref.length.toLocaleString()} boxes shown`;
        renderer.sceneChanged();
        tooltip.hide(); // what it named may be gone (a deleted node): the next hover says anew
      },
      layout: () => {
        renderer.layoutChanged();
        selection.layoutChanged();
      },
      paint: () => renderer.invalidate(),
      patched: () => {
        tooltip.hide();
        renderer.patched();
        editor.invalidate();
      },
      legend: (meta) => showLegend(legend, meta),
      needShapes: () => requests.channel.notify("tensor_shapes", {}),
    });
    const renderer = new Renderer(canvas, root, store, grid);
    const breadcrumb = new Breadcrumb(crumbs, store, renderer);
    const minimap = new Minimap(map, store, renderer, BREADCRUMB_HEIGHT);
    renderer.afterPaint.push(
      () => breadcrumb.update(),
      () => minimap.update(),
    );
    const requests = new Requests(model, renderer, (message) => {
      if (message === null) delete root.dataset.error;
      else root.dataset.error = status.textContent = `⚠ ${message}`;
    });
    renderer.collapse = (groups) => void requests.send("collapse", { groups });
    const selection = new Selection(model, store, renderer, requests);
    const pane = new PropertiesPane(
      root,
      stage,
      model,
      store,
      requests,
      (item) => void selection.jumpTo(item),
    );
    const toolbar = new Toolbar(bar, model, {
      renderer,
      graph: () => store.graph,
      request: (name) => void requests.send(name, {}),
      download: () => void downloadPng(renderer, grid()),
      jumpTo: (item) => selection.jumpTo(item),
    });
    const badges = new PrecisionBadges(stage, model, store, renderer, requests);
    const editor = new CanvasEditor({
      model,
      store,
      renderer,
      requests,
      canvas,
      stage,
      root,
      selected: () => selection.current(),
      select: (names) => selection.select(names),
      arrange: () => void requests.send("arrange", {}),
    });
    const pointer = new Pointer(canvas, {
      edit: editor,
      store,
      renderer,
      tooltip,
      band,
      boxZoom: () => toolbar.boxZoom,
      selected: () => selection.current(),
      select: (names) => selection.select(names),
      toggleGroup: (kind, group) => {
        renderer.anchor(group);
        void requests.send(kind, { groups: [group] });
      },
      badgeClick: (x, y) => badges.click(x, y),
      inspect: (target) => pane.show(target),
      openBody: (slot) => {
        const node = store.bodyOwner(slot);
        if (node !== null) requests.channel.notify("open_body", { node, attribute: "" });
        return node !== null;
      },
    });

    const d = this.disposables;
    const on = (trait: keyof GraphViewModel, fn: () => void) =>
      d.onModel(model, `change:${trait}`, fn);
    on("_topology", () => {
      editor.invalidate();
      store.loadTopology();
    });
    on("_editable", () => editor.sync());
    on("_layout", () => store.loadLayout());
    on("_edits", () => store.applyEdits());
    on("_shapes", () => store.loadShapes());
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
    d.add(() => badges.destroy());
    d.add(() => pane.destroy());
    d.add(() => editor.destroy());
    d.add(() => renderer.destroy());
    d.add(() => breadcrumb.destroy());
    d.add(() => minimap.destroy());

    // the host is a flex item in an ipywidgets Box: its `min-width: auto` would be the
    // one-row toolbar's width and draw the view wider than the Box (the toolbar scrolls)
    el.classList.add(HOST);
    d.add(() => el.classList.remove(HOST));
    el.appendChild(root);
    (root as unknown as { __nsdl: unknown }).__nsdl = testApi(store, renderer, requests, {
      breadcrumb,
      minimap,
    });
    applyHeight();
    store.loadTopology();
    // the kernel cuts a module outline's bands to the canvas's height (graph/_bands.py)
    let sizeTimer = 0;
    const reportHeight = () => {
      const height = Math.round(renderer.height);
      if (height < V.canvas.minHeight || height === model.get("_canvas_height")) return;
      model.set("_canvas_height", height);
      model.save_changes();
    };
    d.add(() => clearTimeout(sizeTimer));
    const observer = new ResizeObserver(() => {
      renderer.resize();
      clearTimeout(sizeTimer);
      sizeTimer = window.setTimeout(reportHeight, 150);
    });
    observer.observe(stage);
    d.add(() => observer.disconnect());
  }

  destroy(): void {
    this.disposables.dispose();
    this.root.remove();
  }
}
