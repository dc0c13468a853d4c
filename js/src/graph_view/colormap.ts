// Colour maps for overlays (profiling times, any per-node value); the stops live in the
// drawing vocabulary (nsdl_jupyter/graph/drawing.json).
import { V } from "./vocabulary";

const MAPS: Record<string, string[]> = V.colormaps;

export const COLORMAPS = Object.keys(MAPS);

function hexToRgb(hex: string): [number, number, number] {
  const v = Number.parseInt(hex.slice(1), 16);
  return [(v >> 16) & 255, (v >> 8) & 255, v & 255];
}

/** Colour of `t` in [0, 1] on the named map (linear between its stops). */
export function colorAt(name: string, t: number): string {
  const stops = MAPS[name] ?? MAPS.viridis;
  const u = Math.min(1, Math.max(0, Number.isFinite(t) ? t : 0)) * (stops.length - 1);
  const k = Math.min(stops.length - 2, Math.floor(u));
  const f = u - k;
  const a = hexToRgb(stops[k]);
  const b = hexToRgb(stops[k + 1]);
  const c = a.map((v, i) => Math.round(v + (b[i] - v) * f));
  return `rgb(${c[0]},${c[1]},${c[2]})`;
}

/** A CSS gradient for the legend. */
export function gradientCss(name: string): string {
  const stops = MAPS[name] ?? MAPS.viridis;
  return `linear-gradient(to right, ${stops.join(", ")})`;
}

/** Readable text colour on a background produced by colorAt. */
export function textOn(rgb: string): string {
  const m = /rgb\((\d+),(\d+),(\d+)\)/.exec(rgb);
  if (!m) return V.text.dark;
  const lum = 0.299 * Number(m[1]) + 0.587 * Number(m[2]) + 0.114 * Number(m[3]);
  return lum > V.text.lightBelow ? V.text.dark : V.text.light;
}
