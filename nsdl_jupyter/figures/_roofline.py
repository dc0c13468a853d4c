"""The roofline chart of one report: a point per layer under the GPU's measured roofs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from nsdl_jupyter.figures._plotly import colour_map, go

if TYPE_CHECKING:
    from nsdl_jupyter.profiling import ProfileReport

_ROOF_DASH = {"float32": "solid", "tf32": "dash", "float16": "dot", "bfloat16": "dashdot"}


def roofline_figure(report: ProfileReport, model: Any = None, **kwargs: Any) -> Any:
    """Log-log roofline: x arithmetic intensity (FLOP/byte), y achieved FLOP/s, one point per
    layer with FLOPs, sized by time and coloured by op type; a roof per measured dtype
    (min(peak FLOP/s, intensity x bandwidth)). Hover names the ONNX nodes, % of roof, bound.
    Keywords as `ProfileReport.roofline_table` (model, inputs, peaks, latency_pct)."""
    graph_objects = go()
    table = report.roofline_table(model, **kwargs)
    peaks = table.attrs.get("peaks")
    points = table[(table["flops"] > 0) & np.isfinite(table["intensity"])]
    skipped = len(table) - len(points)
    colours = colour_map(list(dict.fromkeys(table["op_type"])), "op_type", report)
    node_of = report.layers.drop_duplicates("name").set_index("name")["node"]
    fig = graph_objects.Figure()
    biggest = float(points["time_ms"].max()) if len(points) else 1.0
    for op_type, rows in points.groupby("op_type", sort=False):
        nodes = [", ".join(n[:4]) + (f" (+{len(n) - 4})" if len(n) > 4 else "")
                 for n in rows["onnx_nodes"]]  # fmt: skip
        fig.add_trace(
            graph_objects.Scatter(
                x=rows["intensity"],
                y=rows["achieved_flops_per_s"],
                mode="markers",
                name=str(op_type),
                marker={
                    "size": 6 + 30 * np.sqrt(rows["time_ms"] / biggest),
                    "color": colours.get(str(op_type), "#7f7f7f"),
                    "line": {"width": 0.5, "color": "#333"},
                },
                customdata=np.stack(
                    [
                        rows["name"].map(node_of).fillna(rows["name"]),
                        nodes,
                        rows["time_ms"],
                        rows["pct_of_roof"],
                        rows["bound"],
                        rows["roof_dtype"],
                    ],
                    axis=1,
                ),
                hovertemplate="<b>%{customdata[0]}</b><br>nodes: %{customdata[1]}<br>"
                "%{customdata[2]:.4f} ms, %{x:.2f} FLOP/byte, %{y:.3s}FLOP/s<br>"
                "%{customdata[3]:.0f}% of the %{customdata[5]} roof, %{customdata[4]}-bound"
                "<extra></extra>",
            )
        )
    if peaks is not None:
        _draw_roofs(fig, graph_objects, peaks, points)
    gpu = (
        f" on {peaks.get('gpu', 'the GPU')}"
        if peaks
        else f" ({table.attrs.get('note') or 'no roofs'})"
    )
    note = f"; {skipped} layers without FLOPs not drawn" if skipped else ""
    fig.update_layout(
        title=f"Roofline{gpu}: {report.name}{note}",
        xaxis={"type": "log", "title": "arithmetic intensity (FLOP/byte)"},
        yaxis={"type": "log", "title": "achieved FLOP/s"},
        height=520,
        legend={"title": "op type / roof"},
    )
    return fig


def _draw_roofs(fig: Any, graph_objects: Any, peaks: dict[str, Any], points: Any) -> None:
    bandwidth = float(peaks["bytes_per_s"])
    low = float(points["intensity"].min()) / 4 if len(points) else 0.1
    high = float(points["intensity"].max()) * 4 if len(points) else 1e4
    for dtype, peak in peaks["flops_per_s"].items():
        ridge = peak / bandwidth
        x = np.array([min(low, ridge / 10), ridge, max(high, ridge * 10)])
        fig.add_trace(
            graph_objects.Scatter(
                x=x,
                y=np.minimum(peak, x * bandwidth),
                mode="lines",
                name=f"{dtype} roof",
                line={"color": "#444", "width": 1.5, "dash": _ROOF_DASH.get(dtype, "longdash")},
                hovertemplate=f"{dtype}: {peak / 1e12:.1f} TFLOP/s, "
                f"{bandwidth / 1e12:.2f} TB/s, ridge {ridge:.1f} FLOP/byte<extra></extra>",
            )
        )
