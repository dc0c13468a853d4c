"""Issue 25, the first screen at real size: JupyterLab at 1280x800 with the file browser open,
the default GraphView (560 px) on real exports. The whole module outline is in view with every
label legible; Fit after opening every module collapses the deepest levels until the whole
drawing is legible again (screenshots in test-output/ui/). A taller GraphView cuts the outline
into longer columns: the kernel cuts them for the canvas height the browser reports."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.ui.graph_probe import each_view

pytestmark = [pytest.mark.ui, pytest.mark.slow]

NB = ".jp-NotebookPanel:not(.lm-mod-hidden)"
VIEW = ".nsdl-graph-view"
READY = '.nsdl-graph-view[data-ready="1"]'
# modules the first screen names (group keys), in flow order
OUTLINE = {
    "bert_base_torchscript": ("/model/embeddings", "/model/encoder", "/model/pooler"),
    "bert_base_dynamo": ("/embeddings", "/encoder", "/pooler"),
    "gpt2_dynamo": tuple(f"/h.{i}" for i in range(12)),
    "resnet50_torchscript": ("/layer1", "/layer2", "/layer3", "/layer4"),
    "convnext_tiny_dynamo": ("/features", "/avgpool", "/classifier"),
}
CANVAS = "(a, arg, root) => { const r = root.querySelector('canvas').getBoundingClientRect();"
CANVAS += " return [r.left, r.top, r.width, r.height]; }"


def test_whole_outline_on_the_first_screen_and_fit_collapses_to_stay_legible(
    notebook: Any,
) -> None:
    folder = Path(__file__).resolve().parents[1] / "fixtures" / "exports"
    cells = ["import nsdl_jupyter as nj"]
    cells += [f"nj.GraphView(nj.open_model({str(folder / f'{n}.onnx')!r}))" for n in OUTLINE]
    gpt2_file = str(folder / "gpt2_dynamo.onnx")
    cells += [f"tall = nj.GraphView(nj.open_model({gpt2_file!r}), height=820)\ntall"]
    cells += ["print('CANVAS', tall._canvas_height, tall._scene.engine.band_room)"]
    nb = notebook(cells, width=1280, height=800)
    nb.run_all()
    nb.wait_idle()
    assert nb.error_outputs() == []
    assert nb.page.locator(".jp-FileBrowser").first.is_visible()  # as a user has it
    for (name, modules), (_, view, api) in zip(
        OUTLINE.items(), each_view(nb, len(OUTLINE)), strict=True
    ):
        label, shown, leaves = api("(a) => [a.labelPx(), a.boxesInView(), a.leaves()]")
        left, top, width, height = api(CANVAS)
        print(name, "canvas", width, height, "label", label, "boxes", shown, "of", leaves)
        assert label["now"] >= label["legible"], (name, label)
        assert shown == leaves, (name, shown, leaves)  # the whole outline, no box cut
        for key in modules:
            at = api("(a, key) => a.locate(key)", key)
            assert at is not None, (name, key)
            assert left < at[0] < left + width and top < at[1] < top + height, (name, key, at)
        assert api("(a) => a.breadcrumb()") == ["graph"]
        view.screenshot(path=str(nb.shots / f"first_screen_{name}.png"))

    # a taller view: h.0 … h.11 in two columns (three in the 560 px views), all legible, cut
    # for the canvas height the browser reported
    *_, (_, tall_view, tall) = each_view(nb, len(OUTLINE) + 1)
    label, shown, leaves = tall("(a) => [a.labelPx(), a.boxesInView(), a.leaves()]")
    height = tall(CANVAS)[3]
    xs = {round(tall("(a, key) => a.corner(key)", f"/h.{i}")[0]) for i in range(12)}
    print("tall view: canvas height", height, "label", label, "boxes", shown, "of", leaves)
    assert label["now"] >= label["legible"] and shown == leaves and len(xs) == 2, (label, xs)
    printed = nb.run_cell(len(OUTLINE) + 2)
    assert f"CANVAS {round(height)} " in printed, (printed, height)
    tall_view.screenshot(path=str(nb.shots / "first_screen_tall_gpt2_dynamo.png"))

    # every module open: Fit collapses the deepest open levels until the whole is legible
    k = list(OUTLINE).index("gpt2_dynamo")
    view = nb.page.locator(f"{NB} {READY}").nth(k)
    view.scroll_into_view_if_needed()

    def gpt2(expression: str) -> Any:
        return nb.page.evaluate(
            f"""(k) => {{ const root = document.querySelectorAll('{NB} {VIEW}')[k];
                return ({expression})(root.__nsdl, root); }}""",
            k,
        )

    def settled(expression: str) -> None:
        for _ in range(120):
            if gpt2(expression):
                return
            nb.page.wait_for_timeout(250)
        raise AssertionError(f"never true: {expression}")

    assert gpt2("(a) => a.request('expand_all', {})")["ok"]
    settled("(a) => a.frames() > 12")
    opened = gpt2("(a) => a.frames()")
    gpt2("(a) => a.fitReadable()")
    settled(
        "(a) => { const l = a.labelPx(); return l.now >= l.legible"
        " && a.boxesInView() === a.leaves(); }"
    )
    nb.two_frames()
    frames = gpt2("(a) => a.frames()")
    print("gpt2 fit after expand_all: frames", opened, "->", frames)
    assert frames < opened  # deeper levels closed (a user action: expanding undoes it)
    assert gpt2("(a) => a.breadcrumb()") == ["graph"]
    view.screenshot(path=str(nb.shots / "fit_after_expand_all_gpt2_dynamo.png"))

    # a click opens h.8 where it is: the top level becomes one flow, h.8 stays on screen
    before = gpt2("(a) => a.corner('/h.8')")
    at = gpt2("(a) => a.locate('/h.8')")
    seq = view.get_attribute("data-layout-seq")
    nb.page.mouse.click(at[0], at[1])
    nb.page.wait_for_function(
        f"([k, s]) => document.querySelectorAll('{NB} {VIEW}')[k].dataset.layoutSeq !== s",
        arg=[k, seq],
    )
    nb.two_frames()
    after = gpt2("(a) => a.corner('/h.8')")
    left, top, width, _ = gpt2(CANVAS.replace("(a, arg, root)", "(a, root)"))
    assert abs(after[1] - before[1]) < 1, (before, after)  # the same height on screen
    assert left < after[0] < left + width / 2, (after, left, width)  # the pane narrowed it
    view.screenshot(path=str(nb.shots / "opened_h8_gpt2_dynamo.png"))
    assert nb.error_outputs() == []
