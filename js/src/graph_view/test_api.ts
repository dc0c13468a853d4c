// Hooks for the UI tests and the benchmark (root.__nsdl): read-only probes of what is drawn,
// plus camera moves and raw requests that a user would make with the mouse.
import type { GraphViewToKernel } from "../messages";
import { RequestError, type RequestName } from "../protocol";
import { HEADER } from "./geometry";
import { ancestors, KIND_FRAME } from "./graph";
import type { Renderer } from "./renderer";
import type { Requests } from "./requests";
import type { SceneStore } from "./scene_store";

export function testApi(store: SceneStore, renderer: Renderer, requests: Requests) {
  return {
    stats: () => ({
      ...store.stats,
      ...renderer.stats,
      frameMs: [...renderer.stats.frameMs],
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
    fit: (names?: string[]) => {
      if (!names) return renderer.fit();
      const slots = names.map((n) => store.slotOf(n)).filter((s): s is number => s !== undefined);
      renderer.fit(slots);
    },
    camera: () => ({ ...renderer.camera }),
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
