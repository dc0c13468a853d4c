// The properties pane beside the canvas: what the last click picked (a node, an edge's tensor,
// a graph input/output, a group), asked of the kernel on request (answers:
// nsdl_jupyter/graph/_properties.py) and shown as text. It opens on the first click, so the
// first view has the whole width; it can be hidden (`show_properties`); on a narrow output
// area it lies over the canvas' right side and only while it has something to show. Model strings are set as text, never as HTML.
import type { AnyModel } from "@anywidget/types";
import type { GraphViewToKernel, Initializer, Port } from "../messages";
import { Disposables, div } from "./dom";
import { PSEUDO } from "./graph";
import type { GraphViewModel } from "./model";
import type { Requests } from "./requests";
import type { SceneStore } from "./scene_store";

type Answer<K extends keyof GraphViewToKernel> = GraphViewToKernel[K]["answer"];

/** What a click picked, for the pane. */
export type Inspect =
  | { kind: "none" }
  | { kind: "item"; item: number } // a node, or a graph input/output box
  | { kind: "edge"; edge: number } // an index into the graph's edges
  | { kind: "group"; group: number };

/** Initializers up to this many elements get their statistics at once; larger ones on a click. */
export const AUTO_STATS = 1 << 20;
const MAX_OPS = 24; // rows of a group's op histogram

const CSS = `
.nsdl-gv-body { position: relative; display: flex; flex: 1; min-height: 0;
  container-type: inline-size; }
.nsdl-gv-body > .nsdl-gv-stage { flex: 1; min-width: 0; }
.nsdl-gv-pane { width: 300px; flex: none; overflow: auto; border-left: 1px solid #d0d7de;
  background: #fbfcfd; padding: 6px 8px; box-sizing: border-box; overflow-wrap: anywhere; }
.nsdl-gv-pane[hidden], .nsdl-gv-pane-show[hidden] { display: none; }
.nsdl-gv-pane.nsdl-gv-unopened { display: none; }
.nsdl-gv-pane-head { display: flex; align-items: center; gap: 6px; margin-bottom: 4px; }
.nsdl-gv-pane-title { font-weight: 600; font-size: 13px; flex: 1; }
.nsdl-gv-pane-show { position: absolute; right: 8px; top: 8px; z-index: 3; }
.nsdl-gv-pane h4 { margin: 8px 0 2px; font-size: 12px; color: #57606a; }
.nsdl-gv-pane .nsdl-gv-kv { display: grid; grid-template-columns: max-content 1fr; gap: 1px 8px; }
.nsdl-gv-pane .nsdl-gv-k { color: #57606a; }
.nsdl-gv-pane .nsdl-gv-mono { font-family: ui-monospace, SFMono-Regular, Menlo, monospace;
  font-size: 11px; }
.nsdl-gv-pane .nsdl-gv-port { margin: 2px 0 4px; padding-left: 6px; border-left: 2px solid #e5e7eb; }
.nsdl-gv-pane .nsdl-gv-dim { color: #57606a; }
.nsdl-gv-pane .nsdl-gv-link { background: none; border: none; padding: 0; font: inherit;
  color: #0969da; cursor: pointer; text-align: left; overflow-wrap: anywhere; }
.nsdl-gv-pane .nsdl-gv-hint { color: #57606a; margin-top: 8px; }
.nsdl-gv-pane .nsdl-gv-error { color: #b91c1c; }
@container (max-width: 560px) {
  .nsdl-gv-pane { position: absolute; right: 0; top: 0; bottom: 0; width: min(280px, 85%);
    z-index: 3; box-shadow: -2px 0 8px rgba(0,0,0,0.12); }
  .nsdl-gv-pane.nsdl-gv-idle { display: none; }
}
`;

function el<K extends keyof HTMLElementTagNameMap>(
  parent: HTMLElement,
  tag: K,
  cls = "",
  text = "",
): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text) e.textContent = text;
  parent.appendChild(e);
  return e;
}

/** "float 1×128×768", "?" for what is not known. */
export function typeText(dtype: string, shape: string): string {
  return `${dtype || "?"} ${shape || "?"}`;
}

/** A statistic for reading: 4 significant digits, "—" for none. */
export function statText(v: number | null): string {
  return v === null ? "\u2014" : Number(v.toPrecision(4)).toString();
}

export class PropertiesPane {
  readonly pane: HTMLDivElement;
  private readonly body: HTMLDivElement;
  private readonly content: HTMLDivElement;
  private readonly showButton: HTMLButtonElement;
  private readonly disposables = new Disposables();
  private token = 0; // answers to an older request are dropped
  private last: Inspect = { kind: "none" };

