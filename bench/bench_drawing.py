"""Benchmark of the one SVG renderer: `GraphView.export_image("x.svg")` of a synthetic
network-shaped DAG, in the default (collapsed) view and with every group open, with an overlay
on every node and a selection. Prints a table and one JSON line. Never asserts a time.

    python bench/bench_drawing.py [--sizes 20000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from _common import emit_json, median_seconds, print_table

import nsdl_jupyter as nj
from nsdl_jupyter.examples import synthetic_dag
from nsdl_jupyter.graph._layout import KIND_FRAME


def measure(n: int, repeat: int, folder: Path) -> list[dict[str, object]]:
    view = nj.GraphView(synthetic_dag(n, seed=0))
    names = list(view._scene.table.by_key)
    view.set_overlay({name: float(k) for k, name in enumerate(names)}, label="time")
    view.selected = [names[len(names) // 2]]
    rows = []
    for state in ("collapsed", "expanded"):
        if state == "expanded":
            view.expand()
        target = folder / f"{state}.svg"
        seconds = median_seconds(lambda t=target: view.export_image(t).result(), repeat=repeat)
        boxes = int((view._scene.layout().kinds != KIND_FRAME).sum())
        rows.append(
            {
                "model": f"synthetic_{n}",
                "view": state,
                "boxes": boxes,
                "svg_s": round(seconds, 3),
                "svg_mb": round(target.stat().st_size / 1e6, 2),
            }
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="*", default=[20000])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        rows = [row for n in args.sizes for row in measure(n, args.repeat, Path(folder))]
    print_table("SVG export (one renderer: colours, overlay, selection, labels)", rows)
    emit_json("drawing", {"repeat": args.repeat, "results": rows})


if __name__ == "__main__":
    main()
