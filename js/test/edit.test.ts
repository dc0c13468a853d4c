// Edit mode's pure parts: where terminals are and which one the pointer is on, and the
// gesture state machine that turns presses, drags and drops into document requests.
import { describe, expect, it } from "vitest";
import { Gesture } from "../src/graph_view/gesture";
import {
  type NodeTerminals,
  nodeSlotsOnScreen,
  placeTerminals,
  rowsOf,
  spotsOf,
  terminalAt,
} from "../src/graph_view/terminals";
import { V } from "../src/graph_view/vocabulary";
import { scene as sceneOf } from "./fixtures";

const add: NodeTerminals = {
  tensors: ["r", "", "k"],
  states: ["linked", "free", "initializer"],
  optional: [false, true, false],
  variadic: true,
  outputs: ["y"],
};
const rect = { x: 100, y: 50, w: 150, h: 36 };

describe("terminals", () => {
  it("put inputs on the side edges come in from, outputs opposite, a + slot after variadics", () => {
    const lr = spotsOf(rect, add, "LR");
    const inputs = lr.filter((s) => s.side === "in");
    expect(inputs.map((s) => s.x)).toEqual([100, 100, 100, 100]);
    expect(inputs.map((s) => s.y)).toEqual([57.2, 64.4, 71.6, 78.8]);
    expect(inputs.map((s) => s.state)).toEqual(["linked", "free", "initializer", "free"]);
    expect(inputs.map((s) => s.plus)).toEqual([false, false, false, true]);
    expect(inputs[1].r).toBe(V.terminal.optionalRadius); // optional inputs are smaller
    expect(inputs[0].r).toBe(V.terminal.radius);
    const [out] = lr.filter((s) => s.side === "out");
    expect([out.x, out.y, out.tensor]).toEqual([250, 68, "y"]);
    const tb = spotsOf(rect, add, "TB");
    expect(tb.filter((s) => s.side === "in").every((s) => s.y === 50)).toBe(true);
    expect(tb.filter((s) => s.side === "out").map((s) => [s.x, s.y])).toEqual([[175, 86]]);
  });

  it("hit-test the nearest terminal within a few screen pixels", () => {
    const placed = new Map([[3, { node: "n", spots: spotsOf(rect, add, "LR") }]]);
    expect(terminalAt(placed, 101, 58, 1)?.spot.index).toBe(0);
    expect(terminalAt(placed, 100, 79, 1)?.spot.plus).toBe(true);
    expect(terminalAt(placed, 250, 68, 1)?.spot.side).toBe("out");
    expect(terminalAt(placed, 175, 68, 1)).toBeNull(); // the box's middle
    // zoomed out, the tolerance grows in world units (7 screen pixels)
    expect(terminalAt(placed, 110, 57, 1)).toBeNull();
    expect(terminalAt(placed, 110, 57, 0.5)?.spot.index).toBe(0);
  });

  it("are asked for only for node boxes on screen at a readable zoom", () => {
    const scene = sceneOf();
    const l = scene.layout;
    const near = { scale: 1, tx: 0, ty: 0 };
    // slot 3 is /b/Add; graph input/output boxes (slots 1, 4) and groups have no terminals
    expect(nodeSlotsOnScreen(scene, near, 1000, 500)).toEqual([3]);
    expect(nodeSlotsOnScreen(scene, near, 200, 500)).toEqual([]); // off screen
    expect(nodeSlotsOnScreen(scene, { scale: 0.3, tx: 0, ty: 0 }, 4000, 2000)).toEqual([]);
    const known = rowsOf({
      nodes: ["/b/Add"],
      tensors: [["r", "k"]],
      states: [["linked", "initializer"]],
      optional: [[false, false]],
      variadic: [false],
      outputs: [["y"]],
    });
    const placed = placeTerminals(l, [3], scene.graph.names, known);
    expect(placed.get(3)?.node).toBe("/b/Add");
    expect(placed.get(3)?.spots.map((s) => s.side)).toEqual(["in", "in", "out"]);
  });
});

describe("gesture", () => {
  it("links an output to an input dropped on", () => {
    const g = new Gesture();
    expect(g.start({ kind: "output", node: "a", tensor: "t" }, 0, 0)).toBe(true);
    expect(g.drag(1, 1, 1)).toBe("pressed"); // under the drag threshold
    expect(g.drag(40, 10, 1)).toBe("linking");
    expect(g.end({ kind: "input", node: "b", index: 2 })).toEqual({
      kind: "link",
      tensor: "t",
      node: "b",
      input: 2,
      fromNode: "",
      fromInput: 0,
    });
    expect(g.mode).toBe("idle");
  });

  it("does nothing when a new link is dropped on blank canvas", () => {
    const g = new Gesture();
    g.start({ kind: "output", node: "a", tensor: "t" }, 0, 0);
    g.drag(50, 0, 1);
    expect(g.end({ kind: "other" })).toEqual({ kind: "none" });
  });

  it("unlinks a link end dragged away, moves it when dropped on another input", () => {
    const g = new Gesture();
    const end = { kind: "link_end", node: "b", index: 1, tensor: "t" } as const;
    g.start(end, 0, 0);
    expect(g.drag(30, 0, 1)).toBe("unlinking");
    expect(g.end({ kind: "other" })).toEqual({ kind: "unlink", node: "b", input: 1 });
    g.start(end, 0, 0);
    g.drag(30, 0, 1);
    expect(g.end({ kind: "input", node: "b", index: 1 })).toEqual({ kind: "none" }); // back home
    g.start(end, 0, 0);
    g.drag(30, 0, 1);
    expect(g.end({ kind: "input", node: "c", index: 0 })).toMatchObject({
      kind: "link",
      node: "c",
      input: 0,
      fromNode: "b",
      fromInput: 1,
    });
  });

  it("moves a box by the world distance dragged, and a press in place is a click", () => {
    const g = new Gesture();
    g.start({ kind: "box", node: "a" }, 10, 10);
    expect(g.drag(12, 11, 4)).toBe("moving"); // 3 screen pixels at zoom 4
    g.drag(110, 60, 4);
    expect(g.end({ kind: "other" })).toEqual({ kind: "move", dx: 100, dy: 50 });
    g.start({ kind: "box", node: "a" }, 10, 10);
    g.drag(10.2, 10, 1);
    expect(g.end({ kind: "other" })).toEqual({ kind: "click" });
    expect(g.start({ kind: "none" }, 0, 0)).toBe(false); // a pan, not an edit
    expect(g.drag(100, 0, 1)).toBe("idle");
  });
});
