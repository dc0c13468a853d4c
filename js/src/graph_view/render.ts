// Canvas2D renderer: viewport culling and level of detail, so the cost of a frame follows what
// is on screen, not the size of the model. Edges and boxes are batched into a few Path2D's.
// Colours, sizes and label rules come from the drawing vocabulary (vocabulary.ts), shared with
// the Python SVG renderer (nsdl_jupyter/graph/_svg.py draws the same scene at zoom 1).
import { pillRect, pills } from "./badges";
import { colorAt, textOn } from "./colormap";
import { type Camera, HEADER, intersects, type Rect, worldViewport } from "./geometry";
import {
  CONSTANT,
  FUNCTION_CALL,
  GRAPH_INPUT,
  GRAPH_OUTPUT,
  type Graph,
  HAS_SUBGRAPH,
  KIND_FRAME,
  KIND_GROUP,
  type Layout,
  OPTIONAL_INPUT,
  PSEUDO,
  representatives,
  type VisibleEdges,
  visibleEdges,
} from "./graph";
import {
  edgeRoute,
  type FrameIndex,
  frameIndex,
  type Route,
  routeBounds,
  routeEnd,
  traceRoute,
} from "./routes";
import {
  categoryFill,
  countText,
  edgeShapeAt,
  fitShape,
  fitText,
  font,
  lineWidth,
  subgraphIcon,
  textRows,
  V,
} from "./vocabulary";

export interface Overlay {
  values: Float32Array; // per item, NaN = no value
  colormap: string;
  min: number;
  max: number;
}

export interface Scene {
  graph: Graph;
  layout: Layout;
  rep: Int32Array;
  edges: VisibleEdges;
  initCount: Map<number, number>; // slot -> number of initializer inputs
  frames: FrameIndex; // which frames hold which boxes (edge routes)
  routes: (Route | undefined)[]; // per visible edge, computed when first drawn or hovered
  routeBoxes: Float64Array; // per visible edge: x, y, w, h around its route, set with it
}

/** The scene of a topology and a layout: boxes standing for hidden items, merged edges, the
 *  frames around each box. */
export function buildScene(graph: Graph, layout: Layout): Scene {
  const rep = representatives(graph, layout);
  const initCount = new Map<number, number>();
  for (const item of graph.initItem) {
    const s = layout.itemSlot.get(item);
    if (s !== undefined) initCount.set(s, (initCount.get(s) ?? 0) + 1);
  }
  const edges = visibleEdges(graph, rep);
  const n = edges.src.length;
  return {
    graph,
    layout,
    rep,
    edges,
    initCount,
    frames: frameIndex(graph, layout),
    // filled with undefined, not empty: a route computed first out of order (a hover) would
    // leave a sparse array, slow to read on every paint
    routes: new Array<Route | undefined>(n).fill(undefined),
    routeBoxes: new Float64Array(4 * n),
  };
}

/** The route of visible edge `k`, kept with its bounds: every paint and pointer move reads
 *  all of them. */
export function sceneRoute(scene: Scene, k: number): Route {
  const kept = scene.routes[k];
  if (kept) return kept;
  const { layout, edges } = scene;
  const route = edgeRoute(layout, scene.frames, edges.src[k], edges.dst[k], layout.meta.direction);
  const b = routeBounds(route);
  scene.routes[k] = route;
  scene.routeBoxes.set([b.x, b.y, b.w, b.h], 4 * k);
  return route;
}

/** Whether visible edge `k`'s route may cross `view` (the box around it does). */
export function routeMeets(scene: Scene, k: number, view: Rect): boolean {
  sceneRoute(scene, k);
  const b = scene.routeBoxes;
  const i = 4 * k;
  return intersects(view, b[i], b[i + 1], b[i + 2], b[i + 3]);
}

/** Boxes moved in place (a drag): their edges' routes are computed again. */
export function forgetRoutes(scene: Scene): void {
  scene.routes.fill(undefined);
}

