"""Summary figures of one report: top-N layers, time share by op type, latency distribution."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from nsdl_jupyter.figures._filters import shown, time_column, time_label, time_shares
from nsdl_jupyter.figures._plotly import axis_labels, colour_map, go

if TYPE_CHECKING:
    from nsdl_jupyter.profiling import ProfileReport


def top_layers_figure(
    report: ProfileReport,
    n: int = 15,
    by: str | None = None,
    *,
    times: str | None = None,
    hide_non_compute: bool = False,
) -> Any:
    """Horizontal bars of the n slowest layers per inference, by `by` (default: GPU kernel
    time when the report has it, else the profiler's mean; `times` 'gpu' or 'host' picks);
    whiskers min to max for the profiler's mean. `hide_non_compute` leaves out copies, layout
    reorders and shape-only ops."""
    graph_objects = go()
    colours = colour_map(list(dict.fromkeys(report.layers["op_type"])), "op_type", report)
    by = by or time_column(report, times)
    report = shown(report, hide_non_compute)
    layers = report.layers.assign(_share=time_shares(report, by))
    top = layers.nlargest(n, by).iloc[::-1]
    labels = axis_labels(top["node"])
    # the spread over iterations: min to max (std bars would dip below zero)
    spread = (
        {
            "type": "data",
            "symmetric": False,
            "array": (top["max_ms"] - top[by]).clip(lower=0).fillna(0.0),
            "arrayminus": (top[by] - top["min_ms"]).clip(lower=0).fillna(0.0),
            "visible": True,
        }
        if by == "mean_ms"
        else None
    )
    fig = graph_objects.Figure(
        graph_objects.Bar(
            orientation="h",
            y=top["node"].map(labels),
            x=top[by],
            error_x=spread,
            marker_color=[colours.get(t, "#7f7f7f") for t in top["op_type"]],
            customdata=np.stack(
                [
                    top["op_type"],
                    top["_share"] * 100,
                    top["output_shapes"],
                    top["node"],
                    top["name"],
                ],
                axis=1,
            ),
            hovertemplate="<b>%{customdata[3]}</b><br>%{customdata[0]} (onnxruntime: "
            "%{customdata[4]})<br>%{x:.4f} ms (%{customdata[1]:.1f}%)<br>"
            "out: %{customdata[2]}<extra></extra>",
        )
    )
    label = time_label(report, by)
    fig.update_layout(
        title=f"Top {len(top)} layers by {label}: {report.name}{_hidden_note(report)}",
        xaxis_title=f"{label} per inference (ms)",
        yaxis={"automargin": True},
        height=max(300, 24 * len(top) + 120),
        margin={"l": 10, "r": 10, "t": 50, "b": 40},
    )
    return fig


def op_type_share_figure(
    report: ProfileReport, *, times: str | None = None, hide_non_compute: bool = False
) -> Any:
    """Donut of the time share per op type (layer type for TensorRT), of GPU kernel time when
    the report has it (`times` 'gpu' or 'host' picks)."""
    graph_objects = go()
    colours = colour_map(list(dict.fromkeys(report.layers["op_type"])), "op_type", report)
    column = time_column(report, times)
    report = shown(report, hide_non_compute)
    table = report.by_op_type(column)
    fig = graph_objects.Figure(
        graph_objects.Pie(
            labels=table.index,
            values=table[column],
            hole=0.45,
            marker={"colors": [colours.get(t, "#7f7f7f") for t in table.index]},
            customdata=table["layers"],
            hovertemplate="<b>%{label}</b><br>%{value:.4f} ms per inference (%{percent})<br>"
            "%{customdata} layers<extra></extra>",
            sort=False,
        )
    )
    label = time_label(report, column)
    fig.update_layout(
        title=f"{label[:1].upper()}{label[1:]} by op type: {report.name}{_hidden_note(report)}",
        height=420,
    )
    return fig


def _hidden_note(report: ProfileReport) -> str:
    hidden = report.metadata.get("hidden_non_compute")
    return f" ({hidden} non-compute layers hidden)" if hidden else ""


def latency_figure(report: ProfileReport) -> Any:
    """Histogram of end-to-end latencies with p50/p90/p99 marks; the profiled run times (if
    any) beside them, to show what the profiler adds."""
    graph_objects = go()
    fig = graph_objects.Figure()
    fig.add_trace(
        graph_objects.Histogram(
            x=report.latencies_ms,
            name=f"end-to-end ({report.metadata.get('latency_source', '')})",
            opacity=0.75,
        )
    )
    profiled = report.metadata.get("profiled_run_ms")
    if (
        profiled
        and report.metadata.get("latency_source") != "profiled runs (profiler on: inflated)"
    ):
        fig.add_trace(
            graph_objects.Histogram(x=profiled, name="profiled runs (profiler on)", opacity=0.5)
        )
    stats = report.latency
    # p90 and p99 are often a hair apart: their labels go on separate lines, p50's to the left
    marks = (("p50", "solid", "top left", 0), ("p90", "dash", "top right", 0),
             ("p99", "dot", "top right", -16))  # fmt: skip
    for label, dash, position, shift in marks:
        value = float(stats[label])
        if np.isfinite(value):
            fig.add_vline(
                x=value,
                line_dash=dash,
                annotation_text=f"{label} {value:.3f} ms",
                annotation_position=position,
                annotation_yshift=shift,
            )
    fig.update_layout(
        title=f"Latency over {int(stats['count'])} iterations: {report.name}",
        xaxis_title="latency (ms)",
        yaxis_title="iterations",
        barmode="overlay",
        height=380,
    )
    return fig
