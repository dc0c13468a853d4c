// Direct manipulation on the canvas of a GraphView bound to an editable document (edit mode:
// the `_editable` trait). Gestures (gesture.ts) and keys become requests to the kernel
// (nsdl_jupyter/widgets/graph/_canvas_edit.py), each one undoable command of the document; the
// view redraws from the patches and layouts the document's change events produce, never from
// the answers. Terminals (terminals.ts) are fetched for the boxes on screen only. Quick add
// suggests operators as one types (suggest.ts); operators dropped from the Layer Palette
// (drop.ts) are added where they land, by the same "add_at" request.
import type { AnyModel } from "@anywidget/types";
import type { GraphViewToKernel } from "../messages";
import { ContextMenu, type MenuItem, type Suggestion } from "./context_menu";
import { Disposables } from "./dom";
import { carriesOperator, dropPoint, OPERATOR_TYPE } from "./drop";
import { toWorld } from "./geometry";
import { type Action, type Drop, Gesture, type Press } from "./gesture";
import { PSEUDO } from "./graph";
import { boxAt, hoverAt } from "./hit";
import type { GraphViewModel } from "./model";
import { forgetRoutes, sceneRoute } from "./render";
import type { Renderer } from "./renderer";
import type { Requests } from "./requests";
import { traceRoute } from "./routes";
import type { SceneStore } from "./scene_store";
import { rankKeys } from "./suggest";
import {
  drawTerminals,
  type NodeTerminals,
  nodeSlotsOnScreen,
  placeTerminals,
  rowsOf,
  type Spot,
  terminalAt,
} from "./terminals";
import { lineWidth, V } from "./vocabulary";

export interface EditHost {
  readonly model: AnyModel<GraphViewModel>;
  readonly store: SceneStore;
  readonly renderer: Renderer;
  readonly requests: Requests;
  readonly canvas: HTMLCanvasElement;
  readonly stage: HTMLElement;
  readonly root: HTMLElement;
  selected(): string[];
  select(names: string[]): void;
  arrange(): void;
}

interface LinkRef {
  node: string;
  input: number;
  edge: number; // index into scene.edges, for the highlight
}

type Placed = ReturnType<typeof placeTerminals>;
type Operators = GraphViewToKernel["operators"]["answer"];

const SUGGESTIONS = 12; // lines of quick add's list (it scrolls past 8)

const NO_TERMINALS: NodeTerminals = {
  tensors: [],
  states: [],
  optional: [],
  variadic: false,
  outputs: [],
};

export class CanvasEditor {
  private readonly known = new Map<string, NodeTerminals>();
  private asking = false;
  private placed: Placed = new Map();
  private hot: Spot | null = null;
  private readonly gesture = new Gesture();
  private dragged: { slot: number; node: string; x: number; y: number }[] = [];
  private pointer: [number, number] = [0, 0]; // last screen point over the canvas
  private links: LinkRef[] = [];
  private readonly menu: ContextMenu;
  private readonly disposables = new Disposables();

  constructor(private readonly host: EditHost) {
    const { canvas, renderer } = host;
    canvas.tabIndex = 0; // focusable: Delete and Ctrl+Space reach it
    this.menu = new ContextMenu(host.stage);
    const on = (target: EventTarget, type: string, fn: (ev: Event) => void) =>
      this.disposables.listen(target, type, fn);
    on(canvas, "keydown", (ev) => this.onKey(ev as KeyboardEvent));
    on(canvas, "contextmenu", (ev) => this.onContextMenu(ev as MouseEvent));
    on(canvas, "pointerdown", () => this.menu.hide());
    on(canvas, "dragover", (ev) => this.onDragOver(ev as DragEvent));
    on(canvas, "drop", (ev) => this.onDrop(ev as DragEvent));
    renderer.overlays.push(this.paint);
    this.disposables.add(() => {
      renderer.overlays.splice(renderer.overlays.indexOf(this.paint), 1);
      this.menu.el.remove();
    });
    (host.root as unknown as { __nsdlEdit: unknown }).__nsdlEdit = {
      terminal: (node: string, side: "in" | "out", index: number) =>
        this.terminalPoint(node, side, index),
    };
    this.sync();
  }

