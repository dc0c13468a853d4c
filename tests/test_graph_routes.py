"""Edge routes around opened frames (nsdl_jupyter/graph/_routes.py): an edge into or out of a
module's frame is not drawn over the frame's title, in a torchvision-shaped ResNet-18 with
`layer1` and `layer1.0` open (scopes `/layer1/layer1.0/conv1/Conv`); nor is an edge that only
passes over a frame, in a BERT built in code. The canvas computes the same routes
(tests/test_drawing_parity.py)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence

import numpy as np
import onnx_ir as ir
import pytest

from nsdl_jupyter.examples import bert_base, resnet18
from nsdl_jupyter.graph import GraphScene
from nsdl_jupyter.graph._drawing import representatives
from nsdl_jupyter.graph._layout import HEADER, KIND_FRAME, Direction, LayoutResult
from nsdl_jupyter.graph._routes import Frames, Route, edge_route, frames_of
from nsdl_jupyter.graph._svg import visible_edges

Rect = Sequence[float]


def points(route: Route, steps: int = 32) -> Iterator[tuple[float, float]]:
    """Points along every cubic segment of a route."""
    for sub in route:
        x0, y0 = sub[0], sub[1]
        for k in range(2, len(sub), 6):
            c1x, c1y, c2x, c2y, x1, y1 = sub[k : k + 6]
            for t in np.linspace(0.0, 1.0, steps + 1):
                u = 1 - t
                yield (
                    u**3 * x0 + 3 * u * u * t * c1x + 3 * u * t * t * c2x + t**3 * x1,
                    u**3 * y0 + 3 * u * u * t * c1y + 3 * u * t * t * c2y + t**3 * y1,
                )
            x0, y0 = x1, y1


def strictly_inside(point: tuple[float, float], rect: Rect) -> bool:
    x, y, w, h = rect
    return x < point[0] < x + w and y < point[1] < y + h


def on_border(point: tuple[float, float], rect: Rect) -> bool:
    x, y, w, h = rect
    px, py = point
    within = x - 1e-3 <= px <= x + w + 1e-3 and y - 1e-3 <= py <= y + h + 1e-3
    return within and not strictly_inside(point, (x + 1e-3, y + 1e-3, w - 2e-3, h - 2e-3))


def title_bar(rect: Rect) -> Rect:
    return (rect[0], rect[1], rect[2], min(HEADER, rect[3]))


@pytest.fixture(scope="module")
def model() -> ir.Model:
    return ir.from_proto(resnet18())


def opened(model: ir.Model, direction: Direction) -> tuple[GraphScene, LayoutResult]:
    """The scene with `layer1` and `layer1.0` open, and its layout."""
    scene = GraphScene(model.graph)
    scene.direction = direction
    by_key = scene.hierarchy.by_key()
    scene.expanded = {0, by_key["/layer1"], by_key["/layer1/layer1.0"]}
    return scene, scene.layout()


@pytest.mark.parametrize("direction", ["TB", "LR"])
def test_edges_into_and_out_of_an_opened_module_keep_off_its_title(
    model: ir.Model, direction: Direction
) -> None:
    scene, result = opened(model, direction)
    h = scene.hierarchy
    parents = [g.parent for g in h.groups]
    rects = result.rects.astype(float).tolist()
    frames = frames_of(result, h.item_group, parents)
    rep = representatives(h.item_group, parents, result)
    lr = direction == "LR"
    crossing = [
        (e.src, e.dst, set(frames.chains[e.src]) ^ set(frames.chains[e.dst]))
        for e in visible_edges(scene, rep)
    ]
    crossing = [c for c in crossing if c[2]]
    # MaxPool into conv1 and the residual Add, Relu out to layer1.1; layer1.1 to layer2
    assert len(crossing) >= 4
    no_frames = Frames([[] for _ in rects], {})
    direct = [edge_route(rects, no_frames, a, b, lr) for a, b, _ in crossing]
    assert any(  # one curve from box to box would draw over a title: this scene shows it
        strictly_inside(p, title_bar(rects[f]))
        for (_, _, crossed), route in zip(crossing, direct, strict=True)
        for f in crossed
        for p in points(route)
    )
    leaves = [s for s, k in enumerate(result.kinds.tolist()) if k != KIND_FRAME]
    for a, b, crossed in crossing:
        route = edge_route(rects, frames, a, b, lr)
        drawn = list(points(route))
        over = [f for f in crossed if any(strictly_inside(p, title_bar(rects[f])) for p in drawn)]
        assert not over, (a, b, over)
        assert on_border(drawn[0], rects[a]) and on_border(drawn[-1], rects[b])
        # the residual edge runs beside the main chain, not over its boxes
        hidden = [
            s
            for s in leaves
            if s not in (a, b) and any(strictly_inside(p, rects[s]) for p in drawn)
        ]
        assert not hidden, (a, b, hidden)


@pytest.mark.parametrize("direction", ["TB", "LR"])
@pytest.mark.parametrize("opened", ["layer.0", "all"])
def test_no_edge_is_drawn_over_a_title_even_one_it_jumps_over(
    direction: Direction, opened: str
) -> None:
    """BERT built in code as torch exports it (scopes `/bert/encoder/layer.0/...`): the
    attention mask's arithmetic at the top level feeds every layer, so its edges to layer 1
    pass across layer 0's frame; with everything open, more edges jump over frames."""
    scene = GraphScene(ir.from_proto(bert_base(layers=2, hidden=32, heads=2, vocab=64)).graph)
    scene.direction = direction
    if opened == "all":
        scene.expand_all()
    else:
        keys = scene.hierarchy.by_key()
        layer = next(k for k in keys if k.endswith("/layer.0"))
        scene.expand(g for k, g in keys.items() if k == layer or k.startswith(layer + "/"))
    result = scene.layout()
    h = scene.hierarchy
    parents = [g.parent for g in h.groups]
    rects = result.rects.astype(float).tolist()
    frames = frames_of(result, h.item_group, parents)
    bars = {s: title_bar(rects[s]) for s, k in enumerate(result.kinds.tolist()) if k == KIND_FRAME}
    rep = representatives(h.item_group, parents, result)
    edges = [(e.src, e.dst) for e in visible_edges(scene, rep)]
    lr = direction == "LR"
    uncut = Frames(frames.chains, frames.children)  # no frames to keep off: nothing cut
    jumped = [  # frames around neither end that an edge drawn in full would cross the title of
        f
        for a, b in edges
        for p in points(edge_route(rects, uncut, a, b, lr))
        for f, bar in bars.items()
        if f not in frames.chains[a] + frames.chains[b] and strictly_inside(p, bar)
    ]
    assert jumped
    for a, b in edges:
        drawn = list(points(edge_route(rects, frames, a, b, lr), 64))
        over = [f for f, bar in bars.items() if any(strictly_inside(p, bar) for p in drawn)]
        assert not over, (a, b, over)


