// The overlay's legend: its label, the colour ramp and the value range.
import { gradientCss } from "./colormap";
import { div } from "./dom";
import type { OverlayMeta } from "./model";

export function showLegend(legend: HTMLElement, meta: OverlayMeta | null): void {
  legend.innerHTML = "";
  legend.style.display = meta ? "block" : "none";
  if (!meta) return;
  const colormap = meta.colormap ?? "viridis";
  div(legend, "nsdl-gv-legend-title").textContent = meta.label ?? "";
  div(legend, "nsdl-gv-legend-bar").style.background = gradientCss(colormap);
  const ticks = div(legend, "nsdl-gv-legend-ticks");
  ticks.innerHTML = `<span>${fmt(meta.min ?? 0)}</span><span>${fmt(meta.max ?? 1)}</span>`;
}

function fmt(v: number): string {
  return Math.abs(v) >= 1000 || (Math.abs(v) < 0.01 && v !== 0)
    ? v.toExponential(2)
    : v.toPrecision(3);
}
