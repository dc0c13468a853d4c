// The graph as the browser holds it: topology (sent once), layout (visible boxes), patches.
// Mirrors nsdl_jupyter/graph/_extract.py (flags), _layout.py (kinds) and _scene.py (buffers).
import { type Column, type Decoded, decodeColumns } from "./columns";

export const CONSTANT = 1;
export const GRAPH_INPUT = 2;
export const GRAPH_OUTPUT = 4;
export const HAS_SUBGRAPH = 8;
export const FUNCTION_CALL = 16;
export const OUTER_SCOPE = 32;
export const CUSTOM_OP = 64; // no schema here: a TensorRT plugin or vendor op
export const PSEUDO = GRAPH_INPUT | GRAPH_OUTPUT | OUTER_SCOPE;

export const OPTIONAL_INPUT = 1;
export const FROM_CONSTANT = 2;
export const BODY_INPUT = 4; // read by the node's If/Loop/Scan body from the enclosing graph

export const KIND_NODE = 0;
export const KIND_GROUP = 1;
export const KIND_FRAME = 2;

export interface TopologyMeta {
  version: number;
  n_items: number;
  n_groups: number;
  ops: string[];
  categories?: string[]; // op category of each op, as nsdl_jupyter/graph/_drawing.py op_category
  dtypes: string[];
  shapes: string[];
}

export interface Graph {
  version: number;
  names: string[];
  labels: string[]; // box caption: op type plus the meaningful name part (graph/_labels.py)
  weights: string[][]; // weight lines shown in the box, "W⟨64×3×7×7⟩"
  ops: string[];
  category: Map<string, string>; // op -> op category (drawing colour)
  flags: number[];
  group: number[];
  groupKey: string[];
  groupLabel: string[];
  groupParent: number[];
  groupSize: number[];
  groupSynthetic: number[];
  edgeSrc: Int32Array;
  edgeDst: Int32Array;
  edgeTensor: Int32Array;
  edgeFlags: Uint8Array;
  tensorName: string[];
  tensorDtype: string[];
  tensorShape: string[];
  initItem: number[];
  initTensor: number[];
  initSlot: number[];
  nameIndex: Map<string, number>;
  patchSeq: number;
}

export interface Patch {
  seq: number;
  topology: number;
  items: Record<string, [string, string, number, number, string, string]>;
  edges_of: number[];
  edges: [number, number, number, number][];
  tensors: Record<string, [string, string, string]>;
  inits: [number, number, number][];
  categories?: Record<string, string>;
  groups: Record<string, number>;
  layout: boolean;
}

// plain loops: Array.from and map walk a typed array through its iterator, 4x slower
function ints(column: Column | undefined): number[] {
  const values = (column ?? []) as ArrayLike<number>;
  const out = new Array<number>(values.length);
  for (let i = 0; i < values.length; i++) out[i] = values[i];
  return out;
}

function lookup<T>(codes: number[], table: T[]): T[] {
  const out = new Array<T>(codes.length);
  for (let i = 0; i < codes.length; i++) out[i] = table[codes[i]];
  return out;
}

function strs(column: Column | undefined): string[] {
  return (column as string[] | undefined) ?? [];
}

/** Tensor names, whole or relative to their producer: the source of the first edge carrying
 *  the tensor (nsdl_jupyter/graph/_tensor_names.py says how they are sent). */
function tensorNames(
  c: Decoded<TopologyMeta>["columns"],
  names: string[],
  edgeSrc: Int32Array,
  edgeTensor: Int32Array,
): string[] {
  const whole = strs(c["tensor.name"]);
  const relative = c["tensor.relative"] as ArrayLike<number> | undefined;
  if (!relative) return whole; // saved by a version that sent every name whole
  const tails = strs(c["tensor.tail"]);
  const producer = new Int32Array(relative.length).fill(-1);
  for (let e = 0; e < edgeSrc.length; e++) {
    if (producer[edgeTensor[e]] < 0) producer[edgeTensor[e]] = edgeSrc[e];
  }
  const out = new Array<string>(relative.length);
  let next = 0; // the whole names come in tensor order
  for (let t = 0; t < relative.length; t++) {
    out[t] = relative[t] ? names[producer[t]] + tails[t] : whole[next++];
  }
  return out;
}

function lines(text: string): string[] {
  return text ? text.split("\n") : [];
}

