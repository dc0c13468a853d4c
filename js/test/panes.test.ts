import { describe, expect, it } from "vitest";
import { draggedWidth, MIN_WIDTH } from "../src/designer_keys/panes";

describe("draggedWidth", () => {
  it("widens a left pane dragged right and a right pane dragged left", () => {
    expect(draggedWidth("left", 200, 500, 560)).toBe(260);
    expect(draggedWidth("right", 200, 500, 440)).toBe(260);
    expect(draggedWidth("right", 250, 500, 560)).toBe(190); // narrower, above MIN_WIDTH
  });
  it("never goes under the smallest width", () => {
    expect(draggedWidth("left", 200, 500, 100)).toBe(MIN_WIDTH);
  });
});
