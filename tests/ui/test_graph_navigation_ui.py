"""GraphView navigation in a real JupyterLab + headless Chromium, on a deep CNN shaped like a
TorchScript ResNet-50 export: the readable Fit, the breadcrumb and the minimap."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.ui.graph_probe import EDGE_PIXELS_IN_TITLE_BAR, each_view, graph_api
from tests.ui.graph_probe import VIEW as VISIBLE_VIEW

pytestmark = [pytest.mark.ui, pytest.mark.slow]

NB = ".jp-NotebookPanel:not(.lm-mod-hidden)"
VIEW = ".nsdl-graph-view"
READY = '.nsdl-graph-view[data-ready="1"]'

# ResNet-50's module tree with torch's names (/layer3/layer3.2/conv2/Conv), batch norms folded
# into the convolutions as the TorchScript exporter leaves them; 8 channels keep it small.
SETUP = """
import tempfile
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
import nsdl_jupyter as nj

def resnet50_shaped(width=8):
    nodes, inits = [], []
    def conv(scope, x, c_in, k=3):
        w = scope.strip("/").replace("/", ".") + ".weight"
        inits.append(numpy_helper.from_array(
            np.full((width, c_in, k, k), 0.01, np.float32), w))
        nodes.append(helper.make_node("Conv", [x, w], [scope + "/Conv_output_0"],
                                      name=scope + "/Conv", pads=[k // 2] * 4))
        return scope + "/Conv_output_0"
    def op(kind, name, inputs, **attrs):
        nodes.append(helper.make_node(kind, inputs, [name + "_output_0"], name=name, **attrs))
        return name + "_output_0"
    x = conv("/conv1", "input", 3, k=7)
    x = op("Relu", "/relu/Relu", [x])
    x = op("MaxPool", "/maxpool/MaxPool", [x], kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    for stage, blocks in enumerate([3, 4, 6, 3], start=1):
        for b in range(blocks):
            s = f"/layer{stage}/layer{stage}.{b}"
            y = op("Relu", s + "/relu/Relu", [conv(s + "/conv1", x, width, k=1)])
            y = op("Relu", s + "/relu_1/Relu", [conv(s + "/conv2", y, width)])
            y = conv(s + "/conv3", y, width, k=1)
            skip = conv(s + "/downsample/downsample.0", x, width, k=1) if b == 0 else x
            x = op("Relu", s + "/relu_2/Relu", [op("Add", s + "/Add", [y, skip])])
    x = op("GlobalAveragePool", "/avgpool/GlobalAveragePool", [x])
    x = op("Flatten", "/Flatten", [x])
    inits.append(numpy_helper.from_array(np.zeros((10, width), np.float32), "fc.weight"))
    nodes.append(helper.make_node("Gemm", [x, "fc.weight"], ["output"], name="/fc/Gemm",
                                  transB=1))
    graph = helper.make_graph(
        nodes, "resnet50_shaped",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, 32, 32])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 10])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])

