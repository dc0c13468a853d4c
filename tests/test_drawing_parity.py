"""One model drawn both ways, the canvas (js/src/graph_view/render.ts through a recording 2D
context in node) and the SVG renderer (nsdl_jupyter/graph/_svg.py), gives the same boxes,
colours, labels, overlay, selection, marks, badges and edges."""

from __future__ import annotations

import base64
import json
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest

import nsdl_jupyter as nj
from nsdl_jupyter._static_export._graph_picture import overlay_of
from nsdl_jupyter.graph._drawing import VOCABULARY, category_fill
from nsdl_jupyter.graph._layout import KIND_FRAME, KIND_GROUP
from nsdl_jupyter.graph._shapes import TIMES
from nsdl_jupyter.graph._svg import scene_svg
from tests import real_exports

JS = Path(__file__).resolve().parent.parent / "js"
SVG = "{http://www.w3.org/2000/svg}"
RUN = """
import { recordDraw } from %s;
let raw = "";
for await (const chunk of process.stdin) raw += chunk;
const input = JSON.parse(raw);
const bytes = (b64) => new Uint8Array(Buffer.from(b64, "base64"));
input.topology = bytes(input.topology);
input.layout = bytes(input.layout);
if (input.shapes) input.shapes = bytes(input.shapes);
if (input.overlay) input.overlay.values = bytes(input.overlay.values);
process.stdout.write(JSON.stringify(recordDraw(input)));
"""

Record = tuple[Any, ...]


@pytest.fixture(scope="module")
def recorder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """js/test/recording.ts bundled for node."""
    node = shutil.which("node")
    esbuild = JS / "node_modules" / ".bin" / "esbuild"
    if node is None or not esbuild.exists():
        pytest.skip("node and js/node_modules are needed: cd js && npm ci")
    out = tmp_path_factory.mktemp("recorder") / "recording.mjs"
    subprocess.run(
        [str(esbuild), str(JS / "test" / "recording.ts"), "--bundle", "--format=esm",
         "--platform=node", "--log-level=warning", f"--outfile={out}"],
        check=True, timeout=120,
    )  # fmt: skip
    return out


