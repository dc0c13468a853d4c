"""ProfileView: a report's timeline and a sortable, filterable layer table, tied to a GraphView.

Built from ipywidgets and a plotly FigureWidget only (no custom JavaScript). Selecting a table
row (or clicking a bar) sets `selected`, outlines the layer's bars in the timeline and selects
its ONNX nodes in the bound GraphView; the per-node time is laid over that GraphView as colours.
"""

from __future__ import annotations

import json
import math
from typing import Any

import ipywidgets as widgets
import traitlets

from nsdl_jupyter._display import html_text, neutralize
from nsdl_jupyter._static_export import StaticPictureMixin
from nsdl_jupyter.profiling import ProfileReport
from nsdl_jupyter.views import (
    latency_figure,
    layers_table,
    op_type_share_figure,
    timeline_figure,
    top_layers_figure,
)

# The Select widget is a <select>: a monospace font keeps the columns aligned.
_STYLE = """<style>
.nsdl-profile-table select { font-family: var(--jp-code-font-family, monospace);
  font-size: var(--jp-code-font-size, 12px); white-space: pre; }
.nsdl-profile-header pre { margin: 0 0 0 4px; font-size: var(--jp-code-font-size, 12px); }
</style>"""
_SORTABLE = {
    "mean time": "mean_ms",
    "median time": "median_ms",
    "max time": "max_ms",
    "share": "share",
    "calls": "calls",
    "start": "start_ms",
    "name": "name",
    "op type": "op_type",
}
_NAME_WIDTH = 56
MAX_TABLE_ROWS = 500  # a <select> with 20k options is sluggish: filter to narrow


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else "…" + text[-(width - 1) :]


def _row_label(row: Any) -> str:
    share = row["share"] * 100 if not math.isnan(row["share"]) else math.nan
    return (
        f"{_cut(row['name'], _NAME_WIDTH):<{_NAME_WIDTH}} {_cut(row['op_type'], 18):<18} "
        f"{row['mean_ms']:>10.4f} {share:>6.1f}% {row['calls']:>6g}  {row['output_shapes']}"
    )


_HEADER = (
    f"{'layer':<{_NAME_WIDTH}} {'op type':<18} {'mean ms':>10} {'share':>7} {'calls':>6}  output"
)


