import { describe, expect, it } from "vitest";
import { encodeColumns } from "../src/graph_view/columns";
import {
  headBounds,
  type ReadableFit,
  readableScale,
  startCamera,
} from "../src/graph_view/geometry";
import {
  decodeGraph,
  decodeLayout,
  type Graph,
  KIND_FRAME,
  KIND_NODE,
  type Layout,
} from "../src/graph_view/graph";
import { LEGIBLE_PX, READABLE } from "../src/graph_view/renderer";
import { ScopeIndex, scopePath } from "../src/graph_view/scope";
import { V } from "../src/graph_view/vocabulary";

const O: ReadableFit = { legible: 0.9, comfortable: 1, margin: 24, top: 24 };

describe("readable fit", () => {
  it("keeps the smallest label text at the legible size", () => {
    const smallest = Math.min(V.label.title.size, V.label.sub.size);
    expect(READABLE.legible * smallest).toBeCloseTo(LEGIBLE_PX);
    expect(LEGIBLE_PX).toBeGreaterThanOrEqual(10);
  });

  it("shows a small graph whole", () => {
    const fit = readableScale({ x: 0, y: 0, w: 800, h: 200 }, 1000, 520, "TB", O);
    expect(fit.whole).toBe(true);
    expect(fit.scale).toBeCloseTo(952 / 800);
  });

  it("shows a deep top-down graph at a legible scale instead of a strip", () => {
    const box = { x: 0, y: 0, w: 374, h: 11964 }; // ResNet-50, top-down
    const fit = readableScale(box, 1000, 520, "TB", O);
    expect(fit.whole).toBe(false);
    expect(fit.scale).toBeGreaterThanOrEqual(O.legible);
    expect(fit.scale).toBeLessThanOrEqual(O.comfortable);
    // the whole-graph fit would have been a strip under 0.04
    expect(Math.min(952 / 374, 448 / 11964)).toBeLessThan(0.04);
  });

  it("fills the canvas across the flow up to the comfortable scale", () => {
    const lr = readableScale({ x: 0, y: 0, w: 25144, h: 190 }, 1000, 520, "LR", O);
    expect(lr).toEqual({ scale: 1, whole: false });
    const between = { ...O, comfortable: 2 };
    const tb = readableScale({ x: 0, y: 0, w: 700, h: 9000 }, 1000, 520, "TB", between);
    expect(tb.scale).toBeCloseTo(952 / 700); // as wide as the canvas
  });

  it("never goes below the legible scale for a graph wide and deep", () => {
    const fit = readableScale({ x: 0, y: 0, w: 5000, h: 40000 }, 1000, 520, "TB", O);
    expect(fit).toEqual({ scale: O.legible, whole: false });
  });

  it("aligns the start of the graph under the breadcrumb and centres it across", () => {
    const box = { x: 10, y: 100, w: 374, h: 11964 };
    const cam = startCamera(box, box, 1, 1000, 520, "TB", O);
    expect(box.y * cam.scale + cam.ty).toBeCloseTo(O.top + O.margin); // top edge on screen
    expect((box.x + box.w / 2) * cam.scale + cam.tx).toBeCloseTo(500); // centred
    const lr = startCamera(box, box, 0.5, 1000, 10000, "LR", O);
    expect(box.x * lr.scale + lr.tx).toBeCloseTo(O.margin); // left edge on screen
  });

  it("centres a wide graph on what its first screen holds, within the graph's edges", () => {
    const box = { x: 0, y: 0, w: 5000, h: 40000 };
    const head = { x: 2000, y: 0, w: 200, h: 300 };
    const cam = startCamera(box, head, 1, 1000, 520, "TB", O);
    expect(2100 * cam.scale + cam.tx).toBeCloseTo(500);
    const edge = startCamera(box, { x: 0, y: 0, w: 150, h: 36 }, 1, 1000, 520, "TB", O);
    expect(edge.tx).toBeCloseTo(O.margin); // not past the left edge of the graph
  });

  it("finds what the first screen holds", () => {
    const l = deep(3, 2, 4).layout;
    const box = { x: 0, y: 0, w: 10000, h: 100000 };
    const head = headBounds(l, box, 300, "TB");
    expect(head.y).toBeGreaterThanOrEqual(0);
    expect(head.y).toBeLessThanOrEqual(300);
  });
});

/** A torch-style hierarchy laid out top-down: `stages` frames, each with `blocks` frames of
 *  `nodes` nodes (`/layer1/layer1.0/conv1`), frames nested with a title bar and padding. */