  /** Client coordinates of a terminal drawn now (UI tests), or null. */
  private terminalPoint(node: string, side: "in" | "out", index: number): [number, number] | null {
    for (const placed of this.placed.values()) {
      if (placed.node !== node) continue;
      const spot = placed.spots.find((s) => s.side === side && s.index === index);
      if (!spot) return null;
      const r = this.host.canvas.getBoundingClientRect();
      const { scale, tx, ty } = this.host.renderer.camera;
      return [r.left + spot.x * scale + tx, r.top + spot.y * scale + ty];
    }
    return null;
  }

  destroy(): void {
    this.disposables.dispose();
  }

  get enabled(): boolean {
    return !!this.host.model.get("_editable");
  }

  /** `change:_editable` */
  sync(): void {
    this.host.root.dataset.editable = this.enabled ? "1" : "";
    if (!this.enabled) this.menu.hide();
    this.host.renderer.invalidate();
  }

  /** The graph changed (patch or new topology): terminals are asked for again. */
  invalidate(): void {
    this.known.clear();
    this.links = [];
    this.host.renderer.invalidate();
  }

  // ------------------------------------------------------------------ pointer (pointer.ts)
  private world(x: number, y: number): [number, number] {
    return toWorld(this.host.renderer.camera, x, y);
  }

  /** A press at screen (x, y): true when it starts an edit gesture (no pan then). */
  down(x: number, y: number): boolean {
    this.pointer = [x, y];
    if (!this.enabled) return false;
    this.host.canvas.focus({ preventScroll: true });
    const [wx, wy] = this.world(x, y);
    const press = this.pressAt(x, y, wx, wy);
    if (press.kind === "box") {
      const selected = this.host.selected();
      const names = selected.includes(press.node) ? selected : [press.node];
      const { layout, graph } = this.host.store;
      this.dragged = [];
      if (layout && graph) {
        for (const node of names) {
          const slot = layout.itemSlot.get(graph.nameIndex.get(node) ?? -1);
          if (slot !== undefined)
            this.dragged.push({ slot, node, x: layout.x[slot], y: layout.y[slot] });
        }
      }
    }
    return this.gesture.start(press, wx, wy);
  }

  private pressAt(x: number, y: number, wx: number, wy: number): Press {
    const scale = this.host.renderer.camera.scale;
    const hit = terminalAt(this.placed, wx, wy, scale);
    if (hit?.spot.side === "out")
      return { kind: "output", node: hit.node, tensor: hit.spot.tensor };
    if (hit?.spot.side === "in" && hit.spot.tensor) {
      return { kind: "link_end", node: hit.node, index: hit.spot.index, tensor: hit.spot.tensor };
    }
    const { layout } = this.host.store;
    const box = layout ? boxAt(layout, this.host.renderer.camera, x, y) : null;
    const [node] = box ? this.host.store.itemsOfSlots([box.slot]) : [];
    return node !== undefined && !box?.header ? { kind: "box", node } : { kind: "none" };
  }

  move(x: number, y: number): void {
    this.pointer = [x, y];
    const [wx, wy] = this.world(x, y);
    const mode = this.gesture.drag(wx, wy, this.host.renderer.camera.scale);
    const layout = this.host.store.layout;
    if (mode === "moving" && layout) {
      for (const d of this.dragged) {
        layout.x[d.slot] = d.x + this.gesture.dx;
        layout.y[d.slot] = d.y + this.gesture.dy;
      }
      const scene = this.host.store.scene;
      if (scene) forgetRoutes(scene);
    }
    if (mode === "linking" || mode === "unlinking") {
      this.hot = terminalAt(this.placed, wx, wy, this.host.renderer.camera.scale)?.spot ?? null;
    }
    this.host.renderer.invalidate();
  }

