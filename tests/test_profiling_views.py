"""Views: plotly figures and tables of reports, and figures in a static HTML export."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import nbformat
import pytest
from test_profiling_helpers import OWN_FIXTURES, shared_fixture

from nsdl_jupyter import figures
from nsdl_jupyter.figures._plotly import axis_labels
from nsdl_jupyter.profiling import ProfileReport, load_trtexec

GPU_OPT = OWN_FIXTURES / "ort_cuda_resnet50_b8_opt_report.json"
GPU_NOOPT = OWN_FIXTURES / "ort_cuda_resnet50_b8_noopt_report.json"


@pytest.fixture(scope="module")
def gpu() -> ProfileReport:
    return ProfileReport.load(GPU_OPT)


def test_timeline_has_a_bar_per_layer_coloured_by_op_type(gpu: ProfileReport) -> None:
    fig = gpu.timeline(rows="layer")
    bars = sum(len(trace.y) for trace in fig.data)
    assert bars == len(gpu.timeline_events) == 122
    assert {trace.name for trace in fig.data} == set(gpu.layers["op_type"])
    conv = next(trace for trace in fig.data if trace.name == "Conv")
    first = list(conv.y).index("/conv1/Conv")
    row = gpu.timeline_events.set_index("name").loc["/conv1/Conv"]
    assert conv.base[first] == pytest.approx(row["start_ms"])
    assert conv.x[first] == pytest.approx(row["duration_ms"])
    assert "float[8,64,112,112]" in conv.customdata[first][4]  # hover: output shape
    assert "%{customdata[3]}" in conv.hovertemplate  # hover: input shapes
    # rows top to bottom in execution order
    order = list(fig.layout.yaxis.categoryarray)[::-1]
    assert order[0] == "/conv1/Conv"


def test_timeline_of_a_big_model_keeps_the_slowest_layers_and_fits_a_screen(
    gpu: ProfileReport,
) -> None:
    fig = gpu.timeline()  # 122 layers: the 30 slowest get a row, the rest share one
    order = list(fig.layout.yaxis.categoryarray)[::-1]
    assert len(order) == 31 and order[-1] == "other (92 layers)"
    slowest = gpu.timeline_events.groupby("name")["duration_ms"].sum().nlargest(30)
    # rows are the model's nodes, long ones cut at the start ("…/downsample.0/Conv")
    nodes = gpu.layers.set_index("name").loc[slowest.index, "node"]
    assert set(order[:-1]) == set(axis_labels(nodes).values())
    assert sum(len(trace.y) for trace in fig.data) == 122  # every bar is still drawn
    assert fig.layout.height <= 760 and fig.layout.xaxis.side == "top"
    assert len(list(gpu.timeline(top_n=5).layout.yaxis.categoryarray)) == 6


def test_latency_marks_do_not_overlap(gpu: ProfileReport) -> None:
    marks = [a for a in figures.latency_figure(gpu).layout.annotations if " ms" in (a.text or "")]
    places = {(a.x, a.xanchor, a.yshift) for a in marks}
    assert len(marks) == 3 and len({(xanchor, shift) for _, xanchor, shift in places}) == 3


def test_timeline_of_a_big_model_uses_op_type_lanes(gpu: ProfileReport) -> None:
    fig = figures.timeline_figure(gpu, rows="op_type")
    assert set(fig.layout.yaxis.categoryarray) == set(gpu.layers["op_type"])
    with pytest.raises(ValueError, match="rows="):
        figures.timeline_figure(gpu, rows="nodes")
    with pytest.raises(ValueError, match="color_by="):
        figures.timeline_figure(gpu, color_by="colour")


@pytest.mark.may_skip
def test_tensorrt_timeline_is_coloured_by_precision() -> None:
    prefix = "mobilenet.qat.onnx.engine."
    report = load_trtexec(profile=shared_fixture("trtexec", prefix + "profile.json"),
                          layer_info=shared_fixture("trtexec", prefix + "graph.json"))  # fmt: skip
    fig = report.timeline()
    assert fig.layout.legend.title.text == "precision"
    assert {t.name for t in fig.data} <= {"INT8", "FP16", "FP32", "(none)"}
    assert "back to back" in fig.layout.annotations[0].text


def test_summary_figures(gpu: ProfileReport) -> None:
    top = figures.top_layers_figure(gpu, n=10)
    assert list(top.data[0].y)[::-1] == list(axis_labels(gpu.top(10)["node"]).values())
    share = figures.op_type_share_figure(gpu)
    assert set(share.data[0].labels) == set(gpu.layers["op_type"])
    latency = figures.latency_figure(gpu)
    assert len(latency.data[0].x) == 100
    assert len(latency.data) == 2  # bare latencies + the profiled run times beside them
    assert any("p50" in (a.text or "") for a in latency.layout.annotations)


def test_comparison(gpu: ProfileReport) -> None:
    other = ProfileReport.load(GPU_NOOPT)
    fig = figures.compare_figure(gpu, other, n=12)
    assert len(fig.data) == 2 and len(fig.data[0].y) == 12
    assert "speed-up" in fig.layout.title.text
    table = figures.compare_table(gpu, other)
    assert {"delta_ms", "speedup"} <= set(table.columns)


def test_layers_table(gpu: ProfileReport) -> None:
    table = figures.layers_table(gpu, filter_text="CONV", limit=5)
    assert len(table) == 5 and (table["op_type"] == "Conv").all()
    assert "precision" not in table.columns  # empty for onnxruntime reports
    assert list(table["mean_ms"]) == sorted(table["mean_ms"], reverse=True)
    with pytest.raises(ValueError, match="sort_by"):
        figures.layers_table(gpu, sort_by="speed")
    assert table["calls"].dtype == "int64"  # whole counts read 1, not 1.0
    halves = gpu.layers.assign(calls=0.5)
    assert figures.layers_table(_with_layers(gpu, halves))["calls"].dtype == "float64"


def _with_layers(report: ProfileReport, layers: Any) -> ProfileReport:
    copy = ProfileReport.from_json(report.to_json())
    copy.layers = layers
    return copy


@pytest.mark.slow
def test_figures_survive_a_static_html_export(tmp_path: Path) -> None:
    """Executed in a real kernel, exported by nbconvert's own HTMLExporter (what `jupyter
    nbconvert --execute --to html` runs), offline: the figures are in the HTML with plotly.js.
    Both run in this process: a `jupyter nbconvert` child only added its start-up (~2.5 s of
    CPU); the command line itself is tested in test_static_export.py."""
    from nbconvert import HTMLExporter

    from tests._kernels import execute_notebook

    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}  # fmt: skip
    nb.cells = [
        nbformat.v4.new_code_cell(
            "from nsdl_jupyter import figures\n"
            "from nsdl_jupyter.profiling import ProfileReport\n"
            "figures.use_static_renderer()\n"
            f"report = ProfileReport.load({str(GPU_OPT)!r})"
        ),
        nbformat.v4.new_code_cell("report.timeline().show()"),
        nbformat.v4.new_code_cell("figures.top_layers_figure(report).show()"),
    ]
    execute_notebook(nb, tmp_path, timeout=180)
    page, _resources = HTMLExporter().from_notebook_node(nb)
    assert page.count('class="plotly-graph-div"') == 2
    assert "Plotly.newPlot" in page
    assert "conv1" in page and "Top 15 layers" in page  # the figures' data
    # plotly.js itself is inlined: nothing to fetch from a CDN when read offline
    assert 'src="https://cdn.plot.ly' not in page
    assert len(page) > 3_000_000


def test_report_shortcut_draws_without_importing_figures_first() -> None:
    """profiling imports no figures: the package wires `report.timeline()` on first use."""
    code = (
        "import sys\n"
        "from nsdl_jupyter.profiling import ProfileReport\n"
        f"report = ProfileReport.load({str(GPU_OPT)!r})\n"
        "assert 'nsdl_jupyter.figures' not in sys.modules\n"
        "print(sum(len(trace.y) for trace in report.timeline().data))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["122"]


def test_figures_are_reachable_from_the_package_and_the_old_alias_is_gone() -> None:
    """`nsdl_jupyter.figures` serves every figure and table name; the `views` alias of it
    (renamed long ago) no longer exists, so no second spelling of them remains."""
    import importlib

    import nsdl_jupyter

    for name in figures.__all__:
        assert getattr(importlib.import_module("nsdl_jupyter.figures"), name) is not None
    assert "views" not in dir(nsdl_jupyter)
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("nsdl_jupyter.views")
