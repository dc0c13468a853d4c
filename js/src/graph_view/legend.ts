// The overlay's legend, a line below the canvas (never over a box): its label, the value
// range around the colour ramp.
import { gradientCss } from "./colormap";
import { div } from "./dom";
import type { OverlayMeta } from "./model";

export function showLegend(legend: HTMLElement, meta: OverlayMeta | null): void {
  legend.innerHTML = "";
  legend.style.display = meta ? "" : "none";
  if (!meta) return;
  const colormap = meta.colormap ?? "viridis";
  const title = div(legend, "nsdl-gv-legend-title");
  title.textContent = meta.label ?? "";
  title.title = meta.label ?? "";
  div(legend, "nsdl-gv-legend-min").textContent = fmt(meta.min ?? 0);
  div(legend, "nsdl-gv-legend-bar").style.background = gradientCss(colormap);
  div(legend, "nsdl-gv-legend-max").textContent = fmt(meta.max ?? 1);
}

function fmt(v: number): string {
  return Math.abs(v) >= 1000 || (Math.abs(v) < 0.01 && v !== 0)
    ? v.toExponential(2)
    : v.toPrecision(3);
}
