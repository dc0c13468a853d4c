"""The layered layout runs igraph's C extension alone (graph/_sugiyama.py): the same positions
as `igraph.Graph.layout_sugiyama`, no `import igraph` on a first view, and the igraph package
still whole when it is imported afterwards."""

from __future__ import annotations

import json
import pathlib
import random
import subprocess
import sys

import igraph

CASES = 120

ALONE = """
import json, sys
from nsdl_jupyter.graph._sugiyama import sugiyama
cases = json.loads(sys.argv[1])
coords = [sugiyama(n, [tuple(e) for e in edges], maxiter=50) for n, edges in cases]
print("BEFORE", "igraph" in sys.modules)
import igraph
import igraph.clustering
from nsdl_jupyter.graph import _sugiyama
print("BOUND", igraph._igraph is _sugiyama._igraph_core())
print("SPLIT", igraph.clustering.split_join_distance([0, 0, 1], [0, 1, 1]))
graph = igraph.Graph(n=3, edges=[(0, 1), (1, 2), (0, 2)], directed=True)
print("PACKAGE", graph.layout_sugiyama(maxiter=50).coords and graph.summary())
print("COORDS", json.dumps(coords))
"""


def _random_graphs(seed: int) -> list[tuple[int, list[tuple[int, int]]]]:
    """Small directed graphs, mostly acyclic, some with cycles, long and parallel edges."""
    rng = random.Random(seed)
    cases = []
    for _ in range(CASES):
        n = rng.randint(1, 40)
        edges = set()
        for _ in range(rng.randint(0, 3 * n) if n > 1 else 0):
            a, b = rng.sample(range(n), 2)
            edges.add((min(a, b), max(a, b)) if rng.random() < 0.9 else (max(a, b), min(a, b)))
        cases.append((n, sorted(edges)))
    return cases


def test_the_extension_alone_lays_out_as_igraph_and_leaves_the_package_whole() -> None:
    cases = _random_graphs(0)
    run = subprocess.run(
        [sys.executable, "-c", ALONE, json.dumps(cases)],
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    lines = dict(line.split(" ", 1) for line in run.stdout.splitlines())
    assert lines["BEFORE"] == "False", run.stdout + run.stderr
    assert lines["BOUND"] == "True"
    assert lines["SPLIT"] == "(1, 1)"
    assert lines["PACKAGE"].endswith("IGRAPH D--- 3 3 -- ")  # its layout and summary work
    expected = [
        igraph.Graph(n=n, edges=edges, directed=True).layout_sugiyama(maxiter=50).coords
        for n, edges in cases
    ]
    assert json.loads(lines["COORDS"]) == expected


def test_in_a_process_that_imported_igraph_the_package_extension_is_used() -> None:
    from nsdl_jupyter.graph import _sugiyama

    assert _sugiyama._igraph_core() is igraph._igraph
    edges = [(0, 1), (0, 2), (1, 3), (2, 3)]
    expected = igraph.Graph(n=4, edges=edges, directed=True).layout_sugiyama(maxiter=50).coords
    assert _sugiyama.sugiyama(4, edges, maxiter=50) == expected


FIRST_VIEW = """
import sys
import onnx
import nsdl_jupyter as nj
from nsdl_jupyter.examples import bert_base
onnx.save(bert_base(layers=2), sys.argv[1])
view = nj.GraphView(nj.open_model(sys.argv[1]))
print("IGRAPH", "igraph" in sys.modules)
print("CORE", "igraph._igraph" in sys.modules or any(
    type(f).__name__ == "_Handover" for f in sys.meta_path))
"""


def test_a_transformer_first_view_draws_without_importing_igraph(tmp_path: pathlib.Path) -> None:
    """BERT's outline is no chain: it is laid out by the extension alone."""
    path = tmp_path / "m.onnx"
    run = subprocess.run(
        [sys.executable, "-c", FIRST_VIEW, str(path)],
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    assert "IGRAPH False" in run.stdout, run.stdout + run.stderr
    assert "CORE True" in run.stdout, run.stdout + run.stderr
