// The edit gestures of the canvas as a pure state machine (unit-tested without a DOM): press
// on an output terminal and drop on an input to link; press on a linked input (a link's end)
// and drop it elsewhere to unlink, or on another input to move the link; press on a box and
// drag to move it; press and release in place is a click.

export type Press =
  | { kind: "output"; node: string; tensor: string }
  | { kind: "link_end"; node: string; index: number; tensor: string }
  | { kind: "box"; node: string }
  | { kind: "none" };

export type Drop = { kind: "input"; node: string; index: number } | { kind: "other" };

export type Action =
  | { kind: "click" }
  | {
      kind: "link";
      tensor: string;
      node: string;
      input: number;
      fromNode: string; // "" for a new link
      fromInput: number;
    }
  | { kind: "unlink"; node: string; input: number }
  | { kind: "move"; dx: number; dy: number } // world units
  | { kind: "none" };

export type Mode = "idle" | "pressed" | "moving" | "linking" | "unlinking";

const DRAG_PX = 3;

export class Gesture {
  mode: Mode = "idle";
  press: Press = { kind: "none" };
  x0 = 0; // world point of the press
  y0 = 0;
  dx = 0;
  dy = 0;

  /** A press at world (x, y); false (and idle) when the press starts no edit gesture. */
  start(press: Press, x: number, y: number): boolean {
    this.press = press;
    this.mode = press.kind === "none" ? "idle" : "pressed";
    this.x0 = x;
    this.y0 = y;
    this.dx = 0;
    this.dy = 0;
    return this.mode !== "idle";
  }

  /** The pointer moved to world (x, y) at camera `scale`: the gesture's mode after it. */
  drag(x: number, y: number, scale: number): Mode {
    if (this.mode === "idle") return this.mode;
    this.dx = x - this.x0;
    this.dy = y - this.y0;
    if (this.mode === "pressed" && Math.abs(this.dx) + Math.abs(this.dy) > DRAG_PX / scale) {
      const kind = this.press.kind;
      this.mode = kind === "box" ? "moving" : kind === "output" ? "linking" : "unlinking";
    }
    return this.mode;
  }

  /** Release over `drop`: what to ask of the document. */
  end(drop: Drop): Action {
    const { mode, press } = this;
    this.mode = "idle";
    this.press = { kind: "none" };
    if (mode === "pressed") return { kind: "click" };
    if (mode === "moving") return { kind: "move", dx: this.dx, dy: this.dy };
    if (mode === "linking" && press.kind === "output" && drop.kind === "input") {
      const { node, index } = drop;
      return { kind: "link", tensor: press.tensor, node, input: index, fromNode: "", fromInput: 0 };
    }
    if (mode === "unlinking" && press.kind === "link_end") {
      if (drop.kind !== "input") return { kind: "unlink", node: press.node, input: press.index };
      if (drop.node === press.node && drop.index === press.index) return { kind: "none" };
      return {
        kind: "link",
        tensor: press.tensor,
        node: drop.node,
        input: drop.index,
        fromNode: press.node,
        fromInput: press.index,
      };
    }
    return { kind: "none" };
  }

  cancel(): void {
    this.mode = "idle";
    this.press = { kind: "none" };
  }
}