  /** Release at screen (x, y): true when it was a plain click (pointer.ts selects then). */
  up(x: number, y: number): boolean {
    const [wx, wy] = this.world(x, y);
    this.move(x, y);
    const hit = terminalAt(this.placed, wx, wy, this.host.renderer.camera.scale);
    const drop: Drop =
      hit?.spot.side === "in"
        ? { kind: "input", node: hit.node, index: hit.spot.index }
        : { kind: "other" };
    const action = this.gesture.end(drop);
    this.hot = null;
    this.host.renderer.invalidate();
    if (action.kind === "click") return true;
    void this.perform(action);
    return false;
  }

  /** Hover in edit mode: a terminal under the pointer wins over the tooltip. */
  hover(x: number, y: number): boolean {
    this.pointer = [x, y];
    if (!this.enabled) return false;
    const [wx, wy] = this.world(x, y);
    const spot = terminalAt(this.placed, wx, wy, this.host.renderer.camera.scale)?.spot ?? null;
    if (spot !== this.hot) {
      this.hot = spot;
      this.host.renderer.invalidate();
    }
    this.host.canvas.style.cursor = spot ? "crosshair" : "";
    return spot !== null;
  }

  /** A click on blank canvas: select the link under the pointer (true when there is one). */
  clickLink(x: number, y: number): boolean {
    const { scene } = this.host.store;
    if (!this.enabled || !scene) return false;
    const k = hoverAt(scene, this.host.renderer.camera, x, y).edge;
    if (k < 0) {
      this.links = [];
      return false;
    }
    const { graph } = scene;
    const e = scene.edges.edge[k];
    const dst = graph.edgeDst[e];
    const tensor = graph.tensorName[graph.edgeTensor[e]];
    if (scene.edges.count[k] > 1 || graph.flags[dst] & PSEUDO) return false; // merged or I/O
    const node = graph.names[dst];
    void this.terminalsOf([node]).then((rows) => {
      const inputs = rows.get(node)?.tensors ?? [];
      this.links = inputs.flatMap((t, input) => (t === tensor ? [{ node, input, edge: k }] : []));
      this.host.root.dataset.selectedLinks = this.links
        .map((l) => `${l.node}[${l.input}]`)
        .join("\n");
      this.host.select([]);
      this.host.renderer.invalidate();
    });
    return true;
  }

  // ------------------------------------------------------------------ requests
  private async perform(action: Action): Promise<void> {
    const send = this.host.requests;
    let reply: { value: { message: string } } | null = null;
    if (action.kind === "link") {
      const { tensor, node, input, fromNode, fromInput } = action;
      reply = await send.send("link", {
        tensor,
        node,
        input,
        from_node: fromNode,
        from_input: fromInput,
      });
    } else if (action.kind === "unlink") {
      reply = await send.send("unlink", { nodes: [action.node], inputs: [action.input] });
    } else if (action.kind === "move" && this.dragged.length) {
      const moved = this.dragged;
      reply = await send.send("move", {
        nodes: moved.map((d) => d.node),
        x: moved.map((d) => d.x + action.dx),
        y: moved.map((d) => d.y + action.dy),
      });
      if (!reply) this.host.store.loadLayout(); // refused: back where the layout says
    }
    this.done(reply);
  }

  private done(reply: { value: { message: string } } | null): void {
    if (reply) this.host.root.dataset.lastEdit = reply.value.message;
  }

