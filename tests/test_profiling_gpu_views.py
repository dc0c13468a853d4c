"""Views and widgets of GPU-timed reports (real H200 reports) and of reports without GPU
times: time column, kernel bars and NVML panels, kernels_table, hide_non_compute, ProfileView's
GPU/host switch and kernel table, ActivityPanel's GPU settings, the missing-CUPTI path."""

from __future__ import annotations

import copy
from pathlib import Path

import onnx
import pandas as pd
import pytest
import traitlets
from test_profiling_helpers import OWN_FIXTURES, mlp_model, shared_fixture

import nsdl_jupyter as nj
from nsdl_jupyter import figures
from nsdl_jupyter._static_export import static_html
from nsdl_jupyter.figures._plotly import axis_labels
from nsdl_jupyter.profiling import OrtProfileSettings, ProfileReport, load_trtexec
from nsdl_jupyter.widgets.profile._activity_panel import ActivityPanel
from nsdl_jupyter.widgets.profile._profile_view import ProfileView

GPU_TRUTH = OWN_FIXTURES / "gpu_truth"
HOST_ONLY = OWN_FIXTURES / "ort_cuda_resnet50_b8_opt_report.json"
CUPTI_MISSING = "cupti-python is not installed on the target: pip install 'nsdl_jupyter[gpu]' <x>"


@pytest.fixture(scope="module")
def resnet() -> ProfileReport:
    return ProfileReport.load(GPU_TRUTH / "resnet50_b8_cuda_report.json")


@pytest.fixture(scope="module")
def vit() -> ProfileReport:
    return ProfileReport.load(GPU_TRUTH / "vit_b_16_b8_cuda_report.json")


@pytest.fixture(scope="module")
def host_only() -> ProfileReport:
    return ProfileReport.load(HOST_ONLY)


def without_gpu_timing(report: ProfileReport, message: str = CUPTI_MISSING) -> ProfileReport:
    """The report as a run without CUPTI gives it: host times only, the reason in metadata."""
    metadata = copy.deepcopy(report.metadata)
    metadata["gpu"]["timing"] = {"available": False, "message": message}
    layers = report.layers.drop(columns=["gpu_ms", "kernels"])
    layers = layers[layers["name"] != "(input copy)"]
    return ProfileReport(layers, latencies_ms=report.latencies_ms,
                         timeline_events=report.timeline_events, metadata=metadata,
                         gpu_metrics=report.gpu_metrics)  # fmt: skip


def bars(fig: object) -> list[object]:
    return [t for t in fig.data if t.type == "bar"]  # type: ignore[attr-defined]


# ---- views ---------------------------------------------------------------------------------


def test_timeline_draws_kernels_per_layer_and_stream_with_metrics_below(
    vit: ProfileReport,
) -> None:
    fig = vit.timeline(rows="layer")
    kernels = vit.kernel_timeline
    drawn = bars(fig)
    # every kernel twice: in its stream's lane and in its layer's row
    assert sum(len(t.y) for t in drawn) == 2 * len(kernels) == 550
    order = list(fig.layout.yaxis.categoryarray)[::-1]
    assert order[0] == "stream 63"
    grouped = list(vit.timeline().layout.yaxis.categoryarray)[::-1]  # the default: top 30
    assert grouped[0] == "stream 63" and grouped[-1].startswith("other (") and len(grouped) == 32
    layers = axis_labels(pd.unique(kernels["layer"]))  # long names cut at the start
    assert order[1:] == list(layers.values())  # layers by first kernel
    conv = next(t for t in drawn if t.name == "Conv")
    rows = [i for i, y in enumerate(conv.y) if y == "/conv_proj/Conv"]
    expected = kernels[kernels["layer"] == "/conv_proj/Conv"]
    assert sorted(conv.base[i] for i in rows) == pytest.approx(sorted(expected["start_ms"]))
    assert all(conv.customdata[i][0] == "/conv_proj/Conv" for i in rows)  # click -> layer
    assert "GPU kernels" in fig.layout.title.text
    assert "first kernel" in fig.layout.xaxis.title.text
    # NVML panels under it, on their own time axis over the measured pass
    lines = {t.name: t for t in fig.data if t.type == "scatter"}
    assert {"SM clock", "GPU utilisation", "power", "memory used"} <= set(lines)
    assert list(lines["power"].y) == list(vit.gpu_metrics["power_w"])
    assert lines["power"].xaxis != "x" and lines["SM clock"].xaxis != "x"
    bottom = fig.layout[f"xaxis{len({t.xaxis for t in fig.data})}"]
    assert "measured pass (100 inferences)" in bottom.title.text
    # host windows on request, metrics still below; none at all without metrics
    host = figures.timeline_figure(vit, times="host")
    assert sum(len(t.y) for t in bars(host)) == len(vit.timeline_events)
    assert "host time" in host.layout.title.text
    assert not [t for t in figures.timeline_figure(vit, metrics=False).data if t.type != "bar"]


