// Generated from nsdl_jupyter/widgets/_messages.py by `python js/gen_messages.py`.
// Do not edit: tests/test_widget_protocol.py fails when this file is not current.

export interface Attribute {
  name: string;
  type: string;
  value: string;
}

export interface Port {
  slot: string;
  name: string;
  dtype: string;
  shape: string;
  source: string;
  initializer: Initializer | null;
}

export interface Initializer {
  name: string;
  dtype: string;
  shape: string;
  size: number;
  values: string;
  stats: boolean;
}

export interface OpCount {
  op: string;
  count: number;
}

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
  node_properties: {
    payload: { item: number };
    answer: {
      item: number;
      name: string;
      op_type: string;
      domain: string;
      op: string;
      scope: string;
      doc: string;
      attributes: Attribute[];
      inputs: Port[];
      outputs: Port[];
      body_inputs: Port[];
    };
  };
  tensor_properties: {
    payload: { tensor: number; item: number };
    answer: {
      name: string;
      dtype: string;
      shape: string;
      producer: string;
      producer_op: string;
      consumers: string[];
      more_consumers: number;
      graph_input: boolean;
      graph_output: boolean;
      initializer: Initializer | null;
    };
  };
  group_properties: {
    payload: { group: number };
    answer: {
      group: number;
      key: string;
      label: string;
      nodes: number;
      ops: OpCount[];
      synthetic: boolean;
    };
  };
  tensor_stats: {
    payload: { name: string };
    answer: {
      name: string;
      min: number | null;
      max: number | null;
      mean: number | null;
      nonfinite: number;
    };
  };
  open_body: {
    payload: { node: string; attribute: string };
    answer: null;
  };
  terminals: {
    payload: { nodes: string[] };
    answer: {
      nodes: string[];
      tensors: string[][];
      states: string[][];
      optional: boolean[][];
      variadic: boolean[];
      outputs: string[][];
    };
  };
  link: {
    payload: { tensor: string; node: string; input: number; from_node: string; from_input: number };
    answer: { message: string };
  };
  unlink: {
    payload: { nodes: string[]; inputs: number[] };
    answer: { message: string };
  };
  delete: {
    payload: { nodes: string[] };
    answer: { message: string };
  };
  move: {
    payload: { nodes: string[]; x: number[]; y: number[] };
    answer: { message: string };
  };
  rename: {
    payload: { node: string; name: string };
    answer: { message: string };
  };
  precision: {
    payload: { nodes: string[]; precision: string };
    answer: { message: string };
  };
  extract: {
    payload: { nodes: string[]; downstream: boolean };
    answer: { message: string };
  };
  profile: {
    payload: { nodes: string[] };
    answer: { message: string };
  };
  add_at: {
    payload: { text: string; x: number; y: number; link: boolean };
    answer: { message: string };
  };
  operators: {
    payload: Record<string, never>;
    answer: { keys: string[]; categories: string[] };
  };
  tensor_shapes: {
    payload: Record<string, never>;
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
  resize_pane: {
    payload: { pane: "left" | "right"; width: number };
    answer: null;
  };
}
