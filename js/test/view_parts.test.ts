// Pure parts of the split GraphView: hit-testing in screen coordinates and the listener
// bookkeeping that lets one of several views of a model close cleanly.
import type { AnyModel } from "@anywidget/types";
import { describe, expect, it } from "vitest";
import { Disposables } from "../src/graph_view/dom";
import { clickAt, hoverAt } from "../src/graph_view/hit";
import { layout, scene as sceneOf } from "./fixtures";

const camera = { scale: 2, tx: 10, ty: 0 }; // screen = world * 2 + (10, 0)
const screen = (x: number, y: number): [number, number] => [x * 2 + 10, y * 2];

describe("hit-testing", () => {
  it("says what a click means: expand a group, collapse a frame, a box, or nothing", () => {
    const l = layout();
    expect(clickAt(l, camera, ...screen(130, 10))).toEqual({ kind: "expand", group: 1 });
    expect(clickAt(l, camera, ...screen(305, 5))).toEqual({ kind: "collapse", group: 2 });
    expect(clickAt(l, camera, ...screen(305, 80))).toEqual({ kind: "empty" }); // frame body
    expect(clickAt(l, camera, ...screen(320, 40))).toEqual({ kind: "box", slot: 3 });
    expect(clickAt(l, camera, ...screen(1000, 1000))).toEqual({ kind: "empty" });
  });

  it("hovers boxes, not frames, and edges only where no box is", () => {
    const scene = sceneOf();
    const _l = scene.layout;
    expect(hoverAt(scene, camera, ...screen(320, 40))).toMatchObject({ slot: 3, edge: -1 });
    const header = hoverAt(scene, camera, ...screen(305, 5));
    expect(header.slot).toBe(-1);
    expect(header.hit?.header).toBe(true);
    expect(hoverAt(scene, camera, ...screen(1000, 1000))).toMatchObject({ slot: -1, edge: -1 });
  });
});

describe("Disposables", () => {
  it("removes every DOM and model listener it added", () => {
    const target = new EventTarget();
    const model = new Map<string, Set<() => void>>();
    const fake = {
      on: (e: string, fn: () => void) => model.set(e, (model.get(e) ?? new Set()).add(fn)),
      off: (e: string, fn: () => void) => model.get(e)?.delete(fn),
    } as unknown as AnyModel;
    let calls = 0;
    const d = new Disposables();
    d.listen(target, "click", () => calls++);
    d.onModel(fake, "change:selected", () => calls++);
    let disposed = false;
    d.add(() => {
      disposed = true;
    });
    target.dispatchEvent(new Event("click"));
    expect(calls).toBe(1);
    d.dispose();
    target.dispatchEvent(new Event("click"));
    expect(calls).toBe(1);
    expect(model.get("change:selected")?.size).toBe(0);
    expect(disposed).toBe(true);
  });
});
