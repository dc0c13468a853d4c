"""What a click in the properties pane costs on a large model (goal: < 10 ms a click).

Python side of GraphView's pane requests (nsdl_jupyter/graph/_properties.py), on a synthetic
model of --nodes nodes (types declared, as dynamo exports declare them) and on the
TorchScript BERT export (no intermediate types: the first click runs shape inference once):
node properties, an edge's tensor, a group (first time: counted; then remembered), a
weight's statistics. Each figure is the median over --samples different items.

Prints a table and one JSON line. Never asserts a time.

    python bench/bench_properties.py [--nodes 50000] [--samples 50]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path

import onnx_ir as ir
from _common import emit_json, fmt_seconds, print_table

from nsdl_jupyter.examples import synthetic_dag
from nsdl_jupyter.graph import GraphScene
from nsdl_jupyter.graph._properties import Properties

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=50_000)
    parser.add_argument("--samples", type=int, default=50)
    args = parser.parse_args()
    synthetic = ir.from_proto(synthetic_dag(args.nodes, seed=1)).graph
    bert = ir.from_proto(real_exports.load("bert_base_torchscript")).graph
    rows = [
        measure(f"synthetic {args.nodes}", synthetic, args.samples),
        measure("bert_base_torchscript", bert, args.samples),
    ]
    print_table(
        "properties pane, Python side (median over the samples)",
        [{k: fmt_seconds(v) if isinstance(v, float) else v for k, v in r.items()} for r in rows],
    )
    emit_json("properties", {"rows": rows})


if __name__ == "__main__":
    main()
