"""Why it is slow in the widgets: the ProfileView's "Colour by" (time / % of roof / bound)
drives the GraphView overlay from the roofline of a real H200 report (ResNet-50 fp32,
tests/fixtures/gpu_why); the ActivityPanel's "I/O binding" and "GPU counters (ncu)" boxes
reach the profile's settings, and I/O binding a real onnxruntime run."""

from __future__ import annotations

import tarfile
from pathlib import Path

import numpy as np
import onnx
import pytest
import traitlets
from test_profiling_helpers import mlp_model

import nsdl_jupyter as nj
from nsdl_jupyter.profiling import OrtProfileSettings, ProfileReport
from nsdl_jupyter.widgets.profile._activity_panel import ActivityPanel
from nsdl_jupyter.widgets.profile._profile_view import BOUND_CODES, ProfileView
from tests import real_exports

WHY = Path(__file__).parent / "fixtures" / "gpu_why"
MODEL = real_exports.FOLDER / "resnet50_torchscript.onnx"  # the fixture's node names


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> ProfileReport:
    folder = tmp_path_factory.mktemp("why")
    with tarfile.open(WHY / "reports.tar.gz") as tar:
        tar.extract("resnet50_b8_fp32_report.json", folder, filter="data")
    return ProfileReport.load(folder / "resnet50_b8_fp32_report.json")


def _overlay(graph: nj.GraphView) -> dict[str, float]:
    values = np.frombuffer(graph._overlay_values, dtype="<f4")
    table = graph._scene.table
    return {key: float(values[i]) for key, i in table.by_key.items() if np.isfinite(values[i])}


def test_colour_by_pct_of_roof_and_bound_on_the_graph(report: ProfileReport) -> None:
    graph = nj.GraphView(nj.open_model(MODEL))
    view = ProfileView(report, graph_view=graph, model=MODEL)
    assert view.colour_by == "time" and graph._overlay["label"] == "GPU ms per inference"
    assert view._colour.layout.display is None  # shown: a graph is bound
    view._colour.value = "pct_of_roof"
    assert view.colour_by == "pct_of_roof"
    assert graph._overlay["label"].startswith("% of the layer's roof")
    assert (graph._overlay["min"], graph._overlay["max"]) == (0.0, 100.0)
    table = report.roofline_table(MODEL).set_index("name")
    shown = _overlay(graph)
    assert shown["/conv1/Conv"] == pytest.approx(table.loc["/conv1/Conv", "pct_of_roof"], rel=1e-5)
    assert len(shown) > 100
    view.colour_by = "bound"
    assert "latency" in graph._overlay["label"] and graph._overlay["max"] == 2.0
    shown = _overlay(graph)
    assert shown["/conv1/Conv"] == BOUND_CODES[table.loc["/conv1/Conv", "bound"]]
    assert set(shown.values()) <= set(BOUND_CODES.values())
    # the selected layer says where it sits under the roofline
    view.selected = "/conv1/Conv"
    assert "of the tf32 roof" in view._details.value and "-bound" in view._details.value
    view.colour_by = "time"
    assert graph._overlay["label"] == "GPU ms per inference"


def test_colour_by_without_the_model_says_how_to_give_it(report: ProfileReport) -> None:
    view = ProfileView(report)  # metadata names resnet50_b8_fp32.onnx, not a file here
    assert view._colour.layout.display == "none"  # no graph to colour
    with pytest.raises(traitlets.TraitError, match="pass model="):
        view.colour_by = "pct_of_roof"
    assert view.colour_by == "time"
    with pytest.raises(traitlets.TraitError, match="use one of time, pct_of_roof, bound"):
        view.colour_by = "speed"


def test_failed_peaks_colour_by_roof_shows_nothing_and_says_why(report: ProfileReport) -> None:
    failed = ProfileReport(report.layers, metadata={
        **report.metadata, "peaks": {"available": False, "message": "CUPTI missing"}})  # fmt: skip
    graph = nj.GraphView(nj.open_model(MODEL))
    view = ProfileView(failed, graph_view=graph, model=MODEL, colour_by="pct_of_roof")
    assert view.colour_by == "pct_of_roof"
    assert "CUPTI missing" in graph._overlay["label"] and _overlay(graph) == {}


@pytest.fixture
def mlp_path(tmp_path: Path) -> Path:
    path = tmp_path / "mlp.onnx"
    onnx.save(mlp_model(layers=2), path)
    return path


def test_activity_panel_io_binding_and_counters_reach_the_settings(
    mlp_path: Path, tmp_path: Path
) -> None:
    base = OrtProfileSettings(counters_max_kernels=77, counters_kernel_name="gemm")
    panel = ActivityPanel(mlp_path, settings=base)
    assert panel._io_binding.value is False and panel._counters.value is False
    settings = panel.settings()
    assert (settings.io_binding, settings.counters) == (False, False)
    panel._io_binding.value = True
    panel._counters.value = True
    settings = panel.settings()
    assert (settings.io_binding, settings.counters) == (True, True)
    assert (settings.counters_max_kernels, settings.counters_kernel_name) == (77, "gemm")
    # counters need a GPU (ncu); I/O binding is onnxruntime's on every provider
    assert panel.provider == "CPUExecutionProvider"
    assert panel._counters.disabled and not panel._io_binding.disabled
    # a real run with the box ticked binds its inputs and outputs
    panel._counters.value = False
    panel._iterations.value = 2
    panel._warmup.value = 0
    panel._trace.value = str(tmp_path / "panel.json")
    panel._dims.value = "batch=2"
    panel.run()
    run = panel.wait(120)
    assert panel.status == "done", panel._message.value
    assert run is not None and run.metadata["io_binding"] is True
    assert run.metadata["settings"]["io_binding"] is True
    assert panel.view is not None and panel.view.model == mlp_path
