"""The first view of real torch exports shows the model's modules (issue "First sight"):
constants, weight aliases and shape arithmetic sit with their consumers and hide with the
Constants toggle, exporter artefacts are gone, and no top level is cut into ranges."""

from __future__ import annotations

import itertools
from xml.etree import ElementTree

import onnx
import onnx_ir as ir
import pytest

from nsdl_jupyter.graph import GraphScene
from nsdl_jupyter.graph._bands import LABEL_PX, LEGIBLE_PX, MARGIN, TOP
from nsdl_jupyter.graph._drawing import VOCABULARY, representatives
from nsdl_jupyter.graph._extract import CONSTANT
from nsdl_jupyter.graph._hierarchy import is_group_ref
from nsdl_jupyter.graph._layout import HEADER, KIND_FRAME, KIND_NODE, LayoutResult
from nsdl_jupyter.graph._routes import Frames, edge_route
from nsdl_jupyter.graph._svg import scene_svg
from tests import real_exports

SVG = "{http://www.w3.org/2000/svg}"


def graph_of(name: str) -> ir.Graph:
    """The export's graph with its weights left stripped: the drawing never reads them."""
    return ir.from_proto(onnx.load(real_exports.FOLDER / f"{name}.onnx")).graph


def top_level(name: str) -> tuple[list[str], GraphScene]:
    """Labels of the boxes the first view shows at the top level, in order (helpers hidden)."""
    scene = GraphScene(graph_of(name))
    h, items = scene.hierarchy, scene.table.items
    shown = [
        h.groups[~ref].label if is_group_ref(ref) else items[ref].name
        for ref in h.groups[0].children
        if is_group_ref(ref) or not items[ref].flags & CONSTANT
    ]
    return shown, scene


@pytest.mark.parametrize("exporter", ["torchscript", "dynamo"])
def test_bert_reads_embeddings_encoder_pooler(exporter: str) -> None:
    shown, scene = top_level(f"bert_base_{exporter}")
    groups = [label for label in shown if label in {"embeddings", "encoder", "pooler"}]
    assert groups == ["embeddings", "encoder", "pooler"]
    assert not any(g.synthetic for g in scene.hierarchy.groups if g.parent == 0)
    assert len(shown) <= 16  # inputs, outputs and the attention-mask arithmetic besides
    assert not [label for label in shown if "Identity" in label or "Constant" in label]


@pytest.mark.parametrize("exporter", ["torchscript", "dynamo"])
def test_resnet_reads_conv1_layers_fc_in_order(exporter: str) -> None:
    shown, _ = top_level(f"resnet50_{exporter}")
    layers = [label for label in shown if label.startswith("layer")]
    assert layers == ["layer1", "layer2", "layer3", "layer4"]
    assert len(shown) == 12 and shown[0] == "input" and shown[-1] == "output"


@pytest.mark.parametrize("exporter", ["torchscript", "dynamo"])
def test_gpt2_blocks_in_order_without_artefacts_or_stray_splits(exporter: str) -> None:
    shown, scene = top_level(f"gpt2_{exporter}")
    blocks = [label for label in shown if label.startswith("h.")]
    assert blocks == [f"h.{i}" for i in range(12)]
    labels = {g.label for g in scene.hierarchy.groups}
    assert not [label for label in labels if "_empty_nn_module_stack" in label]
    assert not [label for label in shown if "Split" in label]
    assert not any(g.synthetic for g in scene.hierarchy.groups if g.parent == 0)


def test_weight_aliases_are_helpers_in_their_consumers_scope() -> None:
    scene = GraphScene(graph_of("resnet50_torchscript"))
    items = scene.table.items
    aliases = [it for it in items if it.op == "Identity"]
    assert aliases and all(it.flags & CONSTANT for it in aliases)
    assert all(it.scope for it in aliases)  # torch wrote them unscoped: now beside their Conv