export function graphFromColumns(decoded: Decoded<TopologyMeta>): Graph {
  const { meta, columns: c } = decoded;
  const opCodes = ints(c["item.op"]);
  const dtypeCodes = ints(c["tensor.dtype"]);
  const shapeCodes = ints(c["tensor.shape"]);
  const names = strs(c["item.name"]);
  const flags = ints(c["item.flags"]);
  const group = ints(c["item.group"]);
  const nameIndex = new Map<string, number>();
  names.forEach((name, i) => {
    if (group[i] >= 0 && !(flags[i] & PSEUDO)) nameIndex.set(name, i);
  });
  const edgeSrc = Int32Array.from(c["edge.src"] as Int32Array);
  const edgeTensor = Int32Array.from(c["edge.tensor"] as Int32Array);
  return {
    version: meta.version,
    names,
    labels: strs(c["item.label"]),
    weights: strs(c["item.weights"]).map(lines),
    ops: lookup(opCodes, meta.ops),
    category: new Map(meta.ops.map((op, k) => [op, meta.categories?.[k] ?? "Other"])),
    flags,
    group,
    groupKey: strs(c["group.key"]),
    groupLabel: strs(c["group.label"]),
    groupParent: ints(c["group.parent"]),
    groupSize: ints(c["group.size"]),
    groupSynthetic: ints(c["group.synthetic"]),
    edgeSrc,
    edgeDst: Int32Array.from(c["edge.dst"] as Int32Array),
    edgeTensor,
    edgeFlags: Uint8Array.from(c["edge.flags"] as Uint8Array),
    tensorName: tensorNames(c, names, edgeSrc, edgeTensor),
    tensorDtype: lookup(dtypeCodes, meta.dtypes),
    tensorShape: lookup(shapeCodes, meta.shapes),
    initItem: ints(c["init.item"]),
    initTensor: ints(c["init.tensor"]),
    initSlot: ints(c["init.slot"]),
    nameIndex,
    patchSeq: 0,
  };
}

export function decodeGraph(buffer: ArrayBuffer | ArrayBufferView): Graph {
  return graphFromColumns(decodeColumns<TopologyMeta>(buffer));
}

/** Tensor types and shapes from shape inference (nsdl_jupyter/graph/_scene.py shapes_bytes),
 *  sent after the first drawing; false when they belong to another topology. */
export function applyShapes(graph: Graph, buffer: ArrayBuffer | ArrayBufferView): boolean {
  const { meta, columns: c } = decodeColumns<{
    topology: number;
    dtypes: string[];
    shapes: string[];
  }>(buffer);
  if (meta.topology !== graph.version) return false;
  ints(c["tensor.dtype"]).forEach((k, t) => {
    graph.tensorDtype[t] = meta.dtypes[k];
  });
  ints(c["tensor.shape"]).forEach((k, t) => {
    graph.tensorShape[t] = meta.shapes[k];
  });
  return true;
}

/** Apply one edit patch in place (items renamed/added/removed, their edges replaced). */
export function applyPatch(graph: Graph, patch: Patch): void {
  for (const [key, [name, op, flags, group, label, weights]] of Object.entries(patch.items)) {
    const i = Number(key);
    const old = graph.names[i];
    if (old !== undefined && graph.nameIndex.get(old) === i) graph.nameIndex.delete(old);
    graph.names[i] = name;
    graph.labels[i] = label;
    graph.weights[i] = lines(weights);
    graph.ops[i] = op;
    graph.flags[i] = flags;
    graph.group[i] = group;
    if (group >= 0 && !(flags & PSEUDO)) graph.nameIndex.set(name, i);
  }
  for (const [op, category] of Object.entries(patch.categories ?? {})) {
    graph.category.set(op, category);
  }
  for (const [key, [name, dtype, shape]] of Object.entries(patch.tensors)) {
    const t = Number(key);
    graph.tensorName[t] = name;
    graph.tensorDtype[t] = dtype;
    graph.tensorShape[t] = shape;
  }
  if (patch.edges_of.length) {
    const touched = new Set(patch.edges_of);
    const keep: number[] = [];
    for (let e = 0; e < graph.edgeSrc.length; e++) {
      if (!touched.has(graph.edgeSrc[e]) && !touched.has(graph.edgeDst[e])) keep.push(e);
    }
    const n = keep.length + patch.edges.length;
    const src = new Int32Array(n);
    const dst = new Int32Array(n);
    const tensor = new Int32Array(n);
    const flags = new Uint8Array(n);
    keep.forEach((e, k) => {
      src[k] = graph.edgeSrc[e];
      dst[k] = graph.edgeDst[e];
      tensor[k] = graph.edgeTensor[e];
      flags[k] = graph.edgeFlags[e];
    });
    patch.edges.forEach(([s, d, t, f], k) => {
      src[keep.length + k] = s;
      dst[keep.length + k] = d;
      tensor[keep.length + k] = t;
      flags[keep.length + k] = f;
    });
    graph.edgeSrc = src;
    graph.edgeDst = dst;
    graph.edgeTensor = tensor;
    graph.edgeFlags = flags;
    const inits: [number, number, number][] = [];
    graph.initItem.forEach((item, k) => {
      if (!touched.has(item)) inits.push([item, graph.initTensor[k], graph.initSlot[k]]);
    });
    inits.push(...patch.inits);
    graph.initItem = inits.map((s) => s[0]);
    graph.initTensor = inits.map((s) => s[1]);
    graph.initSlot = inits.map((s) => s[2]);
  }
  for (const [key, size] of Object.entries(patch.groups)) graph.groupSize[Number(key)] = size;
  graph.patchSeq = patch.seq;
}

