"""An exported notebook, opened from file:// in headless Chromium with every network request
blocked, shows the GraphView as SVG and the ProfileView's figures and table.

Screenshots go to test-output/ui/test_static_export_ui/ (look at them).
"""

from __future__ import annotations

import re
import shutil
import time
from pathlib import Path
from typing import Any

import nbformat
import onnx
import onnx_ir as ir
import pytest

from nsdl_jupyter.examples import small_transformer
from nsdl_jupyter.graph import CONSTANT, GraphScene
from nsdl_jupyter.nbconvert import export_notebook_html

REPO = Path(__file__).resolve().parents[2]
SHOTS = REPO / "test-output" / "ui" / "test_static_export_ui"
KERNELSPEC = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
# what nbconvert's lab template itself asks for (require.js, MathJax); our content asks nothing
TEMPLATE_URLS = re.compile(r"^https://cdnjs\.cloudflare\.com/ajax/libs/(require\.js|mathjax)/")

CELLS = [
    """import onnx, nsdl_jupyter as nj
doc = nj.open_model("model.onnx")
report = nj.profile_ort(doc, iterations=3, warmup=1, trace_path="trace.json")""",
    "view = nj.GraphView(doc, height=420)\nview",
    "pv = nj.ProfileView(report, graph_view=view)\npv",
    """softmax = next(n for n, node in doc.nodes.items() if node.op_type == "Softmax")
pv.selected = softmax  # selects it in the graph too, over the time overlay""",
]


@pytest.fixture(scope="module")
def page_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("static_export_ui")
    onnx.save(small_transformer(layers=1), folder / "model.onnx")
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = KERNELSPEC
    nb.cells = [nbformat.v4.new_code_cell(source) for source in CELLS]
    nbformat.write(nb, folder / "shared.ipynb")
    return export_notebook_html(folder / "shared.ipynb", execute=True, timeout=300)


def _open_offline(browser: Any, path: Path, *, javascript: bool) -> tuple[Any, Any, list[str]]:
    context = browser.new_context(
        viewport={"width": 1300, "height": 900}, java_script_enabled=javascript
    )
    page = context.new_page()
    blocked: list[str] = []

    def route(request_route: Any) -> None:
        url = request_route.request.url
        if url.startswith("file://"):
            request_route.continue_()
        else:
            blocked.append(url)
            request_route.abort()

    page.route("**/*", route)
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)[:300]))
    page.goto(path.as_uri(), wait_until="load", timeout=60_000)
    return context, page, blocked + errors


