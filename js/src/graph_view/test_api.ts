// Hooks for the UI tests and the benchmark (root.__nsdl): read-only probes of what is drawn,
// plus camera moves and raw requests that a user would make with the mouse.
import type { GraphViewToKernel } from "../messages";
import { RequestError, type RequestName } from "../protocol";
import { type PillKind, pillRect, pills } from "./badges";
import type { Breadcrumb } from "./breadcrumb";
import { HEADER, slotsInside, worldViewport } from "./geometry";
import { ancestors, KIND_FRAME } from "./graph";
import type { Minimap } from "./minimap";
import { sceneRoute } from "./render";
import { LABEL_PX, LEGIBLE_PX, type Renderer } from "./renderer";
import type { Requests } from "./requests";
import { routeMiddle } from "./routes";
import type { SceneStore } from "./scene_store";

export function testApi(
  store: SceneStore,
  renderer: Renderer,
  requests: Requests,
  nav: { breadcrumb: Breadcrumb; minimap: Minimap },
) {
  return {
    stats: () => ({
      ...store.stats,
      ...renderer.stats,
      frameMs: [...renderer.stats.frameMs],
      afterPaintMs: [...renderer.stats.afterPaintMs],
      overviewMs: nav.minimap.overviewMs,
      patchMs: [...store.stats.patchMs],
    }),
    /** client coordinates of the centre of the box drawing node `name` (or group key). */
    locate: (name: string): [number, number] | null => {
      const { layout } = store;
      const slot = store.slotOf(name);
      if (!layout || slot === undefined) return null;
      const r = renderer.canvas.getBoundingClientRect();
      const isFrame = layout.kind[slot] === KIND_FRAME;
      const cx = layout.x[slot] + layout.w[slot] / 2;
      const cy = isFrame ? layout.y[slot] + HEADER / 2 : layout.y[slot] + layout.h[slot] / 2;
      const { scale, tx, ty } = renderer.camera;
      return [r.left + cx * scale + tx, r.top + cy * scale + ty];
    },
    /** client coordinates of the top-left corner of the box drawing node `name` (or group). */
    corner: (name: string): [number, number] | null => {
      const { layout } = store;
      const slot = store.slotOf(name);
      if (!layout || slot === undefined) return null;
      const r = renderer.canvas.getBoundingClientRect();
      const { scale, tx, ty } = renderer.camera;
      return [r.left + layout.x[slot] * scale + tx, r.top + layout.y[slot] * scale + ty];
    },
    /** client coordinates of the middle of the drawn edge from node `src` to node `dst`. */
    locateEdge: (src: string, dst: string): [number, number] | null => {
      const { scene } = store;
      const [a, b] = [store.slotOf(src), store.slotOf(dst)];
      if (!scene || a === undefined || b === undefined) return null;
      const e = scene.edges;
      const k = e.src.findIndex((s, j) => s === a && e.dst[j] === b);
      if (k < 0) return null;
      const [x, y] = routeMiddle(sceneRoute(scene, k));
      const r = renderer.canvas.getBoundingClientRect();
      const { scale, tx, ty } = renderer.camera;
      return [r.left + x * scale + tx, r.top + y * scale + ty];
    },
    fit: (names?: string[]) => {
      if (!names) return renderer.fit();
      const slots = names.map((n) => store.slotOf(n)).filter((s): s is number => s !== undefined);
      renderer.fit(slots);
    },
    /** The toolbar's Fit (readable, collapsing deeper levels when needed; a second call
     *  shows the whole graph). */
    fitReadable: () => renderer.fitReadable(undefined, true),
    /** The first view's fit: the whole graph if legible, else its start (no collapsing). */
    fitStart: () => renderer.fitReadable(),
    camera: () => ({ ...renderer.camera }),
    /** Node `name`'s precision or custom badge: its text and the client coordinates of its
     *  centre; null when none is drawn. */
    badge: (name: string, kind: PillKind): { text: string; at: [number, number] } | null => {
      const scene = store.scene;
      const i = store.graph?.nameIndex.get(name);
      const slot = i === undefined ? undefined : scene?.layout.itemSlot.get(i);
      if (!scene || slot === undefined) return null;
      const pill = pills(scene, store.precisions).find((p) => p.slot === slot && p.kind === kind);
      if (!pill) return null;
      const [x, y, w, h] = pillRect(kind, pill.text, scene.layout, slot);
      const r = renderer.canvas.getBoundingClientRect();
      const { scale, tx, ty } = renderer.camera;
      const at: [number, number] = [
        r.left + (x + w / 2) * scale + tx,
        r.top + (y + h / 2) * scale + ty,
      ];
      return { text: pill.text, at };
    },
    /** Every text the last frame drew: box captions, weight lines, edge shapes, titles. */
    texts: () => [...renderer.lastTexts],
    /** The caption and weight lines of the box drawing node `name` (its tensor shapes are
     *  `edgeShape`), as the renderer reads them. */
    label: (name: string) => {
      const graph = store.graph;
      const i = graph?.nameIndex.get(name);
      return i === undefined || !graph
        ? null
        : { caption: graph.labels[i], weights: graph.weights[i] };
    },
    /** Element type and shape of the tensor `name` as edges and their tooltips show it. */
    tensor: (name: string) => {
      const graph = store.graph;
      const t = graph?.tensorName.indexOf(name) ?? -1;
      return t < 0 || !graph ? null : { dtype: graph.tensorDtype[t], shape: graph.tensorShape[t] };
    },
    /** On-screen size (CSS px) of the smallest label text now, and the least Fit keeps. */
    labelPx: () => ({
      now: renderer.camera.scale * LABEL_PX,
      legible: LEGIBLE_PX,
    }),
    /** Leaves (nodes, collapsed groups) wholly on screen. */
    boxesInView: () => {
      const layout = store.layout;
      if (!layout) return 0;
      return slotsInside(layout, worldViewport(renderer.camera, renderer.width, renderer.height))
        .length;
    },
    /** Client rectangles of the leaves (nodes, collapsed groups) drawn at least partly
     *  inside the canvas, cut to it: what an overlay (legend, minimap) must not cover. */
    screenBoxes: () => {
      const layout = store.layout;
      if (!layout) return [];
      const r = renderer.canvas.getBoundingClientRect();
      const { scale, tx, ty } = renderer.camera;
      const out: { x: number; y: number; w: number; h: number }[] = [];
      for (let s = 0; s < layout.ref.length; s++) {
        if (layout.kind[s] === KIND_FRAME) continue;
        const x0 = Math.max(r.left, r.left + layout.x[s] * scale + tx);
        const y0 = Math.max(r.top, r.top + layout.y[s] * scale + ty);
        const x1 = Math.min(r.right, r.left + (layout.x[s] + layout.w[s]) * scale + tx);
        const y1 = Math.min(r.bottom, r.top + (layout.y[s] + layout.h[s]) * scale + ty);
        if (x1 > x0 && y1 > y0) out.push({ x: x0, y: y0, w: x1 - x0, h: y1 - y0 });
      }
      return out;
    },
    /** Leaves (nodes, collapsed groups) in the layout, on screen or not. */
    leaves: () => store.layout?.kind.filter((k) => k !== KIND_FRAME).length ?? 0,
    /** Groups drawn open (frames). */
    frames: () => store.layout?.kind.filter((k) => k === KIND_FRAME).length ?? 0,
    breadcrumb: () => nav.breadcrumb.parts(),
    minimap: () => nav.minimap.probe(),
    nodeNames: () => [...(store.graph?.nameIndex.keys() ?? [])],
    visible: (name: string) => {
      const i = store.graph?.nameIndex.get(name);
      return i !== undefined && !!store.layout?.itemSlot.has(i);
    },
    pan: (dx: number, dy: number) => renderer.panBy(dx, dy),
    groupsOf: (name: string) => {
      const graph = store.graph;
      const i = graph?.nameIndex.get(name);
      return i === undefined || !graph ? [] : ancestors(graph, i).map((g) => graph.groupKey[g]);
    },
    groupIndex: (key: string) => store.graph?.groupKey.indexOf(key) ?? -1,
    /** This view's protocol id (unique among the views of one model). */
    viewId: () => requests.channel.viewId,
    /** A raw request as a click would send it: resolves to its answer or its typed error. */
    request: async (name: string, payload: unknown, timeoutMs?: number) => {
      try {
        const reply = await requests.channel.request(
          name as RequestName<GraphViewToKernel>,
          payload as never,
          timeoutMs,
        );
        return { ok: true, value: reply.value };
      } catch (e) {
        if (!(e instanceof RequestError)) throw e;
        return { ok: false, code: e.code, type: e.errorType, message: e.message };
      }
    },
    /** Shows a failed request as a click would (status line). */
    send: (name: "expand" | "collapse", groups: number[], timeoutMs?: number) =>
      requests.send(name, { groups }, timeoutMs),
  };
}
