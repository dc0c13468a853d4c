"""The static picture of a GraphView: its last drawing as inline SVG (drawn by the one SVG
renderer, `nsdl_jupyter.graph._svg`), in a scroll box with the overlay legend and a caption."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from nsdl_jupyter._display import html_text as _e
from nsdl_jupyter.graph import KIND_FRAME, VOCABULARY, GraphScene, Overlay, scene_svg

MAX_PICTURE_BOXES = 3000  # about 1.5 MB of SVG


def overlay_of(meta: Mapping[str, Any], raw: bytes) -> Overlay | None:
    """The overlay a GraphView holds (its `_overlay` meta and little-endian float32 values)."""
    if not meta or not raw:
        return None
    return Overlay(
        np.frombuffer(raw, dtype="<f4"),
        str(meta.get("colormap", "viridis")),
        float(meta.get("min", 0.0)),
        float(meta.get("max", 1.0)),
    )


def legend_html(overlay: Mapping[str, Any]) -> str:
    maps = VOCABULARY["colormaps"]
    stops = ", ".join(maps.get(str(overlay.get("colormap")), maps["viridis"]))
    low, high = float(overlay.get("min", 0.0)), float(overlay.get("max", 1.0))
    return (
        '<div class="nsdl-static-legend" style="display:flex;align-items:center;gap:6px;'
        'font-size:12px;margin:4px 0">'
        f"<span>{_e(overlay.get('label') or 'value')}</span><span>{low:.4g}</span>"
        f'<span style="display:inline-block;width:160px;height:10px;border-radius:2px;'
        f'background:linear-gradient(to right, {stops})"></span><span>{high:.4g}</span></div>'
    )


# Optional: where scripts run, bring the selection into view as the live widget does; the
# picture itself needs no JavaScript.
_SCROLL_TO_SELECTION = (
    "<script>(function (s) { var box = s && s.previousElementSibling;"
    " var hit = box && box.querySelector('.nsdl-selected'); if (!hit) return;"
    " var b = box.getBoundingClientRect(), r = hit.getBoundingClientRect();"
    " box.scrollLeft += r.left - b.left - (b.width - r.width) / 2;"
    " box.scrollTop += r.top - b.top - (b.height - r.height) / 2;"
    " })(document.currentScript);</script>"
)


@dataclass(frozen=True)
class GraphViewState:
    """What a GraphView shows now, as its static picture needs it (`GraphView.picture_state()`)."""

    scene: GraphScene
    selected: tuple[str, ...]
    marks: Mapping[str, str]
    overlay: Mapping[str, Any]
    overlay_values: bytes  # little-endian float32, one per overlay key
    show_grid: bool
    height: int
    precisions: Mapping[str, str] = field(default_factory=dict)  # node -> TensorRT precision


def graph_view_html(view: GraphViewState) -> str:
    """What a GraphView shows now, as HTML that needs no JavaScript: the SVG in a scroll box of
    the widget's height, the overlay legend and a one-line caption."""
    scene = view.scene
    overlay = dict(view.overlay)
    paint = overlay_of(overlay, bytes(view.overlay_values or b""))
    result = scene.layout()
    boxes = int((result.kinds != KIND_FRAME).sum())
    note = ""
    if boxes > MAX_PICTURE_BOXES:
        # tens of thousands of open boxes make a picture of many megabytes that nobody reads:
        # draw the default overview (big groups closed) and say so
        result = scene.engine.layout(
            scene.default_expanded(), scene.direction, scene.show_constants
        )
        note = f" · {boxes} boxes are open in the view, the picture shows groups closed"
    svg = scene_svg(
        scene,
        result=result,
        selected=list(view.selected),
        marks=dict(view.marks),
        overlay=paint,
        grid=bool(view.show_grid),
        precisions=dict(view.precisions),
    )
    natural = float(svg.split('width="', 1)[1].split('"', 1)[0])
    # fit the width when that keeps 3/4 of the size (text stays readable), else scroll
    style = f"width:max(100%, {natural * 0.75:.0f}px);max-width:{natural:.0f}px;height:auto"
    svg = svg.replace("<svg ", f'<svg style="{style}" ', 1)
    nodes = sum(1 for item in scene.table.items if item.alive and item.is_node)
    caption = f"{nodes} nodes"
    if view.selected:
        caption += " · selected: " + ", ".join(view.selected[:5])
        caption += " …" if len(view.selected) > 5 else ""
    caption += note
    return (
        '<div class="nsdl-static-graph">'
        f'<div style="max-height:{int(view.height)}px;overflow:auto;border:1px solid #d0d7de;'
        f'border-radius:4px;background:#fff">{svg}</div>'
        + (_SCROLL_TO_SELECTION if view.selected else "")
        + (legend_html(overlay) if paint is not None else "")
        + f'<div class="nsdl-static-caption">{_e(caption)} · static picture of the graph '
        "(interactive in Jupyter)</div></div>"
    )
