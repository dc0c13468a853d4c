"""plotly, imported on demand with an install hint; colours shared by all views."""

from __future__ import annotations

import colorsys
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nsdl_jupyter.profiling import ProfileReport

# One colour per category, the same for an op type in every figure of a report. Chosen from
# Tableau 10, D3, Kelly's and the CSS colours so that any two differ by at least 24 in CIE76
# (Lab distance): no two op types in one plot read alike (plotly's D3 + Plotly lists put two
# oranges, two reds and three pinks side by side). Past its end, colours are made by hue.
PALETTE = [
    "#4e79a7",
    "#f28e2b",
    "#e15759",
    "#76b7b2",
    "#59a14f",
    "#edc948",
    "#b07aa1",
    "#ff9da7",
    "#9c755f",
    "#bab0ac",
    "#9467bd",
    "#e377c2",
    "#a1caf1",
    "#c2b280",
    "#b3446c",
    "#882d17",
    "#8db600",
    "#e25822",
    "#2b3d26",
    "#000080",
    "#808000",
    "#ff00ff",
    "#006400",
    "#00ff7f",
    "#1e90ff",
    "#ff1493",
    "#7fffd4",
    "#556b2f",
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


def colour_map(
    categories: list[str], by: str, report: ProfileReport | None = None
) -> dict[str, str]:
    """A colour per category. Op types take their colour from the whole `report` (its
    layers' op types in order of first run), so every view of it, filtered or not, gives an
    op type the same colour."""
    if by == "precision":
        return {c: PRECISION_COLOURS.get(c, palette_colour(i)) for i, c in enumerate(categories)}
    order = list(dict.fromkeys(report.layers["op_type"].astype(str))) if report else []
    order += [c for c in categories if c not in set(order)]
    index = {c: i for i, c in enumerate(order)}
    return {c: palette_colour(index[c]) for c in categories}


def palette_colour(index: int) -> str:
    """The `index`-th colour: PALETTE, then hues a golden angle apart at two lightnesses."""
    if index < len(PALETTE):
        return PALETTE[index]
    extra = index - len(PALETTE)
    hue = (extra * 137.508) % 360
    lightness = 0.42 if extra % 2 else 0.62
    red, green, blue = colorsys.hls_to_rgb(hue / 360, lightness, 0.75)
    return f"#{round(red * 255):02x}{round(green * 255):02x}{round(blue * 255):02x}"


# Category labels longer than this are cut (the full text is in the hover), so that a long
# module path does not squeeze the plot to a sliver beside it.
LABEL_WIDTH = 40
# Room above a plot whose x axis is on top: the title, the modebar at its right (clear of the
# ticks), then the axis title and the tick labels.
TOP_AXIS_MARGIN = 110


def axis_labels(names: Iterable[object], width: int = LABEL_WIDTH) -> dict[object, str]:
    """Each name as an axis shows it: at most `width` characters, the start cut to "…" (the
    end of a module path names the node), still unique (a category axis merges equal ones)."""
    labels: dict[object, str] = {}
    used: set[str] = set()
    for name in names:
        text = str(name)
        short = text if len(text) <= width else "…" + text[-(width - 1) :]
        number = 2
        label = short
        while label in used:
            suffix = f" #{number}"
            label = (
                "…" + text[-(width - 1 - len(suffix)) :] + suffix
                if len(text) > width
                else text + suffix
            )
            number += 1
        used.add(label)
        labels[name] = label
    return labels


def title_above_axis(text: str) -> dict[str, Any]:
    """A figure title at the top of the figure, left, in the margin above a top x axis (its
    default place, in the plot's top margin, lands on the axis title)."""
    return {
        "text": text,
        "x": 0.01,
        "xanchor": "left",
        "y": 1,
        "yref": "container",
        "yanchor": "top",
        "pad": {"t": 8},
    }