# ---------------------------------------------------------------- the first screen (issue 25)
OUTLINES = {
    "bert_base_torchscript": ["embeddings", "encoder", "pooler"],
    "bert_base_dynamo": ["embeddings", "encoder", "pooler"],
    "gpt2_dynamo": [f"h.{i}" for i in range(12)],  # wte, wpe: a Gather each, drawn inline
    "resnet50_torchscript": ["layer1", "layer2", "layer3", "layer4"],
    "resnet50_dynamo": ["layer1", "layer2", "layer3", "layer4"],
    "convnext_tiny_torchscript": ["features", "classifier"],  # avgpool: one node, drawn inline
    "convnext_tiny_dynamo": ["features", "avgpool", "classifier"],
    "vit_b_16_torchscript": ["encoder"],  # one module holding most of the model
    "efficientnet_b0_dynamo": ["features"],  # avgpool, classifier: a node each, drawn inline
}
# a few boxes would leave the first screen mostly empty: the first view opens the largest
# module (and what it holds), laid out in bands, while the whole stays legible
OPENED = {
    "convnext_tiny_torchscript": ["features"],
    "convnext_tiny_dynamo": ["features"],
    "vit_b_16_torchscript": ["encoder"],
    "efficientnet_b0_dynamo": ["features"],
}
Rect = tuple[float, float, float, float]


def drawn_labels(scene: GraphScene) -> list[tuple[str, int, int]]:
    """(label, kind, ref) of every box the first view draws, in the order of the flow (the
    top level's layers, whichever band of the screen they are drawn in)."""
    result = scene.layout()
    h, items = scene.hierarchy, scene.table.items
    units = scene.engine.unit_layout(0, scene.show_constants)
    rows = sorted(
        (units.get(r, (-1.0, 0.0)), y, r, k)
        for y, r, k in zip(
            result.rects[:, 1].tolist(), result.refs.tolist(), result.kinds.tolist(), strict=True
        )
    )
    return [(h.groups[~r].label if r < 0 else items[r].name, k, r) for _, _, r, k in rows]


def top_modules(scene: GraphScene) -> list[str]:
    """The modules of the top level the first view draws (closed or opened), in flow order."""
    h = scene.hierarchy
    return [
        label
        for label, kind, r in drawn_labels(scene)
        if kind != KIND_NODE and h.groups[~r].parent == 0
    ]


@pytest.mark.parametrize("name", sorted(OUTLINES))
def test_first_view_is_the_outline_of_collapsed_modules(name: str) -> None:
    scene = GraphScene(graph_of(name))
    drawn = drawn_labels(scene)
    opened = [label for label, kind, _ in drawn if kind == KIND_FRAME]
    assert opened == OPENED.get(name, [])
    assert {scene.hierarchy.groups[g].label for g in scene.expanded - {0}} == set(opened)
    assert top_modules(scene) == OUTLINES[name]
    assert len(drawn) <= 30  # a screen of boxes, not the graph
    ops = [scene.table.items[ref].op for _, kind, ref in drawn if kind == KIND_NODE]
    if name.startswith("resnet"):  # conv1 … layer4 → fc
        assert ops.index("Conv") < ops.index("Gemm")


@pytest.mark.parametrize("name", ["bert_base_torchscript", "bert_base_dynamo"])
def test_groups_of_constants_only_are_not_drawn(name: str) -> None:
    """BERT's position_embeddings and token_type_embeddings hold a weight alias or a constant
    and nothing else: drawn, they were empty frames titled with an ellipsis."""
    scene = GraphScene(graph_of(name))
    scene.expand_all()
    result = scene.layout()
    rep = representatives(
        scene.hierarchy.item_group, [g.parent for g in scene.hierarchy.groups], result
    )
    slots = {int(s) for s in rep.tolist() if s >= 0}
    frames = {
        ~int(ref): i
        for i, (ref, k) in enumerate(zip(result.refs, result.kinds, strict=True))
        if k == KIND_FRAME
    }
    assert frames and "position_embeddings" not in {scene.hierarchy.groups[g].label for g in frames}
    for g, slot in frames.items():  # every frame holds a drawn box
        x, y, w, h = result.rects[slot].tolist()
        inside = [
            s
            for s in slots
            if x <= result.rects[s, 0]
            and result.rects[s, 0] + result.rects[s, 2] <= x + w
            and y <= result.rects[s, 1]
            and result.rects[s, 1] + result.rects[s, 3] <= y + h
        ]
        assert inside, scene.hierarchy.groups[g].key
    scene.show_constants = True
    assert "position_embeddings" in {label for label, _, _ in drawn_labels(scene)}


