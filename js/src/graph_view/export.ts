// Pictures of the whole graph: the toolbar's PNG download and the answer to the kernel's
// `export` request (GraphView.export_image), both drawn offscreen by the renderer.
import type { GraphViewToBrowser } from "../messages";
import type { Outgoing } from "../protocol";
import type { Renderer } from "./renderer";

type Export = GraphViewToBrowser["export"];

export async function exportImage(
  renderer: Renderer,
  req: Export["payload"],
): Promise<Outgoing<Export["answer"]>> {
  const blob = await renderer.renderImage(
    req.format,
    req.background,
    req.grid,
    req.scale,
    req.max_size,
  );
  return { value: { mime: blob.type }, buffers: [await blob.arrayBuffer()] };
}

export async function downloadPng(renderer: Renderer, grid: boolean): Promise<void> {
  const blob = await renderer.renderImage("png", "#ffffff", grid, 2, 8192);
  const a = document.createElement("a");
  a.href = URL.createObjectURL(blob);
  a.download = "graph.png";
  a.click();
  setTimeout(() => URL.revokeObjectURL(a.href), 10_000);
}
