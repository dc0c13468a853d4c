"""Timeline of one inference: one horizontal bar per layer at its start, as long as it ran."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from nsdl_jupyter.views._plotly import colour_map, go

if TYPE_CHECKING:
    from nsdl_jupyter.profiling import ProfileReport

# Beyond this many layers one row per layer is unreadable: rows become op types.
MAX_LAYER_ROWS = 400


def _default_colour(report: ProfileReport) -> str:
    events = report.timeline_events
    return "precision" if (events["precision"] != "").any() else "op_type"


def timeline_figure(
    report: ProfileReport,
    *,
    color_by: str | None = None,
    rows: str | None = None,
    highlight: str | None = None,
    title: str | None = None,
) -> Any:
    """A plotly Figure of the report's representative inference.

    `color_by`: 'op_type' (default) or 'precision' (default for TensorRT reports) or any
    timeline column; `rows`: 'layer' (one row per layer, the default up to 400 layers) or
    'op_type' (one lane per op type, for big models); `highlight`: a layer name drawn outlined.
    Hover shows the layer, op type, start, duration, self time and shapes.
    """
    graph_objects = go()
    events = report.timeline_events
    color_by = color_by or _default_colour(report)
    if color_by not in events:
        raise ValueError(f"color_by={color_by!r}: use one of {list(events.columns)}")
    n_layers = events["name"].nunique()
    rows = rows or ("layer" if n_layers <= MAX_LAYER_ROWS else "op_type")
    if rows not in ("layer", "op_type"):
        raise ValueError(f"rows={rows!r}: use 'layer' or 'op_type'")
    row_key = "name" if rows == "layer" else "op_type"
    categories = [str(c) for c in pd.unique(events[color_by])]
    colours = colour_map(categories, color_by)
    # Rows top to bottom in order of first start.
    order = list(pd.unique(events.sort_values("start_ms")[row_key]))
    fig = graph_objects.Figure()
    hover = (
        "<b>%{customdata[0]}</b><br>%{customdata[1]}<br>start %{base:.4f} ms<br>"
        "duration %{x:.4f} ms (self %{customdata[2]:.4f} ms)<br>in: %{customdata[3]}<br>"
        "out: %{customdata[4]}<extra></extra>"
    )
    for category in categories:
        part = events[events[color_by].astype(str) == category]
        custom = (
            np.stack(
                [
                    part["name"],
                    part["op_type"],
                    part["self_ms"],
                    part["input_shapes"],
                    part["output_shapes"],
                ],
                axis=1,
            )
            if len(part)
            else np.empty((0, 5))
        )
        line_width = [2 if highlight is not None and n == highlight else 0 for n in part["name"]]
        fig.add_trace(
            graph_objects.Bar(
                name=category or "(none)",
                orientation="h",
                y=part[row_key],
                x=part["duration_ms"].clip(lower=1e-4),
                base=part["start_ms"],
                marker={
                    "color": colours[category],
                    "line": {"width": line_width, "color": "black"},
                },
                customdata=custom,
                hovertemplate=hover,
            )
        )
    height = int(min(max(len(order) * 14 + 140, 320), 1400))
    model = report.metadata.get("model_name", "")
    fig.update_layout(
        title=title or f"{model}: one inference ({report.name.split(' ', 1)[-1]})",
        barmode="overlay",
        height=height,
        xaxis_title="time since the start of the run (ms)",
        yaxis={"categoryorder": "array", "categoryarray": order[::-1], "automargin": True},
        legend_title_text=color_by,
        margin={"l": 10, "r": 10, "t": 50, "b": 40},
    )
    note = report.metadata.get("timeline_note")
    if note:
        fig.add_annotation(
            text=str(note),
            xref="paper",
            yref="paper",
            x=0,
            y=1.0,
            yanchor="bottom",
            showarrow=False,
            font={"size": 10},
        )
    return fig
