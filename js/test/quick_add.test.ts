// Quick add's suggestion ranking (src/graph_view/suggest.ts) against the cases Python's
// rank_keys also passes, and the drop point of an operator dragged onto the canvas.
import { describe, expect, it } from "vitest";
import { carriesOperator, dropPoint, OPERATOR_TYPE } from "../src/graph_view/drop";
import { rankKeys } from "../src/graph_view/suggest";
import ranking from "./quick_add_ranking.json";

describe("quick add suggestions", () => {
  for (const { text, limit, expected } of ranking.cases) {
    it(`ranks ${JSON.stringify(text)} like the kernel`, () => {
      expect(rankKeys(ranking.vocabulary, text, limit)).toEqual(expected);
    });
  }

  it("puts prefixes before substrings and the default domain first", () => {
    const keys = ["com.microsoft::Relux", "LeakyRelu", "Relu6x", "Relu"];
    expect(rankKeys(keys, "re")).toEqual(["Relu", "Relu6x", "com.microsoft::Relux", "LeakyRelu"]);
  });
});

describe("drop on the canvas", () => {
  it("turns a client point into layout coordinates through the camera", () => {
    const rect = { left: 100, top: 50 };
    // scale 2, panned by (40, -20): the canvas point (60, 90) is layout ((60-40)/2, (90+20)/2)
    const camera = { scale: 2, tx: 40, ty: -20 };
    expect(dropPoint(rect, camera, 160, 140)).toEqual([10, 55]);
    expect(dropPoint(rect, { scale: 1, tx: 0, ty: 0 }, 100, 50)).toEqual([0, 0]);
  });

  it("accepts only drags that carry an operator", () => {
    expect(carriesOperator([OPERATOR_TYPE, "text/plain"])).toBe(true);
    expect(carriesOperator(["text/plain"])).toBe(false);
    expect(carriesOperator(undefined)).toBe(false);
  });
});