def _canvas(recorder: Path, view: nj.GraphView, translate: tuple[float, float], size: Any) -> Any:
    overlay = None
    if view._overlay:
        overlay = {**view._overlay, "values": base64.b64encode(view._overlay_values).decode()}
    payload = {
        "topology": base64.b64encode(view._topology).decode(),
        "layout": base64.b64encode(view._layout).decode(),
        "shapes": base64.b64encode(view._shapes).decode(),
        "selected": list(view.selected),
        "marks": dict(view._marks),
        "precisions": dict(view._precisions),
        "overlay": overlay,
        "camera": {"scale": 1, "tx": translate[0], "ty": translate[1]},
        "width": size[0],
        "height": size[1],
    }
    done = subprocess.run(
        ["node", "--input-type=module", "-e", RUN % json.dumps(recorder.as_uri())],
        input=json.dumps(payload), capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    return json.loads(done.stdout)["records"]


def _n(v: float) -> str:
    return f"{v:.1f}"


def canvas_records(records: list[dict[str, Any]]) -> Counter[Record]:
    out: Counter[Record] = Counter()
    for r in records:
        kind = r["kind"]
        if kind in ("fill", "stroke"):
            width = _n(r["width"]) if kind == "stroke" else ""
            box = tuple(_n(r[k]) for k in ("x", "y", "w", "h", "r"))
            out[(kind, r["style"], width, *box)] += 1
        elif kind == "edge":
            dash = " ".join(f"{d:g}" for d in r["dash"])
            out[(kind, r["style"], _n(r["width"]), dash, *map(_n, r["pts"]))] += 1
        elif kind == "circle":
            out[(kind, r["style"], _n(r["cx"]), _n(r["cy"]), _n(r["r"]))] += 1
        else:
            align = "center" if r["align"] == "center" else "left"
            out[(kind, r["text"], r["font"], r["style"], align, _n(r["x"]), _n(r["y"]))] += 1
    return out


def svg_records(svg: str) -> tuple[Counter[Record], tuple[float, float], tuple[int, int]]:
    """The SVG's shapes as the canvas records them (world units: the outer translate undone)."""
    root = ET.fromstring(svg)
    family = root.get("font-family")
    world = root.find(f"{SVG}g")
    assert world is not None
    found = re.match(r"translate\(([-\d.]+),([-\d.]+)\)", world.get("transform", ""))
    assert found
    out: Counter[Record] = Counter()

    def walk(elem: ET.Element, inherited: dict[str, str]) -> None:
        attrs = {**inherited, **elem.attrib}
        tag = elem.tag.removeprefix(SVG)
        if tag == "rect":
            box = tuple(_n(float(attrs.get(k, 0))) for k in ("x", "y", "width", "height", "rx"))
            if attrs.get("fill", "none") != "none":
                out[("fill", attrs["fill"], "", *box)] += 1
            if "stroke" in attrs:
                out[("stroke", attrs["stroke"], _n(float(attrs["stroke-width"])), *box)] += 1
        elif tag == "path":  # one record per subpath, as the canvas traces a move and segments
            width = _n(float(attrs["stroke-width"]))
            for sub in attrs["d"].split("M")[1:]:
                pts = [_n(float(v)) for v in re.findall(r"-?\d+(?:\.\d+)?", sub)]
                out[("edge", attrs["stroke"], width, attrs.get("stroke-dasharray", ""), *pts)] += 1
        elif tag == "circle":
            out[("circle", attrs["fill"], *(_n(float(attrs[k])) for k in ("cx", "cy", "r")))] += 1
        elif tag == "text":
            font = f"{attrs['font-weight']} {attrs['font-size']}px {family}"
            align = "center" if attrs.get("text-anchor") == "middle" else "left"
            at = (_n(float(attrs["x"])), _n(float(attrs["y"])))
            out[("text", elem.text or "", font, attrs["fill"], align, *at)] += 1
        for child in elem:
            if child.tag != f"{SVG}title":
                walk(child, {k: v for k, v in attrs.items() if k not in ("class", "d")})

    for child in world:
        walk(child, {})
    size = (int(root.get("width", "0")), int(root.get("height", "0")))
    return out, (float(found[1]), float(found[2])), size


@pytest.fixture(scope="module")
def view() -> nj.GraphView:
    """BERT (TorchScript export) with layer 0 open, layer 1 closed, an overlay, a selection
    (one node inside the closed group), problem marks and TensorRT precision badges (one on a
    hidden node, which shows none)."""
    view = nj.GraphView(real_exports.load("bert_base_torchscript"))
    groups = view.groups
    layer = sorted(k for k in groups if k.endswith("/layer.0"))[0]
    view.expand(layer, *(k for k in groups if k.startswith(layer + "/")))
    view.collapse(layer.replace("layer.0", "layer.1"))
    shown = [
        int(r)
        for r, kind in zip(view._scene.layout().refs, view._scene.layout().kinds, strict=True)
        if kind != KIND_FRAME and r >= 0
    ]
    names = [view._scene.table.items[i].name for i in shown if view._scene.table.items[i].is_node]
    hidden = next(n for n in view._scene.table.by_key if "/layer.1/" in n)
    view.set_overlay({n: float(k) for k, n in enumerate(names[::2])}, colormap="magma")
    view.selected = [names[3], names[10], hidden]
    view.set_marks({names[5]: "error", names[6]: "warning", hidden: "warning"})
    drawn = set(view._scene.layout().refs.tolist())  # the selection opened some groups
    items = view._scene.table.items
    folded = next(
        n for n, i in view._scene.table.by_key.items() if items[i].is_node and i not in drawn
    )
    view._precisions = {names[5]: "fp16", names[8]: "int8", folded: "bf16"}
    # shape inference waits until a view needs the shapes (zoomed in, an edge hovered)
    assert not view._shapes and view._scene.inferred is None
    view._on_tensor_shapes({})  # what such a view asks for
    return view


def _compare(recorder: Path, view: nj.GraphView) -> Counter[Record]:
    """The view drawn both ways: the SVG's records, after asserting the canvas drew the same."""
    svg = scene_svg(
        view._scene,
        selected=list(view.selected),
        marks=dict(view._marks),
        overlay=overlay_of(view._overlay, view._overlay_values),
        background=None,
        precisions=dict(view._precisions),
    )
    expected, translate, size = svg_records(svg)
    drawn = canvas_records(_canvas(recorder, view, translate, size))
    only_canvas, only_svg = drawn - expected, expected - drawn
    assert not only_canvas and not only_svg, (
        f"canvas only: {sorted(only_canvas)[:8]}\nsvg only: {sorted(only_svg)[:8]}"
    )
    return expected


def test_canvas_and_svg_draw_the_same_scene(recorder: Path, view: nj.GraphView) -> None:
    scene = view._scene
    expected = _compare(recorder, view)
    # the comparison covers every part of the vocabulary, not an empty drawing
    fills = {r[1] for r in expected if r[0] == "fill"}
    kinds = scene.layout().kinds
    assert (kinds == KIND_GROUP).any() and (kinds == KIND_FRAME).any()
    assert {category_fill(c) for c in ("Math", "Activation", "Normalization")} <= fills
    assert sum(f.startswith("rgb(") for f in fills) >= 5  # magma overlay colours
    assert VOCABULARY["group"]["fill"] in fills and VOCABULARY["frame"]["header"] in fills
    strokes = Counter(r[1] for r in expected if r[0] == "stroke")
    assert strokes[VOCABULARY["selection"]["stroke"]] == 3  # the hidden node lights its group
    circles = Counter(r[1] for r in expected if r[0] == "circle")
    assert circles == {VOCABULARY["mark"]["error"]: 1, VOCABULARY["mark"]["warning"]: 2}
    texts = [r[1] for r in expected if r[0] == "text"]
    assert any(t.endswith(VOCABULARY["label"]["ellipsis"]) for t in texts)  # a cut label
    assert any(t.startswith(VOCABULARY["label"]["collapsed"]) for t in texts)
    edges = Counter(r[1] for r in expected if r[0] == "edge")
    assert edges[VOCABULARY["selection"]["stroke"]] > 0 and edges[VOCABULARY["edge"]["stroke"]]
    pill = VOCABULARY["pill"]
    assert strokes[pill["precision"]["fill"]] == 0
    assert Counter(r[1] for r in expected if r[0] == "fill")[pill["precision"]["fill"]] == 2
    assert {"fp16", "int8"} <= set(texts) and "bf16" not in texts
    # captions (op type plus the meaningful name part), weight shapes and inferred edge shapes
    assert {"MatMul query", "Softmax", "Add dense"} <= set(texts)
    assert not any(t.split()[0] == t.split()[-1] for t in texts if " " in t and "⟨" not in t)
    x = TIMES
    assert {f"B⟨768{x}768⟩", "Scale⟨768⟩"} <= set(texts)
    shape_font = f"{VOCABULARY['edgeShape']['weight']} {VOCABULARY['edgeShape']['size']}px"
    shapes = {r[1] for r in expected if r[0] == "text" and r[2].startswith(shape_font)}
    # the exporter wrote no value_info here: inferred, in the names its inputs give the dims
    # (`batchxsequencex768`, cut to the room between layers)
    assert any(s.startswith(f"batch{x}seq") for s in shapes), sorted(shapes)[:10]
    assert f"?{x}?{x}768" not in shapes


def test_badges_are_drawn_the_same_both_ways(recorder: Path) -> None:
    """A custom operator (no schema: a TensorRT plugin) carries the "custom" pill, a node with
    a layer precision constraint its precision pill; graph I/O and ONNX operators carry none."""
    x = onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 4])
    y = onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1, 4])
    nodes = [
        onnx.helper.make_node("Relu", ["x"], ["r"], name="relu"),
        onnx.helper.make_node("MyPlugin", ["r"], ["p"], name="plugin", domain="trt.plugins"),
        onnx.helper.make_node("Sigmoid", ["p"], ["y"], name="sigmoid"),
    ]
    graph = onnx.helper.make_graph(nodes, "g", [x], [y])
    opsets = [onnx.helper.make_opsetid("", 17), onnx.helper.make_opsetid("trt.plugins", 1)]
    view = nj.GraphView(onnx.helper.make_model(graph, opset_imports=opsets))
    view._precisions = {"plugin": "fp16", "sigmoid": "int8"}
    expected = _compare(recorder, view)
    pill = VOCABULARY["pill"]
    fills = Counter(r[1] for r in expected if r[0] == "fill")
    assert fills[pill["custom"]["fill"]] == 1 and fills[pill["precision"]["fill"]] == 2
    centred = Counter(r[1] for r in expected if r[0] == "text" and r[4] == "center")
    assert centred == {pill["custom"]["label"]: 1, "fp16": 1, "int8": 1}