def test_per_layer_views_use_gpu_time_and_say_so(resnet: ProfileReport) -> None:
    assert resnet.time_column == "gpu_ms"
    top = figures.top_layers_figure(resnet, n=5)
    expected = resnet.layers.nlargest(5, "gpu_ms")
    assert list(top.data[0].x)[::-1] == pytest.approx(list(expected["gpu_ms"]))
    assert "GPU kernel time" in top.layout.xaxis.title.text
    assert top.data[0].error_x.array is None  # no min/max spread for kernel sums
    host = figures.top_layers_figure(resnet, n=5, times="host")
    assert list(host.data[0].y)[::-1] == list(
        axis_labels(resnet.top(5, "mean_ms")["node"]).values()
    )
    assert "host time" in host.layout.xaxis.title.text
    share = figures.op_type_share_figure(resnet)
    assert sum(share.data[0].values) == pytest.approx(resnet.layers["gpu_ms"].sum())
    assert share.layout.title.text.startswith("GPU kernel time by op type")
    table = figures.compare_table(resnet, resnet)
    assert table.attrs["column"] == "gpu_ms" and "gpu_ms_a" in table
    fig = figures.compare_figure(resnet, resnet, n=5)
    assert "GPU kernel time" in fig.layout.xaxis.title.text
    table = figures.layers_table(resnet, limit=3)
    assert {"gpu_ms", "kernels", "mapped_as"} <= set(table.columns)
    assert list(table["gpu_ms"]) == sorted(resnet.layers["gpu_ms"], reverse=True)[:3]


def test_views_of_a_report_without_gpu_times(
    resnet: ProfileReport, host_only: ProfileReport
) -> None:
    assert host_only.time_column == "mean_ms"
    fig = host_only.timeline()
    assert sum(len(t.y) for t in fig.data) == len(host_only.timeline_events)
    assert all(t.type == "bar" for t in fig.data)  # no metrics, no kernels
    assert "host time" in figures.top_layers_figure(host_only).layout.xaxis.title.text
    with pytest.raises(ValueError, match="no per-layer GPU times"):
        figures.timeline_figure(host_only, times="gpu")
    with pytest.raises(ValueError, match="times='cpu'"):
        figures.top_layers_figure(host_only, times="cpu")
    # a GPU report against a host-only one compares host times; GPU on request fails
    assert figures.compare_table(resnet, host_only).attrs["column"] == "mean_ms"
    with pytest.raises(ValueError, match="no per-layer GPU times"):
        figures.compare_figure(resnet, host_only, times="gpu")
    empty = figures.kernels_table(host_only)
    assert empty.empty and "kernel" in empty.columns


def test_kernels_table_of_one_layer_and_of_all(resnet: ProfileReport) -> None:
    layer = resnet.layers.set_index("name").loc["/conv1/Conv"]
    table = figures.kernels_table(resnet, "/conv1/Conv")
    assert (table["layer"] == "/conv1/Conv").all()
    assert table["calls"].sum() == layer["kernels"] == 5
    assert table["total_ms"].sum() == pytest.approx(layer["gpu_ms"], rel=1e-6)
    assert list(table["total_ms"]) == sorted(table["total_ms"], reverse=True)
    assert table["share"].sum() == pytest.approx(1.0)
    everything = figures.kernels_table(resnet)
    assert everything["total_ms"].sum() == pytest.approx(resnet.layers["gpu_ms"].sum(), rel=1e-6)
    assert figures.kernels_table(resnet, "/Flatten").empty  # a layer that launched nothing
    with pytest.raises(ValueError, match="no layer of that name"):
        figures.kernels_table(resnet, "/nope")