@pytest.mark.parametrize("direction", ["TB", "LR"])
def test_an_edge_goes_round_the_frames_on_its_way_instead_of_vanishing_along_their_titles(
    direction: Direction,
) -> None:
    """Everything open in a BERT built in code: the mask's edges to layer 1 would run along
    layer 0's title bar (left to right) and so not be drawn for hundreds of pixels; they go
    round layer 0 along the encoder's lane. What is left out of any route is a title bar
    crossed (at most its height), never a stretch along one."""
    scene = GraphScene(ir.from_proto(bert_base(layers=2, hidden=32, heads=2, vocab=64)).graph)
    scene.direction = direction
    scene.expand_all()
    result = scene.layout()
    h = scene.hierarchy
    parents = [g.parent for g in h.groups]
    rects = result.rects.astype(float).tolist()
    frames = frames_of(result, h.item_group, parents)
    rep = representatives(h.item_group, parents, result)
    gaps = []
    for e in visible_edges(scene, rep):
        route = edge_route(rects, frames, e.src, e.dst, direction == "LR")
        gaps += [float(np.hypot(*np.subtract(a[-2:], b[:2]))) for a, b in itertools.pairwise(route)]
        assert on_border(route[0][:2], rects[e.src]) and on_border(route[-1][-2:], rects[e.dst])
    assert max(gaps, default=0.0) <= HEADER + 2, sorted(gaps)[-5:]
