// The widget model as the browser sees it: mirrors the traitlets of
// nsdl_jupyter/widgets/graph/_graph_view.py (GraphView). Keep both in step.
import type { Patch } from "./graph";

export type MarkLevel = "error" | "warning";

export interface OverlayMeta {
  label?: string;
  colormap?: string;
  min?: number;
  max?: number;
}

export interface GraphViewModel {
  _topology: DataView; // binary columns, sent once (nsdl_jupyter/graph/_scene.py topology_bytes)
  _layout: DataView; // rectangles of the visible boxes (layout_bytes)
  _shapes: DataView; // tensor types and shapes after shape inference (shapes_bytes)
  _edits: Patch[]; // patches since the topology was sent
  selected: string[]; // node names, both ways
  direction: "LR" | "TB";
  show_constants: boolean;
  show_grid: boolean;
  _marks: Record<string, MarkLevel>;
  _overlay: OverlayMeta;
  _overlay_values: DataView; // float32 per item, NaN where no value
  _precisions: Record<string, string>; // node -> TensorRT layer precision (badges)
  _precision_choices: string[]; // what a precision badge offers; [] when read-only
  height: number; // CSS pixels
  _canvas_height: number; // the canvas as drawn, CSS px: a module outline's bands fill it
  show_properties: boolean; // the properties pane beside the canvas
  _editable: boolean; // edit gestures on the canvas (a view of an open document)
}

// custom messages: ../messages.ts (GraphViewToKernel, GraphViewToBrowser), generated from
// nsdl_jupyter/widgets/_messages.py
