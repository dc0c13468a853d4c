import { describe, expect, it } from "vitest";
import { fitShape } from "../src/graph_view/vocabulary";

// the cases of tests/test_graph_labels.py FIT_SHAPE_CASES: (shape, characters of room, drawn)
const CASES: [string, number, string][] = [
  ["batch_size×16×64", 16, "batch_size×16×64"],
  ["batch_size×16×64", 14, "batch_s…×16×64"],
  ["batch×sequence×768", 14, "batch×seq…×768"],
  ["batch×sequence×768", 11, "bat…×s…×768"],
  ["?×16×64", 5, "?×16…"],
  ["batch×sequence×768", 8, "batch×s…"],
  ["1024×1024×1024", 8, "1024×10…"],
];

describe("fitShape", () => {
  it("cuts the dim names of a shape too long for its room before its numbers", () => {
    for (const [shape, room, drawn] of CASES) expect(fitShape(shape, room * 6.5, 6.5)).toBe(drawn);
  });
});
