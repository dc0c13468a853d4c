import { describe, expect, it } from "vitest";
import {
  ancestors,
  applyPatch,
  type Patch,
  representatives,
  visibleEdges,
} from "../src/graph_view/graph";
import { decodeGraph } from "../src/graph_view/graph";
import { graph, layout, topology } from "./fixtures";

describe("topology decoding", () => {
  it("resolves op, dtype and shape dictionaries and indexes node names", () => {
    const g = graph();
    expect(g.ops).toEqual(["Input", "Conv", "Relu", "Add", "Constant", "Output"]);
    expect(g.tensorDtype[0]).toBe("float");
    expect(g.tensorShape[4]).toBe("[1,3]");
    // graph inputs/outputs are pseudo nodes: not selectable by name
    expect([...g.nameIndex.keys()]).toEqual(["/a/Conv", "/a/Relu", "/b/Add", "Const"]);
    expect(ancestors(g, 2)).toEqual([1, 0]);
  });
});

describe("tensor names relative to their producer", () => {
  it("puts the producer's name (the first edge's source) before each tail", () => {
    // tensors: 0 the graph input's, 1 and 4 sent whole, 2 made by /a/Relu, 3 by Const
    const g = decodeGraph(
      topology({
        "tensor.relative": ["u1", [1, 0, 1, 1, 0]],
        "tensor.tail": ["strs", ["", "", "_output_0", "", ""]],
        "tensor.name": ["strs", ["c", "y"]],
      }),
    );
    expect(g.tensorName).toEqual(["x", "c", "/a/Relu_output_0", "Const", "y"]);
  });
});

describe("grouping: edges between visible boxes", () => {
  it("maps items inside a collapsed group to the group's box and hides constants", () => {
    const g = graph();
    const l = layout();
    const rep = representatives(g, l);
    // slots: 0 frame /b, 1 input, 2 group /a, 3 /b/Add, 4 output
    expect(Array.from(rep)).toEqual([1, 2, 2, 3, -1, 4]);
  });

  it("merges parallel edges, drops edges inside a collapsed group and from hidden constants", () => {
    const g = graph();
    const rep = representatives(g, layout());
    const e = visibleEdges(g, rep);
    const pairs = Array.from(e.src).map((s, k) => `${s}->${e.dst[k]}x${e.count[k]}`);
    // x->Conv (into /a), Relu->Add (/a -> Add), x->Add, Add->y; Conv->Relu is inside /a
    expect(pairs.sort()).toEqual(["1->2x1", "1->3x1", "2->3x1", "3->4x1"]);
  });
});

describe("patches", () => {
  it("renames, adds a node and replaces the edges of touched items", () => {
    const g = graph();
    const patch: Patch = {
      seq: 1,
      topology: 1,
      items: {
        "2": ["/a/Gelu", "Gelu", 0, 1, "Gelu", ""],
        "6": ["new_relu", "Relu", 0, 0, "Relu new_relu", ""],
      },
      edges_of: [2, 6],
      edges: [
        [1, 2, 1, 0],
        [2, 6, 5, 0],
        [6, 3, 6, 0],
      ],
      tensors: { "5": ["g", "float", "[1,3]"], "6": ["n", "float", "[1,3]"] },
      inits: [],
      groups: { "0": 7 },
      layout: true,
    };
    applyPatch(g, patch);
    expect(g.nameIndex.get("/a/Gelu")).toBe(2);
    expect(g.nameIndex.has("/a/Relu")).toBe(false);
    expect(g.nameIndex.get("new_relu")).toBe(6);
    expect(g.ops[6]).toBe("Relu");
    expect(g.labels[6]).toBe("Relu new_relu");
    expect(g.weights[6]).toEqual([]);
    const edges = Array.from(g.edgeSrc).map((s, k) => `${s}->${g.edgeDst[k]}`);
    expect(edges).not.toContain("2->3");
    expect(edges).toEqual(expect.arrayContaining(["0->1", "1->2", "2->6", "6->3", "3->5"]));
    expect(g.tensorName[6]).toBe("n");
    expect(g.groupSize[0]).toBe(7);
    expect(g.patchSeq).toBe(1);
  });

  it("removes a node by tombstone (group -1)", () => {
    const g = graph();
    applyPatch(g, {
      seq: 1,
      topology: 1,
      items: { "3": ["/b/Add", "Add", 0, -1, "", ""] },
      edges_of: [3],
      edges: [],
      tensors: {},
      inits: [],
      groups: {},
      layout: true,
    });
    expect(g.nameIndex.has("/b/Add")).toBe(false);
    expect(Array.from(g.edgeDst)).not.toContain(3);
  });
});
