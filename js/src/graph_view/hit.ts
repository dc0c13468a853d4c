// Hit-testing in screen coordinates: what the pointer is over (a box, a frame header, an
// edge) and what a click there means. Pure functions of the scene and the camera.
import { type Camera, type Hit, hitTest, toWorld } from "./geometry";
import { KIND_FRAME, KIND_GROUP, type Layout } from "./graph";
import { routeMeets, type Scene, sceneRoute } from "./render";
import { routeDistance } from "./routes";

const EDGE_TOLERANCE_PX = 5;

export interface Hover {
  hit: Hit | null;
  slot: number; // box under the pointer, -1 for none (frames do not count)
  edge: number; // visible edge near the pointer when no box is, -1 for none
}

export function hoverAt(scene: Scene, camera: Camera, x: number, y: number): Hover {
  const [wx, wy] = toWorld(camera, x, y);
  const hit = hitTest(scene.layout, wx, wy);
  let slot = hit && scene.layout.kind[hit.slot] !== KIND_FRAME ? hit.slot : -1;
  let edge = -1;
  if (slot < 0) {
    const tolerance = EDGE_TOLERANCE_PX / camera.scale;
    let best = tolerance;
    const e = scene.edges;
    const probe = { x: wx - tolerance, y: wy - tolerance, w: 2 * tolerance, h: 2 * tolerance };
    for (let k = 0; k < e.src.length; k++) {
      if (!routeMeets(scene, k, probe)) continue;
      const d = routeDistance(sceneRoute(scene, k), wx, wy);
      if (d < best) {
        best = d;
        edge = k;
      }
    }
  }
  if (hit?.header) slot = -1;
  return { hit, slot, edge };
}

export type ClickTarget =
  | { kind: "empty" } // blank canvas or a frame's body
  | { kind: "expand"; group: number } // a collapsed group
  | { kind: "collapse"; group: number } // an expanded group's header
  | { kind: "box"; slot: number }; // a node or graph input/output

/** The box (or frame) at screen point (x, y), if any. */
export function boxAt(layout: Layout, camera: Camera, x: number, y: number): Hit | null {
  const [wx, wy] = toWorld(camera, x, y);
  return hitTest(layout, wx, wy);
}

export function clickAt(layout: Layout, camera: Camera, x: number, y: number): ClickTarget {
  const hit = boxAt(layout, camera, x, y);
  if (!hit) return { kind: "empty" };
  const ref = layout.ref[hit.slot];
  const kind = layout.kind[hit.slot];
  if (kind === KIND_GROUP) return { kind: "expand", group: ~ref };
  if (kind === KIND_FRAME)
    return hit.header ? { kind: "collapse", group: ~ref } : { kind: "empty" };
  return { kind: "box", slot: hit.slot };
}
