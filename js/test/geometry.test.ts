import { describe, expect, it } from "vitest";
import {
  boundsOf,
  fitCamera,
  hitTest,
  slotsInside,
  toWorld,
  zoomAt,
} from "../src/graph_view/geometry";
import { layout } from "./fixtures";

describe("layout adapter", () => {
  it("finds the box under a point: leaves before frames, frame title bars", () => {
    const l = layout();
    expect(hitTest(l, 320, 40)).toEqual({ slot: 3, header: false }); // /b/Add inside frame /b
    expect(hitTest(l, 305, 5)).toEqual({ slot: 0, header: true }); // title bar of /b
    expect(hitTest(l, 305, 80)).toEqual({ slot: 0, header: false });
    expect(hitTest(l, 1000, 1000)).toBeNull();
  });

  it("selects leaves fully inside a rectangle", () => {
    expect(slotsInside(layout(), { x: -5, y: -5, w: 300, h: 60 })).toEqual([1, 2]);
  });
});

describe("camera", () => {
  it("fits a box into the screen and zooms around a fixed point", () => {
    const box = boundsOf(layout());
    expect(box).toEqual({ x: 0, y: 0, w: 630, h: 86 });
    const cam = fitCamera(box, 1000, 500, 20, 4);
    expect(cam.scale).toBeCloseTo(960 / 630);
    const [wx, wy] = toWorld(cam, 500, 250);
    const zoomed = zoomAt(cam, 2, 500, 250);
    const [zx, zy] = toWorld(zoomed, 500, 250);
    expect(zx).toBeCloseTo(wx);
    expect(zy).toBeCloseTo(wy);
    expect(zoomed.scale).toBeCloseTo(cam.scale * 2);
  });
});
