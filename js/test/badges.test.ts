import { describe, expect, it } from "vitest";
import { pillRect, pills, precisionPillAt } from "../src/graph_view/badges";
import { CUSTOM_OP } from "../src/graph_view/graph";
import { buildScene } from "../src/graph_view/render";
import { V } from "../src/graph_view/vocabulary";
import { graph, layout } from "./fixtures";

// fixture items: 1 /a/Conv and 2 /a/Relu hidden in collapsed /a; 3 /b/Add drawn in slot 3
function scene(customAdd = false) {
  const g = graph();
  if (customAdd) g.flags[3] |= CUSTOM_OP;
  return buildScene(g, layout());
}

describe("badges on boxes", () => {
  it("puts pills on drawn nodes only: none on hidden nodes, groups or graph I/O", () => {
    const precisions = new Map([
      [3, "fp16"],
      [1, "int8"], // hidden in the collapsed group
    ]);
    expect(pills(scene(), precisions)).toEqual([{ slot: 3, kind: "precision", text: "fp16" }]);
    expect(pills(scene(true), new Map())).toEqual([
      { slot: 3, kind: "custom", text: V.pill.custom.label },
    ]);
  });

  it("anchors the precision pill right and the custom pill left, across the top edge", () => {
    const l = scene().layout;
    const [x, y, w, h] = pillRect("precision", "fp16", l, 3);
    expect(x + w).toBeCloseTo(314 + 150 + V.pill.precision.right);
    expect(w).toBeCloseTo(4 * V.pill.charWidth + 2 * V.pill.padX);
    expect([y, h]).toEqual([36 + V.pill.dy, V.pill.h]);
    expect(pillRect("custom", "custom", l, 3)[0]).toBe(314 + V.pill.custom.left);
  });

  it("hits the precision pill under the pointer, at label zoom only", () => {
    const s = scene();
    const precisions = new Map([[3, "fp16"]]);
    const [x, y, w, h] = pillRect("precision", "fp16", s.layout, 3);
    const camera = { scale: 1, tx: 10, ty: 20 };
    const at = (sx: number, sy: number, c = camera) => precisionPillAt(s, precisions, c, sx, sy);
    expect(at(x + w / 2 + 10, y + h / 2 + 20)).toEqual({
      slot: 3,
      kind: "precision",
      text: "fp16",
    });
    expect(at(x - 2 + 10, y + h / 2 + 20)).toBeNull();
    const far = { scale: V.label.minScale / 2, tx: 0, ty: 0 };
    const [cx, cy] = [(x + w / 2) * far.scale, (y + h / 2) * far.scale];
    expect(at(cx, cy, far)).toBeNull();
  });
});
