"""What a click in the properties pane costs on a large model (goal: < 10 ms a click).

Python side of GraphView's pane requests (nsdl_jupyter/graph/_properties.py), on a synthetic
model of --nodes nodes (types declared, as dynamo exports declare them) and on the
TorchScript BERT export (no intermediate types: the first click runs shape inference once):
node properties, an edge's tensor, a group (first time: counted; then remembered), a
weight's statistics. Each figure is the median over --samples different items.

Then the drawing and the pane together on the TorchScript BERT, through a GraphView of an open
document (median of --views fresh views): the canvas zoomed in far enough for edge labels (its
`tensor_shapes` request) plus the first click; then a patch edit (a Softmax axis set), the next
click and another zoom. Each step counts the ONNX shape inferences it ran (the drawing and the
pane share one result per graph, so zoom plus click runs one; the click after the edit re-runs
it and the labels get that result too).

Prints tables and one JSON line. Never asserts a time.

    python bench/bench_properties.py [--nodes 50000] [--samples 50] [--views 3]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path

import onnx
import onnx_ir as ir
from _common import emit_json, fmt_seconds, print_table

from nsdl_jupyter.document import ModelDocument
from nsdl_jupyter.examples import synthetic_dag
from nsdl_jupyter.graph import GraphScene
from nsdl_jupyter.graph._properties import Properties
from nsdl_jupyter.widgets import GraphView

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests import real_exports


def _median(fn: Callable[[int], object], args: Iterable[int]) -> float:
    times = []
    for arg in args:
        start = time.perf_counter()
        fn(arg)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _once(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def measure(name: str, graph: ir.Graph, samples: int) -> dict[str, float | int | str]:
    start = time.perf_counter()
    scene = GraphScene(graph)
    build = time.perf_counter() - start
    props = Properties(scene)
    table = scene.table
    rng = random.Random(0)
    nodes = [i for i, it in enumerate(table.items) if it.is_node]
    picked = rng.sample(nodes, min(samples, len(nodes)))
    first = _once(lambda: props.node(picked[0]))  # may run shape inference
    edges = [table.edges[k] for k in rng.sample(range(len(table.edges)), samples)]
    groups = rng.sample(range(1, len(scene.hierarchy.groups)), samples)
    root_first = _once(lambda: props.group(0))
    weights = [
        k for k, v in graph.initializers.items() if v.const_value and v.dtype == ir.DataType.FLOAT
    ]
    tensor_of = lambda k: props.tensor(edges[k].tensor, edges[k].dst)  # noqa: E731
    stats_of = lambda k: props.stats(weights[k])  # noqa: E731
    return {
        "model": name,
        "nodes": len(nodes),
        "scene build": build,
        "first node click": first,
        "node click": _median(props.node, picked),
        "edge click": _median(tensor_of, range(samples)),
        "group click": _median(props.group, groups),
        "root group, first": root_first,
        "root group, again": _once(lambda: props.group(0)),
        "weight stats": _median(stats_of, range(min(samples, len(weights)))),
    }


class _Counted:
    """Times a step and counts the ONNX shape inferences run inside it."""

    def __init__(self) -> None:
        self.inferences = 0
        infer = onnx.shape_inference.infer_shapes

        def counted(*args: object, **kwargs: object) -> onnx.ModelProto:
            self.inferences += 1
            return infer(*args, **kwargs)  # type: ignore[arg-type]

        onnx.shape_inference.infer_shapes = counted  # type: ignore[assignment]

    def step(self, fn: Callable[[], object]) -> tuple[float, int]:
        before = self.inferences
        return _once(fn), self.inferences - before


def _one_view(proto: onnx.ModelProto, counter: _Counted) -> dict[str, float | int]:
    doc = ModelDocument(ir.from_proto(proto))
    view = GraphView(doc)
    softmax = next(n.name or "" for n in doc.graph if n.op_type == "Softmax")
    matmul = next(n for n in doc.graph if n.op_type == "MatMul" and n.outputs[0].shape is None)
    item = view._scene.table.by_key[matmul.name or ""]
    zoom, zoom_n = counter.step(lambda: view._on_tensor_shapes({}))
    first, first_n = counter.step(lambda: view._on_node_properties({"item": item}))
    edit, edit_n = counter.step(lambda: doc.set_attribute(softmax, "axis", 3))
    again, again_n = counter.step(lambda: view._on_node_properties({"item": item}))
    rezoom, rezoom_n = counter.step(lambda: view._on_tensor_shapes({}))
    view.close()
    return {
        "zoom labels + first click": zoom + first,
        "inferences": zoom_n + first_n,
        "edit": edit,
        "edit inferences": edit_n,
        "click after edit": again,
        "click inferences": again_n,
        "zoom after": rezoom,
        "zoom inferences": rezoom_n,
    }


def drawing_and_pane(proto: onnx.ModelProto, views: int) -> dict[str, float | int]:
    """Zoom-in labels + first click, then edit, click, zoom, on fresh GraphViews of `proto`."""
    counter = _Counted()
    runs = [_one_view(proto, counter) for _ in range(views)]
    return {key: statistics.median(r[key] for r in runs) for key in runs[0]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=50_000)
    parser.add_argument("--samples", type=int, default=50)
    parser.add_argument("--views", type=int, default=3)
    args = parser.parse_args()
    synthetic = ir.from_proto(synthetic_dag(args.nodes, seed=1)).graph
    bert_proto = real_exports.load("bert_base_torchscript")
    bert = ir.from_proto(bert_proto).graph
    rows = [
        measure(f"synthetic {args.nodes}", synthetic, args.samples),
        measure("bert_base_torchscript", bert, args.samples),
    ]
    print_table(
        "properties pane, Python side (median over the samples)",
        [{k: fmt_seconds(v) if isinstance(v, float) else v for k, v in r.items()} for r in rows],
    )
    shared = drawing_and_pane(bert_proto, args.views)
    print_table(
        f"bert_base_torchscript in a GraphView: drawing + pane (median of {args.views} views)",
        [{k: fmt_seconds(v) if isinstance(v, float) else v for k, v in shared.items()}],
    )
    emit_json("properties", {"rows": rows, "bert_drawing_and_pane": shared})


if __name__ == "__main__":
    main()
