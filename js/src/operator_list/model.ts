// The widget model as the browser sees it: mirrors the traitlets of
// nsdl_jupyter/widgets/designer/_operator_list.py (OperatorList). Keep both in step.

export interface OperatorListModel {
  options: [string, string][]; // (label, palette key) per operator, in display order
  value: string | null; // the chosen key (a click); the palette's Add adds it
  rows: number; // lines shown before the list scrolls
}
