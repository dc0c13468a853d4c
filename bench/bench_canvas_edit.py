"""Canvas edit requests on a big model (kernel side, widgets/_canvas_edit.py).

On a synthetic network-shaped DAG (50,000 nodes by default), every group expanded:
- relayout with no dragged box vs with 1,000 dragged boxes (the "moved" positions are applied
  over the computed layout on every relayout);
- the terminals of 400 nodes (what the canvas asks for at most: the boxes on screen);
- a move request (one undoable command, then the view's relayout), and its undo;
- a delete request of one node (patch, no relayout of the whole graph) and its undo.

Prints a table and one JSON line. Never asserts a time.

    python bench/bench_canvas_edit.py [--nodes 50000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import Any

import onnx
from _common import emit_json, fmt_seconds, median_seconds, print_table

import nsdl_jupyter as nj
from nsdl_jupyter.examples import synthetic_dag


def _request(view: nj.GraphView, name: str, payload: dict[str, Any]) -> None:
    sent: list[dict[str, Any]] = []
    view.send = lambda content, buffers=None: sent.append(content)
    view._channel.receive(view, {"kind": "nsdl.request", "id": "b", "name": name,
                                 "payload": payload}, [])  # fmt: skip
    if not sent[-1]["ok"]:
        raise RuntimeError(sent[-1]["error"]["message"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nodes", type=int, default=50_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "m.onnx"
        onnx.save(synthetic_dag(args.nodes, seed=3), path)
        doc = nj.open_model(path)
        view = nj.GraphView(doc)
        view.expand()
        names = list(doc.nodes)
        repeat = args.repeat
        results: dict[str, Any] = {"nodes": len(names)}
        results["relayout_s"] = median_seconds(view._relayout, repeat=repeat)
        xs = [float(i % 100) * 200 for i in range(1000)]
        _request(view, "move", {"nodes": names[:1000], "x": xs, "y": [-500.0] * 1000})
        results["relayout_1000_moved_s"] = median_seconds(view._relayout, repeat=repeat)
        results["terminals_400_s"] = median_seconds(
            lambda: _request(view, "terminals", {"nodes": names[5000:5400]}), repeat=repeat
        )

        def move_and_undo() -> None:
            _request(view, "move", {"nodes": [names[7]], "x": [1.0], "y": [2.0]})
            doc.undo()

        results["move_and_undo_s"] = median_seconds(move_and_undo, repeat=repeat)

        def delete_and_undo() -> None:
            _request(view, "delete", {"nodes": [names[len(names) // 2]]})
            doc.undo()

        results["delete_and_undo_s"] = median_seconds(delete_and_undo, repeat=repeat)
    print_table(
        f"canvas edits, {results['nodes']:,} nodes, all groups expanded",
        [{"figure": k, "median": fmt_seconds(v)} for k, v in results.items() if k != "nodes"],
    )
    emit_json("canvas_edit", results)


if __name__ == "__main__":
    main()