export interface DrawOptions {
  camera: Camera;
  width: number; // CSS pixels
  height: number;
  dpr: number;
  grid: boolean;
  background: string | null;
  selectedSlots: Set<number>;
  hoverEdge: number; // index into scene.edges, -1 none
  hoverSlot: number;
  marks: Map<number, "error" | "warning">; // slot -> worst mark inside
  overlay: Overlay | null;
  precisions?: Map<number, string>; // item -> TensorRT layer precision (badges.ts)
}

export interface DrawStats {
  boxes: number;
  edges: number;
  ms: number;
  texts: string[]; // every text drawn in the frame (labels, weights, edge shapes)
}

/** What one frame needs besides the scene: the view rectangle in world units and the scale. */
interface Frame {
  ctx: CanvasRenderingContext2D;
  scene: Scene;
  o: DrawOptions;
  view: Rect;
  s: number;
  n: number;
  texts: string[];
}

/** Draws one line of text and keeps it in the frame's list (the test API reads it). */
function text(f: Frame, line: string, x: number, y: number): void {
  if (!line) return;
  f.ctx.fillText(line, x, y);
  f.texts.push(line);
}

function drawGrid(ctx: CanvasRenderingContext2D, view: Rect, scale: number): void {
  let step = V.grid.step;
  while (step * scale < 12) step *= 5;
  ctx.beginPath();
  const x0 = Math.floor(view.x / step) * step;
  const y0 = Math.floor(view.y / step) * step;
  for (let x = x0; x <= view.x + view.w; x += step) {
    ctx.moveTo(x, view.y);
    ctx.lineTo(x, view.y + view.h);
  }
  for (let y = y0; y <= view.y + view.h; y += step) {
    ctx.moveTo(view.x, y);
    ctx.lineTo(view.x + view.w, y);
  }
  ctx.strokeStyle = V.grid.stroke;
  ctx.lineWidth = 1 / scale;
  ctx.stroke();
}

function roundRect(path: Path2D, x: number, y: number, w: number, h: number, r: number): void {
  path.roundRect(x, y, w, h, Math.min(r, w / 2, h / 2));
}

function visible(f: Frame, k: number): boolean {
  const { layout } = f.scene;
  return intersects(f.view, layout.x[k], layout.y[k], layout.w[k], layout.h[k]);
}

/** Title and subtitle of a box: (group label, node count), (tensor name, op) of a graph
 *  input/output, or (caption, op) of a node ("Conv conv1", "Conv"). */
export function slotLabel(scene: Scene, s: number): [string, string] {
  const { graph, layout } = scene;
  const ref = layout.ref[s];
  if (ref < 0) {
    const g = ~ref;
    return [graph.groupLabel[g], countText(graph.groupSize[g])];
  }
  const flags = graph.flags[ref];
  if (flags & PSEUDO) return [graph.names[ref], graph.ops[ref]];
  return [graph.labels[ref] || graph.ops[ref], graph.ops[ref]];
}

/** Overlay colour of item `ref`, or null when it has no value. */
function overlayColor(o: DrawOptions, ref: number): string | null {
  const ov = o.overlay;
  if (!ov || ref < 0 || Number.isNaN(ov.values[ref])) return null;
  return colorAt(ov.colormap, (ov.values[ref] - ov.min) / (ov.max - ov.min || 1));
}

/** Fill of a leaf box: collapsed group, overlay value, pseudo node, constant, op category. */
function boxFill(graph: Graph, o: DrawOptions, ref: number, kind: number): string {
  if (kind === KIND_GROUP) return V.group.fill;
  const painted = overlayColor(o, ref);
  if (painted) return painted;
  if (graph.flags[ref] & PSEUDO) return V.node.fill.pseudo;
  if (graph.flags[ref] & CONSTANT) return V.node.fill.constant;
  return categoryFill(graph.category.get(graph.ops[ref]));
}