folder = tempfile.mkdtemp()
onnx.save(resnet50_shaped(), folder + "/model.onnx")
doc = nj.open_model(folder + "/model.onnx")
print("NODES", len(doc.nodes))
view = nj.GraphView(doc, height=560, direction="TB")
view.expand()  # a module export opens on its outline: this test reads the whole network
view
"""

CANVAS_RECT = "(a, arg, root) => { const r = root.querySelector('canvas')"
CANVAS_RECT += ".getBoundingClientRect(); return [r.left, r.top, r.width, r.height]; }"
CRUMBS = "(a, arg, root) => root.querySelector('.nsdl-gv-breadcrumb').innerText"


def on_screen(nb: Any, name: str) -> bool:
    """Whether the box drawing `name` has its centre inside the canvas."""
    at = graph_api(nb, "(a, name) => a.locate(name)", name)
    left, top, width, height = graph_api(nb, CANVAS_RECT)
    return at is not None and left <= at[0] <= left + width and top <= at[1] <= top + height


def assert_readable(nb: Any, boxes: int = 4) -> None:
    """Label text at least the legible size, and at least `boxes` boxes wholly on screen (boxes
    hold their weight shapes and edges their tensor shapes, so fewer fit than bare boxes)."""
    label = graph_api(nb, "(a) => a.labelPx()")
    assert label["now"] >= label["legible"] >= 10, label
    assert graph_api(nb, "(a) => a.boxesInView()") >= boxes


def test_fit_keeps_a_deep_cnn_readable_and_breadcrumb_and_minimap_navigate(
    notebook: Any,
) -> None:
    nb = notebook([SETUP, "view.direction = 'LR'"])
    nb.run_cell(0)
    nb.wait_for(READY).scroll_into_view_if_needed()
    nb.two_frames()
    assert nb.error_outputs() == []
    assert "NODES 1" in nb.output(0)  # ~120 nodes, like the real export

    # first view: the start of the graph at a legible size, across the canvas
    assert_readable(nb)
    assert on_screen(nb, "/conv1/Conv")
    assert not on_screen(nb, "/fc/Gemm")  # the rest scrolls
    first = graph_api(nb, "(a) => a.camera()")
    nb.screenshot("first_view", VIEW)

    # Fit once more: everything, now a strip with text too small to read; and back
    graph_api(nb, "(a) => a.fitReadable()")
    nb.two_frames()
    assert on_screen(nb, "/conv1/Conv") and on_screen(nb, "/fc/Gemm")
    label = graph_api(nb, "(a) => a.labelPx()")
    assert label["now"] < label["legible"]
    nb.screenshot("fit_all", VIEW)
    # the Fit button: the deepest open levels close until the whole is legible (issue 25)
    nb.page.locator(f"{VISIBLE_VIEW} .nsdl-gv-fit").click()
    nb.page.wait_for_function(
        f"""() => {{ const a = document.querySelector('{VISIBLE_VIEW}').__nsdl;
            const l = a.labelPx();
            return l.now >= l.legible && a.boxesInView() === a.leaves(); }}"""
    )
    nb.two_frames()
    assert graph_api(nb, "(a) => a.breadcrumb()") == ["graph"]
    nb.screenshot("fit_collapsed", VIEW)
    seq = nb.page.locator(READY).first.get_attribute("data-layout-seq")
    graph_api(nb, "(a) => a.request('expand_all', {})")  # expanding again undoes it
    nb.page.wait_for_function(
        f"(s) => document.querySelector('{VISIBLE_VIEW}').dataset.layoutSeq !== s", arg=seq
    )
    graph_api(nb, "(a) => a.fitStart()")
    nb.two_frames()
    assert graph_api(nb, "(a) => a.camera()") == first

    # breadcrumb: the innermost scope holding everything in view, each part a link
    graph_api(nb, "(a) => a.fit(['/layer3/layer3.2/conv2/Conv'])")
    nb.two_frames()
    # every box in view lies in layer3 (the view holds more than the one block)
    assert graph_api(nb, "(a) => a.breadcrumb()")[:2] == ["graph", "layer3"]
    assert "graph \u203a layer3" in graph_api(nb, CRUMBS)  # what a user reads
    nb.screenshot("breadcrumb_deep", VIEW)
    nb.page.locator(f"{VISIBLE_VIEW} .nsdl-gv-crumb", has_text="layer3").first.click()
    nb.two_frames()
    assert graph_api(nb, "(a) => a.breadcrumb()")[:2] == ["graph", "layer3"]
    assert_readable(nb)
    top = graph_api(nb, CANVAS_RECT)[1]
    header = graph_api(nb, "(a) => a.locate('/layer3')")
    assert header is not None and top + 24 < header[1] < top + 80  # layer3's title at the top
    nb.screenshot("breadcrumb_zoomed", VIEW)

    # minimap: shown while the graph does not fit; a click moves the view there, a drag follows
    graph_api(nb, "(a) => a.fitStart()")
    nb.page.wait_for_function(
        f"() => document.querySelector('{VISIBLE_VIEW} .nsdl-gv-minimap').dataset.drawnSlots"
    )
    nb.two_frames()
    mini = graph_api(nb, "(a) => a.minimap()")
    assert mini["shown"]
    box = mini["canvas"]
    assert box["h"] > 3 * box["w"]  # top-down: a tall overview
    assert mini["view"]["y"] < 5  # the viewport rectangle sits at the start
    nb.page.mouse.click(box["x"] + box["w"] / 2, box["y"] + box["h"] - 3)
    nb.two_frames()
    assert on_screen(nb, "/fc/Gemm") and not on_screen(nb, "/conv1/Conv")
    assert graph_api(nb, "(a) => a.minimap()")["view"]["y"] > box["h"] / 2
    nb.screenshot("minimap_end", VIEW)
    nb.page.mouse.move(box["x"] + box["w"] / 2, box["y"] + box["h"] - 3)
    nb.page.mouse.down()
    nb.page.mouse.move(box["x"] + box["w"] / 2, box["y"] + box["h"] / 2, steps=5)
    nb.page.mouse.move(box["x"] + box["w"] / 2, box["y"] + 2, steps=5)
    nb.page.mouse.up()
    nb.two_frames()
    assert on_screen(nb, "/conv1/Conv")
    assert graph_api(nb, "(a) => a.minimap().overviews") == mini["overviews"]  # only moved
    assert graph_api(nb, "(a) => a.camera()")["scale"] == first["scale"]  # moved, not zoomed

    # left to right: the same readable start, the minimap wide
    seq = nb.page.locator(READY).first.get_attribute("data-layout-seq")
    nb.run_cell(1)
    nb.page.wait_for_function(
        f"(s) => document.querySelector('{VISIBLE_VIEW}').dataset.layoutSeq !== s", arg=seq
    )
    graph_api(nb, "(a) => a.fitStart()")
    nb.page.wait_for_timeout(600)  # the overview is redrawn when the browser is idle
    nb.two_frames()
    assert_readable(nb, boxes=4)  # 150 px wide boxes in a row: fewer fit across than down
    assert on_screen(nb, "/conv1/Conv") and not on_screen(nb, "/fc/Gemm")
    mini = graph_api(nb, "(a) => a.minimap()")
    assert mini["shown"] and mini["canvas"]["w"] > 3 * mini["canvas"]["h"]
    nb.screenshot("left_to_right", VIEW)
    assert nb.error_outputs() == []


REAL = ("resnet50_torchscript", "vit_b_16_torchscript", "gpt2_dynamo")
SHOW = "nj.GraphView(nj.open_model({path!r}), height=520, direction={direction!r})"


def test_first_view_of_real_deep_exports_is_readable_in_both_directions(notebook: Any) -> None:
    folder = Path(__file__).resolve().parents[1] / "fixtures" / "exports"
    shown = [(name, d) for name in REAL for d in ("TB", "LR")]
    cells = ["import nsdl_jupyter as nj"]
    cells += [SHOW.format(path=str(folder / f"{n}.onnx"), direction=d) for n, d in shown]
    nb = notebook(cells, height=1400)
    nb.run_all()
    nb.wait_idle()
    assert nb.error_outputs() == []
    for k, (name, direction) in enumerate(shown):
        view = nb.page.locator(f"{NB} {READY}").nth(k)
        view.wait_for(timeout=120_000)
        view.scroll_into_view_if_needed()
        nb.two_frames()

        def api(expression: str, view_index: int = k) -> Any:
            return nb.page.evaluate(
                f"""(k) => {{ const root = document.querySelectorAll('{NB} {VIEW}')[k];
                    return ({expression})(root.__nsdl, root); }}""",
                view_index,
            )

        label, boxes, crumbs = api("(a) => [a.labelPx(), a.boxesInView(), a.breadcrumb()]")
        assert label["now"] >= label["legible"], (name, direction, label)
        assert boxes >= 3, (name, direction, boxes)  # with weight and tensor shapes drawn
        assert crumbs[0] == "graph"
        view.screenshot(path=str(nb.shots / f"{name}_{direction}.png"))
        api("(a) => a.fit()")  # the whole graph: what Fit used to show, text far too small
        if api("(a) => a.labelPx().now") >= label["legible"] / 2:
            continue  # a module outline (issue 25): the whole is legible or nearly so
        nb.page.wait_for_function(
            f"(k) => document.querySelectorAll('{NB} {VIEW} .nsdl-gv-minimap')[k]"
            ".dataset.drawnSlots",
            arg=k,
        )
        api("(a) => a.fitStart()")
        nb.two_frames()
        assert api("(a) => a.minimap().shown"), (name, direction)


# modules the first screen shows (TorchScript's attention-mask arithmetic pushes the encoder
# below it), the last one clicked open
OUTLINE = {
    "bert_base_torchscript": ("/model/embeddings",),
    "bert_base_dynamo": ("/embeddings", "/encoder"),  # the pooler just below, at 560 px
}


def test_module_exports_open_on_their_outline_one_click_from_inside(notebook: Any) -> None:
    """Issue 25: BERT opens on its modules, collapsed and legible (not zoomed into
    `embeddings`); the breadcrumb names what is in view; a click on a module opens it."""
    folder = Path(__file__).resolve().parents[1] / "fixtures" / "exports"
    cells = ["import nsdl_jupyter as nj"]
    cells += [f"nj.GraphView(nj.open_model({str(folder / f'{n}.onnx')!r}))" for n in OUTLINE]
    nb = notebook(cells, height=1400)
    nb.run_all()
    nb.wait_idle()
    assert nb.error_outputs() == []
    for (name, modules), (k, view, api) in zip(
        OUTLINE.items(), each_view(nb, len(OUTLINE)), strict=True
    ):
        label = api("(a) => a.labelPx()")
        assert label["now"] >= label["legible"], (name, label)
        assert api("(a) => a.breadcrumb()") == ["graph"], name
        _, top, _, height = api(CANVAS_RECT)
        for key in modules:  # collapsed boxes, on screen
            at = api("(a, key) => a.locate(key)", key)
            assert at is not None and top < at[1] < top + height, (name, key, at)
        view.screenshot(path=str(nb.shots / f"outline_{name}.png"))
        api("(a) => a.fitReadable()")  # Fit twice: the whole outline; the breadcrumb follows
        api("(a) => a.fitReadable()")
        nb.two_frames()
        assert api("(a) => a.breadcrumb()") == ["graph"], name
        api("(a) => a.fitReadable()")
        nb.two_frames()
        seq = view.get_attribute("data-layout-seq")
        at = api("(a, key) => a.locate(key)", modules[-1])
        nb.page.mouse.click(at[0], at[1])  # one click: the module's inside
        nb.page.wait_for_function(
            f"([k, s]) => document.querySelectorAll('{NB} {VIEW}')[k].dataset.layoutSeq !== s",
            arg=[k, seq],
        )
        assert api("(a) => a.nodeNames().length") > 0
        assert api("(a, key) => a.locate(key)", modules[-1]) is not None  # now an open frame
        nb.two_frames()
        view.screenshot(path=str(nb.shots / f"outline_{name}_opened.png"))
        # the edges into the opened module pass under its title bar, not over its title
        assert nb.page.evaluate(EDGE_PIXELS_IN_TITLE_BAR, [k, modules[-1]]) == 0, name
    assert nb.error_outputs() == []
