import { describe, expect, it } from "vitest";
import { applyPatch, decodeGraph, type Patch } from "../src/graph_view/graph";
import { forgetRoutes, routeMeets } from "../src/graph_view/render";
import { edgeRoute, routeBounds } from "../src/graph_view/routes";
import { categoryFill, V } from "../src/graph_view/vocabulary";
import { layoutCollapsed, scene, topology } from "./fixtures";
import { type DrawRecord, recordDraw } from "./recording";

function drawFixture(scale: number, selected: string[] = []): DrawRecord[] {
  return recordDraw({
    topology: topology(),
    layout: layoutCollapsed(),
    selected,
    marks: { "/a/Conv": "warning" },
    overlay: null,
    camera: { scale, tx: 0, ty: 0 },
    width: 2000,
    height: 1000,
  }).records;
}

describe("canvas drawing in the vocabulary", () => {
  it("fills boxes by op category and collapsed groups in the group colour", () => {
    const fills = drawFixture(1).filter((r) => r.kind === "fill");
    const at = (x: number) => fills.find((r) => r.kind === "fill" && r.x === x)?.style;
    expect(at(314)).toBe(categoryFill("Math")); // /b/Add
    expect(at(120)).toBe(V.group.fill); // /a collapsed
    expect(at(0)).toBe(V.node.fill.pseudo); // graph input
  });

  it("outlines the box of a selected node, its collapsed group for a hidden one", () => {
    const strokes = drawFixture(1, ["/a/Relu"]).filter(
      (r) => r.kind === "stroke" && r.style === V.selection.stroke,
    );
    const pad = V.selection.pad;
    expect(strokes).toEqual([
      expect.objectContaining({ x: 120 - pad, y: -pad, w: 170 + 2 * pad, h: 44 + 2 * pad }),
    ]);
  });

  it("marks the group holding a marked node; zoomed out, only collapsed groups keep a title", () => {
    const near = drawFixture(1);
    expect(near.filter((r) => r.kind === "circle").map((r) => r.style)).toEqual([V.mark.warning]);
    expect(near.some((r) => r.kind === "text" && r.text === `${V.label.collapsed}a`)).toBe(true);
    const far = drawFixture(V.label.minScale / 2).filter((r) => r.kind === "text");
    const size = V.label.groupScreen.size / (V.label.minScale / 2);
    expect(far).toEqual([expect.objectContaining({ text: "a" })]);
    expect(far[0].kind === "text" && far[0].font.startsWith(`600 ${size}px`)).toBe(true);
  });
});

describe("edge culling", () => {
  it("tests a route against a view by the bounds kept with it, anew after a drag", () => {
    const s = scene();
    const { layout, edges } = s;
    const bounds = (k: number) =>
      routeBounds(edgeRoute(layout, s.frames, edges.src[k], edges.dst[k], "LR"));
    expect(edges.src.length).toBeGreaterThan(2);
    for (let k = edges.src.length - 1; k >= 0; k--) {
      // last edge first: routes computed out of order
      const b = bounds(k);
      expect(routeMeets(s, k, { x: b.x + b.w + 1, y: b.y, w: 10, h: b.h })).toBe(false);
      expect(routeMeets(s, k, { x: b.x - 10, y: b.y - 10, w: 9, h: 9 })).toBe(false);
      expect(routeMeets(s, k, { x: b.x + b.w - 1, y: b.y + b.h - 1, w: 10, h: 10 })).toBe(true);
    }
    const before = bounds(0);
    layout.x[edges.dst[0]] += 1000; // a drag moves the edge's target box
    const after = bounds(0);
    const reached = { x: before.x + before.w + 1, y: after.y, w: after.w, h: after.h };
    expect(routeMeets(s, 0, reached)).toBe(false); // the kept route, until forgotten
    forgetRoutes(s);
    expect(routeMeets(s, 0, reached)).toBe(true);
  });
});

describe("labels", () => {
  it("draws a node's caption, its weights and edge shapes only when zoomed in to read", () => {
    const texts = (scale: number) =>
      drawFixture(scale).flatMap((r) => (r.kind === "text" ? [r.text] : []));
    const near = texts(1);
    expect(near).toEqual(expect.arrayContaining(["Add b", "B⟨3⟩", "[1,3]"]));
    const mid = texts((V.label.minScale + V.label.detailScale) / 2);
    expect(mid).toContain("Add b");
    expect(mid).not.toContain("B⟨3⟩");
    expect(mid).not.toContain("[1,3]");
  });
});

describe("op categories", () => {
  it("come with the topology and with patches that bring new ops", () => {
    const g = decodeGraph(topology());
    expect(g.category.get("Conv")).toBe("Convolution");
    const patch: Patch = {
      seq: 1,
      topology: 1,
      items: { "1": ["/a/Conv", "com.microsoft::FusedConv", 0, 1, "com.microsoft::FusedConv", ""] },
      edges_of: [],
      edges: [],
      tensors: {},
      inits: [],
      categories: { "com.microsoft::FusedConv": "Contrib" },
      groups: {},
      layout: false,
    };
    applyPatch(g, patch);
    expect(g.category.get(g.ops[1])).toBe("Contrib");
  });
});