/** Frames of expanded groups (outer first: slots are in pre-order) with their titles. */
function drawFrames(f: Frame): number {
  const { ctx, scene, s } = f;
  const { layout } = scene;
  const fill = new Path2D();
  const headers = new Path2D();
  const slots: number[] = [];
  for (let k = 0; k < f.n; k++) {
    if (layout.kind[k] !== KIND_FRAME || !visible(f, k)) continue;
    const w = layout.w[k];
    const h = layout.h[k];
    // a frame smaller than a few pixels on screen adds nothing but cost
    if (w * s < 3 && h * s < 3) continue;
    roundRect(fill, layout.x[k], layout.y[k], w, h, V.frame.radius);
    headers.rect(layout.x[k], layout.y[k], w, Math.min(HEADER, h));
    slots.push(k);
  }
  ctx.fillStyle = V.frame.fill;
  ctx.fill(fill);
  ctx.fillStyle = V.frame.header;
  ctx.fill(headers);
  ctx.strokeStyle = V.frame.stroke;
  ctx.lineWidth = V.frame.strokeWidth / s;
  ctx.stroke(fill);
  if (s * HEADER >= V.frame.minTextHeight) drawFrameTitles(f, slots);
  return slots.length;
}

function drawFrameTitles(f: Frame, slots: number[]): void {
  const { ctx, scene } = f;
  const { layout } = scene;
  const spec = V.label.frame;
  ctx.fillStyle = V.frame.text;
  ctx.font = font(spec);
  ctx.textBaseline = "middle";
  for (const k of slots) {
    const [label, count] = slotLabel(scene, k);
    const title = `${V.label.expanded}${label}  (${count})`;
    const room = layout.w[k] - spec.padLeft - spec.padRight;
    ctx.fillText(
      fitText(title, room, spec.charWidth),
      layout.x[k] + spec.padLeft,
      layout.y[k] + HEADER / 2,
    );
  }
}

/** Edges between visible boxes: plain, optional (dashed), touching the selection or hovered. */
function drawEdges(f: Frame): number {
  const { ctx, scene, o, s } = f;
  const { edges: e } = scene;
  const plain = new Path2D();
  const optional = new Path2D();
  const highlighted = new Path2D();
  const straight = s < V.edge.straightBelow;
  let drawn = 0;
  for (let k = 0; k < e.src.length; k++) {
    if (!routeMeets(scene, k, f.view)) continue;
    const route = sceneRoute(scene, k);
    const hot = o.selectedSlots.has(e.src[k]) || o.selectedSlots.has(e.dst[k]) || k === o.hoverEdge;
    traceRoute(hot ? highlighted : e.flags[k] & OPTIONAL_INPUT ? optional : plain, route, straight);
    drawn++;
  }
  ctx.lineWidth = lineWidth(V.edge, s);
  ctx.strokeStyle = V.edge.stroke;
  ctx.stroke(plain);
  ctx.setLineDash(V.edge.optional.dash);
  ctx.lineWidth = lineWidth(V.edge.optional, s);
  ctx.stroke(optional);
  ctx.setLineDash([]);
  ctx.strokeStyle = V.selection.stroke;
  ctx.lineWidth = lineWidth(V.edge.hot, s);
  ctx.stroke(highlighted);
  return drawn;
}

/** Leaves (nodes, collapsed groups, graph inputs/outputs), batched by fill colour; returns
 *  the visible ones. */
