// Drag the strip of a Designer side pane to resize it (Python side:
// nsdl_jupyter/widgets/designer/_side_pane.py). The width follows the pointer in the browser; the
// kernel hears the final width once, on release, and keeps it.
import type { DesignerKeysToKernel } from "../messages";

type ResizePane = DesignerKeysToKernel["resize_pane"]["payload"];

export const MIN_WIDTH = 160; // px, as MIN_WIDTH in _side_pane.py

/** The width a drag from `start` to `x` gives a pane that was `width0` wide. */
export function draggedWidth(side: ResizePane["pane"], width0: number, start: number, x: number) {
  const delta = side === "left" ? x - start : start - x;
  return Math.max(MIN_WIDTH, Math.round(width0 + delta));
}

/** Listen for drags on the strips inside `root`; returns the cleanup. */
export function attachPaneGrips(root: HTMLElement, done: (payload: ResizePane) => void) {
  const onDown = (event: PointerEvent) => {
    if (event.button !== 0 || !(event.target instanceof Element)) return;
    if (event.target.closest("button")) return; // the collapse button
    const grip = event.target.closest<HTMLElement>(".nsdl-pane-grip");
    const pane = grip?.closest<HTMLElement>(".nsdl-side-pane");
    if (!grip || !pane || !root.contains(pane) || pane.classList.contains("nsdl-pane-closed")) {
      return;
    }
    const side: ResizePane["pane"] = pane.classList.contains("nsdl-pane-left") ? "left" : "right";
    const width0 = pane.getBoundingClientRect().width;
    const start = event.clientX;
    let width = width0;
    event.preventDefault();
    grip.setPointerCapture(event.pointerId);
    const onMove = (ev: PointerEvent) => {
      width = draggedWidth(side, width0, start, ev.clientX);
      pane.style.width = `${width}px`;
    };
    const onUp = () => {
      grip.removeEventListener("pointermove", onMove);
      grip.removeEventListener("pointerup", onUp);
      grip.removeEventListener("pointercancel", onUp);
      if (width !== width0) done({ pane: side, width });
    };
    grip.addEventListener("pointermove", onMove);
    grip.addEventListener("pointerup", onUp);
    grip.addEventListener("pointercancel", onUp);
  };
  root.addEventListener("pointerdown", onDown);
  return () => root.removeEventListener("pointerdown", onDown);
}
