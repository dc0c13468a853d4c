// Link terminals on the sides of node boxes in edit mode (canvas only: the SVG export and the
// static picture do not draw them). Inputs sit on the side edges come in from (top in TB, left
// in LR), outputs on the other side. What each node's terminals are comes from the kernel on
// demand, only for the boxes on screen at a readable zoom, so a 50,000-node model costs
// nothing more until one zooms in.
import type { GraphViewToKernel } from "../messages";
import type { Camera, Rect } from "./geometry";
import { KIND_NODE, type Layout, PSEUDO } from "./graph";
import type { Scene } from "./render";
import { lineWidth, V } from "./vocabulary";

export type TerminalColumns = GraphViewToKernel["terminals"]["answer"];
export type InputState = "free" | "linked" | "initializer";

/** The terminals of one node, from one row of the kernel's answer. */
export interface NodeTerminals {
  tensors: string[]; // per input, "" when free
  states: InputState[];
  optional: boolean[];
  variadic: boolean;
  outputs: string[];
}

export function rowsOf(answer: TerminalColumns): Map<string, NodeTerminals> {
  const rows = new Map<string, NodeTerminals>();
  answer.nodes.forEach((node, k) => {
    rows.set(node, {
      tensors: answer.tensors[k],
      states: answer.states[k] as InputState[],
      optional: answer.optional[k],
      variadic: answer.variadic[k],
      outputs: answer.outputs[k],
    });
  });
  return rows;
}

export interface Spot {
  side: "in" | "out";
  index: number; // input or output index; for the "+" slot, the next free input
  x: number; // world coordinates of the centre
  y: number;
  r: number;
  state: InputState | "output";
  tensor: string; // linked tensor (inputs), produced tensor (outputs)
  plus: boolean; // the "+" slot after a variadic input
}

const T = V.terminal;

/** Where the terminals of a node drawn in `rect` are. */
export function spotsOf(rect: Rect, t: NodeTerminals, direction: "LR" | "TB"): Spot[] {
  const spots: Spot[] = [];
  const place = (side: "in" | "out", k: number, n: number): [number, number] => {
    const f = (k + 1) / (n + 1);
    if (direction === "TB") return [rect.x + rect.w * f, side === "in" ? rect.y : rect.y + rect.h];
    return [side === "in" ? rect.x : rect.x + rect.w, rect.y + rect.h * f];
  };
  const nIn = t.states.length + (t.variadic ? 1 : 0);
  for (let k = 0; k < nIn; k++) {
    const plus = k >= t.states.length;
    const [x, y] = place("in", k, nIn);
    spots.push({
      side: "in",
      index: k,
      x,
      y,
      r: t.optional[k] ? T.optionalRadius : T.radius,
      state: plus ? "free" : t.states[k],
      tensor: plus ? "" : t.tensors[k],
      plus,
    });
  }
  t.outputs.forEach((tensor, k) => {
    const [x, y] = place("out", k, t.outputs.length);
    spots.push({ side: "out", index: k, x, y, r: T.radius, state: "output", tensor, plus: false });
  });
  return spots;
}

/** Node boxes on screen when terminals are readable (none below the zoom threshold). */
export function nodeSlotsOnScreen(
  scene: Scene,
  camera: Camera,
  width: number,
  height: number,
  limit = 400,
): number[] {
  if (camera.scale < T.minScale) return [];
  const { layout, graph } = scene;
  const x0 = -camera.tx / camera.scale;
  const y0 = -camera.ty / camera.scale;
  const x1 = x0 + width / camera.scale;
  const y1 = y0 + height / camera.scale;
  const out: number[] = [];
  for (let s = 0; s < layout.ref.length && out.length < limit; s++) {
    const ref = layout.ref[s];
    if (layout.kind[s] !== KIND_NODE || ref < 0 || graph.flags[ref] & PSEUDO) continue;
    if (layout.x[s] > x1 || layout.y[s] > y1) continue;
    if (layout.x[s] + layout.w[s] < x0 || layout.y[s] + layout.h[s] < y0) continue;
    out.push(s);
  }
  return out;
}

export interface SpotHit {
  slot: number;
  node: string;
  spot: Spot;
}

/** The terminal nearest to world point (x, y) within a few screen pixels, if any. */
export function terminalAt(
  placed: Map<number, { node: string; spots: Spot[] }>,
  x: number,
  y: number,
  scale: number,
): SpotHit | null {
  let best: SpotHit | null = null;
  let bestD = Number.POSITIVE_INFINITY;
  for (const [slot, { node, spots }] of placed) {
    for (const spot of spots) {
      const d = Math.hypot(spot.x - x, spot.y - y);
      if (d <= Math.max(spot.r + 2, 7 / scale) && d < bestD) {
        bestD = d;
        best = { slot, node, spot };
      }
    }
  }
  return best;
}

/** Terminals of the nodes on screen, positioned for the current layout. */
export function placeTerminals(
  layout: Layout,
  slots: number[],
  names: string[],
  known: Map<string, NodeTerminals>,
): Map<number, { node: string; spots: Spot[] }> {
  const placed = new Map<number, { node: string; spots: Spot[] }>();
  for (const s of slots) {
    const node = names[layout.ref[s]];
    const t = known.get(node);
    if (!t) continue;
    const rect = { x: layout.x[s], y: layout.y[s], w: layout.w[s], h: layout.h[s] };
    placed.set(s, { node, spots: spotsOf(rect, t, layout.meta.direction) });
  }
  return placed;
}

/** Paint terminals (world coordinates; the context holds the camera transform). */
export function drawTerminals(
  ctx: CanvasRenderingContext2D,
  placed: Map<number, { node: string; spots: Spot[] }>,
  scale: number,
  hot: Spot | null,
): void {
  ctx.lineWidth = lineWidth({ width: T.strokeWidth, screenWidth: T.strokeWidth }, scale);
  for (const { spots } of placed.values()) {
    for (const spot of spots) {
      ctx.beginPath();
      ctx.arc(spot.x, spot.y, spot.r, 0, 2 * Math.PI);
      ctx.fillStyle = spot === hot ? T.hot : ((T as Record<string, unknown>)[spot.state] as string);
      ctx.strokeStyle = spot.plus ? T.plus : T.stroke;
      ctx.fill();
      ctx.stroke();
      if (spot.plus) {
        const a = spot.r * 0.6;
        ctx.beginPath();
        ctx.moveTo(spot.x - a, spot.y);
        ctx.lineTo(spot.x + a, spot.y);
        ctx.moveTo(spot.x, spot.y - a);
        ctx.lineTo(spot.x, spot.y + a);
        ctx.stroke();
      }
    }
  }
}