def label_rects(svg: str) -> list[tuple[str, Rect]]:
    """The edge shape labels of an SVG drawing as rectangles (layout coordinates)."""
    spec = VOCABULARY["edgeShape"]
    group = ElementTree.fromstring(svg).find(f".//{SVG}g[@class='nsdl-edge-shapes']")
    assert group is not None
    out = []
    for t in group:
        text = t.text or ""
        x, y = float(t.attrib["x"]), float(t.attrib["y"])
        out.append((text, (x, y - spec["size"] / 2, len(text) * spec["charWidth"], spec["size"])))
    return out


def overlapping(a: Rect, b: Rect) -> bool:
    return a[0] < b[0] + b[2] and b[0] < a[0] + a[2] and a[1] < b[1] + b[3] and b[1] < a[1] + a[3]


def label_collisions(scene: GraphScene) -> tuple[int, list[str]]:
    """(labels drawn, labels lying on a box, a group title or another label)."""
    scene.infer()
    result = scene.layout()
    labels = label_rects(scene_svg(scene, result=result, background=None))
    obstacles: list[Rect] = []
    for (x, y, w, h), kind in zip(result.rects.tolist(), result.kinds.tolist(), strict=True):
        obstacles.append((x, y, w, HEADER) if kind == KIND_FRAME else (x, y, w, h))
    bad = [
        text
        for k, (text, rect) in enumerate(labels)
        if any(overlapping(rect, o) for o in obstacles)
        or any(overlapping(rect, other) for j, (_, other) in enumerate(labels) if j != k)
    ]
    return len(labels), bad


@pytest.mark.parametrize(
    ("name", "expand"),
    [
        ("bert_base_torchscript", False),
        ("bert_base_dynamo", True),
        ("gpt2_dynamo", False),
        ("resnet50_torchscript", True),
        ("resnet50_dynamo", False),
    ],
)
def test_edge_labels_never_lie_on_boxes_titles_or_each_other(name: str, expand: bool) -> None:
    scene = GraphScene(graph_of(name))
    if expand:
        scene.expand_all()
    drawn, bad = label_collisions(scene)
    assert drawn >= 5 and not bad, bad[:5]


# the default GraphView (560 px) in JupyterLab at 1280x800 with the file browser open: its
# canvas (Fit keeps the margins and the breadcrumb free: renderer.ts READABLE, graph/_bands.py)
CANVAS_W, CANVAS_H = 845.0, 505.0


def whole_fit_scale(result: LayoutResult) -> float:
    """The scale at which Fit shows the whole drawing in the default canvas."""
    x0, y0 = result.rects[:, 0].min(), result.rects[:, 1].min()
    w = float((result.rects[:, 0] + result.rects[:, 2]).max() - x0)
    h = float((result.rects[:, 1] + result.rects[:, 3]).max() - y0)
    return min((CANVAS_W - 2 * MARGIN) / w, (CANVAS_H - 2 * MARGIN - TOP) / h, 1.5)


def box_overlaps(result: LayoutResult) -> list[tuple[int, int]]:
    leaves = [
        (int(r), tuple(rect))
        for r, k, rect in zip(result.refs, result.kinds, result.rects.tolist(), strict=True)
        if k != KIND_FRAME
    ]
    return [
        (a, b)
        for i, (a, ra) in enumerate(leaves)
        for b, rb in leaves[i + 1 :]
        if overlapping(ra, rb)  # type: ignore[arg-type]
    ]


@pytest.mark.parametrize("name", sorted(OUTLINES))
def test_whole_outline_fits_the_default_view_legibly(name: str) -> None:
    """Issue 25: the first screen holds the whole outline (GPT-2's h.0 … h.11 in bands across
    the screen, not a 2000 px column) with every label at 10 px or more, boxes apart, edge
    shapes on no box."""
    scene = GraphScene(graph_of(name))
    result = scene.layout()
    assert whole_fit_scale(result) * LABEL_PX >= LEGIBLE_PX, (name, result.width, result.height)
    assert not box_overlaps(result)
    _, bad = label_collisions(scene)
    assert not bad, bad[:5]
    assert top_modules(scene) == OUTLINES[name]