function drawBoxes(f: Frame): number[] {
  const { ctx, scene, o, s } = f;
  const { graph, layout } = scene;
  const detail = s >= V.detailScale; // rounded corners, outlines
  const byColor = new Map<string, Path2D>();
  const outlines = new Path2D();
  const groupsOutline = new Path2D();
  const leaves: number[] = [];
  for (let k = 0; k < f.n; k++) {
    const kind = layout.kind[k];
    if (kind === KIND_FRAME || !visible(f, k)) continue;
    const ref = layout.ref[k];
    const color = boxFill(graph, o, ref, kind);
    let path = byColor.get(color);
    if (!path) {
      path = new Path2D();
      byColor.set(color, path);
    }
    const [x, y, w, h] = [layout.x[k], layout.y[k], layout.w[k], layout.h[k]];
    if (detail) {
      const group = kind === KIND_GROUP;
      const r = group ? V.group.radius : graph.flags[ref] & PSEUDO ? h / 2 : V.node.radius;
      roundRect(path, x, y, w, h, r);
      roundRect(group ? groupsOutline : outlines, x, y, w, h, r);
    } else {
      path.rect(x, y, w, h);
    }
    leaves.push(k);
  }
  for (const [color, path] of byColor) {
    ctx.fillStyle = color;
    ctx.fill(path);
  }
  if (detail) {
    ctx.strokeStyle = V.node.stroke;
    ctx.lineWidth = V.node.strokeWidth / s;
    ctx.stroke(outlines);
    ctx.strokeStyle = V.group.stroke;
    ctx.lineWidth = V.group.strokeWidth / s;
    ctx.stroke(groupsOutline);
  }
  return leaves;
}

/** The selection's outlines and the hovered box. */
function drawSelection(f: Frame): void {
  const { ctx, scene, o, s, n } = f;
  const { layout } = scene;
  if (o.selectedSlots.size) {
    const sel = new Path2D();
    const pad = V.selection.pad;
    for (const k of o.selectedSlots) {
      if (k < n)
        sel.rect(
          layout.x[k] - pad,
          layout.y[k] - pad,
          layout.w[k] + 2 * pad,
          layout.h[k] + 2 * pad,
        );
    }
    ctx.strokeStyle = V.selection.stroke;
    ctx.lineWidth = lineWidth(V.selection, s);
    ctx.stroke(sel);
  }
  const k = o.hoverSlot;
  if (k >= 0 && k < n && layout.kind[k] !== KIND_FRAME) {
    const pad = V.hover.pad;
    ctx.strokeStyle = V.hover.stroke;
    ctx.lineWidth = lineWidth(V.hover, s);
    ctx.strokeRect(
      layout.x[k] - pad,
      layout.y[k] - pad,
      layout.w[k] + 2 * pad,
      layout.h[k] + 2 * pad,
    );
  }
}

/** Type-check marks: a red (error) or amber (warning) dot with "!" on a box's corner. */
function drawMarks(f: Frame): void {
  const { ctx, scene, o, s, n } = f;
  const { layout } = scene;
  const m = V.mark;
  const r = Math.max(m.radius, m.screenRadius / s);
  for (const [k, level] of o.marks) {
    if (k >= n || !visible(f, k)) continue;
    const cx = layout.x[k] + layout.w[k] + m.dx;
    const cy = layout.y[k] + m.dy;
    ctx.beginPath();
    ctx.arc(cx, cy, r, 0, Math.PI * 2);
    ctx.fillStyle = level === "error" ? m.error : m.warning;
    ctx.fill();
    if (s * r >= m.minTextRadius) {
      ctx.fillStyle = m.text;
      ctx.font = font({ weight: m.weight, size: Math.round(r * 1.5) });
      ctx.textAlign = "center";
      ctx.textBaseline = "middle";
      ctx.fillText("!", cx, cy + 0.5);
      ctx.textAlign = "left";
    }
  }
}

/** Labels of the visible leaves: a node's caption over its weights (these when zoomed in
 *  enough to read), "+ group" over its size, arrows on graph inputs/outputs. */
