"""ActivityPanel and ProfileView state, driven from Python (the browser test is in tests/ui)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import comm
import numpy as np
import onnx
import pytest
import traitlets
from comm.base_comm import BaseComm
from onnx import numpy_helper
from test_profiling_helpers import OWN_FIXTURES, mlp_model, two_input_model

import nsdl_jupyter as nj
from nsdl_jupyter.profiling import ProfileReport
from nsdl_jupyter.widgets.profile._activity_panel import ActivityPanel, parse_dim_sizes
from nsdl_jupyter.widgets.profile._profile_view import MAX_TABLE_ROWS, ProfileView

GPU_REPORT = OWN_FIXTURES / "ort_cuda_resnet50_b8_opt_report.json"
GPU_TRUTH_REPORT = OWN_FIXTURES / "gpu_truth" / "resnet50_b8_cuda_report.json"  # GPU kernel times


@pytest.fixture
def mlp_path(tmp_path: Path) -> Path:
    path = tmp_path / "mlp.onnx"
    onnx.save(mlp_model(layers=2), path)
    return path


def test_panel_runs_a_profile_and_shows_the_report(mlp_path: Path, tmp_path: Path) -> None:
    panel = ActivityPanel(mlp_path)
    # providers the build lacks are disabled, with their reason as tooltip
    for status in panel.providers:
        button = panel._provider_buttons[status.name]
        assert button.disabled is (not status.available)
        if not status.available:
            assert button.tooltip == status.reason
    assert panel.provider == "CPUExecutionProvider"
    assert panel._trace.value.endswith("mlp_cpu_profile.json")
    panel._iterations.value = 3
    panel._warmup.value = 0
    panel._optimize.value = False
    panel._trace.value = str(tmp_path / "panel.json")
    panel._dims.value = "batch=2"
    panel.run()
    assert panel.status == "running"
    report = panel.wait(120)
    assert panel.status == "done", panel._message.value
    assert report is not None and panel.view is not None
    assert panel._result.children == (panel.view,)
    charts = panel.view.children[-1]  # filled from the panel's worker thread
    for output in charts.children:
        assert "application/vnd.plotly.v1+json" in output.outputs[0]["data"]
    assert panel._progress.value == 1.0
    assert report.metadata["inputs"]["x"]["shape"] == [2, 256]
    assert set(report.layers["name"]) == {n.name for n in mlp_model(layers=2).graph.node}
    assert (tmp_path / "panel.json").is_file()


def test_panel_shows_input_errors_without_running(tmp_path: Path) -> None:
    path = tmp_path / "two.onnx"
    onnx.save(two_input_model(), path)
    folder = tmp_path / "inputs"
    folder.mkdir()
    (folder / "ids.pb").write_bytes(
        numpy_helper.from_array(np.zeros((1, 8), np.int64), "ids").SerializeToString()
    )
    panel = ActivityPanel(path)
    panel._input_mode.value = "folder"
    panel._folder.value = str(folder)
    panel.run()
    assert panel.status == "failed"
    assert panel.job is None
    assert "InputFolderError" in panel._message.value and "mask" in panel._message.value
    panel._input_mode.value = "random"
    panel._dims.value = "batch=two"
    panel.run()
    assert panel.status == "failed" and "name=integer" in panel._message.value


def test_a_runtime_failure_is_one_sentence_with_the_traceback_behind_details(
    tmp_path: Path,
) -> None:
    x = onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2, 3])
    shape = onnx.helper.make_tensor_value_info("shape", onnx.TensorProto.INT64, [2])
    y = onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)
    reshape = onnx.helper.make_node("Reshape", ["x", "shape"], ["y"], name="/Reshape")
    graph = onnx.helper.make_graph([reshape], "g", [x, shape], [y])
    path = tmp_path / "bad.onnx"
    onnx.save(onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", 17)]), path)
    panel = ActivityPanel(path)
    panel._iterations.value, panel._warmup.value = 1, 0
    panel.run()
    panel.wait(120)
    assert panel.status == "failed"
    message = panel._message.value
    headline, details = message.split("<details", 1)
    assert "onnxruntime failed in Reshape node &#x27;/Reshape&#x27;: The input tensor" in headline
    assert "Traceback" not in headline and "onnxruntime::" not in headline
    assert "<summary>details</summary>" in details and "Traceback" in details
    assert "\\u001b" not in message and "\x1b" not in message
    assert "\\u001b" not in panel._log.value and "\x1b" not in panel._log.value


def test_panel_cancel(tmp_path: Path) -> None:
    path = tmp_path / "big.onnx"
    onnx.save(mlp_model(hidden=512, layers=8), path)
    panel = ActivityPanel(path)
    panel._iterations.value = 1_000_000
    panel._trace.value = str(tmp_path / "never.json")
    panel.run()
    job = panel.job
    assert job is not None
    import time

    deadline = time.monotonic() + 60
    while job.progress.phase not in ("latency", "profile") and time.monotonic() < deadline:
        time.sleep(0.05)
    panel._cancel.click()
    assert panel.wait(30) is None
    assert panel.status == "cancelled"
    assert "Cancelled" in panel._message.value
    assert not panel._run.disabled and panel._cancel.disabled


@pytest.mark.may_skip  # a build with every provider has nothing to refuse
def test_unavailable_provider_cannot_be_chosen(mlp_path: Path) -> None:
    panel = ActivityPanel(mlp_path)
    missing = [s for s in panel.providers if not s.available]
    if not missing:
        pytest.skip("every provider is available here")
    with pytest.raises(traitlets.TraitError, match="not available"):
        panel.provider = missing[0].name


def test_dim_sizes_text() -> None:
    assert parse_dim_sizes("batch=8, seq=128") == {"batch": 8, "seq": 128}
    assert parse_dim_sizes("") == {}
    with pytest.raises(ValueError, match="'seq'"):
        parse_dim_sizes("batch=8, seq")


@pytest.fixture(scope="module")
def resnet_doc(tmp_path_factory: pytest.TempPathFactory) -> object:
    """The model of the H200 report (ResNet-50 built in code, same node names)."""
    from nsdl_jupyter.examples import resnet50

    path = tmp_path_factory.mktemp("resnet") / "resnet50_b8.onnx"
    onnx.save(resnet50(batch=8), path)
    return nj.open_model(path)


def test_profile_view_table_selection_and_graph(resnet_doc: object) -> None:
    report = ProfileReport.load(GPU_REPORT)
    graph = nj.GraphView(resnet_doc)
    view = ProfileView(report, graph_view=graph)
    overlay = np.frombuffer(graph._overlay_values, dtype="<f4")
    assert np.isfinite(overlay).sum() == 122  # every node coloured by its time
    assert graph._overlay["max"] == pytest.approx(report.layers["mean_ms"].max())
    assert len(view._table.options) == 122
    # sorted by mean time, slowest first
    first = report.layers.loc[view._table.options[0][1]]
    assert first["mean_ms"] == report.layers["mean_ms"].max()
    view.filter_text = "layer4.2"
    shown = [report.layers.loc[i, "name"] for _, i in view._table.options]
    assert shown and all("layer4.2" in n for n in shown)
    view.sort_by = "name"
    view.ascending = True
    shown = [report.layers.loc[i, "name"] for _, i in view._table.options]
    assert shown == sorted(shown)
    # a row click selects the layer, outlines it in the timeline, selects it in the graph
    index = view._table.options[1][1]
    view._table.value = index
    name = report.layers.loc[index, "name"]
    assert view.selected == name
    assert graph.selected == [name]
    widths = {
        n: w
        for trace in view.timeline.data
        for n, w in zip([c[0] for c in trace.customdata], trace.marker.line.width, strict=True)
    }
    assert widths[name] == 3 and sum(1 for w in widths.values() if w) == 1
    assert name in view._details.value
    # a node the graph no longer has (renamed since the profile) clears the graph's selection
    resnet_doc.rename_node(name, "renamed_since")  # type: ignore[attr-defined]
    view.selected = ""
    view.selected = name
    assert graph.selected == []
    view.clear_overlay()
    assert graph._overlay == {}


def test_profile_view_timeline_comes_whole_in_its_first_message(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The browser gets each timeline's figure with the widget's comm_open, nothing after it:
    anywidget drops the messages to a model whose ESM (plotly's 5 MB bundle) took over 2 s
    to load, and a busy browser then drew an empty timeline (CI at load 10)."""
    sent: list[tuple[BaseComm, str, dict[str, Any]]] = []

    class RecordingComm(BaseComm):
        def publish_msg(self, msg_type: str, data: Any = None, *_: Any, **__: Any) -> None:
            sent.append((self, msg_type, data or {}))

    monkeypatch.setattr(comm, "create_comm", RecordingComm)
    view = ProfileView(ProfileReport.load(GPU_TRUTH_REPORT))
    for times, title in (("gpu", "GPU kernels per layer"), ("host", "host time per layer")):
        view.times = times  # the switch to "host" makes a new timeline
        timeline = view.timeline
        messages = [(kind, data) for c, kind, data in sent if c is timeline.comm]
        assert [kind for kind, _ in messages] == ["comm_open"]
        state = messages[0][1]["state"]
        assert [t["type"] for t in state["_widget_data"]] == [t.type for t in timeline.data]
        assert title in state["_widget_layout"]["title"]["text"]
        assert "nsdl-profile-timeline" in state["_dom_classes"]


