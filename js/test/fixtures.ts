// A small topology + layout, built the way nsdl_jupyter/graph/_scene.py writes them.
import { encodeColumns } from "../src/graph_view/columns";
import {
  decodeGraph,
  decodeLayout,
  KIND_FRAME,
  KIND_GROUP,
  KIND_NODE,
} from "../src/graph_view/graph";
import { buildScene, type Scene } from "../src/graph_view/render";

// items: 0 input, 1 /a/Conv, 2 /a/Relu, 3 /b/Add, 4 Const (constant, root), 5 output
// groups: 0 root, 1 "/a", 2 "/b"
type Columns = Parameters<typeof encodeColumns>[1];

/** `names`: tensor name columns instead of the whole names (see tensorNames in graph.ts). */
export function topology(names: Columns = { "tensor.name": ["strs", ["x", "c", "r", "k", "y"]] }) {
  return encodeColumns(
    {
      version: 1,
      n_items: 6,
      n_groups: 3,
      ops: ["Input", "Conv", "Relu", "Add", "Constant", "Output"],
      categories: ["Other", "Convolution", "Activation", "Math", "Tensor/Shape", "Other"],
      dtypes: ["float"],
      shapes: ["[1,3]"],
    },
    {
      "item.name": ["strs", ["x", "/a/Conv", "/a/Relu", "/b/Add", "Const", "y"]],
      "item.label": ["strs", ["", "Conv", "Relu", "Add b", "Constant", ""]],
      "item.weights": ["strs", ["", "W⟨8×3×3×3⟩", "", "B⟨3⟩", "", ""]],
      "item.op": ["i4", [0, 1, 2, 3, 4, 5]],
      "item.flags": ["u1", [2, 0, 0, 0, 1, 4]],
      "item.group": ["i4", [0, 1, 1, 2, 0, 0]],
      "group.key": ["strs", ["", "/a", "/b"]],
      "group.label": ["strs", ["", "a", "b"]],
      "group.parent": ["i4", [-1, 0, 0]],
      "group.size": ["i4", [6, 2, 1]],
      "group.synthetic": ["u1", [0, 0, 0]],
      "edge.src": ["i4", [0, 1, 2, 0, 4, 3]],
      "edge.dst": ["i4", [1, 2, 3, 3, 3, 5]],
      "edge.tensor": ["i4", [0, 1, 2, 0, 3, 4]],
      "edge.flags": ["u1", [0, 0, 0, 0, 2, 0]],
      ...names,
      "tensor.dtype": ["i4", [0, 0, 0, 0, 0]],
      "tensor.shape": ["i4", [0, 0, 0, 0, 0]],
      "init.item": ["i4", [1]],
      "init.tensor": ["i4", [1]],
      "init.slot": ["i4", [1]],
    },
  );
}

/** Layout with group /a collapsed, /b expanded, constants hidden. */
export function layoutCollapsed() {
  return encodeColumns(
    {
      seq: 1,
      topology: 1,
      direction: "LR",
      show_constants: false,
      width: 600,
      height: 100,
      expanded: [0, 2],
    },
    {
      ref: ["i4", [~2, 0, ~1, 3, 5]],
      kind: ["u1", [KIND_FRAME, KIND_NODE, KIND_GROUP, KIND_NODE, KIND_NODE]],
      x: ["f4", [300, 0, 120, 314, 520]],
      y: ["f4", [0, 0, 0, 36, 0]],
      w: ["f4", [180, 110, 170, 150, 110]],
      h: ["f4", [86, 26, 44, 36, 26]],
    },
  );
}

export const graph = () => decodeGraph(topology());
export const layout = () => decodeLayout(layoutCollapsed());

/** The fixture's graph and layout as the renderer's scene. */
export function scene(): Scene {
  return buildScene(graph(), layout());
}
