// Tooltip placement: a tooltip stays inside the canvas at every edge.
import { describe, expect, it } from "vitest";
import { placeTooltip, TIP_MARGIN, TIP_OFFSET } from "../src/graph_view/tooltip";

const [W, H] = [600, 400]; // the stage
const inside = ([left, top]: [number, number], w: number, h: number) => {
  expect(left).toBeGreaterThanOrEqual(TIP_MARGIN);
  expect(top).toBeGreaterThanOrEqual(TIP_MARGIN);
  expect(left + w).toBeLessThanOrEqual(W - TIP_MARGIN);
  expect(top + h).toBeLessThanOrEqual(H - TIP_MARGIN);
};

describe("tooltip placement", () => {
  it("stands below right of the pointer where there is room", () => {
    expect(placeTooltip(100, 50, 200, 60, W, H)).toEqual([100 + TIP_OFFSET, 50 + TIP_OFFSET]);
  });

  it("flips to the left of the pointer at the right edge (it was cut off there)", () => {
    const at = placeTooltip(550, 50, 200, 60, W, H);
    expect(at).toEqual([550 - TIP_OFFSET - 200, 50 + TIP_OFFSET]);
    inside(at, 200, 60);
  });

  it("flips above the pointer at the bottom edge", () => {
    const at = placeTooltip(100, 390, 200, 60, W, H);
    expect(at).toEqual([100 + TIP_OFFSET, 390 - TIP_OFFSET - 60]);
    inside(at, 200, 60);
  });

  it("stays inside in every corner and for every pointer position", () => {
    for (let x = 0; x <= W; x += 25)
      for (let y = 0; y <= H; y += 25) inside(placeTooltip(x, y, 260, 90, W, H), 260, 90);
  });

  it("clamps to the stage when neither side has room (a wide tooltip, a narrow canvas)", () => {
    const at = placeTooltip(300, 200, 560, 60, W, H);
    inside(at, 560, 60);
    expect(placeTooltip(10, 10, 900, 60, W, H)[0]).toBe(TIP_MARGIN); // too wide: its start shows
  });
});
