// Canvas2D renderer: viewport culling and level of detail, so the cost of a frame follows what
// is on screen, not the size of the model. Edges and boxes are batched into a few Path2D's.
import { colorAt, opColor, textOn } from "./colormap";
import {
  type Camera,
  curveBounds,
  edgeCurve,
  HEADER,
  intersects,
  type Rect,
  worldViewport,
} from "./geometry";
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
  shortName,
  type VisibleEdges,
} from "./graph";

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
}

export interface DrawStats {
  boxes: number;
  edges: number;
  ms: number;
}

const FONT = "system-ui, -apple-system, 'Segoe UI', sans-serif";

function drawGrid(ctx: CanvasRenderingContext2D, view: Rect, scale: number): void {
  let step = 40;
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
  ctx.strokeStyle = "rgba(100,116,139,0.15)";
  ctx.lineWidth = 1 / scale;
  ctx.stroke();
}

function roundRect(path: Path2D, x: number, y: number, w: number, h: number, r: number): void {
  path.roundRect(x, y, w, h, Math.min(r, w / 2, h / 2));
}

function fitText(text: string, width: number, charWidth: number): string {
  const max = Math.floor(width / charWidth);
  if (text.length <= max) return text;
  return max > 1 ? `${text.slice(0, max - 1)}…` : "";
}

export function slotLabel(scene: Scene, s: number): [string, string] {
  const { graph, layout } = scene;
  const ref = layout.ref[s];
  if (ref < 0) {
    const g = ~ref;
    const size = graph.groupSize[g];
    return [graph.groupLabel[g], `${size} node${size === 1 ? "" : "s"}`];
  }
  const flags = graph.flags[ref];
  if (flags & PSEUDO) return [graph.names[ref], graph.ops[ref]];
  return [shortName(graph.names[ref]), graph.ops[ref]];
}