function drawLabels(f: Frame, leaves: number[]): void {
  const { ctx, scene, o, s } = f;
  const { graph, layout } = scene;
  const { label: L, text: colors } = V;
  const detail = s >= L.detailScale;
  ctx.textBaseline = "middle";
  for (const k of leaves) {
    const ref = layout.ref[k];
    const [title, sub] = slotLabel(scene, k);
    const [x, y, w, h] = [layout.x[k], layout.y[k], layout.w[k], layout.h[k]];
    const painted = overlayColor(o, ref);
    const fg = painted ? textOn(painted) : colors.dark;
    const room = w - L.padLeft - L.padRight;
    const left = x + L.padLeft;
    ctx.fillStyle = fg;
    if (ref < 0) {
      ctx.font = font(L.title);
      text(f, fitText(L.collapsed + title, room, L.title.charWidth), left, y + h / 2 + L.title.dy);
      ctx.font = font(L.sub);
      ctx.fillStyle = fg === colors.dark ? colors.sub : fg;
      text(f, fitText(sub, room, L.sub.charWidth), left, y + h / 2 + L.sub.dy);
      continue;
    }
    const flags = graph.flags[ref];
    if (flags & PSEUDO) {
      const a = L.arrow;
      const arrow = flags & GRAPH_INPUT ? a.input : flags & GRAPH_OUTPUT ? a.output : a.outer;
      ctx.font = font(L.pseudo);
      text(f, fitText(arrow + title, room, L.pseudo.charWidth), left, y + h / 2 + L.pseudo.dy);
      continue;
    }
    const weights = graph.weights[ref] ?? [];
    const rows = textRows(y, h, weights.length);
    ctx.font = font(L.title);
    text(f, fitText(title, room, L.title.charWidth), left, rows[0]);
    if (detail && weights.length) {
      ctx.font = font(V.weights);
      ctx.fillStyle = fg === colors.dark ? V.weights.fill : fg;
      weights.forEach((line, j) => {
        text(f, fitText(line, room, V.weights.charWidth), left, rows[j + 1]);
      });
    }
    if (flags & (HAS_SUBGRAPH | FUNCTION_CALL)) {
      drawSubgraphIcon(ctx, x + w + V.badge.dx, y + h + V.badge.dy);
    }
  }
}

/** Pills on nodes: TensorRT layer precision, custom operator (badges.ts). */
function drawBadges(f: Frame): void {
  const { ctx, scene, o } = f;
  const p = V.pill;
  ctx.font = font(p);
  ctx.textAlign = "center";
  ctx.textBaseline = "middle";
  for (const { slot, kind, text } of pills(scene, o.precisions ?? new Map())) {
    if (!visible(f, slot)) continue;
    const [x, y, w, h] = pillRect(kind, text, scene.layout, slot);
    const path = new Path2D();
    roundRect(path, x, y, w, h, p.radius);
    ctx.fillStyle = p[kind].fill;
    ctx.fill(path);
    ctx.fillStyle = p.text;
    ctx.fillText(text, x + w / 2, y + h / 2);
  }
  ctx.textAlign = "left";
}

/** Collapsed groups zoomed out too far for box labels: their name at a fixed screen size,
 *  as much of it as the box holds on screen. */
function drawGroupTitles(f: Frame, leaves: number[]): void {
  const { ctx, scene, s } = f;
  const { layout } = scene;
  const { label: L } = V;
  const spec = L.groupScreen;
  ctx.textBaseline = "middle";
  ctx.fillStyle = V.text.dark;
  ctx.font = font(spec, spec.size / s);
  for (const k of leaves) {
    if (layout.kind[k] !== KIND_GROUP) continue;
    const room = layout.w[k] * s - 2 * spec.pad;
    if (room < spec.minChars * spec.charWidth) continue;
    const [title] = slotLabel(scene, k);
    text(
      f,
      fitText(title, room, spec.charWidth),
      layout.x[k] + spec.pad / s,
      layout.y[k] + layout.h[k] / 2,
    );
  }
}

