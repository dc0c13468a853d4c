"""ActivityPanel in a real JupyterLab + headless Chromium: run a profile, see timeline and table.

Also: an nbconvert HTML export of profile figures renders in Chromium with the network cut
(the figures a shared notebook shows).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.ui, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
GPU_REPORT = REPO / "tests" / "fixtures" / "ort_cuda_resnet50_b8_opt_report.json"
PANEL = ".nsdl-activity-panel"
VIEW = ".nsdl-profile-view"

SETUP = """
import tempfile, onnx
import nsdl_jupyter as nj
from nsdl_jupyter.examples import synthetic_dag
from nsdl_jupyter.profiling import OrtProfileSettings
folder = tempfile.mkdtemp()
onnx.save(synthetic_dag(30, seed=3), folder + "/dag.onnx")
settings = OrtProfileSettings(iterations=5, warmup=1, graph_optimization=False,
                              trace_path=folder + "/trace.json")
panel = nj.ActivityPanel(folder + "/dag.onnx", settings=settings)
panel
"""


def test_profile_from_the_panel_shows_timeline_and_table(notebook: Any) -> None:
    nb = notebook([SETUP,
                   "print('STATUS=' + panel.status, 'LAYERS=%d' % len(panel.report.layers))",
                   "print('SEL=' + panel.view.selected)"])  # fmt: skip
    nb.run_cell(0)
    nb.wait_for(PANEL)
    assert nb.error_outputs() == []
    # unavailable providers are drawn disabled, CPU enabled
    assert not nb.page.locator(f"{PANEL} .nsdl-provider-cpu").first.is_disabled()
    cuda = nb.page.locator(f"{PANEL} .nsdl-provider-cuda").first
    nb.screenshot("panel", PANEL)

    nb.page.locator(f"{PANEL} .nsdl-activity-run").first.click()
    nb.wait_for(f"{VIEW} .js-plotly-plot .main-svg", timeout_ms=180_000)
    nb.wait_for(f"{VIEW} .nsdl-profile-table select")
    options = nb.page.locator(f"{VIEW} .nsdl-profile-table select option")
    options.first.wait_for(state="attached", timeout=60_000)
    assert options.count() == 30
    timeline = nb.page.locator(f"{VIEW} .js-plotly-plot").first
    nb.page.wait_for_function(  # plotly draws the bars a moment after the figure's frame
        "() => document.querySelector('.nsdl-profile-view .js-plotly-plot')"
        ".querySelectorAll('.barlayer .point').length >= 30",
        timeout=60_000,
    )
    assert timeline.locator(".barlayer .point").count() == 30  # a bar per layer of the run
    # the "Top layers" chart (an Output filled from the panel's worker thread) is drawn too
    nb.page.wait_for_function(
        "() => document.querySelectorAll('.nsdl-profile-view .js-plotly-plot .main-svg').length"
        " >= 2",
        timeout=60_000,
    )
    message = nb.page.locator(f"{PANEL} .nsdl-activity-message").first.inner_text()
    assert "end-to-end p50" in message
    nb.screenshot("report", PANEL)

    assert "STATUS=done LAYERS=30" in nb.run_cell(1)
    # a click on a table row reaches Python
    label = options.nth(2).inner_text().split()[0]
    nb.page.locator(f"{VIEW} .nsdl-profile-table select").first.select_option(index=2)
    nb.page.wait_for_timeout(500)
    assert f"SEL={label}" in nb.run_cell(2) or label.startswith("…")
    nb.screenshot("selected", VIEW)
    assert cuda.count() == 1


def test_cancel_from_the_panel(notebook: Any) -> None:
    setup = SETUP.replace("iterations=5", "iterations=10_000_000")
    nb = notebook([setup, "print('STATUS=' + panel.status)"])
    nb.run_cell(0)
    nb.wait_for(PANEL)
    nb.page.locator(f"{PANEL} .nsdl-activity-run").first.click()
    nb.page.wait_for_function(
        """() => [...document.querySelectorAll('.nsdl-activity-panel .widget-label')]
             .some(e => /latency|profile/.test(e.textContent))""",
        timeout=120_000,
    )
    nb.page.locator(f"{PANEL} .nsdl-activity-cancel").first.click()
    nb.page.wait_for_function(
        """() => [...document.querySelectorAll('.nsdl-activity-message')]
             .some(e => e.textContent.includes('Cancelled'))""",
        timeout=60_000,
    )
    assert "STATUS=cancelled" in nb.run_cell(1)
    nb.screenshot("cancelled", PANEL)


def test_static_html_export_renders_offline(browser: Any, tmp_path: Path) -> None:
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}  # fmt: skip
    nb.cells = [
        nbformat.v4.new_code_cell(
            "from nsdl_jupyter import figures\nfrom nsdl_jupyter.profiling import ProfileReport\n"
            f"figures.use_static_renderer()\nreport = ProfileReport.load({str(GPU_REPORT)!r})"
        ),
        nbformat.v4.new_code_cell("report.timeline().show()"),
        nbformat.v4.new_code_cell("figures.op_type_share_figure(report).show()"),
    ]
    source = tmp_path / "shared.ipynb"
    source.write_text(json.dumps(nb))
    subprocess.run(
        [sys.executable, "-m", "jupyter", "nbconvert", "--execute", "--to", "html", str(source)],
        check=True, capture_output=True, timeout=300,
    )  # fmt: skip
    context = browser.new_context(offline=True)
    try:
        page = context.new_page()
        page.route("http*://**", lambda route: route.abort())  # nothing from the network
        page.goto((tmp_path / "shared.html").as_uri())
        page.wait_for_selector(".plotly-graph-div .main-svg", timeout=60_000)
        assert page.locator(".plotly-graph-div").count() == 2
        assert page.locator(".plotly-graph-div .barlayer .point").count() == 122
        shots = REPO / "test-output" / "ui" / "static_export"
        shots.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(shots / "static_export.png"), full_page=False)
    finally:
        context.close()


TRT_SETUP = """
import tempfile, onnx
import nsdl_jupyter as nj
from nsdl_jupyter.examples import resnet18
folder = tempfile.mkdtemp()
onnx.save(resnet18(image_size=32, num_classes=10), folder + "/r.onnx")
panel = nj.ActivityPanel(folder + "/r.onnx")
panel._engine_path.value = folder + "/r.engine"
panel
"""


def test_tensorrt_form_gates_and_exports(notebook: Any) -> None:
    pytest.importorskip("tensorrt_rtx", reason="needs TensorRT-RTX: pip install -e '.[trt-rtx]'")
    nb = notebook([TRT_SETUP,
                   "print('STATUS=' + panel.status, 'FW=' + panel.framework, "
                   "'LEVEL=%d' % panel.engine.applied['builder_optimization_level'])"])  # fmt: skip
    nb.run_cell(0)
    nb.wait_for(PANEL)
    assert nb.error_outputs() == []
    form = f"{PANEL} .nsdl-trt-form"
    assert not nb.page.locator(form).first.is_visible()  # ONNX Runtime first
    nb.page.locator(f"{PANEL} .nsdl-activity-framework button", has_text="TensorRT").first.click()
    nb.wait_for(form, timeout_ms=120_000)
    title = nb.wait_for(f"{PANEL} .nsdl-trt-title b")
    nb.page.wait_for_function(
        "() => document.querySelector('.nsdl-trt-title').innerText.includes('tensorrt_rtx')",
        timeout=120_000,
    )
    assert "Export a TensorRT engine" in title.inner_text()
    # FP16 is version-gated on TensorRT-RTX: drawn disabled, with the reason beside it
    fp16 = nb.page.locator(f"{form} .nsdl-trt-fp16 input").first
    nb.page.wait_for_function(
        "() => document.querySelector('.nsdl-trt-form .nsdl-trt-fp16 input').disabled",
        timeout=30_000,
    )
    assert fp16.is_disabled()
    reasons = nb.page.locator(f"{form} .nsdl-trt-reason").all_inner_texts()
    assert any("convert_to_fp16" in r for r in reasons)
    assert not nb.page.locator(f"{form} .nsdl-trt-tf32 input").first.is_disabled()
    level = nb.page.locator(f"{form} .nsdl-trt-optimization-level input").first
    level.fill("1")
    level.press("Enter")
    nb.screenshot("tensorrt_form", PANEL)
    nb.page.locator(f"{PANEL} .nsdl-activity-export").first.click()
    nb.page.wait_for_function(
        "() => (document.querySelector('.nsdl-activity-message') || {innerText: ''})"
        ".innerText.includes('Engine written')",
        timeout=300_000,
    )
    nb.screenshot("exported", PANEL)
    assert "STATUS=done FW=tensorrt LEVEL=1" in nb.run_cell(1)