class ProfileView(StaticPictureMixin, widgets.VBox):  # type: ignore[misc]
    """Timeline + layer table (+ summary charts) of a ProfileReport.

    `graph_view`: a GraphView of the same model; rows select its nodes and the per-node time
    is shown on it as a colour overlay.
    """

    selected = traitlets.Unicode("", help="name of the selected layer ('' for none)")
    sort_by = traitlets.Unicode("mean_ms")
    ascending = traitlets.Bool(False)
    filter_text = traitlets.Unicode("")

    def __init__(self, report: ProfileReport, graph_view: Any = None, **kwargs: Any) -> None:
        import plotly.graph_objects as go  # heavy: imported when a view is made

        self.report = report
        self.graph_view = graph_view
        self._syncing = False
        self.timeline = go.FigureWidget(timeline_figure(report))
        for trace in self.timeline.data:
            trace.on_click(self._on_bar_click)

        self._filter = widgets.Text(placeholder="filter by name or op type", description="Filter")
        self._sort = widgets.Dropdown(options=list(_SORTABLE.items()), value="mean_ms",
                                      description="Sort by")  # fmt: skip
        self._ascending = widgets.ToggleButton(value=False, description="ascending",
                                               icon="sort-amount-asc")  # fmt: skip
        self._count = widgets.HTML()
        self._table = widgets.Select(options=[], rows=16, layout=widgets.Layout(width="100%"))
        self._table.add_class("nsdl-profile-table")
        self._details = widgets.HTML()
        header = widgets.HTML(f"<pre>{html_text(_HEADER)}</pre>")
        header.add_class("nsdl-profile-header")
        widgets.link((self._filter, "value"), (self, "filter_text"))
        widgets.link((self._sort, "value"), (self, "sort_by"))
        widgets.link((self._ascending, "value"), (self, "ascending"))
        self._table.observe(self._on_row, names="value")

        charts = widgets.Tab(children=[self._chart(top_layers_figure(report)),
                                       self._chart(op_type_share_figure(report)),
                                       self._chart(latency_figure(report))])  # fmt: skip
        for i, title in enumerate(("Top layers", "By op type", "Latency")):
            charts.set_title(i, title)
        summary = widgets.HTML(
            f"<b>{html_text(report.name)}</b>: "
            + html_text(report.summary().split("\n", 1)[1].replace("\n", " ·"))
        )
        super().__init__(
            children=[
                widgets.HTML(_STYLE),
                summary,
                self.timeline,
                widgets.HBox([self._filter, self._sort, self._ascending, self._count]),
                header,
                self._table,
                self._details,
                charts,
            ],
            **kwargs,
        )
        self.add_class("nsdl-profile-view")
        self._refresh_table()
        if graph_view is not None:
            self.show_overlay()

    @staticmethod
    def _chart(figure: Any) -> widgets.Output:
        """The figure in an Output, as plotly's mime bundle set directly: not `with out:
        figure.show()`, whose capture does not apply in the ActivityPanel's worker thread."""
        import plotly.io as pio  # heavy: imported when a view is made

        out = widgets.Output()
        data = {"application/vnd.plotly.v1+json": {**json.loads(pio.to_json(figure)), "config": {}}}
        out.outputs = ({"output_type": "display_data", "data": data, "metadata": {}},)
        return out

    # ---- table ----------------------------------------------------------------------------

    @traitlets.observe("sort_by", "ascending", "filter_text")
    def _on_table_options(self, _change: dict[str, Any]) -> None:
        self._refresh_table()

    def table(self) -> Any:
        """The rows as shown (sorted and filtered), as a pandas DataFrame."""
        return layers_table(self.report, sort_by=self.sort_by, ascending=self.ascending,
                            filter_text=self.filter_text)  # fmt: skip

    def _refresh_table(self) -> None:
        rows = self.table()
        shown = rows.head(MAX_TABLE_ROWS)
        layers = self.report.layers
        options = [(neutralize(_row_label(layers.loc[i])), int(i)) for i in shown.index]
        self._syncing = True
        try:
            self._table.options = options
            keep = self._index_of(self.selected)
            self._table.value = keep if keep in {o[1] for o in options} else None
        finally:
            self._syncing = False
        more = f" (first {MAX_TABLE_ROWS}: filter to narrow)" if len(rows) > MAX_TABLE_ROWS else ""
        self._count.value = f"{len(rows)} of {len(layers)} layers{more}"

    def _index_of(self, name: str) -> int | None:
        if not name:
            return None
        hits = self.report.layers.index[self.report.layers["name"] == name]
        return int(hits[0]) if len(hits) else None

    def _on_row(self, change: dict[str, Any]) -> None:
        if self._syncing or change["new"] is None:
            return
        self.selected = str(self.report.layers.loc[change["new"], "name"])

    def _on_bar_click(self, trace: Any, points: Any, _selector: Any) -> None:
        if not points.point_inds:
            return
        self.selected = str(trace.customdata[points.point_inds[0]][0])

    # ---- selection ------------------------------------------------------------------------

    @traitlets.validate("selected")
    def _validate_selected(self, proposal: dict[str, Any]) -> str:
        name = str(proposal["value"])
        if name and self._index_of(name) is None:
            raise traitlets.TraitError(f"no layer named {name!r} in this report")
        return name

    @traitlets.observe("selected")
    def _on_selected(self, change: dict[str, Any]) -> None:
        name = change["new"]
        index = self._index_of(name)
        self._syncing = True
        try:
            if index is not None and index in {o[1] for o in self._table.options}:
                self._table.value = index
        finally:
            self._syncing = False
        self._highlight(name)
        self._details.value = self._describe(index)
        self._select_in_graph(index)

    def _highlight(self, name: str) -> None:
        with self.timeline.batch_update():
            for trace in self.timeline.data:
                names = [c[0] for c in trace.customdata] if trace.customdata is not None else []
                trace.marker.line.width = [3 if n == name else 0 for n in names]

    def _describe(self, index: int | None) -> str:
        if index is None:
            return ""
        row = self.report.layers.loc[index]
        fields = [
            ("layer", row["name"]),
            ("op type", row["op_type"]),
            ("provider", row["provider"]),
            ("precision", row["precision"]),
            ("inside", row["parent"]),
            ("mean / median / min / max ms",
             f"{row['mean_ms']:.4f} / {row['median_ms']:.4f} / {row['min_ms']:.4f} / "
             f"{row['max_ms']:.4f}"),
            ("share", f"{row['share'] * 100:.2f}%"),
            ("inputs", row["input_shapes"]),
            ("outputs", row["output_shapes"]),
            ("ONNX nodes", ", ".join(row["onnx_nodes"])),
        ]  # fmt: skip
        cells = "".join(
            f"<tr><th style='text-align:left;padding-right:1em'>{html_text(k)}</th>"
            f"<td style='text-align:left'>{html_text(str(v))}</td></tr>"
            for k, v in fields
            if str(v) not in ("", "nan")
        )
        return f"<table class='nsdl-profile-details'>{cells}</table>"

    def _select_in_graph(self, index: int | None) -> None:
        view = self.graph_view
        if view is None or not hasattr(view, "selected"):
            return
        nodes = list(self.report.layers.loc[index, "onnx_nodes"]) if index is not None else []
        try:
            view.selected = nodes
        except traitlets.TraitError:
            # The node is not in the view's graph any more (edited since the profile).
            view.selected = []

    # ---- graph overlay --------------------------------------------------------------------

    def show_overlay(self, colormap: str = "viridis") -> None:
        """Colour the GraphView's nodes by their mean time per inference."""
        if self.graph_view is None or not hasattr(self.graph_view, "set_overlay"):
            raise ValueError("no GraphView bound: ProfileView(report, graph_view=view)")
        self.graph_view.set_overlay(self.report.node_times(), label="ms per inference",
                                    colormap=colormap)  # fmt: skip

    def clear_overlay(self) -> None:
        if self.graph_view is not None and hasattr(self.graph_view, "clear_overlay"):
            self.graph_view.clear_overlay()