  private async terminalsOf(nodes: string[]): Promise<Map<string, NodeTerminals>> {
    const missing = nodes.filter((n) => !this.known.has(n));
    if (missing.length) {
      const reply = await this.host.requests.send("terminals", { nodes: missing });
      const rows = reply ? rowsOf(reply.value) : new Map<string, NodeTerminals>();
      // a node the kernel does not answer for (or a failed request) gets no terminals,
      // rather than being asked for again at every frame
      for (const node of missing) this.known.set(node, rows.get(node) ?? NO_TERMINALS);
    }
    return this.known;
  }

  private deleteSelection(): void {
    if (this.links.length) {
      const links = this.links;
      this.links = [];
      void this.host.requests
        .send("unlink", { nodes: links.map((l) => l.node), inputs: links.map((l) => l.input) })
        .then((r) => this.done(r));
      return;
    }
    const nodes = this.host.selected();
    if (nodes.length) void this.host.requests.send("delete", { nodes }).then((r) => this.done(r));
  }

  // ------------------------------------------------------------------ keys and menu
  private onKey(ev: KeyboardEvent): void {
    if (!this.enabled) return;
    const quickAdd = ev.key === " " && (ev.ctrlKey || ev.metaKey);
    if (ev.key === "Delete" || ev.key === "Backspace") this.deleteSelection();
    else if (quickAdd) this.quickAdd(...this.pointer);
    else if (ev.key === "Escape") this.menu.hide();
    else return;
    ev.preventDefault();
    ev.stopPropagation(); // not a notebook shortcut (Backspace, Ctrl+Space)
  }

  private quickAdd(x: number, y: number): void {
    const [wx, wy] = this.world(x, y);
    let known: Operators | null = null;
    const suggest = (text: string): Suggestion[] => {
      if (!known) return [];
      const category = new Map(known.keys.map((k, i) => [k, known?.categories[i] ?? ""]));
      return rankKeys(known.keys, text, SUGGESTIONS).map((value) => ({
        value,
        note: category.get(value),
      }));
    };
    const refresh = this.menu.ask(
      x,
      y,
      "Add operator here… (Enter)",
      "",
      (text) => this.addAt(text, wx, wy, true),
      suggest,
    );
    // the vocabulary comes once per quick add, not per key (local functions come and go)
    void this.host.requests.send("operators", {}).then((r) => {
      known = r?.value ?? null;
      refresh();
    });
  }

  /** Quick add (fed from the selection: `link`) or a palette drop: one "add_at" request. */
  private addAt(text: string, x: number, y: number, link: boolean): void {
    void this.host.requests.send("add_at", { text, x, y, link }).then((r) => {
      this.done(r);
      if (r) this.host.select([r.value.message]);
    });
  }

  private onDragOver(ev: DragEvent): void {
    if (!this.enabled || !carriesOperator(ev.dataTransfer?.types)) return;
    ev.preventDefault(); // accept the drop
    if (ev.dataTransfer) ev.dataTransfer.dropEffect = "copy";
  }

  private onDrop(ev: DragEvent): void {
    const key = ev.dataTransfer?.getData(OPERATOR_TYPE) ?? "";
    if (!this.enabled || !key) return;
    ev.preventDefault();
    const { canvas, renderer } = this.host;
    const [wx, wy] = dropPoint(
      canvas.getBoundingClientRect(),
      renderer.camera,
      ev.clientX,
      ev.clientY,
    );
    this.addAt(key, wx, wy, false);
  }

  private onContextMenu(ev: MouseEvent): void {
    if (!this.enabled || ev.shiftKey) return; // Shift: the browser's or JupyterLab's own menu
    ev.preventDefault();
    ev.stopPropagation(); // JupyterLab opens its notebook menu from the document otherwise
    const r = this.host.canvas.getBoundingClientRect();
    const x = ev.clientX - r.left;
    const y = ev.clientY - r.top;
    this.pointer = [x, y];
    const { store } = this.host;
    const box = store.layout ? boxAt(store.layout, this.host.renderer.camera, x, y) : null;
    const [node] = box && !box.header ? store.itemsOfSlots([box.slot]) : [];
    if (node === undefined || !box) {
      this.menu.show(x, y, [
        { label: "Quick add here…", action: () => this.quickAdd(x, y) },
        { label: "Arrange", action: () => this.host.arrange() },
      ]);
      return;
    }
    let nodes = this.host.selected();
    if (!nodes.includes(node)) {
      nodes = [node];
      this.host.select(nodes);
    }
    this.menu.show(x, y, this.nodeItems(node, nodes, store.bodyOwner(box.slot) !== null, x, y));
  }

