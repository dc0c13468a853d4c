// Generated from nsdl_jupyter/widgets/_messages.py by `python js/gen_messages.py`.
// Do not edit: tests/test_widget_protocol.py fails when this file is not current.

export interface GraphViewToKernel {
  expand: {
    payload: { groups: number[] };
    answer: { layout_seq: number };
  };
  collapse: {
    payload: { groups: number[] };
    answer: { layout_seq: number };
  };
  expand_all: {
    payload: Record<string, never>;
    answer: { layout_seq: number };
  };
  collapse_all: {
    payload: Record<string, never>;
    answer: { layout_seq: number };
  };
  reveal: {
    payload: { items: number[] };
    answer: { layout_seq: number };
  };
  arrange: {
    payload: Record<string, never>;
    answer: { layout_seq: number };
  };
  open_body: {
    payload: { node: string; attribute: string };
    answer: null;
  };
}

export interface GraphViewToBrowser {
  export: {
    payload: {
      format: "png" | "jpeg";
      background: string | null;
      grid: boolean;
      scale: number;
      max_size: number;
    };
    answer: { mime: string };
  };
  fit: {
    payload: Record<string, never>;
    answer: null;
  };
}

export interface DesignerKeysToKernel {
  key: {
    payload: { action: "undo" | "redo" | "save" };
    answer: null;
  };
  quick_add: {
    payload: { text: string };
    answer: null;
  };
  activate: {
    payload: {
      target: "explorer" | "type_check" | "palette" | "parameters";
      index: number;
      label: string;
    };
    answer: null;
  };
}
