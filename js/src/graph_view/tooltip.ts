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

export class Tooltip {
  constructor(private readonly el: HTMLElement) {}

  /** Show `text` near the point (x, y) of a stage `width` pixels wide. */
  show(x: number, y: number, width: number, text: string): void {
    this.el.textContent = text;
    this.el.style.display = "block";
    this.el.style.left = `${Math.min(x + 14, width - 260)}px`;
    this.el.style.top = `${y + 14}px`;
  }

  hide(): void {
    this.el.style.display = "none";
  }
}