  private nodeItems(
    node: string,
    nodes: string[],
    body: boolean,
    x: number,
    y: number,
  ): MenuItem[] {
    const send = this.host.requests;
    const then = (p: Promise<{ value: { message: string } } | null>) =>
      void p.then((r) => this.done(r));
    return [
      {
        label: "Open subgraph",
        disabled: !body,
        action: () => send.channel.notify("open_body", { node, attribute: "" }),
      },
      {
        label: "Rename…",
        disabled: nodes.length !== 1,
        action: () =>
          this.menu.ask(x, y, `New name of ${node}`, node, (name) =>
            then(send.send("rename", { node, name })),
          ),
      },
      { label: "Delete", action: () => then(send.send("delete", { nodes })) },
      {
        label: "Extract selection",
        action: () => then(send.send("extract", { nodes, downstream: false })),
      },
      {
        label: "Extract from here",
        action: () => then(send.send("extract", { nodes: [node], downstream: true })),
      },
      { label: "Profile from here", action: () => then(send.send("profile", { nodes: [node] })) },
      {
        label: "TensorRT precision",
        // the document's precisions and "none" (_precision_choices, also the badges' chooser)
        submenu: this.host.model.get("_precision_choices").map((precision) => ({
          label: precision,
          action: () => then(send.send("precision", { nodes, precision })),
        })),
      },
    ];
  }

  // ------------------------------------------------------------------ painting
  private readonly paint = (ctx: CanvasRenderingContext2D): void => {
    const { store, renderer } = this.host;
    const scene = store.scene;
    if (!this.enabled || !scene) {
      this.placed = new Map();
      return;
    }
    const { camera } = renderer;
    const slots = nodeSlotsOnScreen(scene, camera, renderer.width, renderer.height);
    const names = slots.map((s) => scene.graph.names[scene.layout.ref[s]]);
    const missing = names.filter((n) => !this.known.has(n));
    if (missing.length && !this.asking) {
      this.asking = true;
      void this.terminalsOf(missing).finally(() => {
        this.asking = false;
        renderer.invalidate();
      });
    }
    this.placed = placeTerminals(scene.layout, slots, scene.graph.names, this.known);
    const dpr = window.devicePixelRatio || 1;
    ctx.save();
    ctx.setTransform(
      dpr * camera.scale,
      0,
      0,
      dpr * camera.scale,
      dpr * camera.tx,
      dpr * camera.ty,
    );
    for (const link of this.links) {
      ctx.beginPath();
      traceRoute(ctx, sceneRoute(scene, link.edge), false);
      ctx.strokeStyle = V.selection.stroke;
      ctx.lineWidth = lineWidth(V.selection, camera.scale);
      ctx.stroke();
    }
    drawTerminals(ctx, this.placed, camera.scale, this.hot);
    const mode = this.gesture.mode;
    if (mode === "linking" || mode === "unlinking") {
      const [px, py] = this.world(...this.pointer);
      ctx.beginPath();
      ctx.moveTo(this.gesture.x0, this.gesture.y0);
      ctx.lineTo(px, py);
      ctx.setLineDash(mode === "unlinking" ? [4 / camera.scale, 3 / camera.scale] : []);
      ctx.strokeStyle = V.terminal.hot;
      ctx.lineWidth = lineWidth(V.edge.hot, camera.scale);
      ctx.stroke();
    }
    ctx.restore();
  };
}