def test_hide_non_compute(vit: ProfileReport, resnet: ProfileReport) -> None:
    mask = figures.non_compute_mask(vit.layers)
    hidden = vit.layers[mask]
    assert set(hidden["op_type"]) == {"Reshape", "Squeeze", "Memcpy"}
    assert "/Gather" not in set(hidden["name"])  # a gather of float data computes
    assert not mask[vit.layers["op_type"] == "Gemm"].any()
    shape_gather = pd.DataFrame(
        {"name": ["g", "h"], "op_type": ["Gather", "Gather"],
         "input_shapes": ["int64[4], int64[]", "float[8,197,768], int64[]"]}
    )  # fmt: skip
    assert list(figures.non_compute_mask(shape_gather)) == [True, False]
    table = figures.layers_table(vit, hide_non_compute=True)
    assert len(table) == len(vit.layers) - int(mask.sum())
    assert not set(table["op_type"]) & figures.NON_COMPUTE_OP_TYPES
    # the copy is resnet's slowest GPU layer; hidden, it leaves every view
    assert resnet.layers.nlargest(1, "gpu_ms")["name"].item() == "(input copy)"
    top = figures.top_layers_figure(resnet, hide_non_compute=True)
    assert "(input copy)" not in set(top.data[0].y)
    assert "non-compute layers hidden" in top.layout.title.text
    # shares stay those of the whole report
    full = figures.top_layers_figure(resnet)
    conv = {y: c[1] for y, c in zip(full.data[0].y, full.data[0].customdata, strict=True)}
    kept = {y: c[1] for y, c in zip(top.data[0].y, top.data[0].customdata, strict=True)}
    assert kept["/conv1/Conv"] == pytest.approx(conv["/conv1/Conv"])
    timeline = figures.timeline_figure(vit, hide_non_compute=True)
    rows = set(timeline.layout.yaxis.categoryarray)
    assert "(input copy)" not in rows and not rows & set(hidden["name"])
    kernels = sum(len(t.y) for t in bars(timeline))
    assert kernels == 2 * int((~vit.kernel_timeline["layer"].isin(hidden["name"])).sum())
    share = figures.op_type_share_figure(vit, hide_non_compute=True)
    assert not set(share.data[0].labels) & {"Reshape", "Squeeze", "Memcpy"}


@pytest.mark.may_skip
def test_hide_non_compute_drops_tensorrt_reformats() -> None:
    prefix = "mobilenet.qat.onnx.engine."
    report = load_trtexec(profile=shared_fixture("trtexec", prefix + "profile.json"),
                          layer_info=shared_fixture("trtexec", prefix + "graph.json"))  # fmt: skip
    table = figures.layers_table(report, hide_non_compute=True)
    assert "Reformat" in set(report.layers["op_type"])
    assert not {"Reformat", "NoOp"} & set(table["op_type"])
    assert "CaskConvolution" in set(table["op_type"])


def test_summary_and_html_say_gpu_busy_idle_and_clocks(resnet: ProfileReport) -> None:
    text = resnet.summary()
    busy = resnet.metadata["gpu"]["timing"]["busy_ms_mean"]
    assert f"GPU busy / idle: {busy:.3f} ms busy per inference" in text
    assert "SM clock locked at 1980 MHz" in text
    assert "warning: memory clock not locked" in text
    assert "27 NVML samples every 10 ms" in text
    html = resnet._repr_html_()
    assert "GPU busy / idle" in html and "SM clock locked at 1980 MHz" in html
    assert "<th>gpu_ms</th>" in html  # the top layers by GPU time


def test_missing_cupti_message_in_summary_and_html(resnet: ProfileReport) -> None:
    report = without_gpu_timing(resnet)
    assert not report.has_gpu_times and report.time_column == "mean_ms"
    assert f"GPU timing: unavailable: {CUPTI_MISSING}; layer times are host times" in (
        report.summary()
    )
    html = report._repr_html_()
    assert "&lt;x&gt;" in html and "<x>" not in html
    with pytest.raises(ValueError, match="cupti-python is not installed"):
        figures.timeline_figure(report, times="gpu")