def test_a_long_outline_is_cut_into_bands_and_edges_cross_between_them() -> None:
    """GPT-2: the blocks run down columns side by side; the edge from the last box of one
    column to the first of the next leaves by its side, through the gap between columns."""
    scene = GraphScene(graph_of("gpt2_dynamo"))
    result = scene.layout()
    rects = result.rect_of()
    blocks = {scene.hierarchy.groups[~r].label: rects[r] for r in rects if r < 0}
    columns = sorted({round(x) for x, _, _, _ in blocks.values()})
    assert len(columns) >= 2
    assert blocks["h.0"][0] < blocks["h.11"][0]  # later blocks in a later column
    first = min((b for b in blocks.values() if round(b[0]) == columns[1]), key=lambda b: b[1])
    before = [b for b in blocks.values() if round(b[0]) == columns[0] or b[0] < columns[1]]
    last = max(before, key=lambda b: b[1])
    ordered = [last, first]
    [curve] = edge_route(ordered, Frames([[], []], {}), 0, 1, lr=False)
    assert curve[0] == last[0] + last[2] and curve[6] == first[0]  # side to side
    xs = curve[0::2]
    assert min(xs) >= last[0] + last[2] and max(xs) <= first[0]  # within the gap


def test_bands_only_while_the_top_level_is_an_outline() -> None:
    """Once a module is open the top level is one flow again (the view keeps the opened
    module where it was on screen): h.0 … h.11 one under the other."""
    scene = GraphScene(graph_of("gpt2_dynamo"))
    h = scene.hierarchy
    scene.expand([g for g, group in enumerate(h.groups) if group.label == "h.8"])
    rects = scene.layout().rect_of()
    blocks = [rects[~g] for g, group in enumerate(h.groups) if group.parent == 0 and ~g in rects]
    tops = [y for _, y, _, _ in blocks]
    assert len(blocks) == 12 and tops == sorted(tops)  # h.0 … h.11 down one flow
    assert max(y for _, y, _, _ in blocks) > 2000  # h.8 open: taller than a screen


def test_a_small_graph_is_not_cut_into_bands() -> None:
    """Graphs edited box by box keep one flow: a new layer must not move the cuts."""
    scene = GraphScene(graph_of("resnet50_dynamo"))
    scene.expand_all()
    assert scene.engine.band_top  # the module export's top level...
    tiny = GraphScene(graph_of("control_flow_torchscript"))
    assert not tiny.engine.band_top  # ...not a graph read whole


def test_left_to_right_outline_wraps_into_rows_with_room_for_shapes() -> None:
    """LR: the outline runs in rows (left to right, then the next row); the tensor shape
    written in the gap after a box keeps the full layer gap."""
    scene = GraphScene(graph_of("resnet50_torchscript"))
    scene.direction = "LR"
    result = scene.layout()
    assert whole_fit_scale(result) * LABEL_PX >= LEGIBLE_PX
    rows: dict[int, list[tuple[float, float]]] = {}
    for x, y, w, h in result.rects.tolist():
        rows.setdefault(round(y + h / 2), []).append((x, x + w))
    lines = [sorted(r) for r in rows.values() if len(r) > 1]
    assert len(lines) >= 2
    gaps = [b[0] - a[1] for line in lines for a, b in itertools.pairwise(line)]
    assert min(gaps) >= VOCABULARY["gap"]["layer"] - 1e-3


def blocks_of(scene: GraphScene, key: str) -> tuple[Rect, list[Rect]]:
    """The frame of opened module `key` and the boxes of the modules it holds."""
    g = scene.hierarchy.by_key()[key]
    rects = scene.layout().rect_of()
    inside = [rects[r] for r in rects if r < 0 and scene.hierarchy.groups[~r].parent == g]
    return rects[~g], inside


@pytest.mark.parametrize(
    ("name", "key"),
    [
        ("resnet50_torchscript", "/layer3"),  # layer3.0 … layer3.5
        ("vit_b_16_torchscript", "/encoder/layers"),  # encoder_layer_0 … 11
        ("convnext_tiny_dynamo", "/features/5"),  # nine CNBlocks
    ],
)
def test_an_opened_chain_of_modules_is_cut_into_bands_that_fit_the_view(
    name: str, key: str
) -> None:
    """Issue 25: a module opened by a click shows its inside in bands like the top level (not
    one column taller than the screen): the frame fits the view at a legible scale."""
    scene = GraphScene(graph_of(name))
    scene.expand([scene.hierarchy.by_key()[key]])
    frame, blocks = blocks_of(scene, key)
    room_w, room_h = scene.engine.band_room
    assert len({round(x) for x, _, _, _ in blocks}) >= 2  # columns side by side
    assert frame[2] <= room_w and frame[3] <= room_h, (frame, scene.engine.band_room)
    assert not box_overlaps(scene.layout())
    _, bad = label_collisions(scene)
    assert not bad, bad[:5]
    scene.engine.band_top = False  # before: one column
    column, _ = blocks_of(scene, key)
    assert column[3] > room_h


