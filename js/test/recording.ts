// A recording 2D context: runs the canvas renderer's `draw` without a browser and returns what
// it painted as plain records (boxes, strokes, edges, circles, texts) in world units. Used by
// vitest and, bundled by esbuild, by tests/test_drawing_parity.py to compare with the SVG.
import type { Camera } from "../src/graph_view/geometry";
import { applyShapes, decodeGraph, decodeLayout } from "../src/graph_view/graph";
import { buildScene, type DrawStats, draw, type Overlay } from "../src/graph_view/render";

type Shape =
  | { type: "rect"; x: number; y: number; w: number; h: number; r: number }
  | { type: "curve"; pts: number[] };

export type DrawRecord =
  | { kind: "fill"; x: number; y: number; w: number; h: number; r: number; style: string }
  | {
      kind: "stroke";
      x: number;
      y: number;
      w: number;
      h: number;
      r: number;
      style: string;
      width: number;
    }
  | { kind: "edge"; pts: number[]; style: string; width: number; dash: number[] }
  | { kind: "circle"; cx: number; cy: number; r: number; style: string }
  | {
      kind: "text";
      text: string;
      x: number;
      y: number;
      font: string;
      style: string;
      align: string;
    };

class RecordingPath {
  shapes: Shape[] = [];
  private current: number[] = []; // the subpath being traced: a move, then its segments' points
  rect(x: number, y: number, w: number, h: number): void {
    this.shapes.push({ type: "rect", x, y, w, h, r: 0 });
  }
  roundRect(x: number, y: number, w: number, h: number, r: number): void {
    this.shapes.push({ type: "rect", x, y, w, h, r });
  }
  moveTo(x: number, y: number): void {
    this.current = [x, y];
    this.shapes.push({ type: "curve", pts: this.current });
  }
  lineTo(x: number, y: number): void {
    this.current.push(x, y);
  }
  bezierCurveTo(a: number, b: number, c: number, d: number, x: number, y: number): void {
    this.current.push(a, b, c, d, x, y);
  }
}

/** The subset of CanvasRenderingContext2D that `draw` uses, recording world-space shapes. */
export class RecordingContext {
  records: DrawRecord[] = [];
  fillStyle = "#000000";
  strokeStyle = "#000000";
  lineWidth = 1;
  font = "10px sans-serif";
  textAlign = "start";
  textBaseline = "alphabetic";
  private dash: number[] = [];
  private arcs: { cx: number; cy: number; r: number }[] = [];
  private transforms = 0;

  setTransform(): void {
    // draw sets the screen transform (background) first, then the camera's world transform
    this.transforms++;
  }
  clearRect(): void {}
  setLineDash(dash: number[]): void {
    this.dash = [...dash];
  }
  beginPath(): void {
    this.arcs = [];
  }
  moveTo(): void {}
  lineTo(): void {}
  arc(cx: number, cy: number, r: number): void {
    this.arcs.push({ cx, cy, r });
  }
  fillRect(x: number, y: number, w: number, h: number): void {
    if (this.transforms > 1)
      this.records.push({ kind: "fill", x, y, w, h, r: 0, style: this.fillStyle });
  }
  strokeRect(x: number, y: number, w: number, h: number): void {
    const { strokeStyle: style, lineWidth: width } = this;
    this.records.push({ kind: "stroke", x, y, w, h, r: 0, style, width });
  }
  fill(path?: RecordingPath): void {
    if (!path) {
      for (const a of this.arcs) this.records.push({ kind: "circle", ...a, style: this.fillStyle });
      return;
    }
    for (const s of path.shapes) {
      if (s.type === "rect") this.records.push({ kind: "fill", ...s, style: this.fillStyle });
    }
  }
  stroke(path?: RecordingPath): void {
    if (!path) return; // the grid
    const { strokeStyle: style, lineWidth: width } = this;
    for (const s of path.shapes) {
      if (s.type === "rect") {
        this.records.push({ kind: "stroke", x: s.x, y: s.y, w: s.w, h: s.h, r: s.r, style, width });
      } else {
        this.records.push({ kind: "edge", pts: s.pts, style, width, dash: [...this.dash] });
      }
    }
  }
  fillText(text: string, x: number, y: number): void {
    const { font, fillStyle: style, textAlign: align } = this;
    this.records.push({ kind: "text", text, x, y, font, style, align });
  }
}

(globalThis as { Path2D?: unknown }).Path2D ??= RecordingPath;

export interface RecordInput {
  topology: Uint8Array;
  layout: Uint8Array;
  shapes?: Uint8Array; // inferred tensor shapes, as the kernel sends them after a first drawing
  selected: string[];
  marks: Record<string, "error" | "warning">;
  precisions?: Record<string, string>; // node -> TensorRT precision (badges)
  overlay: { values: Uint8Array; colormap: string; min: number; max: number } | null;
  camera: Camera;
  width: number;
  height: number;
}

/** Draw the scene as the widget does (selection and marks lifted to their boxes) and record. */
export function recordDraw(input: RecordInput): { records: DrawRecord[]; stats: DrawStats } {
  const graph = decodeGraph(input.topology);
  if (input.shapes && !applyShapes(graph, input.shapes))
    throw new Error("shapes of another topology");
  const layout = decodeLayout(input.layout);
  const scene = buildScene(graph, layout);
  const slotOf = (name: string): number => {
    const i = graph.nameIndex.get(name);
    return i === undefined ? -1 : scene.rep[i];
  };
  const selectedSlots = new Set(input.selected.map(slotOf).filter((s) => s >= 0));
  const marks = new Map<number, "error" | "warning">();
  for (const [name, level] of Object.entries(input.marks)) {
    const s = slotOf(name);
    if (s >= 0 && marks.get(s) !== "error") marks.set(s, level);
  }
  let overlay: Overlay | null = null;
  if (input.overlay) {
    const { values, colormap, min, max } = input.overlay;
    const copy = new Uint8Array(values); // aligned for the Float32Array view
    overlay = { values: new Float32Array(copy.buffer), colormap, min, max };
  }
  const precisions = new Map<number, string>();
  for (const [name, precision] of Object.entries(input.precisions ?? {})) {
    const i = graph.nameIndex.get(name);
    if (i !== undefined) precisions.set(i, precision);
  }
  const ctx = new RecordingContext();
  const stats = draw(ctx as unknown as CanvasRenderingContext2D, scene, {
    camera: input.camera,
    width: input.width,
    height: input.height,
    dpr: 1,
    grid: false,
    background: null,
    selectedSlots,
    hoverEdge: -1,
    hoverSlot: -1,
    marks,
    overlay,
    precisions,
  });
  return { records: ctx.records, stats };
}
