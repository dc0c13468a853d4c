"""Comparison of two reports: per-layer time side by side, delta and speed-up."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from nsdl_jupyter.views._plotly import go

if TYPE_CHECKING:
    from nsdl_jupyter.profiling import ProfileReport


def compare_table(a: ProfileReport, b: ProfileReport) -> pd.DataFrame:
    """Per layer: mean ms in a and b, delta (b - a), speed-up (a / b); see ProfileReport.compare."""
    return a.compare(b)


def compare_figure(a: ProfileReport, b: ProfileReport, n: int = 20) -> Any:
    """Grouped bars of the n layers whose time changed most, plus end-to-end p50 of both."""
    graph_objects = go()
    table = a.compare(b)
    matched = table.dropna(subset=["mean_ms_a", "mean_ms_b"]).head(n).iloc[::-1]
    label_a, label_b = table.attrs["a"], table.attrs["b"]
    if label_a == label_b:
        label_a, label_b = f"A: {label_a}", f"B: {label_b}"
    speedup = matched["speedup"].to_numpy()
    fig = graph_objects.Figure()
    fig.add_trace(
        graph_objects.Bar(orientation="h", y=matched["name"], x=matched["mean_ms_a"], name=label_a)
    )
    fig.add_trace(
        graph_objects.Bar(
            orientation="h",
            y=matched["name"],
            x=matched["mean_ms_b"],
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
        xaxis_title="mean time per inference (ms)",
        yaxis={"automargin": True},
        height=max(320, 30 * len(matched) + 140),
        margin={"l": 10, "r": 10, "t": 60, "b": 40},
    )
    return fig