@pytest.mark.ui
def test_exported_notebook_shows_graph_and_profile_offline(browser: Any, page_path: Path) -> None:
    shutil.rmtree(SHOTS, ignore_errors=True)
    SHOTS.mkdir(parents=True)
    model = small_transformer(layers=1)
    table = GraphScene(ir.from_proto(model).graph).table
    helpers = {it.name for it in table.items if it.flags & CONSTANT}  # hidden, as in the canvas
    expected = {n.name for n in model.graph.node} - helpers
    expected |= {v.name for v in model.graph.input} | {v.name for v in model.graph.output}

    context, page, problems = _open_offline(browser, page_path, javascript=True)
    try:
        graph = page.locator("svg.nsdl-static-graph-svg").first
        graph.wait_for(state="visible", timeout=30_000)
        boxes = page.locator("svg.nsdl-static-graph-svg g[data-name]")
        drawn = set(boxes.evaluate_all("els => els.map(e => e.dataset.name)"))
        assert expected <= drawn
        sizes = boxes.evaluate_all(
            "els => els.map(e => { const b = e.getBoundingClientRect(); "
            "return b.width * b.height; })"
        )
        assert len(sizes) == len(drawn) and min(sizes) > 100  # every box really drawn
        selected = page.locator("svg.nsdl-static-graph-svg rect.nsdl-selected")
        assert selected.count() == 1
        selected.first.wait_for(state="visible")  # scrolled into the box, as the live view does
        box = page.locator(".nsdl-static-graph > div").first.bounding_box()
        mark = selected.first.bounding_box()
        assert box["x"] <= mark["x"] and mark["x"] + mark["width"] <= box["x"] + box["width"]
        assert page.locator(".nsdl-static-legend").first.is_visible()  # the time overlay
        page.locator(".nsdl-static-graph").first.screenshot(path=str(SHOTS / "graph.png"))

        # plotly.js comes inlined: the timeline and the selected chart tab are drawn
        view = page.locator(".nsdl-profile-view").first
        view.locator(".js-plotly-plot .main-svg").first.wait_for(state="visible", timeout=30_000)
        plots = view.locator(".js-plotly-plot")
        visible = [plots.nth(i).is_visible() for i in range(plots.count())]
        assert plots.count() == 4 and visible.count(True) == 2
        assert view.locator(".nsdl-profile-table select option").count() > 40
        assert view.locator(".nsdl-profile-table option[selected]").count() == 1
        assert "Softmax" in view.locator("table.nsdl-profile-details").inner_text()
        # another chart tab opens with a click, still without any network
        view.locator("label.nsdl-w-tab", has_text="By op type").click()
        assert [plots.nth(i).is_visible() for i in range(4)].count(True) == 2
        assert plots.nth(2).is_visible() and not plots.nth(1).is_visible()
        view.screenshot(path=str(SHOTS / "profile_view.png"))
        page.screenshot(path=str(SHOTS / "page.png"), full_page=True)
    finally:
        context.close()
    assert all(TEMPLATE_URLS.match(p) for p in problems), problems

    # the graph needs no JavaScript at all
    context, page, problems = _open_offline(browser, page_path, javascript=False)
    try:
        page.locator("svg.nsdl-static-graph-svg").first.wait_for(state="visible", timeout=30_000)
        assert page.locator("svg.nsdl-static-graph-svg g[data-name]").count() == len(drawn)
        page.locator(".nsdl-static-graph").first.screenshot(path=str(SHOTS / "graph_no_js.png"))
    finally:
        context.close()
    assert all(TEMPLATE_URLS.match(p) for p in problems), problems


LAB_CELLS = [
    """import onnx, nsdl_jupyter as nj
from nsdl_jupyter.examples import small_transformer
onnx.save(small_transformer(layers=1), "lab_model.onnx")
doc = nj.open_model("lab_model.onnx")""",
    "view = nj.GraphView(doc, height=360)\nview",
    """softmax = next(n for n, node in doc.nodes.items() if node.op_type == "Softmax")
doc.rename_node(softmax, "attention_probs")
view.selected = ["attention_probs"]""",
]


@pytest.mark.ui
def test_jupyterlab_shows_the_live_widget_and_saves_the_last_picture(
    lab: Any, notebook: Any, tmp_path: Path
) -> None:
    """In JupyterLab the live canvas is drawn (not the picture); with "save widget state" on,
    the saved notebook carries the picture of the last cell, which the export shows."""
    settings = lab.root.parent / "settings" / "@jupyter-widgets" / "jupyterlab-manager"
    settings.mkdir(parents=True, exist_ok=True)
    setting = settings / "plugin.jupyterlab-settings"
    setting.write_text('{"saveState": true}')
    try:
        nb = notebook(LAB_CELLS, fresh_page=True)  # JupyterLab reads the setting at load
        nb.run_all()
        nb.wait_for('.nsdl-graph-view[data-ready="1"]')
        nb.wait_idle()
        assert nb.error_outputs() == []
        assert nb.page.locator("svg.nsdl-static-graph-svg").count() == 0  # the live view won
        nb.screenshot("lab_live_view", ".nsdl-graph-view")
        nb.menu("File", ["docmanager:save"])
        saved = lab.root / nb.name
        deadline = time.monotonic() + 60
        while "widget-state+json" not in saved.read_text():
            assert time.monotonic() < deadline, "JupyterLab did not save the widget state"
            time.sleep(0.5)
    finally:
        setting.unlink()
    content = nbformat.read(saved, as_version=4)
    output = content.cells[1].outputs[0]
    assert "application/vnd.jupyter.widget-view+json" in output["data"]
    assert "nsdl-static-graph-svg" in output["data"]["text/html"]  # the display-time picture
    page = export_notebook_html(saved, tmp_path / "from_lab.html").read_text()
    assert page.count('class="nsdl-static-graph-svg"') == 1
    assert 'data-name="attention_probs"' in page and "selected: attention_probs" in page
