import { describe, expect, it } from "vitest";
import { encodeColumns } from "../src/graph_view/columns";
import { curvePoint, HEADER } from "../src/graph_view/geometry";
import { decodeLayout, KIND_FRAME, KIND_NODE, type Layout } from "../src/graph_view/graph";
import {
  edgeRoute,
  type FrameIndex,
  type Route,
  routeDistance,
  routeEnd,
  routeSegments,
} from "../src/graph_view/routes";
import { scene } from "./fixtures";

/** A layout of `boxes` (x, y, w, h), slot 0 a frame holding the slots in `inside`. */
function framed(boxes: number[][], inside: number[]): [Layout, FrameIndex] {
  const n = boxes.length;
  const layout = decodeLayout(
    encodeColumns(
      { seq: 1, topology: 1, direction: "TB", show_constants: false, width: 0, height: 0 },
      {
        ref: ["i4", [~1, ...boxes.slice(1).map((_, k) => k)]],
        kind: ["u1", [KIND_FRAME, ...boxes.slice(1).map(() => KIND_NODE)]],
        x: ["f4", boxes.map((b) => b[0])],
        y: ["f4", boxes.map((b) => b[1])],
        w: ["f4", boxes.map((b) => b[2])],
        h: ["f4", boxes.map((b) => b[3])],
      },
    ),
  );
  const chains = Array.from({ length: n }, (_, s) => (inside.includes(s) ? [0] : []));
  return [layout, { chains, children: new Map([[0, inside]]), nested: new Map([[-1, [0]]]) }];
}

/** Points along every segment of a route. */
function sampled(route: Route): [number, number][] {
  return routeSegments(route).flatMap((seg) =>
    Array.from({ length: 33 }, (_, k) => curvePoint(seg, k / 32)),
  );
}

function inTitleBar(layout: Layout, [x, y]: [number, number]): boolean {
  return (
    x > layout.x[0] && x < layout.x[0] + layout.w[0] && y > layout.y[0] && y < layout.y[0] + HEADER
  );
}

describe("edge routes", () => {
  it("enters a frame left to right by its side, straight to the box below the title", () => {
    const s = scene(); // input (0, 0, 110 x 26) -> /b/Add inside the open frame /b
    const route = edgeRoute(s.layout, s.frames, 1, 3, "LR");
    expect([route[0][0], route[0][1]]).toEqual([110, 13]); // input's right side
    expect(routeEnd(route)).toEqual([314, 54]); // the left of /b/Add
    const [x, y] = route[0].slice(6, 8); // the curve ends on the frame's border, at Add's level
    expect([x, y]).toEqual([300, 54]);
    expect(sampled(route).some((p) => inTitleBar(s.layout, p))).toBe(false);
  });

  it("runs an edge to a box not further along across the flow, from side to side", () => {
    const s = scene();
    const l = s.layout; // /b/Add moved out of its frame, beside the input and higher
    l.x[3] = 300;
    l.y[3] = -40;
    const [tb] = edgeRoute(l, s.frames, 1, 3, "TB"); // the next column of a wrapped top level
    expect(tb.slice(0, 2)).toEqual([110, 13]); // input's right side, halfway down
    expect(tb.slice(6)).toEqual([300, -40 + l.h[3] / 2]); // the target's left side
    const xs = [tb[0], tb[2], tb[4], tb[6]];
    expect(Math.min(...xs)).toBe(110); // the curve stays in the gap between the two
    expect(Math.max(...xs)).toBe(300);
    l.x[3] = 20;
    l.y[3] = 60;
    const [lr] = edgeRoute(l, s.frames, 1, 3, "LR"); // the next row of a wrapped level
    expect(lr.slice(0, 2)).toEqual([55, 26]); // input's bottom
    expect(lr.slice(6)).toEqual([20 + l.w[3] / 2, 60]); // the target's top
  });

  it("top-down, enters a frame across its title bar without drawing over it", () => {
    // source above a frame at y 82 holding the target as its first box
    const [l, frames] = framed(
      [
        [0, 82, 178, 86],
        [0, 0, 110, 26],
        [14, 118, 150, 36],
      ],
      [2],
    );
    const route = edgeRoute(l, frames, 1, 2, "TB");
    expect(route).toEqual([
      [55, 26, 55, 54, 89, 54, 89, 82], // bends above the frame, reaches it over the target
      [89, 104, 89, 104, 89, 118, 89, 118], // on again under the title bar
    ]);
    expect(sampled(route).some((p) => inTitleBar(l, p))).toBe(false);
  });

  it("reaches a box deeper in a frame through the frame's margin, away from the title", () => {
    const [l, frames] = framed(
      [
        [0, 82, 178, 200],
        [14, 0, 150, 26], // above the frame
        [14, 118, 150, 36], // the frame's first box
        [14, 210, 150, 36], // the target, under it
      ],
      [2, 3],
    );
    const route = edgeRoute(l, frames, 1, 3, "TB");
    expect(routeEnd(route)).toEqual([164, 228]); // the target's right side, halfway down
    const lane = 178 - 7; // the middle of the frame's right margin
    const points = sampled(route);
    expect(points.some(([x, y]) => x === lane && y > 118 && y < 210)).toBe(true);
    expect(points.some((p) => inTitleBar(l, p))).toBe(false);
    // nothing drawn over the first box
    expect(points.some(([x, y]) => x > 14 && x < 164 && y > 118 && y < 154)).toBe(false);
  });

  it("measures the distance to a route", () => {
    const s = scene();
    const route = edgeRoute(s.layout, s.frames, 1, 3, "LR");
    expect(routeDistance(route, 110, 13)).toBeCloseTo(0);
    expect(routeDistance(route, 307, 54)).toBeCloseTo(0); // on the straight way in
    expect(routeDistance(route, 110, 63)).toBeGreaterThan(20);
  });
});
