// Small DOM helpers shared by the view's components: every listener they add is undone by
// `dispose()`, so closing one view of a model (a model may have several) leaves nothing behind.
import type { AnyModel } from "@anywidget/types";

export class Disposables {
  private readonly undo: (() => void)[] = [];

  add(fn: () => void): void {
    this.undo.push(fn);
  }

  listen(
    target: EventTarget,
    type: string,
    fn: (ev: Event) => void,
    opts?: AddEventListenerOptions,
  ) {
    target.addEventListener(type, fn, opts);
    this.add(() => target.removeEventListener(type, fn, opts));
  }

  onModel(model: AnyModel, event: string, fn: () => void): void {
    model.on(event, fn);
    this.add(() => model.off(event as never, fn));
  }

  dispose(): void {
    for (const fn of this.undo.splice(0).reverse()) fn();
  }
}

export function div(parent: HTMLElement, cls: string): HTMLDivElement {
  const d = document.createElement("div");
  d.className = cls;
  parent.appendChild(d);
  return d;
}