# ---- widgets -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def resnet_doc(tmp_path_factory: pytest.TempPathFactory) -> object:
    """ResNet-50 built in code, with the node names of the torchvision export."""
    from nsdl_jupyter.examples import resnet50

    path = tmp_path_factory.mktemp("resnet") / "resnet50_b8.onnx"
    onnx.save(resnet50(batch=8), path)
    return nj.open_model(path)


def test_profile_view_switches_gpu_and_host_times(
    resnet: ProfileReport, resnet_doc: object
) -> None:
    graph = nj.GraphView(resnet_doc)
    view = ProfileView(resnet, graph_view=graph)
    assert view.times == "gpu" and view.sort_by == "gpu_ms"
    assert view._times.layout.display is None  # the switch is shown
    first = resnet.layers.loc[view._table.options[0][1]]
    assert first["gpu_ms"] == resnet.layers["gpu_ms"].max()
    assert "GPU ms" in view._header.value
    assert "GPU kernels" in view.timeline.layout.title.text
    assert graph._overlay["label"] == "GPU ms per inference"
    gpu_max = graph._overlay["max"]
    assert gpu_max == pytest.approx(max(resnet.node_times("gpu_ms").values()), rel=1e-6)
    # switch to host: table, header, timeline, charts and overlay follow
    old_timeline = view.timeline
    view._times.value = "host"
    assert view.times == "host" and view.sort_by == "mean_ms"
    first = resnet.layers.loc[view._table.options[0][1]]
    assert first["mean_ms"] == resnet.layers["mean_ms"].max()
    assert "mean ms" in view._header.value
    assert view.timeline is not old_timeline and view.timeline in view.children
    assert "host time" in view.timeline.layout.title.text
    top_chart = view._charts[0].outputs[0]["data"]["application/vnd.plotly.v1+json"]
    assert "host time" in top_chart["layout"]["xaxis"]["title"]["text"]
    assert graph._overlay["label"] == "host ms per inference"
    assert graph._overlay["max"] == pytest.approx(max(resnet.node_times("mean_ms").values()))
    view.times = "gpu"
    assert view.sort_by == "gpu_ms"


def test_profile_view_opens_the_kernel_table_of_the_selected_layer(
    resnet: ProfileReport,
) -> None:
    view = ProfileView(resnet)
    assert view._kernel_box.selected_index is None
    view.selected = "/conv1/Conv"
    assert view._kernel_box.selected_index == 0
    table = view.kernel_table()
    assert len(table) == len(figures.kernels_table(resnet, "/conv1/Conv"))
    assert view._kernel_box.get_title(0) == f"GPU kernels of /conv1/Conv ({len(table)})"
    for name in table["kernel"]:
        assert name[:40] in view._kernels.value
    assert "GPU ms / kernels per inference" in view._details.value
    # the bars of the selected layer are outlined, in its row and in the stream lane
    widths = [
        (c[0], w)
        for trace in bars(view.timeline)
        for c, w in zip(trace.customdata, trace.marker.line.width, strict=True)
    ]
    outlined = {n for n, w in widths if w}
    assert outlined == {"/conv1/Conv"}
    assert sum(1 for _, w in widths if w) == 2 * 5  # 5 kernels, lane + row
    view.selected = "/Flatten"
    assert "no GPU kernels ran" in view._kernels.value
    view.selected = ""
    assert view._kernel_box.selected_index is None and view._kernels.value == ""


def test_profile_view_hides_non_compute(vit: ProfileReport) -> None:
    view = ProfileView(vit)
    assert len(view._table.options) == len(vit.layers)
    view.selected = "(input copy)"
    view._hide.value = True
    assert view.hide_non_compute
    hidden = int(figures.non_compute_mask(vit.layers).sum())
    assert len(view._table.options) == len(vit.layers) - hidden
    assert f"{hidden} non-compute hidden" in view._count.value
    assert view._table.value is None  # the selected copy is hidden from the table
    rows = set(view.timeline.layout.yaxis.categoryarray)
    assert "(input copy)" not in rows
    share = view._charts[1].outputs[0]["data"]["application/vnd.plotly.v1+json"]
    assert "Reshape" not in share["data"][0]["labels"]