// ------------------------------------------------------------------------------ layout
export interface LayoutMeta {
  seq: number;
  topology: number;
  direction: "LR" | "TB";
  show_constants: boolean;
  width: number;
  height: number;
  expanded: number[];
  room?: number[]; // what the bands fill (graph/_bands.py band_room); a new one is fitted anew
}

export interface Layout {
  meta: LayoutMeta;
  ref: Int32Array;
  kind: Uint8Array;
  x: Float32Array;
  y: Float32Array;
  w: Float32Array;
  h: Float32Array;
  itemSlot: Map<number, number>;
  groupSlot: Map<number, number>;
}

export function layoutFromColumns(decoded: Decoded<LayoutMeta>): Layout {
  const c = decoded.columns;
  const ref = c.ref as Int32Array;
  const kind = c.kind as Uint8Array;
  const itemSlot = new Map<number, number>();
  const groupSlot = new Map<number, number>();
  for (let s = 0; s < ref.length; s++) {
    if (ref[s] >= 0) itemSlot.set(ref[s], s);
    else groupSlot.set(~ref[s], s);
  }
  return {
    meta: decoded.meta,
    ref,
    kind,
    x: c.x as Float32Array,
    y: c.y as Float32Array,
    w: c.w as Float32Array,
    h: c.h as Float32Array,
    itemSlot,
    groupSlot,
  };
}

export function decodeLayout(buffer: ArrayBuffer | ArrayBufferView): Layout {
  return layoutFromColumns(decodeColumns<LayoutMeta>(buffer));
}

/** For every item, the layout slot of the box that draws it: itself, or the collapsed group
 *  around it; -1 when hidden (a constant while constants are hidden, a removed node). */
export function representatives(graph: Graph, layout: Layout): Int32Array {
  const n = graph.names.length;
  const rep = new Int32Array(n).fill(-1);
  const groupRep = new Map<number, number>();
  const repOfGroup = (g: number): number => {
    const known = groupRep.get(g);
    if (known !== undefined) return known;
    let result = -1;
    const slot = layout.groupSlot.get(g);
    if (slot !== undefined) result = layout.kind[slot] === KIND_GROUP ? slot : -2;
    else if (g >= 0 && graph.groupParent[g] >= 0) result = repOfGroup(graph.groupParent[g]);
    else if (g === 0) result = -2; // the root is always open
    groupRep.set(g, result);
    return result;
  };
  for (let i = 0; i < n; i++) {
    const own = layout.itemSlot.get(i);
    if (own !== undefined) {
      rep[i] = own;
      continue;
    }
    if (graph.group[i] < 0) continue;
    const r = repOfGroup(graph.group[i]);
    rep[i] = r >= 0 ? r : -1; // -2: inside an open group but not laid out = hidden
  }
  return rep;
}

export interface VisibleEdges {
  src: Int32Array; // layout slots
  dst: Int32Array;
  edge: Int32Array; // one of the underlying edges (for the tooltip)
  count: Int32Array; // how many edges were merged into this one
  flags: Uint8Array; // OPTIONAL_INPUT when every merged edge goes to an optional input
}

/** Edges between visible boxes: edges into collapsed groups are merged, hidden ones dropped. */
export function visibleEdges(graph: Graph, rep: Int32Array): VisibleEdges {
  const index = new Map<number, number>();
  const src: number[] = [];
  const dst: number[] = [];
  const edge: number[] = [];
  const count: number[] = [];
  const flags: number[] = [];
  const m = graph.edgeSrc.length;
  const stride = rep.length + 1;
  for (let e = 0; e < m; e++) {
    const a = rep[graph.edgeSrc[e]];
    const b = rep[graph.edgeDst[e]];
    if (a < 0 || b < 0 || a === b) continue;
    const key = a * stride + b;
    const k = index.get(key);
    if (k === undefined) {
      index.set(key, src.length);
      src.push(a);
      dst.push(b);
      edge.push(e);
      count.push(1);
      flags.push(graph.edgeFlags[e] & OPTIONAL_INPUT);
    } else {
      count[k] += 1;
      flags[k] &= graph.edgeFlags[e];
    }
  }
  return {
    src: Int32Array.from(src),
    dst: Int32Array.from(dst),
    edge: Int32Array.from(edge),
    count: Int32Array.from(count),
    flags: Uint8Array.from(flags),
  };
}

/** Groups containing item i, innermost first. */
export function ancestors(graph: Graph, item: number): number[] {
  const out: number[] = [];
  let g = graph.group[item];
  while (g >= 0) {
    out.push(g);
    g = graph.groupParent[g];
  }
  return out;
}