def test_left_to_right_edge_shapes_stay_between_the_boxes(recorder: Path) -> None:
    """LR: a tensor shape wider than the gap between two boxes is cut with an ellipsis the same
    way in both renderers, never drawn over the boxes' terminals."""
    view = nj.GraphView(real_exports.load("resnet50_torchscript"), direction="LR")
    view._on_tensor_shapes({})
    expected = _compare(recorder, view)
    shape_font = f"{VOCABULARY['edgeShape']['weight']} {VOCABULARY['edgeShape']['size']}px"
    shapes = [r[1] for r in expected if r[0] == "text" and r[2].startswith(shape_font)]
    ellipsis = VOCABULARY["label"]["ellipsis"]
    assert any(t.endswith(ellipsis) for t in shapes) and any(TIMES in t for t in shapes)


def test_every_op_category_has_a_colour() -> None:
    from nsdl_jupyter.ops._categories import CATEGORIES

    assert set(VOCABULARY["category"]) == set(CATEGORIES)
    assert len(set(np.unique(list(VOCABULARY["category"].values())))) >= 12


def test_op_categories_travel_with_the_topology(view: nj.GraphView) -> None:
    from nsdl_jupyter.graph import decode_columns, op_category

    meta, _ = decode_columns(view._topology)
    assert len(meta["categories"]) == len(meta["ops"])
    by_op = dict(zip(meta["ops"], meta["categories"], strict=True))
    assert by_op["MatMul"] == "Math" and by_op["Softmax"] == "Activation"
    assert op_category("com.microsoft::FusedMatMul") == "Contrib"
    assert op_category("my.custom::Thing") == op_category("NoSuchOp") == "Other"


def test_subgraph_marks_are_shapes_not_a_font_glyph(recorder: Path) -> None:
    """If/Loop boxes carry the subgraph mark as two outlined squares in both renderers."""
    view = nj.GraphView(real_exports.load("control_flow_torchscript"))
    svg = scene_svg(view._scene, background=None)
    expected, translate, size = svg_records(svg)
    drawn = canvas_records(_canvas(recorder, view, translate, size))
    assert drawn == expected
    badge = VOCABULARY["badge"]
    marks = [r for r in expected if r[0] == "stroke" and r[1] == badge["fill"]]
    assert len(marks) == 2 * 2  # /If and /Loop, two squares each
    assert sum(r[1] == badge["back"] for r in expected if r[0] == "fill") == 2
    assert not [r for r in expected if r[0] == "text" and not r[1].isascii() and len(r[1]) == 1]
