// The drawing vocabulary shared with the Python SVG renderer: nsdl_jupyter/graph/drawing.json,
// inlined by esbuild at bundle time. The few rules below restate nsdl_jupyter/graph/_drawing.py;
// tests/test_drawing_parity.py draws one model both ways and compares.
import vocabulary from "../../../nsdl_jupyter/graph/drawing.json";

export const V = vocabulary;

export type TextStyle = { weight: string; size: number; charWidth?: number; dy?: number };

/** CSS font of a vocabulary text style (`size` overrides its size). */
export function font(spec: { weight: string; size: number }, size = spec.size): string {
  return `${spec.weight} ${size}px ${V.font}`;
}

/** Fill of an op category (sent with the topology, from nsdl_jupyter/ops/_categories.py). */
export function categoryFill(category: string | undefined): string {
  const colors = V.category as Record<string, string>;
  return colors[category ?? "Other"] ?? colors.Other;
}

/** `text` cut with an ellipsis to about `width` pixels. */
export function fitText(text: string, width: number, charWidth: number): string {
  const max = Math.floor(width / charWidth);
  if (text.length <= max) return text;
  return max > 1 ? `${text.slice(0, max - 1)}${V.label.ellipsis}` : "";
}

/** A tensor shape ("batch_size×16×64") in about `width` pixels: its named dims cut with an
 *  ellipsis, longest first ("batch_s…×16×64"), so the numbers stay whole; where even that
 *  does not fit, the shape cut at its end (_drawing.py fit_shape). */
export function fitShape(shape: string, width: number, charWidth: number): string {
  let excess = shape.length - Math.floor(width / charWidth);
  if (excess <= 0) return shape;
  const dims = shape.split("\u00d7");
  const order = dims.map((_, k) => k).sort((a, b) => dims[b].length - dims[a].length);
  for (const k of order) {
    const kept = Math.max(1, dims[k].length - 1 - excess); // characters left before the ellipsis
    if (/^[0-9]+$/.test(dims[k]) || kept >= dims[k].length - 1) continue;
    excess -= dims[k].length - kept - 1;
    dims[k] = `${dims[k].slice(0, kept)}${V.label.ellipsis}`;
    if (excess <= 0) break;
  }
  const cut = dims.join("\u00d7");
  return cut.length <= Math.floor(width / charWidth) ? cut : fitText(shape, width, charWidth);
}

export function countText(size: number): string {
  return `${size} node${size === 1 ? "" : "s"}`;
}

/** Line width at the camera's `scale` of a style with a world width and a least screen width. */
export function lineWidth(style: { width: number; screenWidth: number }, scale: number): number {
  return Math.max(style.width, style.screenWidth / scale);
}

/** Centre lines of a node box's caption and its `weights` weight lines, one block centred in
 *  the box (_drawing.py text_rows). */
export function textRows(y: number, h: number, weights: number): number[] {
  const top = y + h / 2 - (weights * V.weights.line) / 2;
  return Array.from({ length: weights + 1 }, (_, k) => top + k * V.weights.line);
}

/** The subgraph mark left-centred on (x, y): [x, y, w, h, filled] squares, back first (the
 *  filled one takes the badge's back colour, both are outlined); _drawing.py subgraph_icon. */
export function subgraphIcon(x: number, y: number): [number, number, number, number, boolean][] {
  const { size, offset } = V.badge;
  const top = y - size / 2;
  return [
    [x + offset, top - offset, size, size, false],
    [x, top, size, size, true],
  ];
}

/** Where an edge's tensor shape is written (left-aligned, centred on y) and how wide it may
 *  be: just past its source box `a` (x, y, w, h), in the gap between layers, never on a box,
 *  a group title or another label (_drawing.py edge_shape_at). In LR the label ends before
 *  the edge's end at `endX` (routes.ts routeEnd). */
export function edgeShapeAt(
  a: [number, number, number, number],
  endX: number,
  lr: boolean,
): [number, number, number] {
  const spec = V.edgeShape;
  const gap = V.gap;
  const [x, y, w, h] = a;
  if (lr) {
    const reach = endX > x + w ? Math.min(endX - x - w, gap.layer) : gap.layer;
    return [x + w + spec.pad, y + h / 2 + spec.dy, reach - 2 * spec.pad];
  }
  const top = y + h + spec.pad + spec.size / 2;
  return [x + w / 2 + spec.dx, top, w / 2 - spec.dx + gap.order - spec.pad];
}