export function draw(ctx: CanvasRenderingContext2D, scene: Scene, o: DrawOptions): DrawStats {
  const t0 = performance.now();
  const { graph, layout } = scene;
  const { camera, dpr } = o;
  const s = camera.scale;
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  if (o.background) {
    ctx.fillStyle = o.background;
    ctx.fillRect(0, 0, o.width, o.height);
  } else {
    ctx.clearRect(0, 0, o.width, o.height);
  }
  ctx.setTransform(dpr * s, 0, 0, dpr * s, dpr * camera.tx, dpr * camera.ty);
  const view = worldViewport(camera, o.width, o.height);
  if (o.grid) drawGrid(ctx, view, s);

  const text = s >= 0.45; // labels readable
  const detail = s >= 0.2; // rounded corners, outlines
  const n = layout.ref.length;
  let boxes = 0;

  // ---- frames of expanded groups (outer first: slots are in pre-order)
  const framesFill = new Path2D();
  const headers = new Path2D();
  const frameSlots: number[] = [];
  for (let k = 0; k < n; k++) {
    if (layout.kind[k] !== KIND_FRAME) continue;
    const x = layout.x[k];
    const y = layout.y[k];
    const w = layout.w[k];
    const h = layout.h[k];
    if (!intersects(view, x, y, w, h)) continue;
    // a frame smaller than a few pixels on screen adds nothing but cost
    if (w * s < 3 && h * s < 3) continue;
    roundRect(framesFill, x, y, w, h, 8);
    headers.rect(x, y, w, Math.min(HEADER, h));
    frameSlots.push(k);
    boxes++;
  }
  ctx.fillStyle = "rgba(99,102,241,0.045)";
  ctx.fill(framesFill);
  ctx.fillStyle = "rgba(99,102,241,0.10)";
  ctx.fill(headers);
  ctx.strokeStyle = "rgba(79,70,229,0.35)";
  ctx.lineWidth = 1 / s;
  ctx.stroke(framesFill);
  if (s * HEADER >= 9) {
    ctx.fillStyle = "#3730a3";
    ctx.font = `600 12px ${FONT}`;
    ctx.textBaseline = "middle";
    for (const k of frameSlots) {
      const [label, count] = slotLabel(scene, k);
      ctx.fillText(
        fitText(`− ${label}  (${count})`, layout.w[k] - 12, 7),
        layout.x[k] + 6,
        layout.y[k] + HEADER / 2,
      );
    }
  }

  // ---- edges
  const plain = new Path2D();
  const optional = new Path2D();
  const highlighted = new Path2D();
  let drawnEdges = 0;
  const e = scene.edges;
  const straight = s < 0.25;
  for (let k = 0; k < e.src.length; k++) {
    const c = edgeCurve(layout, e.src[k], e.dst[k], layout.meta.direction);
    const b = curveBounds(c);
    if (!intersects(view, b.x, b.y, b.w, b.h)) continue;
    const hot = o.selectedSlots.has(e.src[k]) || o.selectedSlots.has(e.dst[k]) || k === o.hoverEdge;
    const path = hot ? highlighted : e.flags[k] & OPTIONAL_INPUT ? optional : plain;
    path.moveTo(c[0], c[1]);
    if (straight) path.lineTo(c[6], c[7]);
    else path.bezierCurveTo(c[2], c[3], c[4], c[5], c[6], c[7]);
    drawnEdges++;
  }
  ctx.lineWidth = Math.max(1.2, 1 / s);
  ctx.strokeStyle = "#94a3b8";
  ctx.stroke(plain);
  ctx.setLineDash([4, 3]);
  ctx.lineWidth = Math.max(0.8, 0.7 / s);
  ctx.stroke(optional);
  ctx.setLineDash([]);
  ctx.strokeStyle = "#f59e0b";
  ctx.lineWidth = Math.max(2.2, 2 / s);
  ctx.stroke(highlighted);

  // ---- leaves: nodes, collapsed groups, graph inputs/outputs; batched by fill colour
  const byColor = new Map<string, Path2D>();
  const outlines = new Path2D();
  const groupsOutline = new Path2D();
  const visibleLeaves: number[] = [];
  for (let k = 0; k < n; k++) {
    const kind = layout.kind[k];
    if (kind === KIND_FRAME) continue;
    const x = layout.x[k];
    const y = layout.y[k];
    const w = layout.w[k];
    const h = layout.h[k];
    if (!intersects(view, x, y, w, h)) continue;
    const ref = layout.ref[k];
    let color: string;
    if (kind === KIND_GROUP) color = "#eef2ff";
    else if (o.overlay && !Number.isNaN(o.overlay.values[ref])) {
      const ov = o.overlay;
      color = colorAt(ov.colormap, (ov.values[ref] - ov.min) / (ov.max - ov.min || 1));
    } else if (graph.flags[ref] & PSEUDO) color = "#f1f5f9";
    else if (graph.flags[ref] & CONSTANT) color = "#f8fafc";
    else color = opColor(graph.ops[ref]);
    let path = byColor.get(color);
    if (!path) {
      path = new Path2D();
      byColor.set(color, path);
    }
    if (detail) {
      const pill = kind !== KIND_GROUP && graph.flags[ref] & PSEUDO;
      const r = pill ? h / 2 : 6;
      roundRect(path, x, y, w, h, r);
      roundRect(kind === KIND_GROUP ? groupsOutline : outlines, x, y, w, h, r);
    } else {
      path.rect(x, y, w, h);
    }
    visibleLeaves.push(k);
    boxes++;
  }
  for (const [color, path] of byColor) {
    ctx.fillStyle = color;
    ctx.fill(path);
  }
  if (detail) {
    ctx.strokeStyle = "#64748b";
    ctx.lineWidth = 1 / s;
    ctx.stroke(outlines);
    ctx.strokeStyle = "#4f46e5";
    ctx.lineWidth = 2 / s;
    ctx.stroke(groupsOutline);
  }

  // ---- selection, hover, marks
  if (o.selectedSlots.size) {
    const sel = new Path2D();
    for (const k of o.selectedSlots) {
      if (k < n) sel.rect(layout.x[k] - 3, layout.y[k] - 3, layout.w[k] + 6, layout.h[k] + 6);
    }
    ctx.strokeStyle = "#f59e0b";
    ctx.lineWidth = Math.max(3, 2.5 / s);
    ctx.stroke(sel);
  }
  if (o.hoverSlot >= 0 && o.hoverSlot < n && layout.kind[o.hoverSlot] !== KIND_FRAME) {
    const k = o.hoverSlot;
    ctx.strokeStyle = "#0ea5e9";
    ctx.lineWidth = Math.max(2, 1.5 / s);
    ctx.strokeRect(layout.x[k] - 1.5, layout.y[k] - 1.5, layout.w[k] + 3, layout.h[k] + 3);
  }
  if (o.marks.size) {
    for (const [k, level] of o.marks) {
      if (k >= n || !intersects(view, layout.x[k], layout.y[k], layout.w[k], layout.h[k])) continue;
      const r = Math.max(7, 4 / s);
      const cx = layout.x[k] + layout.w[k] - 2;
      const cy = layout.y[k] + 2;
      ctx.beginPath();
      ctx.arc(cx, cy, r, 0, Math.PI * 2);
      ctx.fillStyle = level === "error" ? "#dc2626" : "#f59e0b";
      ctx.fill();
      if (s * r >= 5) {
        ctx.fillStyle = "#fff";
        ctx.font = `700 ${Math.round(r * 1.5)}px ${FONT}`;
        ctx.textAlign = "center";
        ctx.textBaseline = "middle";
        ctx.fillText("!", cx, cy + 0.5);
        ctx.textAlign = "left";
      }
    }
  }

  // ---- text and small decorations only when readable
  if (text) {
    ctx.textBaseline = "middle";
    for (const k of visibleLeaves) {
      const ref = layout.ref[k];
      const [title, sub] = slotLabel(scene, k);
      const x = layout.x[k];
      const y = layout.y[k];
      const w = layout.w[k];
      const h = layout.h[k];
      let fg = "#1f2328";
      if (o.overlay && ref >= 0 && !Number.isNaN(o.overlay.values[ref])) {
        const ov = o.overlay;
        fg = textOn(colorAt(ov.colormap, (ov.values[ref] - ov.min) / (ov.max - ov.min || 1)));
      }
      ctx.fillStyle = fg;
      if (ref >= 0 && graph.flags[ref] & PSEUDO) {
        ctx.font = `500 11px ${FONT}`;
        const arrow =
          graph.flags[ref] & GRAPH_INPUT ? "▶ " : graph.flags[ref] & GRAPH_OUTPUT ? "◀ " : "↰ ";
        ctx.fillText(fitText(arrow + title, w - 14, 6.2), x + 8, y + h / 2);
        continue;
      }
      ctx.font = `600 12px ${FONT}`;
      ctx.fillText(fitText(ref < 0 ? `+ ${title}` : sub, w - 14, 7), x + 8, y + h / 2 - 7);
      ctx.font = `11px ${FONT}`;
      ctx.fillStyle = fg === "#1f2328" ? "#57606a" : fg;
      ctx.fillText(fitText(ref < 0 ? sub : title, w - 14, 6.2), x + 8, y + h / 2 + 8);
      if (ref >= 0 && graph.flags[ref] & (HAS_SUBGRAPH | FUNCTION_CALL)) {
        ctx.fillStyle = "#c2410c";
        ctx.font = `700 11px ${FONT}`;
        ctx.fillText("⧉", x + w - 16, y + h - 9);
      }
    }
    // initializer-fed inputs: small squares on the input side of the box
    ctx.fillStyle = "#0f766e";
    for (const [k, count] of scene.initCount) {
      if (k >= n || !intersects(view, layout.x[k], layout.y[k], layout.w[k], layout.h[k])) continue;
      for (let j = 0; j < Math.min(count, 4); j++) {
        if (layout.meta.direction === "LR")
          ctx.fillRect(layout.x[k] - 3, layout.y[k] + 5 + j * 8, 6, 5);
        else ctx.fillRect(layout.x[k] + 8 + j * 10, layout.y[k] - 3, 6, 5);
      }
    }
  }
  return { boxes, edges: drawnEdges, ms: performance.now() - t0 };
}
