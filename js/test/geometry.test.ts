import { describe, expect, it } from "vitest";
import {
  boundsOf,
  curveDistance,
  edgeCurve,
  fitCamera,
  hitTest,
  slotsInside,
  toWorld,
  zoomAt,
} from "../src/graph_view/geometry";
import { layout } from "./fixtures";

describe("layout adapter", () => {
  it("anchors LR edges on the right of the source and the left of the target", () => {
    const l = layout();
    const c = edgeCurve(l, 1, 3, "LR"); // input -> /b/Add
    expect([c[0], c[1]]).toEqual([110, 13]);
    expect([c[6], c[7]]).toEqual([314, 54]);
    const tb = edgeCurve(l, 1, 3, "TB");
    expect([tb[0], tb[1]]).toEqual([55, 26]);
    expect([tb[6], tb[7]]).toEqual([389, 36]);
  });

  it("runs an edge to a box not further along across the flow, from side to side", () => {
    const l = layout(); // input (0, 0, 110 x 26) -> /b/Add, moved beside it and higher
    l.x[3] = 300;
    l.y[3] = -40;
    const tb = edgeCurve(l, 1, 3, "TB"); // the next column of a wrapped top level
    expect([tb[0], tb[1]]).toEqual([110, 13]); // input's right side, halfway down
    expect([tb[6], tb[7]]).toEqual([300, -40 + l.h[3] / 2]); // the target's left side
    const xs = [tb[0], tb[2], tb[4], tb[6]];
    expect(Math.min(...xs)).toBe(110); // the curve stays in the gap between the two
    expect(Math.max(...xs)).toBe(300);
    l.x[3] = 20;
    l.y[3] = 60;
    const lr = edgeCurve(l, 1, 3, "LR"); // the next row of a wrapped left-to-right level
    expect([lr[0], lr[1]]).toEqual([55, 26]); // input's bottom
    expect([lr[6], lr[7]]).toEqual([20 + l.w[3] / 2, 60]); // the target's top
  });

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

  it("measures the distance to an edge curve", () => {
    const l = layout();
    const c = edgeCurve(l, 1, 3, "LR");
    expect(curveDistance(c, c[0], c[1])).toBeCloseTo(0);
    expect(curveDistance(c, c[0], c[1] + 50)).toBeGreaterThan(20);
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