  constructor(
    root: HTMLElement,
    stage: HTMLElement,
    private readonly model: AnyModel<GraphViewModel>,
    private readonly store: SceneStore,
    private readonly requests: Requests,
    private readonly jumpTo: (item: number) => void,
  ) {
    const style = document.createElement("style");
    style.textContent = CSS;
    root.appendChild(style);
    this.body = document.createElement("div");
    this.body.className = "nsdl-gv-body";
    stage.replaceWith(this.body);
    this.body.appendChild(stage);
    this.pane = div(this.body, "nsdl-gv-pane nsdl-gv-unopened");
    const head = div(this.pane, "nsdl-gv-pane-head");
    el(head, "span", "nsdl-gv-pane-title", "Properties");
    const hide = el(head, "button", "nsdl-gv-btn nsdl-gv-pane-hide", "Hide");
    hide.title = "Hide the properties pane";
    this.content = div(this.pane, "nsdl-gv-pane-content");
    this.showButton = el(this.body, "button", "nsdl-gv-btn nsdl-gv-pane-show", "Properties");
    this.showButton.title = "Show the properties pane";
    const d = this.disposables;
    d.listen(hide, "click", () => this.setShown(false));
    d.listen(this.showButton, "click", () => this.setShown(true));
    d.onModel(model, "change:show_properties", () => this.applyShown());
    d.onModel(model, "change:selected", () => this.followSelection());
    this.applyShown();
    this.followSelection();
  }

  destroy(): void {
    this.disposables.dispose();
  }

  private setShown(shown: boolean): void {
    this.model.set("show_properties", shown);
    this.model.save_changes();
    this.applyShown();
  }

  private applyShown(): void {
    const shown = this.model.get("show_properties") ?? true;
    this.pane.hidden = !shown;
    this.showButton.hidden = shown;
  }

  /** The pane follows the selection: one node shows its properties. */
  followSelection(): void {
    const names: string[] = this.model.get("selected") ?? [];
    const item = names.length === 1 ? this.store.graph?.nameIndex.get(names[0]) : undefined;
    if (item !== undefined) this.show({ kind: "item", item });
    else if (names.length > 1) this.message(`${names.length} nodes selected`);
    else if (
      this.last.kind === "none" ||
      (this.last.kind === "item" && this.isNode(this.last.item))
    )
      this.show({ kind: "none" }); // an edge, a group or a graph input stays shown
  }

  private isNode(item: number): boolean {
    const graph = this.store.graph;
    return !!graph && !(graph.flags[item] & PSEUDO);
  }

  /** Show what a click picked (asks the kernel; a later click wins). */
  show(target: Inspect): void {
    this.last = target;
    const token = ++this.token;
    const graph = this.store.graph;
    if (target.kind === "none" || !graph) {
      this.message("Click a node, an edge or a group to see its properties.");
      return;
    }
    this.pane.classList.remove("nsdl-gv-idle", "nsdl-gv-unopened");
    this.pane.dataset.loading = "1";
    const done = <T>(reply: { value: T } | null, paint: (value: T) => void) => {
      if (token !== this.token) return;
      delete this.pane.dataset.loading;
      this.content.replaceChildren();
      if (reply) paint(reply.value);
      else el(this.content, "div", "nsdl-gv-error", "The kernel did not answer: see below.");
    };
    if (target.kind === "group") {
      void this.requests
        .send("group_properties", { group: target.group })
        .then((r) => done(r, (v) => this.paintGroup(v)));
    } else if (target.kind === "edge") {
      const e = target.edge;
      const payload = { tensor: graph.edgeTensor[e], item: graph.edgeDst[e] };
      void this.requests
        .send("tensor_properties", payload)
        .then((r) => done(r, (v) => this.paintTensor(v)));
    } else if (graph.flags[target.item] & PSEUDO) {
      void this.requests
        .send("tensor_properties", { tensor: -1, item: target.item })
        .then((r) => done(r, (v) => this.paintTensor(v)));
    } else {
      void this.requests
        .send("node_properties", { item: target.item })
        .then((r) => done(r, (v) => this.paintNode(v)));
    }
  }

  private message(text: string): void {
    ++this.token;
    delete this.pane.dataset.loading;
    this.pane.dataset.kind = "none";
    this.pane.classList.add("nsdl-gv-idle");
    this.content.replaceChildren();
    el(this.content, "div", "nsdl-gv-hint", text);
  }

  // ------------------------------------------------------------------ painting
  private header(kind: string, title: string): void {
    this.pane.dataset.kind = kind;
    el(this.content, "div", "nsdl-gv-pane-kind nsdl-gv-dim", kind);
    el(this.content, "div", "nsdl-gv-pane-name nsdl-gv-mono", title);
  }

  private pairs(rows: [string, string | HTMLElement][], cls = ""): HTMLDivElement {
    const grid = div(this.content, `nsdl-gv-kv ${cls}`.trim());
    for (const [k, v] of rows) {
      el(grid, "span", "nsdl-gv-k", k);
      if (typeof v === "string") el(grid, "span", "nsdl-gv-mono", v);
      else grid.appendChild(v);
    }
    return grid;
  }

  /** A node name that selects (and scrolls to) the node when clicked. */
  private nodeLink(name: string, parent?: HTMLElement): HTMLElement {
    const item = this.store.graph?.nameIndex.get(name);
    if (item === undefined) {
      const span = document.createElement("span");
      span.className = "nsdl-gv-mono";
      span.textContent = name;
      parent?.appendChild(span);
      return span;
    }
    const link = document.createElement("button");
    link.className = "nsdl-gv-link nsdl-gv-mono";
    link.textContent = name;
    link.addEventListener("click", () => this.jumpTo(item));
    parent?.appendChild(link);
    return link;
  }

