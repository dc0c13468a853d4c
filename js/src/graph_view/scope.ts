// Which name scope a world point or a view lies in: the innermost expanded group whose frame
// holds it.
// Built once per layout as a tree of frames (a frame's children are the frames drawn inside
// it), so a lookup walks one path down the tree instead of scanning every box.
import type { Rect } from "./geometry";
import { type Graph, KIND_FRAME, type Layout } from "./graph";

export class ScopeIndex {
  private readonly roots: number[] = [];
  private readonly children = new Map<number, number[]>();

  constructor(
    private readonly graph: Graph,
    private readonly layout: Layout,
  ) {
    for (let s = 0; s < layout.ref.length; s++) {
      if (layout.kind[s] !== KIND_FRAME) continue;
      const parent = this.parentFrame(~layout.ref[s]);
      if (parent < 0) this.roots.push(s);
      else {
        const list = this.children.get(parent);
        if (list) list.push(s);
        else this.children.set(parent, [s]);
      }
    }
  }

  /** Slot of the frame of the nearest drawn group around group `g`, -1 for none. */
  private parentFrame(g: number): number {
    for (let p = this.graph.groupParent[g]; p >= 0; p = this.graph.groupParent[p]) {
      const slot = this.layout.groupSlot.get(p);
      if (slot !== undefined && this.layout.kind[slot] === KIND_FRAME) return slot;
    }
    return -1;
  }

  /** The innermost group whose frame contains world point (x, y); the root group (0) when
   *  none does. */
  at(x: number, y: number): number {
    return this.around({ x, y, w: 0, h: 0 });
  }

  /** The innermost group whose frame contains the whole of world rectangle `r` (what a view
   *  shows); the root group (0) when none does. */
  around(r: Rect): number {
    const { layout } = this;
    let group = 0;
    let level: number[] | undefined = this.roots;
    while (level) {
      let next: number[] | undefined;
      for (const s of level) {
        const x0 = layout.x[s];
        const y0 = layout.y[s];
        if (r.x < x0 || r.y < y0 || r.x + r.w > x0 + layout.w[s] || r.y + r.h > y0 + layout.h[s])
          continue;
        group = ~layout.ref[s];
        next = this.children.get(s);
        break;
      }
      level = next;
    }
    return group;
  }
}

/** Groups from the root down to `g` (the path a breadcrumb names). */
export function scopePath(graph: Graph, g: number): number[] {
  const path: number[] = [];
  for (let p = g; p >= 0; p = graph.groupParent[p]) path.push(p);
  return path.reverse();
}