def test_profile_view_of_a_run_without_gpu_timing(resnet: ProfileReport) -> None:
    report = without_gpu_timing(resnet)
    view = ProfileView(report)
    assert view.times == "host" and view.sort_by == "mean_ms"
    assert view._times.layout.display == "none"  # nothing to switch to
    assert view._kernel_box.layout.display == "none"
    summary = view.children[1].value
    assert "nsdl-profile-gpu-warning" in summary
    assert "cupti-python is not installed" in summary and "&lt;x&gt;" in summary
    with pytest.raises(traitlets.TraitError, match="no per-layer GPU times"):
        view.times = "gpu"
    with pytest.raises(ValueError, match="no per-layer GPU times"):
        ProfileView(report, times="gpu")


@pytest.fixture
def mlp_path(tmp_path: Path) -> Path:
    path = tmp_path / "mlp.onnx"
    onnx.save(mlp_model(layers=2), path)
    return path


def test_activity_panel_gpu_settings_reach_the_settings(mlp_path: Path) -> None:
    base = OrtProfileSettings(gpu_timing=False, metrics_interval_ms=50.0, lock_clocks=False)
    panel = ActivityPanel(mlp_path, settings=base)
    assert panel._gpu_timing.value is False
    assert panel._metrics_interval.value == 50.0
    assert panel._lock_clocks.value is False
    settings = panel.settings()
    assert (settings.gpu_timing, settings.metrics_interval_ms, settings.lock_clocks) == (
        False, 50.0, False,
    )  # fmt: skip
    panel._gpu_timing.value = True
    panel._metrics_interval.value = 2.5
    panel._lock_clocks.value = True
    settings = panel.settings()
    assert (settings.gpu_timing, settings.metrics_interval_ms, settings.lock_clocks) == (
        True, 2.5, True,
    )  # fmt: skip
    panel._metrics_interval.value = 0
    assert panel.settings().metrics_interval_ms == 0.0  # no NVML sampling
    # on the CPU provider the GPU controls are off, and say why
    assert panel.provider == "CPUExecutionProvider"
    assert panel._gpu_timing.disabled and panel._lock_clocks.disabled
    assert "CUDA and TensorRT" in panel._gpu_note.value
    gpu = [s.name for s in panel.providers if s.available and "CUDA" in s.name]
    if gpu:
        panel.provider = gpu[0]
        assert not panel._gpu_timing.disabled and panel._gpu_note.value == ""


def test_activity_panel_shows_why_gpu_times_are_missing(
    mlp_path: Path, resnet: ProfileReport
) -> None:
    panel = ActivityPanel(mlp_path)
    report = without_gpu_timing(resnet)
    panel._hide_non_compute.value = True
    panel.show_report(report)
    assert panel.status == "done" and panel.report is report
    message = panel._message.value
    assert "No GPU kernel times: cupti-python is not installed" in message
    assert "&lt;x&gt;" in message and "<x>" not in message
    assert "The layer times shown are host times" in message
    assert "Clocks: memory clock not locked" in message
    assert panel.view is not None and panel.view.times == "host"
    assert panel.view.hide_non_compute  # the panel's option reaches the view
    panel._hide_non_compute.value = False
    assert not panel.view.hide_non_compute
    # a run with GPU times and locked clocks only warns about what was not locked
    panel.show_report(resnet)
    assert "No GPU kernel times" not in panel._message.value
    assert panel.view.times == "gpu"


def test_static_picture_of_a_gpu_profile_view(resnet: ProfileReport) -> None:
    """What a notebook export shows: the switch, the GPU summary, the kernel table of the
    selected layer; names escaped."""
    report = copy.deepcopy(resnet)
    evil = "<img src=x onerror=alert(1)>"
    report.layers.loc[report.layers["name"] == "/conv1/Conv", "name"] = evil
    for frame in (report.kernels, report.kernel_timeline):
        frame.loc[frame["layer"] == "/conv1/Conv", "layer"] = evil
    report.kernels.loc[report.kernels["layer"] == evil, "kernel"] = "<b>kernel</b>"
    view = ProfileView(report)
    view.selected = evil
    picture = static_html(view)
    assert picture is not None
    assert picture.count('class="nsdl-static-plotly"') == 4
    assert "GPU time" in picture and "host time" in picture  # the switch
    assert "GPU busy / idle" in picture and "SM clock locked at 1980 MHz" in picture
    assert "nsdl-profile-kernels" in picture and "&lt;b&gt;kernel&lt;/b&gt;" in picture
    assert "<img src=x" not in picture and "<b>kernel</b>" not in picture