  private paintNode(v: Answer<"node_properties">): void {
    this.header("node", v.name || "(unnamed)");
    const rows: [string, string][] = [["op", v.op_type]];
    if (v.domain) rows.push(["domain", v.domain]);
    if (v.scope) rows.push(["scope", v.scope]);
    this.pairs(rows, "nsdl-gv-pane-node");
    if (v.doc) el(this.content, "div", "nsdl-gv-dim", v.doc);
    el(this.content, "h4", "", `Attributes (${v.attributes.length})`);
    const attrs = this.pairs(
      v.attributes.map((a) => [a.name, a.value]),
      "nsdl-gv-pane-attributes",
    );
    v.attributes.forEach((a, k) => {
      (attrs.children[2 * k] as HTMLElement).title = a.type;
    });
    this.ports("Inputs", v.inputs, "nsdl-gv-pane-inputs");
    this.ports("Outputs", v.outputs, "nsdl-gv-pane-outputs");
    if (v.body_inputs.length)
      this.ports("Read by its bodies", v.body_inputs, "nsdl-gv-pane-body-inputs");
  }

  private ports(title: string, ports: Port[], cls: string): void {
    el(this.content, "h4", "", `${title} (${ports.length})`);
    const list = div(this.content, cls);
    for (const p of ports) {
      const box = div(list, "nsdl-gv-port");
      const line = el(box, "div", "nsdl-gv-mono");
      if (p.slot) el(line, "span", "nsdl-gv-dim", `${p.slot}: `);
      el(line, "span", "", p.name || "(omitted)");
      if (p.name) el(box, "div", "nsdl-gv-mono nsdl-gv-type", typeText(p.dtype, p.shape));
      if (p.initializer) this.initializer(box, p.initializer);
      else if (p.source) {
        const from = el(box, "div", "nsdl-gv-dim", "from ");
        if (p.source === "graph input" || p.source === "enclosing graph")
          el(from, "span", "", p.source);
        else this.nodeLink(p.source, from);
      }
    }
  }

  private initializer(parent: HTMLElement, init: Initializer): void {
    const box = div(parent, "nsdl-gv-initializer nsdl-gv-mono");
    el(box, "div", "nsdl-gv-dim", `initializer, ${init.size.toLocaleString()} values`);
    el(box, "div", "nsdl-gv-values", init.values);
    if (!init.stats) return;
    const stats = div(box, "nsdl-gv-stats");
    const ask = () => {
      stats.replaceChildren();
      stats.textContent = "min/max/mean\u2026";
      const token = this.token;
      void this.requests.send("tensor_stats", { name: init.name }).then((r) => {
        if (!r || token !== this.token) return;
        const s = r.value;
        stats.textContent =
          `min ${statText(s.min)}  max ${statText(s.max)}  mean ${statText(s.mean)}` +
          (s.nonfinite ? `  (${s.nonfinite} NaN/inf)` : "");
      });
    };
    if (init.size <= AUTO_STATS) ask();
    else {
      const button = el(stats, "button", "nsdl-gv-link", "min / max / mean");
      button.addEventListener("click", ask);
    }
  }

  private paintTensor(v: Answer<"tensor_properties">): void {
    this.header("tensor", v.name);
    const producer = v.producer
      ? this.nodeLink(v.producer)
      : v.graph_input
        ? "graph input"
        : v.initializer
          ? "initializer"
          : "enclosing graph";
    if (producer instanceof HTMLElement && v.producer_op)
      producer.title = `${v.producer_op} ${v.producer}`;
    const rows: [string, string | HTMLElement][] = [
      ["type", v.dtype || "?"],
      ["shape", v.shape || "?"],
      ["producer", producer],
    ];
    if (v.graph_output) rows.push(["graph output", "yes"]);
    this.pairs(rows, "nsdl-gv-pane-tensor");
    if (v.initializer) this.initializer(this.content, v.initializer);
    const count = v.consumers.length + v.more_consumers;
    el(this.content, "h4", "", `Consumers (${count})`);
    const list = div(this.content, "nsdl-gv-pane-consumers");
    for (const name of v.consumers) this.nodeLink(name, div(list, ""));
    if (v.more_consumers) el(list, "div", "nsdl-gv-dim", `and ${v.more_consumers} more`);
  }

  private paintGroup(v: Answer<"group_properties">): void {
    this.header("group", v.key);
    this.pairs(
      [
        ["nodes", v.nodes.toLocaleString()],
        ["kind", v.synthetic ? "range of siblings" : "name scope"],
      ],
      "nsdl-gv-pane-group",
    );
    el(this.content, "h4", "", `Ops (${v.ops.length})`);
    const shown = v.ops.slice(0, MAX_OPS);
    this.pairs(
      shown.map((o) => [String(o.count), o.op]),
      "nsdl-gv-pane-ops",
    );
    if (v.ops.length > MAX_OPS)
      el(this.content, "div", "nsdl-gv-dim", `and ${v.ops.length - MAX_OPS} more op types`);
  }
}
