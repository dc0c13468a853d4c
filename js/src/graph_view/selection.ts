// The selection (the `selected` trait, both ways): local clicks set it; a selection set from
// Python is brought into view once the kernel has opened the groups that hid it.
import type { AnyModel } from "@anywidget/types";
import type { GraphViewModel } from "./model";
import type { Renderer } from "./renderer";
import type { Requests } from "./requests";
import type { SceneStore } from "./scene_store";

export class Selection {
  private lastLocal: string | null = null;
  private focusPending = false;

  constructor(
    private readonly model: AnyModel<GraphViewModel>,
    private readonly store: SceneStore,
    private readonly renderer: Renderer,
    private readonly requests: Requests,
  ) {}

  current(): string[] {
    return this.model.get("selected") ?? [];
  }

  select(names: string[]): void {
    this.lastLocal = JSON.stringify(names);
    this.model.set("selected", names);
    this.model.save_changes();
    this.store.selectionToSlots();
    this.renderer.invalidate();
  }

  /** `change:selected` */
  changed(): void {
    const names = this.current();
    this.store.selectionToSlots();
    this.renderer.invalidate();
    if (JSON.stringify(names) !== this.lastLocal && names.length) {
      // set from Python: bring the nodes into view (the kernel opens their groups first)
      this.focusPending = true;
      this.focus();
    }
    this.lastLocal = null;
  }

  /** A new layout arrived: it may show the nodes a Python selection waited for. */
  layoutChanged(): void {
    if (this.focusPending) this.focus();
  }

  private focus(): void {
    const { graph, scene } = this.store;
    if (!graph || !scene) return;
    const slots: number[] = [];
    let hidden = false;
    for (const name of this.current()) {
      const i = graph.nameIndex.get(name);
      if (i === undefined) continue;
      const slot = scene.layout.itemSlot.get(i);
      if (slot !== undefined) slots.push(slot);
      else hidden = true;
    }
    if (!hidden) this.focusPending = false;
    this.renderer.scrollTo(slots);
  }

  /** Select item `item` and scroll to it, asking the kernel to reveal it when hidden. */
  async jumpTo(item: number): Promise<void> {
    const layout = this.store.layout;
    if (!this.store.graph || !layout) return;
    if (!layout.itemSlot.has(item)) await this.requests.send("reveal", { items: [item] });
    const graph = this.store.graph;
    if (!graph) return;
    this.select([graph.names[item]]);
    const slot = this.store.layout?.itemSlot.get(item);
    if (slot !== undefined) this.renderer.scrollTo([slot]);
  }
}