def test_profile_view_caps_big_tables() -> None:
    report = ProfileReport.load(GPU_REPORT)
    many = report.layers.loc[report.layers.index.repeat(6)].reset_index(drop=True)
    many["name"] = [f"n{i}" for i in range(len(many))]
    big = ProfileReport(many, latencies_ms=report.latencies_ms, metadata=report.metadata)
    view = ProfileView(big)
    assert len(view._table.options) == MAX_TABLE_ROWS
    assert "filter to narrow" in view._count.value


def test_profile_view_with_a_real_graph_view(tmp_path: Path) -> None:
    """The real GraphView of the same document: rows select nodes, times overlay them."""
    path = tmp_path / "mlp.onnx"
    onnx.save(mlp_model(layers=2), path)
    doc = nj.open_model(path)
    report = nj.profile_ort(doc, iterations=2, warmup=0, graph_optimization=False,
                            trace_path=tmp_path / "t.json")  # fmt: skip
    graph = nj.GraphView(doc)
    view = ProfileView(report, graph_view=graph)
    assert graph._overlay["label"] == "host ms per inference"  # onnxruntime CPU: host times
    values = np.frombuffer(graph._overlay_values, dtype="<f4")
    assert np.isfinite(values).sum() == len(report.layers)
    view.selected = "fc1_matmul"
    assert graph.selected == ["fc1_matmul"]


def test_panels_refuse_unknown_options_naming_the_valid_ones(mlp_path: Path) -> None:
    """Box subclasses would take any name silently (traitlets only warns): they check once."""
    with pytest.raises(TypeError, match="iterationz; valid ones are: target, graph_view, settings"):
        ActivityPanel(mlp_path, iterationz=5)  # type: ignore[call-arg]
    report = ProfileReport.load(OWN_FIXTURES / "ort_cuda_resnet50_b8_opt_report.json")
    with pytest.raises(nj.NsdlError, match="valid ones are: graph_view, times, hide_non_compute"):
        ProfileView(report, time="gpu")  # type: ignore[call-arg]
    view = ProfileView(report, layout={"width": "500px"})
    assert view.layout.width == "500px"
