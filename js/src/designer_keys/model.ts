// The widget model as the browser sees it: mirrors the traitlets of
// nsdl_jupyter/widgets/designer/_keys.py (DesignerKeys). Keep both in step.
import type { DesignerKeysToKernel } from "../messages";

export interface DesignerKeysModel {
  root_class: string; // CSS class of the Designer box whose keys and double-clicks we handle
}

// custom messages: ../messages.ts (DesignerKeysToKernel), generated from
// nsdl_jupyter/widgets/_messages.py
type Activate = DesignerKeysToKernel["activate"]["payload"];
export type KeyAction = DesignerKeysToKernel["key"]["payload"]["action"];

// double-click targets: CSS class of a list inside the Designer -> what it activates
export const ACTIVATE: ReadonlyArray<[string, Activate["target"]]> = [
  ["nsdl-layer-list", "explorer"],
  ["nsdl-check-list", "type_check"],
  ["nsdl-palette-list", "palette"],
];
