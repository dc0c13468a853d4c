"""plotly, imported on demand with an install hint; colours shared by all views."""

from __future__ import annotations

from typing import Any

# One colour per category, stable across figures of a session (plotly's D3 + Plotly palettes).
PALETTE = [
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
    "#636efa",
    "#ef553b",
    "#00cc96",
    "#ab63fa",
    "#ffa15a",
    "#19d3f3",
    "#ff6692",
    "#b6e880",
    "#ff97ff",
    "#fecb52",
]
PRECISION_COLOURS = {
    "FP32": "#1f77b4",
    "TF32": "#17becf",
    "FP16": "#2ca02c",
    "BF16": "#bcbd22",
    "FP8": "#ff7f0e",
    "INT8": "#d62728",
    "INT4": "#9467bd",
    "": "#7f7f7f",
}


def go() -> Any:
    """plotly.graph_objects, or an ImportError that says what to install."""
    try:
        from plotly import graph_objects
    except ImportError as exc:
        raise ImportError("the profile views need plotly: pip install plotly") from exc
    return graph_objects


def colour_map(categories: list[str], by: str) -> dict[str, str]:
    if by == "precision":
        return {
            c: PRECISION_COLOURS.get(c, PALETTE[i % len(PALETTE)]) for i, c in enumerate(categories)
        }
    return {c: PALETTE[i % len(PALETTE)] for i, c in enumerate(categories)}
