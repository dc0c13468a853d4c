"""Timeline of one inference: one row per layer, and under it the GPU metrics of the run.

With GPU kernel times (CUPTI) the bars are the kernels each layer launched, at their GPU start,
and one lane per CUDA stream on top holds every kernel of that stream; without them each
layer is one bar over its host window (onnxruntime's profiler, or trtexec's layer times laid
back to back). NVML samples (clocks, utilisation, power, memory), when the report has them,
are drawn as panels below.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from nsdl_jupyter.figures._errors import FigureError
from nsdl_jupyter.figures._filters import shown, time_column
from nsdl_jupyter.figures._plotly import (
    TOP_AXIS_MARGIN,
    axis_labels,
    colour_map,
    go,
    title_above_axis,
)

if TYPE_CHECKING:
    from nsdl_jupyter.profiling import ProfileReport

# Beyond this many layers one row per layer makes a figure taller than a screen: by default
# the TOP_LAYERS slowest keep a row each and the rest share one "other" row.
MAX_LAYER_ROWS = 40
TOP_LAYERS = 30
_MAX_TIMELINE_PX = 760
# NVML panels under the timeline: title, columns drawn in it.
METRIC_PANELS = (
    ("clock (MHz)", ("sm_clock_mhz", "mem_clock_mhz")),
    ("utilisation (%)", ("gpu_util", "mem_util")),
    ("power (W)", ("power_w",)),
    ("memory used (MB)", ("mem_used_mb",)),
)
_METRIC_NAMES = {
    "sm_clock_mhz": "SM clock",
    "mem_clock_mhz": "memory clock",
    "gpu_util": "GPU utilisation",
    "mem_util": "memory-bus utilisation",
    "power_w": "power",
    "mem_used_mb": "memory used",
}
_METRIC_PANEL_PX = 110
_KERNEL_NAME_WIDTH = 90
_HOST_HOVER = (
    "<b>%{customdata[5]}</b><br>%{customdata[1]} (onnxruntime: %{customdata[0]})<br>"
    "start %{base:.4f} ms<br>"
    "duration %{x:.4f} ms (self %{customdata[2]:.4f} ms)<br>in: %{customdata[3]}<br>"
    "out: %{customdata[4]}<extra></extra>"
)
_KERNEL_HOVER = (
    "<b>%{customdata[4]}</b><br>%{customdata[1]} (runtime: %{customdata[0]})<br>"
    "kernel %{customdata[2]}<br>"
    "stream %{customdata[3]}<br>GPU start %{base:.4f} ms<br>duration %{x:.4f} ms<extra></extra>"
)


def _default_colour(events: pd.DataFrame) -> str:
    return "precision" if (events["precision"] != "").any() else "op_type"


def _kernel_bars(report: ProfileReport, row_key: str) -> pd.DataFrame:
    """One row per kernel of the inference, twice: in its stream's lane and in its layer's
    (or op type's) row; with the layer's op type and precision for colours."""
    kernels = report.kernel_timeline
    info = report.layers.drop_duplicates("name").set_index("name")
    layer = kernels["layer"].astype(str)
    frame = pd.DataFrame(
        {
            "name": layer,
            "node": layer.map(info["node"]).fillna(layer),
            "op_type": layer.map(info["op_type"]).fillna(""),
            "precision": layer.map(info["precision"]).fillna(""),
            "kernel": kernels["kernel"].astype(str),
            "stream": kernels["stream"].astype(str),
            "start_ms": kernels["start_ms"].astype("float64"),
            "duration_ms": kernels["duration_ms"].astype("float64"),
        }
    )
    lanes = frame.assign(row="stream " + frame["stream"], lane=True)
    rows = frame.assign(row=frame[row_key], lane=False)
    return pd.concat([lanes, rows], ignore_index=True)


def _host_bars(events: pd.DataFrame, row_key: str) -> pd.DataFrame:
    return events.assign(row=events[row_key], lane=False)


def _cut(text: str) -> str:
    return text if len(text) <= _KERNEL_NAME_WIDTH else text[: _KERNEL_NAME_WIDTH - 1] + "…"


def _custom(part: pd.DataFrame, kernels: bool) -> np.ndarray:
    if not len(part):
        return np.empty((0, 6))
    # [0] is the layer's name: a click on a bar selects that layer (ProfileView)
    if kernels:
        columns = [part["name"], part["op_type"], part["kernel"].map(_cut), part["stream"],
                   part["node"]]  # fmt: skip
    else:
        columns = [part["name"], part["op_type"], part["self_ms"], part["input_shapes"],
                   part["output_shapes"], part["node"]]  # fmt: skip
    return np.stack(columns, axis=1)


def timeline_figure(
    report: ProfileReport,
    *,
    color_by: str | None = None,
    rows: str | None = None,
    highlight: str | None = None,
    title: str | None = None,
    times: str | None = None,
    hide_non_compute: bool = False,
    metrics: bool = True,
    top_n: int = TOP_LAYERS,
) -> Any:
    """A plotly Figure of the report's representative inference.

    `times`: 'gpu' (the kernels of each layer, one lane per CUDA stream on top; the default
    when the report has GPU kernel times) or 'host' (one bar per layer over its host window);
    `color_by`: 'op_type' (default) or 'precision' (default for TensorRT reports) or any
    column of the bars ('stream', 'kernel' for GPU bars); `rows`: 'layer' (one row per
    layer, the default up to 40 layers), 'top' (the 30 slowest layers, `top_n` to change,
    one row each and one "other" row for the rest: the default for bigger models) or
    'op_type' (one lane per op type); `highlight`: a layer name drawn outlined;
    `hide_non_compute`: leave out copies, layout reorders and shape-only ops; `metrics`:
    NVML panels below when the report has them. The time axis is on top, so it stays in
    view above a tall figure.
    """
    graph_objects = go()
    kernels = time_column(report, times) == "gpu_ms" and not report.kernel_timeline.empty
    report = shown(report, hide_non_compute)
    events = report.timeline_events
    names = report.kernel_timeline["layer"] if kernels else events["name"]
    rows = rows or ("layer" if names.nunique() <= MAX_LAYER_ROWS else "top")
    if rows not in ("layer", "top", "op_type"):
        raise FigureError(f"rows={rows!r}: use 'layer', 'top' or 'op_type'")
    row_key = "op_type" if rows == "op_type" else "node"
    bars = _kernel_bars(report, row_key) if kernels else _host_bars(events, row_key)
    if rows == "top":
        bars = _top_rows(bars, top_n)
    bars = bars.assign(row=bars["row"].map(axis_labels(pd.unique(bars["row"]))))
    color_by = color_by or _default_colour(bars)
    if color_by not in bars or color_by in ("row", "lane"):
        raise FigureError(f"color_by={color_by!r}: use one of {list(bars.columns[:-2])}")
    categories = [str(c) for c in pd.unique(bars[color_by])]
    colours = colour_map(categories, color_by, report)
    # Rows top to bottom: stream lanes, then layers in order of first start.
    order = list(pd.unique(bars.sort_values("start_ms", kind="stable")["row"]))
    order.sort(key=lambda r: _row_rank(str(r), kernels))
    panels = _metric_panels(report) if metrics else []
    fig = _figure(graph_objects, panels, len(order))
    for category in categories:
        part = bars[bars[color_by].astype(str) == category]
        line_width = [2 if highlight is not None and n == highlight else 0 for n in part["name"]]
        fig.add_trace(
            graph_objects.Bar(
                name=category or "(none)",
                legendgroup=category,
                orientation="h",
                y=part["row"],
                x=part["duration_ms"].clip(lower=1e-4),
                base=part["start_ms"],
                marker={
                    "color": colours[category],
                    "line": {"width": line_width, "color": "black"},
                },
                customdata=_custom(part, kernels),
                hovertemplate=_KERNEL_HOVER if kernels else _HOST_HOVER,
            ),
            **({"row": 1, "col": 1} if panels else {}),
        )
    model = report.metadata.get("model_name", "")
    what = "GPU kernels per layer" if kernels else "host time per layer"
    fig.update_layout(
        title=title_above_axis(
            title or f"{model}: one inference, {what} ({report.name.split(' ', 1)[-1]})"
        ),
        barmode="overlay",
        height=_layer_height(len(order)) + _METRIC_PANEL_PX * len(panels),
        legend_title_text=color_by,
        margin={"l": 10, "r": 10, "t": TOP_AXIS_MARGIN, "b": 40},
    )
    fig.update_yaxes(categoryorder="array", categoryarray=order[::-1], automargin=True,
                     row=1 if panels else None, col=1 if panels else None)  # fmt: skip
    fig.update_xaxes(
        title_text="GPU time since the inference's first kernel (ms)"
        if kernels
        else "time since the start of the run (ms)",
        side="top",
        row=1 if panels else None,
        col=1 if panels else None,
    )
    if panels:
        _add_metrics(fig, graph_objects, report, panels)
    note = report.metadata.get("timeline_note")
    if note:
        fig.add_annotation(text=str(note), xref="paper", yref="paper", x=0, y=1.0,
                           yanchor="bottom", showarrow=False, font={"size": 10})  # fmt: skip
    return fig


def _row_rank(row: str, kernels: bool) -> int:
    """Stream lanes on top, the shared "other" row at the bottom, layers between."""
    if kernels and row.startswith("stream "):
        return 0
    return 2 if row.startswith("other (") else 1


def _layer_height(rows: int) -> int:
    return int(min(max(rows * 16 + 140, 320), _MAX_TIMELINE_PX))


def _top_rows(bars: pd.DataFrame, top_n: int) -> pd.DataFrame:
    """The `top_n` layers with the most time keep their row; the others share one row."""
    lanes = bars["lane"]
    layers = bars[~lanes]
    totals = layers.groupby("name", sort=False)["duration_ms"].sum()
    kept = set(totals.nlargest(top_n).index)
    rest = totals.index.difference(list(kept))
    if len(rest) == 0:
        return bars
    other = f"other ({len(rest)} layers)"
    return bars.assign(row=bars["row"].where(lanes | bars["name"].isin(kept), other))


def _metric_panels(report: ProfileReport) -> list[tuple[str, list[str]]]:
    metrics = report.gpu_metrics
    if metrics.empty or "t_ms" not in metrics:
        return []
    panels = []
    for title, columns in METRIC_PANELS:
        present = [c for c in columns if c in metrics and metrics[c].notna().any()]
        if present:
            panels.append((title, present))
    return panels


def _figure(graph_objects: Any, panels: list[tuple[str, list[str]]], rows: int) -> Any:
    if not panels:
        return graph_objects.Figure()
    from plotly.subplots import make_subplots

    layer_px = _layer_height(rows) - 90
    heights = [layer_px] + [_METRIC_PANEL_PX - 20] * len(panels)
    return make_subplots(
        rows=1 + len(panels),
        cols=1,
        row_heights=[h / sum(heights) for h in heights],
        vertical_spacing=min(0.06, 60 / sum(heights)),
        subplot_titles=["", *(title for title, _ in panels)],
    )


def _add_metrics(
    fig: Any, graph_objects: Any, report: ProfileReport, panels: list[tuple[str, list[str]]]
) -> None:
    """NVML samples of the measured pass: a panel per quantity, on one time axis of their
    own (they cover every iteration of the pass; the bars above are one inference)."""
    metrics = report.gpu_metrics
    first_metric_axis = "x2"
    for index, (title, columns) in enumerate(panels, start=2):
        for column in columns:
            fig.add_trace(
                graph_objects.Scatter(
                    x=metrics["t_ms"],
                    y=metrics[column],
                    mode="lines+markers",
                    marker={"size": 4},
                    line={"width": 1.5, "shape": "hv"},
                    name=_METRIC_NAMES.get(column, column),
                    legendgroup="nvml",
                    legendgrouptitle_text="NVML",
                    hovertemplate=f"{_METRIC_NAMES.get(column, column)} %{{y:.4g}} {title}"
                    "<br>at %{x:.1f} ms<extra></extra>",
                ),
                row=index,
                col=1,
            )
        if index > 2:
            fig.update_xaxes(matches=first_metric_axis, row=index, col=1)
    interval = (report.metadata.get("gpu") or {}).get("metrics", {}).get("interval_ms")
    every = f", every {interval:g} ms" if isinstance(interval, (int, float)) else ""
    iterations = report.metadata.get("iterations")
    over = f" ({iterations} inferences)" if iterations else ""
    fig.update_xaxes(
        title_text=f"time since the start of the measured pass{over} (ms); NVML samples{every}",
        row=1 + len(panels),
        col=1,
    )
