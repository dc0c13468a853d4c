"""Figures of a sweep: a metric against the swept axis (one line per combination of the other
axes), and per-layer time across configurations as a heatmap."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pandas as pd

from nsdl_jupyter.figures._errors import FigureError
from nsdl_jupyter.figures._plotly import go
from nsdl_jupyter.sweeps import where_label

if TYPE_CHECKING:
    from nsdl_jupyter.sweeps import SweepResult

_LABELS = {
    "p50_ms": "latency p50 (ms)",
    "p90_ms": "latency p90 (ms)",
    "p99_ms": "latency p99 (ms)",
    "mean_ms": "mean latency (ms)",
    "throughput_per_s": "throughput (samples/s)",
    "gpu_busy_ms": "GPU busy per inference (ms)",
    "memory_mb": "GPU memory (MB)",
    "build_s": "engine build (s)",
}


def _x_axis(result: SweepResult, x: str | None) -> str:
    if x is not None:
        if x not in result.frame:
            raise FigureError(f"x={x!r}: use one of the swept axes {result.axes}")
        return x
    varied = [a for a in result.axes if result.frame[a].nunique(dropna=False) > 1]
    numeric = [a for a in varied if pd.api.types.is_numeric_dtype(result.frame[a])]
    if numeric or varied:
        return (numeric or varied)[0]
    return result.axes[0] if result.axes else "backend"


def sweep_figure(result: SweepResult, metric: str = "p50_ms", x: str | None = None) -> Any:
    """`metric` of the finished rows against axis `x`, one line per combination of the other
    varied axes (and targets); failed configurations are left out (see `result.frame`)."""
    if metric not in result.frame:
        raise FigureError(f"metric={metric!r} is not a column of the sweep")
    graph_objects = go()
    x = _x_axis(result, x)
    rows = result.ok.sort_values(x)
    others = [
        a for a in [*result.axes, "target"]
        if a != x and a in rows and rows[a].nunique(dropna=False) > 1
    ]  # fmt: skip
    if "target" in others:  # each machine named with its GPU, driver and runtime
        rows = rows.assign(target=[where_label(r) for r in rows.to_dict("records")])
    fig = graph_objects.Figure()
    groups = rows.groupby(others, dropna=False, sort=False) if others else [((), rows)]
    for group_key, group in groups:
        values = group_key if isinstance(group_key, tuple) else (group_key,)
        name = ", ".join(f"{a}={v}" for a, v in zip(others, values, strict=True)) or metric
        fig.add_trace(
            graph_objects.Scatter(
                x=group[x].astype(str) if group[x].dtype == object else group[x],
                y=group[metric],
                mode="lines+markers",
                name=name,
                hovertemplate=f"{name}<br>{x}=%{{x}}<br>%{{y:.4g}}<extra></extra>",
            )
        )
    fig.update_layout(
        title=f"{_LABELS.get(metric, metric)} by {x}",
        xaxis_title=x,
        yaxis_title=_LABELS.get(metric, metric),
        legend_title=", ".join(others),
        template="plotly_white",
    )
    return fig


def sweep_heatmap(result: SweepResult, column: str | None = None, top: int = 30) -> Any:
    """Per-layer time (ms) of the `top` layers (by total time over the configurations), one
    column per finished configuration: which layers change with precision or batch."""
    graph_objects = go()
    times = result.layer_times(column)
    if times.empty:
        raise FigureError("the sweep has no finished configuration to draw")
    times = times.loc[times.sum(axis=1).nlargest(top).index]
    fig = graph_objects.Figure(
        graph_objects.Heatmap(
            z=times.to_numpy(),
            x=list(times.columns),
            y=list(times.index),
            colorscale="Viridis",
            colorbar={"title": "ms"},
            hovertemplate="%{y}<br>%{x}<br>%{z:.4f} ms<extra></extra>",
        )
    )
    fig.update_layout(
        title=f"per-layer time across configurations (top {len(times)} layers)",
        yaxis={"autorange": "reversed"},
        height=max(300, 18 * len(times) + 150),
        template="plotly_white",
    )
    return fig
