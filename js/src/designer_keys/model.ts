// The widget model as the browser sees it: mirrors the traitlets of
// nsdl_jupyter/widgets/_designer_keys.py (DesignerKeys). Keep both in step.

export interface DesignerKeysModel {
  root_class: string; // CSS class of the Designer box whose keys and double-clicks we handle
}

export type KeyAction = "undo" | "redo" | "save";

// browser -> kernel custom messages
export type DesignerMessage =
  | { type: "key"; action: KeyAction }
  | { type: "quick_add"; text: string } // Enter in a quick-add box, with the text typed
  | {
      type: "activate";
      target: "explorer" | "type_check" | "palette";
      index: number; // the double-clicked option's position in its list (-1 if none)
      label: string; // its text
    };

// double-click targets: CSS class of a list inside the Designer -> what it activates
export const ACTIVATE: ReadonlyArray<[string, "explorer" | "type_check" | "palette"]> = [
  ["nsdl-layer-list", "explorer"],
  ["nsdl-check-list", "type_check"],
  ["nsdl-palette-list", "palette"],
];