def test_a_taller_canvas_gets_longer_columns() -> None:
    """The bands fill the canvas the browser reports: GPT-2's h.0 … h.11 in three columns on
    the default canvas, in two on a taller one; a canvas too small to count, or a graph
    without bands, keeps its layout."""
    scene = GraphScene(graph_of("gpt2_dynamo"))

    def columns() -> int:
        rects = scene.layout().rect_of()
        return len({round(rects[r][0]) for r in rects if r < 0})

    assert columns() == 3
    assert scene.set_canvas_height(760)
    assert columns() == 2 and scene.layout().height <= scene.engine.band_room[1]
    assert not scene.set_canvas_height(760)  # the same room
    assert not scene.set_canvas_height(40)  # a hidden output's canvas
    tiny = GraphScene(graph_of("control_flow_torchscript"))
    assert not tiny.set_canvas_height(900)


def test_reopened_with_its_companion_the_first_view_is_laid_out_alike() -> None:
    """The companion file keeps which groups are closed; a document opened again with it
    draws ConvNeXt's opened `features` inside the outline's bands as the first time did."""
    graph = graph_of("convnext_tiny_dynamo")
    first = GraphScene(graph)
    again = GraphScene(graph, positions=dict(first.positions), collapsed=first.collapsed_keys)
    assert again.expanded == first.expanded != {0}
    assert again.layout().rect_of() == first.layout().rect_of()


def _detector_like() -> ir.Graph:
    """A detection model as TorchScript writes it (torchvision's SSDlite): modules for the
    transform, backbone, head and anchor generator, and between them 60 nodes of
    post-processing (box decoding, score filtering) that belong to no module, so the top
    level holds more boxes than one level may show."""
    h = onnx.helper
    nodes: list[onnx.NodeProto] = []
    last = "images"

    def chain(scope: str, ops: list[str]) -> None:
        nonlocal last
        for k, op in enumerate(ops):
            name = f"{scope}/{op}_{k}"
            nodes.append(h.make_node(op, [last], [f"{name}_output_0"], name=name))
            last = f"{name}_output_0"

    chain("/transform", ["Sigmoid", "Relu"])
    for block in range(4):
        chain(f"/backbone/features.{block}", ["Relu", "Sigmoid", "Tanh"])
    chain("/head/classification_head", ["Relu", "Sigmoid"])
    chain("/head/regression_head", ["Relu", "Sigmoid"])
    chain("", ["Neg", "Abs", "Exp"] * 20)  # post-processing at the top level
    chain("/anchor_generator", ["Relu", "Sigmoid"])
    graph = h.make_graph(
        nodes,
        "g",
        [h.make_tensor_value_info("images", onnx.TensorProto.FLOAT, [1, 3, 8, 8])],
        [h.make_tensor_value_info(last, onnx.TensorProto.FLOAT, [1, 3, 8, 8])],
    )
    return ir.from_proto(h.make_model(graph, opset_imports=[h.make_opsetid("", 17)])).graph


def test_a_level_too_long_for_one_screen_keeps_its_modules() -> None:
    """SSDlite (TorchScript): its top level, cut evenly into ranges of siblings, hid the
    transform, backbone and head inside ranges named by node names (`images … Concat`); not an
    outline then, the first view opened 28 frames and 148 boxes. Only the run of
    post-processing nodes is cut now, and the first view is the outline of the modules."""
    scene = GraphScene(_detector_like())
    h = scene.hierarchy
    top = [h.groups[~c] for c in h.groups[0].children if is_group_ref(c)]
    modules = [g.label for g in top if not g.synthetic]
    assert modules == ["transform", "backbone", "head", "anchor_generator"]
    ranges = [g for g in top if g.synthetic]
    assert ranges and all(
        not is_group_ref(c) and not scene.table.items[c].scope for g in ranges for c in g.children
    )  # the post-processing nodes only
    assert len(h.groups[0].children) <= 48
    assert scene.is_module_outline()
    assert len(drawn_labels(scene)) <= 30
