"""A group whose children form one chain is laid out without igraph, as igraph's Sugiyama
would lay it out: a fresh kernel's first view of a torchvision model (a chain of modules)
then never imports igraph (~0.18 s)."""

from __future__ import annotations

import itertools
import pathlib
import random
import subprocess
import sys

import igraph

from nsdl_jupyter.graph._layout import chain_order


def _sugiyama(n: int, edges: list[tuple[int, int]]) -> list[tuple[float, float]]:
    coords = igraph.Graph(n=n, edges=edges, directed=True).layout_sugiyama(maxiter=50).coords
    return [(float(c[1]), float(c[0])) for c in coords[:n]]


def test_chains_in_any_vertex_order_match_igraph() -> None:
    rng = random.Random(0)
    for n in [1, 2, 3, 7, 30]:
        for _ in range(5):
            path = list(range(n))
            rng.shuffle(path)
            edges = list(itertools.pairwise(path))
            rng.shuffle(edges)
            order = chain_order(n, edges)
            assert order == path
            mine = [(0.0, 0.0)] * n
            for layer, v in enumerate(order):
                mine[v] = (float(layer), 0.0)
            assert mine == _sugiyama(n, edges)


def test_anything_but_one_chain_is_left_to_igraph() -> None:
    not_chains = {
        "empty": (0, []),
        "two vertices apart": (2, []),
        "fork": (3, [(0, 1), (0, 2)]),
        "join": (3, [(0, 2), (1, 2)]),
        "chain and a stray": (4, [(0, 1), (1, 2)]),
        "cycle and a vertex": (4, [(0, 1), (1, 2), (2, 1)]),
        "skip edge": (3, [(0, 1), (1, 2), (0, 2)]),
        "loop": (2, [(0, 0)]),
    }
    for name, (n, edges) in not_chains.items():
        assert chain_order(n, edges) is None, name


FIRST_VIEW = """
import sys
import onnx
import nsdl_jupyter as nj
from nsdl_jupyter.examples import {maker}
onnx.save({maker}(), sys.argv[1])
nj.GraphView(nj.open_model(sys.argv[1]))
print("IGRAPH", "igraph" in sys.modules)
"""


def test_resnet50_first_view_draws_without_importing_igraph(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "m.onnx"
    run = subprocess.run(
        [sys.executable, "-c", FIRST_VIEW.format(maker="resnet50"), str(path)],
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    assert "IGRAPH False" in run.stdout, run.stdout + run.stderr