function deep(stages: number, blocks: number, nodes: number): { graph: Graph; layout: Layout } {
  const keys = [""];
  const labels = [""];
  const parents = [-1];
  const names: string[] = [];
  const itemGroup: number[] = [];
  const slots: { ref: number; kind: number; r: [number, number, number, number] }[] = [];
  let y = 0;
  for (let s = 1; s <= stages; s++) {
    const stage = keys.length;
    keys.push(`/layer${s}`);
    labels.push(`layer${s}`);
    parents.push(0);
    const stageSlot = slots.length;
    slots.push({ ref: ~stage, kind: KIND_FRAME, r: [0, y, 0, 0] });
    const top = y;
    y += 36;
    for (let b = 0; b < blocks; b++) {
      const block = keys.length;
      keys.push(`/layer${s}/layer${s}.${b}`);
      labels.push(`layer${s}.${b}`);
      parents.push(stage);
      const blockSlot = slots.length;
      slots.push({ ref: ~block, kind: KIND_FRAME, r: [14, y, 178, 0] });
      const blockTop = y;
      y += 36;
      for (let n = 0; n < nodes; n++) {
        slots.push({ ref: names.length, kind: KIND_NODE, r: [28, y, 150, 36] });
        names.push(`/layer${s}/layer${s}.${b}/conv${n}/Conv`);
        itemGroup.push(block);
        y += 92;
      }
      slots[blockSlot].r[3] = y - blockTop;
      y += 14;
    }
    slots[stageSlot].r = [0, top, 206, y - top];
    y += 56;
  }
  const graph = decodeGraph(
    encodeColumns(
      {
        version: 1,
        n_items: names.length,
        n_groups: keys.length,
        ops: ["Conv"],
        dtypes: [],
        shapes: [],
      },
      {
        "item.name": ["strs", names],
        "item.op": ["i4", names.map(() => 0)],
        "item.flags": ["u1", names.map(() => 0)],
        "item.group": ["i4", itemGroup],
        "group.key": ["strs", keys],
        "group.label": ["strs", labels],
        "group.parent": ["i4", parents],
        "group.size": ["i4", keys.map(() => nodes)],
        "group.synthetic": ["u1", keys.map(() => 0)],
        "edge.src": ["i4", []],
        "edge.dst": ["i4", []],
        "edge.tensor": ["i4", []],
        "edge.flags": ["u1", []],
        "tensor.name": ["strs", []],
        "tensor.dtype": ["i4", []],
        "tensor.shape": ["i4", []],
        "init.item": ["i4", []],
        "init.tensor": ["i4", []],
        "init.slot": ["i4", []],
      },
    ),
  );
  const layout = decodeLayout(
    encodeColumns(
      {
        seq: 1,
        topology: 1,
        direction: "TB",
        show_constants: false,
        width: 206,
        height: y,
        expanded: keys.map((_, g) => g),
      },
      {
        ref: ["i4", slots.map((s) => s.ref)],
        kind: ["u1", slots.map((s) => s.kind)],
        x: ["f4", slots.map((s) => s.r[0])],
        y: ["f4", slots.map((s) => s.r[1])],
        w: ["f4", slots.map((s) => s.r[2])],
        h: ["f4", slots.map((s) => s.r[3])],
      },
    ),
  );
  return { graph, layout };
}

/** The innermost frame holding (x, y) by scanning every slot: what the index must agree with. */
function scan(layout: Layout, x: number, y: number): number {
  let best = 0;
  let area = Number.POSITIVE_INFINITY;
  for (let s = 0; s < layout.ref.length; s++) {
    if (layout.kind[s] !== KIND_FRAME) continue;
    const [x0, y0, w, h] = [layout.x[s], layout.y[s], layout.w[s], layout.h[s]];
    if (x < x0 || y < y0 || x > x0 + w || y > y0 + h || w * h >= area) continue;
    area = w * h;
    best = ~layout.ref[s];
  }
  return best;
}

describe("breadcrumb scope", () => {
  it("names the scope of a point, root first", () => {
    const { graph, layout } = deep(4, 3, 5);
    const index = new ScopeIndex(graph, layout);
    const node = layout.itemSlot.get(graph.nameIndex.get("/layer3/layer3.1/conv2/Conv") ?? -1);
    expect(node).toBeDefined();
    const s = node as number;
    const g = index.at(layout.x[s] + 5, layout.y[s] + 5);
    expect(scopePath(graph, g).map((p) => graph.groupLabel[p])).toEqual(["", "layer3", "layer3.1"]);
    expect(index.at(-50, -50)).toBe(0); // outside every frame: the root
    expect(index.at(2, layout.y[s])).toBe(graph.groupKey.indexOf("/layer3")); // stage margin
  });

  it("names what a view holds: the whole drawing is the graph, a frame's inside its scope", () => {
    const { graph, layout } = deep(4, 3, 5);
    const index = new ScopeIndex(graph, layout);
    const whole = { x: 0, y: 0, w: layout.meta.width, h: layout.meta.height };
    expect(index.around(whole)).toBe(0); // Fit: a column of modules, not the one at its centre
    const s = layout.groupSlot.get(graph.groupKey.indexOf("/layer3/layer3.1")) as number;
    const inside = { x: layout.x[s] + 20, y: layout.y[s] + 30, w: 60, h: 40 };
    expect(index.around(inside)).toBe(graph.groupKey.indexOf("/layer3/layer3.1"));
    const across = { ...inside, h: layout.h[s] + 200 }; // the view reaches past that block
    expect(index.around(across)).toBe(graph.groupKey.indexOf("/layer3"));
  });

  it("agrees with a scan of every frame anywhere on a large layout", () => {
    const { graph, layout } = deep(16, 6, 20); // ~2,000 nodes, 112 frames
    const index = new ScopeIndex(graph, layout);
    const height = layout.meta.height;
    let seen = 0;
    for (let k = 0; k < 2000; k++) {
      const x = ((k * 37) % 240) - 10;
      const y = ((k * 7919) % (height + 200)) - 100;
      const expected = scan(layout, x, y);
      expect(index.at(x, y)).toBe(expected);
      if (expected > 0) seen++;
    }
    expect(seen).toBeGreaterThan(1000);
  });
});