/** Tensor shapes on the visible edges: one under (TB) or beside (LR) each source box. */
function drawEdgeShapes(f: Frame): void {
  const { ctx, scene } = f;
  const { layout, edges: e, graph } = scene;
  const spec = V.edgeShape;
  const lr = layout.meta.direction === "LR";
  ctx.font = font(spec);
  ctx.fillStyle = spec.fill;
  ctx.textBaseline = "middle";
  ctx.textAlign = "left";
  const labelled = new Set<number>(); // one shape under a box, whatever it fans out to
  for (let k = 0; k < e.src.length; k++) {
    const src = e.src[k];
    if (labelled.has(src)) continue;
    labelled.add(src);
    const [endX] = routeEnd(sceneRoute(scene, k));
    const box: [number, number, number, number] = [
      layout.x[src],
      layout.y[src],
      layout.w[src],
      layout.h[src],
    ];
    const [x, y, room] = edgeShapeAt(box, endX, lr);
    const shape = fitShape(graph.tensorShape[graph.edgeTensor[e.edge[k]]], room, spec.charWidth);
    if (!shape || !intersects(f.view, x, y - spec.size / 2, room, spec.size)) continue;
    text(f, shape, x, y);
  }
}

/** The If/Loop/Scan (or function call) mark as shapes: no font glyph it could lack. */
function drawSubgraphIcon(ctx: CanvasRenderingContext2D, x: number, y: number): void {
  const b = V.badge;
  ctx.strokeStyle = b.fill;
  ctx.lineWidth = b.strokeWidth;
  ctx.fillStyle = b.back;
  for (const [bx, by, bw, bh, filled] of subgraphIcon(x, y)) {
    if (filled) ctx.fillRect(bx, by, bw, bh);
    ctx.strokeRect(bx, by, bw, bh);
  }
}

/** Initializer-fed inputs: small squares on the input side of the box. */
function drawInitializers(f: Frame): void {
  const { ctx, scene, n } = f;
  const { layout } = scene;
  const init = V.initializer;
  const side = init[layout.meta.direction];
  ctx.fillStyle = init.fill;
  for (const [k, count] of scene.initCount) {
    if (k >= n || !visible(f, k)) continue;
    for (let j = 0; j < Math.min(count, init.max); j++) {
      const x = layout.x[k] + side.x + j * side.dx;
      ctx.fillRect(x, layout.y[k] + side.y + j * side.dy, init.w, init.h);
    }
  }
}

function clear(ctx: CanvasRenderingContext2D, o: DrawOptions): void {
  ctx.setTransform(o.dpr, 0, 0, o.dpr, 0, 0);
  if (o.background) {
    ctx.fillStyle = o.background;
    ctx.fillRect(0, 0, o.width, o.height);
  } else {
    ctx.clearRect(0, 0, o.width, o.height);
  }
}

export function draw(ctx: CanvasRenderingContext2D, scene: Scene, o: DrawOptions): DrawStats {
  const t0 = performance.now();
  const { camera, dpr } = o;
  const s = camera.scale;
  clear(ctx, o);
  ctx.setTransform(dpr * s, 0, 0, dpr * s, dpr * camera.tx, dpr * camera.ty);
  const view = worldViewport(camera, o.width, o.height);
  if (o.grid) drawGrid(ctx, view, s);
  const f: Frame = { ctx, scene, o, view, s, n: scene.layout.ref.length, texts: [] };
  const frames = drawFrames(f);
  const edges = drawEdges(f);
  const leaves = drawBoxes(f);
  drawSelection(f);
  if (o.marks.size) drawMarks(f);
  if (s >= V.label.minScale) {
    drawLabels(f, leaves);
    drawInitializers(f);
    drawBadges(f);
    if (s >= V.label.detailScale) drawEdgeShapes(f);
  } else {
    drawGroupTitles(f, leaves);
  }
  return { boxes: frames + leaves.length, edges, ms: performance.now() - t0, texts: f.texts };
}
