"""Comparison of two reports: per-layer time side by side, delta and speed-up."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from nsdl_jupyter.figures._errors import FigureError
from nsdl_jupyter.figures._filters import shown, time_label
from nsdl_jupyter.figures._plotly import go

if TYPE_CHECKING:
    from nsdl_jupyter.profiling import ProfileReport


def _column(a: ProfileReport, b: ProfileReport, times: str | None) -> str | None:
    if times is None:
        return None  # ProfileReport.compare: GPU time when both have it
    if times == "host":
        return "mean_ms"
    if times == "gpu":
        if not (a.has_gpu_times and b.has_gpu_times):
            missing = a.name if not a.has_gpu_times else b.name
            raise FigureError(f"times='gpu': {missing} has no per-layer GPU times")
        return "gpu_ms"
    raise FigureError(f"times={times!r}: use 'gpu', 'host' or None (GPU when both have it)")


def compare_table(
    a: ProfileReport,
    b: ProfileReport,
    *,
    times: str | None = None,
    hide_non_compute: bool = False,
    by: str | None = None,
) -> pd.DataFrame:
    """Per layer: time in a and b (GPU kernel time when both reports have it; `times` 'gpu'
    or 'host' picks), delta (b - a), speed-up (a / b); `by` 'name' or 'onnx_node' (default:
    per ONNX node when the runtimes differ); see ProfileReport.compare."""
    column = _column(a, b, times)
    return shown(a, hide_non_compute).compare(shown(b, hide_non_compute), column, by=by)


def compare_figure(
    a: ProfileReport,
    b: ProfileReport,
    n: int = 20,
    *,
    times: str | None = None,
    hide_non_compute: bool = False,
    by: str | None = None,
) -> Any:
    """Grouped bars of the n layers (or ONNX node groups, `by`) whose time changed most, plus
    end-to-end p50 of both."""
    graph_objects = go()
    table = compare_table(a, b, times=times, hide_non_compute=hide_non_compute, by=by)
    column = table.attrs["column"]
    col_a, col_b = f"{column}_a", f"{column}_b"
    matched = table.dropna(subset=[col_a, col_b]).head(n).iloc[::-1]
    label_a, label_b = table.attrs["a"], table.attrs["b"]
    if label_a == label_b:
        label_a, label_b = f"A: {label_a}", f"B: {label_b}"
    speedup = matched["speedup"].to_numpy()
    fig = graph_objects.Figure()
    fig.add_trace(
        graph_objects.Bar(orientation="h", y=matched["name"], x=matched[col_a], name=label_a)
    )
    fig.add_trace(
        graph_objects.Bar(
            orientation="h",
            y=matched["name"],
            x=matched[col_b],
            name=label_b,
            customdata=np.stack([matched["delta_ms"], speedup], axis=1) if len(matched) else None,
            hovertemplate="<b>%{y}</b><br>%{x:.4f} ms<br>delta %{customdata[0]:+.4f} ms<br>"
            "speed-up %{customdata[1]:.2f}x<extra></extra>",
        )
    )
    attrs = table.attrs
    fig.update_layout(
        title=(
            f"{label_a} vs {label_b}: end-to-end p50 {attrs['p50_ms_a']:.3f} -> "
            f"{attrs['p50_ms_b']:.3f} ms (speed-up {attrs['speedup_p50']:.2f}x); "
            f"{attrs['matched_layers']} layers matched"
        ),
        barmode="group",
        xaxis_title=f"{time_label(a, column)} per inference (ms)",
        yaxis={"automargin": True},
        height=max(320, 30 * len(matched) + 140),
        margin={"l": 10, "r": 10, "t": 60, "b": 40},
    )
    return fig
