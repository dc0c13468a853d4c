// The hover tooltip: what it says about a box or an edge, and where it stands.
import type { Scene } from "./render";

/** An edge's tensor, element type and shape (_drawing.py edge_tip). */
function tensorTip(name: string, dtype: string, shape: string): string {
  return `${name}\n${dtype || "unknown type"} ${shape || "unknown shape"}`;
}

export function edgeTip(scene: Scene, k: number): string {
  const g = scene.graph;
  const e = scene.edges.edge[k];
  const t = g.edgeTensor[e];
  const more = scene.edges.count[k] > 1 ? `\n(+${scene.edges.count[k] - 1} more edges)` : "";
  return `${tensorTip(g.tensorName[t], g.tensorDtype[t], g.tensorShape[t])}${more}`;
}

export function slotTip(scene: Scene, s: number): string {
  const g = scene.graph;
  const ref = scene.layout.ref[s];
  if (ref < 0) return `${g.groupKey[~ref]}\n${g.groupSize[~ref]} nodes — click to expand`;
  const inits = g.initItem
    .map((item, k) =>
      item === ref
        ? `  ${g.tensorName[g.initTensor[k]]}: ${g.tensorDtype[g.initTensor[k]]} ${g.tensorShape[g.initTensor[k]]}`
        : "",
    )
    .filter(Boolean);
  return `${g.names[ref]}\n${g.ops[ref]}${inits.length ? `\ninitializers:\n${inits.join("\n")}` : ""}`;
}

/** Gap between the pointer and the tooltip, and between the tooltip and the stage's edges. */
export const TIP_OFFSET = 14;
export const TIP_MARGIN = 4;

/** Where a `tipW` x `tipH` tooltip stands for the pointer at (x, y) on a `stageW` x `stageH`
 *  stage: below right of the pointer, flipped to its left or above where it would cross the
 *  stage's edge, and never outside the stage (a tooltip larger than it keeps its top left). */
export function placeTooltip(
  x: number,
  y: number,
  tipW: number,
  tipH: number,
  stageW: number,
  stageH: number,
): [number, number] {
  const along = (p: number, size: number, room: number): number => {
    let at = p + TIP_OFFSET;
    if (at + size > room - TIP_MARGIN) at = p - TIP_OFFSET - size;
    return Math.max(TIP_MARGIN, Math.min(at, room - TIP_MARGIN - size));
  };
  return [along(x, tipW, stageW), along(y, tipH, stageH)];
}

export class Tooltip {
  constructor(private readonly el: HTMLElement) {}

  /** Show `text` near the point (x, y) of a stage `width` pixels wide, inside the stage. */
  show(x: number, y: number, width: number, text: string): void {
    const el = this.el;
    el.textContent = text;
    el.style.display = "block";
    el.style.maxWidth = `min(420px, ${Math.max(0, width - 2 * TIP_MARGIN)}px)`;
    const height = el.parentElement?.clientHeight ?? 0;
    const [left, top] = placeTooltip(x, y, el.offsetWidth, el.offsetHeight, width, height);
    el.style.left = `${left}px`;
    el.style.top = `${top}px`;
  }

  hide(): void {
    this.el.style.display = "none";
  }
}
