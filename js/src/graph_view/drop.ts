// An operator dragged from the Layer Palette (js/src/operator_list/) and dropped on the canvas:
// the palette puts its key under OPERATOR_TYPE in the drag data; the canvas turns the drop
// point into layout coordinates and asks the kernel for the same "add_at" as quick add.
import { type Camera, toWorld } from "./geometry";

export const OPERATOR_TYPE = "application/x-nsdl-operator";

/** Layout coordinates of a drop at client (x, y) over a canvas whose box is `rect`. */
export function dropPoint(
  rect: { left: number; top: number },
  camera: Camera,
  clientX: number,
  clientY: number,
): [number, number] {
  return toWorld(camera, clientX - rect.left, clientY - rect.top);
}

/** True when a drag carries an operator (its data is readable only on drop). */
export function carriesOperator(types: readonly string[] | undefined): boolean {
  return !!types && Array.from(types).includes(OPERATOR_TYPE);
}
