"""ProfileView: a report's timeline and a sortable, filterable layer table, tied to a GraphView.

Built from ipywidgets and a plotly FigureWidget only (no custom JavaScript). Selecting a table
row (or clicking a bar) sets `selected`, outlines the layer's bars in the timeline, selects
its ONNX nodes in the bound GraphView and opens the table of its GPU kernels; the per-node
time is laid over that GraphView as colours. With GPU kernel times everything shows GPU time,
with a switch to the profiler's host times (`times`); `hide_non_compute` leaves out copies,
layout reorders and shape-only ops.
"""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING, Any

import ipywidgets as widgets
import traitlets

from nsdl_jupyter._display import html_text, neutralize
from nsdl_jupyter._errors import NsdlError
from nsdl_jupyter._static_export import StaticPictureMixin
from nsdl_jupyter.figures import (
    compute_only,
    kernels_table,
    latency_figure,
    layers_table,
    op_type_share_figure,
    time_column,
    time_label,
    time_shares,
    timeline_figure,
    top_layers_figure,
)
from nsdl_jupyter.profiling import ProfileReport
from nsdl_jupyter.widgets._errors import WidgetError
from nsdl_jupyter.widgets._main_shell import MainShellBox
from nsdl_jupyter.widgets._options import BoxOptions, check_options

if TYPE_CHECKING:
    from typing_extensions import Unpack  # typing.Unpack from Python 3.11

# The Select widget is a <select>: a monospace font keeps the columns aligned.
_STYLE = """<style>
.nsdl-profile-table select { font-family: var(--jp-code-font-family, monospace);
  font-size: var(--jp-code-font-size, 12px); white-space: pre; }
.nsdl-profile-header pre { margin: 0 0 0 4px; font-size: var(--jp-code-font-size, 12px);
  white-space: pre; overflow: hidden; }
.nsdl-profile-kernels td, .nsdl-profile-kernels th { padding: 0 6px; text-align: right; }
.nsdl-profile-kernels td.nsdl-kernel-name { text-align: left;
  font-family: var(--jp-code-font-family, monospace); }
.nsdl-profile-gpu-warning { color: #9a6700; }
</style>"""
_GPU_SORTABLE = {"GPU time": "gpu_ms", "kernels": "kernels"}
_SORTABLE = {
    "host time": "mean_ms",
    "median time": "median_ms",
    "max time": "max_ms",
    "share": "share",
    "calls": "calls",
    "start": "start_ms",
    "model node": "node",
    "onnxruntime name": "name",
    "op type": "op_type",
}
_NAME_WIDTH = 56
_KEYWORDS = ("graph_view", "times", "hide_non_compute", "colour_by", "model")
# The overlay's "colour by" choices, and the numbers that stand for each bound on its scale.
COLOUR_BY = {"time": "time", "% of roof": "pct_of_roof", "bound": "bound"}
BOUND_CODES = {"latency": 0.0, "memory": 1.0, "compute": 2.0}
MAX_TABLE_ROWS = 500  # a <select> with 20k options is sluggish: filter to narrow


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else "…" + text[-(width - 1) :]


MAX_KERNEL_ROWS = 200
_KERNEL_NAME_WIDTH = 56


def _row_label(row: Any, column: str, share: float) -> str:
    share = share * 100 if not math.isnan(share) else math.nan
    return (
        f"{_cut(row['node'], _NAME_WIDTH):<{_NAME_WIDTH}} {_cut(row['op_type'], 18):<18} "
        f"{row[column]:>10.4f} {share:>6.1f}% {row['calls']:>6g}  {row['output_shapes']}"
    )


def _header(column: str) -> str:
    unit = "GPU ms" if column == "gpu_ms" else "mean ms"
    return (
        f"{'model node':<{_NAME_WIDTH}} {'op type':<18} {unit:>10} {'share':>7} {'calls':>6}"
        "  output"
    )


def _kernels_html(table: Any, layer: str) -> str:
    """The kernels of `layer` as an HTML table (every text escaped)."""
    if table.empty:
        return f"<i>no GPU kernels ran for {html_text(layer)}</i>"
    head = "".join(
        f"<th>{html_text(h)}</th>"
        for h in ("kernel", "grid", "block", "stream", "launches", "mean ms", "total ms", "share")
    )
    body = []
    for _, k in table.head(MAX_KERNEL_ROWS).iterrows():
        name = str(k["kernel"])
        body.append(
            f"<tr><td class='nsdl-kernel-name' title='{html_text(name)}'>"
            f"{html_text(_cut_end(name, _KERNEL_NAME_WIDTH))}</td>"
            f"<td>{html_text(k['grid'])}</td><td>{html_text(k['block'])}</td>"
            f"<td>{html_text(k['stream'])}</td><td>{k['calls']:g}</td>"
            f"<td>{k['mean_ms']:.4f}</td><td>{k['total_ms']:.4f}</td>"
            f"<td>{k['share'] * 100:.1f}%</td></tr>"
        )
    more = len(table) - MAX_KERNEL_ROWS
    tail = f"<p><i>and {more} more kernels</i></p>" if more > 0 else ""
    table = f"<table class='nsdl-profile-kernels'><tr>{head}</tr>{''.join(body)}</table>"
    return f"<div style='overflow-x:auto'>{table}{tail}</div>"


def _cut_end(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _summary_html(report: ProfileReport) -> str:
    """Name, runtime, device and latency on one line; the GPU rows (busy/idle, clocks, why
    there are no GPU times) on the next, warnings marked; the timing note last."""
    gpu = report.gpu_summary()
    gpu_lines = {f"  {label}: {text}" for label, text in gpu}
    note = str(report.metadata.get("timing_note") or "")
    lines = [
        line.strip()
        for line in report.summary().split("\n")[1:]
        if line not in gpu_lines and not line.startswith("  note:")
    ]
    html = f"<b>{html_text(report.name)}</b>: " + html_text(" · ".join(lines))
    if gpu:
        cells = []
        for label, text in gpu:
            warn = "unavailable" in text or "warning" in text or "not locked" in text
            style = " class='nsdl-profile-gpu-warning'" if warn else ""
            cells.append(f"<span{style}><b>{html_text(label)}</b>: {html_text(text)}</span>")
        html += "<br>" + " · ".join(cells)
    if note:
        html += f"<br><small><i>{html_text(note)}</i></small>"
    return html


class ProfileView(StaticPictureMixin, MainShellBox, widgets.VBox):  # type: ignore[misc]
    """Timeline + layer table (+ kernel table and summary charts) of a ProfileReport.

    `graph_view`: a GraphView of the same model; rows select its nodes and the per-node time
    is shown on it as a colour overlay. `times`: 'gpu' (kernel times, the default when the
    report has them) or 'host'; `hide_non_compute`: leave out copies, layout reorders and
    shape-only ops. `colour_by`: what the overlay shows, 'time', 'pct_of_roof' (achieved % of
    the layer's roof) or 'bound' (latency / memory / compute, from ncu counters where
    measured); the last two read the roofline of `model` (default: the report's model file).
    """

    selected = traitlets.Unicode("", help="name of the selected layer ('' for none)")
    sort_by = traitlets.Unicode("mean_ms")
    ascending = traitlets.Bool(False)
    filter_text = traitlets.Unicode("")
    times = traitlets.Unicode("host", help="'gpu' (kernel times) or 'host' (profiler times)")
    hide_non_compute = traitlets.Bool(False, help="leave out copies, reorders, shape-only ops")
    colour_by = traitlets.Unicode("time", help="overlay colours: 'time', 'pct_of_roof', 'bound'")

    def __init__(
        self,
        report: ProfileReport,
        graph_view: Any = None,
        *,
        times: str | None = None,
        hide_non_compute: bool = False,
        colour_by: str = "time",
        model: Any = None,
        **box: Unpack[BoxOptions],
    ) -> None:
        check_options("ProfileView", box, BoxOptions, _KEYWORDS)
        self.report = report
        self.graph_view = graph_view
        self.model = model
        self._roofline: Any = None
        self._syncing = False
        self._overlay_shown = False
        gpu = report.has_gpu_times
        time_column(report, times)  # a ValueError for times='gpu' without GPU times
        self.set_trait("times", times or ("gpu" if gpu else "host"))
        self.set_trait("hide_non_compute", bool(hide_non_compute))
        self.colour_by = colour_by  # validated: the roofline is read now when asked for
        self.set_trait("sort_by", self._column)
        self.timeline = self._timeline_widget()

        self._times = widgets.ToggleButtons(
            options=[("GPU time", "gpu"), ("host time", "host")],
            value=self.times,
            tooltips=["kernel time on the GPU (CUPTI)",
                      "onnxruntime's per-node host time (a sync after each node)"],
            layout=widgets.Layout(display=None if gpu else "none"),
        )  # fmt: skip
        self._times.add_class("nsdl-profile-times")
        self._hide = widgets.Checkbox(
            self.hide_non_compute,
            description="hide non-compute (copies, reorders, shape ops)",
            indent=False,
            layout=widgets.Layout(width="auto"),
        )
        self._hide.add_class("nsdl-profile-hide-non-compute")
        self._colour = self._colour_control()
        self._filter = widgets.Text(placeholder="filter by node, name or op type",
                                    description="Filter")  # fmt: skip
        sortable = {**(_GPU_SORTABLE if gpu else {}), **_SORTABLE}
        self._sort = widgets.Dropdown(options=list(sortable.items()), value=self.sort_by,
                                      description="Sort by")  # fmt: skip
        self._ascending = widgets.ToggleButton(value=self.ascending)
        self._show_order(self.ascending)
        self._count = widgets.HTML()
        self._table = widgets.Select(options=[], rows=16, layout=widgets.Layout(width="100%"))
        self._table.add_class("nsdl-profile-table")
        self._details = widgets.HTML()
        self._kernels = widgets.HTML()
        self._kernel_box = widgets.Accordion(
            children=[self._kernels], selected_index=None,
            layout=widgets.Layout(display=None if not report.kernels.empty else "none"),
        )  # fmt: skip
        self._kernel_box.set_title(0, "GPU kernels of the selected layer")
        self._kernel_box.add_class("nsdl-profile-kernels-box")
        self._header = widgets.HTML()
        self._header.add_class("nsdl-profile-header")
        widgets.link((self._times, "value"), (self, "times"))
        widgets.link((self._hide, "value"), (self, "hide_non_compute"))
        widgets.link((self._colour, "value"), (self, "colour_by"))
        widgets.link((self._filter, "value"), (self, "filter_text"))
        widgets.link((self._sort, "value"), (self, "sort_by"))
        widgets.link((self._ascending, "value"), (self, "ascending"))
        self._table.observe(self._on_row, names="value")

        self._charts = [widgets.Output() for _ in range(3)]
        charts = widgets.Tab(children=self._charts)
        for i, title in enumerate(("Top layers", "By op type", "Latency")):
            charts.set_title(i, title)
        self._draw_charts()
        super().__init__(
            children=[
                widgets.HTML(_STYLE),
                widgets.HTML(_summary_html(report)),
                widgets.HBox([self._times, self._hide, self._colour]),
                self.timeline,
                widgets.HBox([self._filter, self._sort, self._ascending, self._count]),
                self._header,
                self._table,
                self._details,
                self._kernel_box,
                charts,
            ],
            **box,
        )
        self.add_class("nsdl-profile-view")
        self._refresh_table()
        if graph_view is not None:
            self.show_overlay()

    def _colour_control(self) -> widgets.Dropdown:
        """The overlay's "Colour by" choice, shown when a GraphView is bound."""
        control = widgets.Dropdown(
            options=list(COLOUR_BY.items()), value=self.colour_by, description="Colour by",
            layout=widgets.Layout(display=None if self.graph_view is not None else "none"),
        )  # fmt: skip
        control.add_class("nsdl-profile-colour-by")
        return control

    @property
    def _column(self) -> str:
        return time_column(self.report, self.times)

    def _timeline_widget(self) -> Any:
        # plotly is heavy: imported when a view is made
        from nsdl_jupyter.widgets.profile._figure_widget import FigureWidget

        figure = FigureWidget(
            timeline_figure(self.report, times=self.times, highlight=self.selected or None,
                            hide_non_compute=self.hide_non_compute),
            classes=["nsdl-profile-timeline"],
        )  # fmt: skip
        for trace in figure.data:
            if trace.type == "bar":
                trace.on_click(self._on_bar_click)
        return figure

    def _draw_charts(self) -> None:
        times, hide = self.times, self.hide_non_compute
        figures = (top_layers_figure(self.report, times=times, hide_non_compute=hide),
                   op_type_share_figure(self.report, times=times, hide_non_compute=hide),
                   latency_figure(self.report))  # fmt: skip
        for out, figure in zip(self._charts, figures, strict=True):
            self._set_chart(out, figure)

    @staticmethod
    def _set_chart(out: widgets.Output, figure: Any) -> None:
        """The figure in an Output, as plotly's mime bundle set directly: not `with out:
        figure.show()`, whose capture does not apply in the ActivityPanel's worker thread."""
        import plotly.io as pio  # heavy: imported when a view is made

        data = {"application/vnd.plotly.v1+json": {**json.loads(pio.to_json(figure)), "config": {}}}
        out.outputs = ({"output_type": "display_data", "data": data, "metadata": {}},)

    # ---- time source and hiding -----------------------------------------------------------

    @traitlets.validate("times")
    def _validate_times(self, proposal: dict[str, Any]) -> str:
        value = str(proposal["value"])
        try:
            time_column(self.report, value)
        except ValueError as exc:
            raise traitlets.TraitError(str(exc)) from exc
        return value

    @traitlets.observe("times", "hide_non_compute")
    def _on_view_options(self, change: dict[str, Any]) -> None:
        if not hasattr(self, "_table"):  # set in __init__ before the widgets exist
            return
        if change["name"] == "times" and self.sort_by in ("gpu_ms", "mean_ms"):
            self.sort_by = self._column  # refreshes the table
        old, self.timeline = self.timeline, self._timeline_widget()
        children: tuple[Any, ...] = getattr(self, "children", ())
        self.children = tuple(self.timeline if c is old else c for c in children)
        old.close()
        self._draw_charts()
        self._refresh_table()
        if self._overlay_shown:
            self.show_overlay()

    # ---- table ----------------------------------------------------------------------------

    def _show_order(self, ascending: bool) -> None:
        """The order button says the order the rows are in (a click flips it)."""
        order = "ascending" if ascending else "descending"
        self._ascending.description = order
        self._ascending.icon = "sort-amount-asc" if ascending else "sort-amount-desc"
        self._ascending.tooltip = f"rows in {order} order: click to flip"

    @traitlets.observe("ascending")
    def _on_order(self, change: dict[str, Any]) -> None:
        if hasattr(self, "_ascending"):
            self._show_order(bool(change["new"]))

    @traitlets.observe("sort_by", "ascending", "filter_text")
    def _on_table_options(self, _change: dict[str, Any]) -> None:
        if hasattr(self, "_table"):
            self._refresh_table()

    def table(self) -> Any:
        """The rows as shown (sorted and filtered), as a pandas DataFrame."""
        return layers_table(self.report, sort_by=self.sort_by, ascending=self.ascending,
                            filter_text=self.filter_text,
                            hide_non_compute=self.hide_non_compute)  # fmt: skip

    def _refresh_table(self) -> None:
        rows = self.table()
        shown = rows.head(MAX_TABLE_ROWS)
        layers = self.report.layers
        column = self._column
        shares = time_shares(self.report, column)
        options = [
            (neutralize(_row_label(layers.loc[i], column, float(shares.loc[i]))), int(i))
            for i in shown.index
        ]
        self._header.value = f"<pre>{html_text(_header(column))}</pre>"
        self._syncing = True
        try:
            self._table.options = options
            keep = self._index_of(self.selected)
            self._table.value = keep if keep in {o[1] for o in options} else None
        finally:
            self._syncing = False
        more = f" (first {MAX_TABLE_ROWS}: filter to narrow)" if len(rows) > MAX_TABLE_ROWS else ""
        hidden = len(layers) - len(self.table().index) if self.hide_non_compute else 0
        hidden_text = f", {hidden} non-compute hidden" if hidden and not self.filter_text else ""
        self._count.value = f"{len(rows)} of {len(layers)} layers{hidden_text}{more}"

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
        self._show_kernels(name)
        self._select_in_graph(index)

    def kernel_table(self) -> Any:
        """The GPU kernels of the selected layer (all layers when none is), a DataFrame."""
        return kernels_table(self.report, self.selected or None,
                             hide_non_compute=self.hide_non_compute)  # fmt: skip

    def _show_kernels(self, name: str) -> None:
        if self.report.kernels.empty:
            return
        if not name:
            self._kernels.value = ""
            self._kernel_box.selected_index = None
            self._kernel_box.set_title(0, "GPU kernels of the selected layer")
            return
        table = self.kernel_table()
        self._kernels.value = _kernels_html(table, name)
        self._kernel_box.set_title(0, f"GPU kernels of {neutralize(name)} ({len(table)})")
        self._kernel_box.selected_index = 0

    def _highlight(self, name: str) -> None:
        with self.timeline.batch_update():
            for trace in self.timeline.data:
                if trace.type != "bar":
                    continue
                names = [c[0] for c in trace.customdata] if trace.customdata is not None else []
                trace.marker.line.width = [3 if n == name else 0 for n in names]

    def _describe(self, index: int | None) -> str:
        if index is None:
            return ""
        row = self.report.layers.loc[index]
        gpu_fields = (
            [("GPU ms / kernels per inference", f"{row['gpu_ms']:.4f} / {row['kernels']:g}")]
            if self.report.has_gpu_times
            else []
        )
        fields = [
            ("model node", row["node"]),
            ("onnxruntime name", row["name"]),
            ("op type", row["op_type"]),
            ("provider", row["provider"]),
            ("precision", row["precision"]),
            ("inside", row["parent"]),
            ("maps to the model as", row.get("mapped_as", "")),
            *gpu_fields,
            (f"{time_label(self.report, 'mean_ms')}: mean / median / min / max ms",
             f"{row['mean_ms']:.4f} / {row['median_ms']:.4f} / {row['min_ms']:.4f} / "
             f"{row['max_ms']:.4f}"),
            ("share", f"{float(time_shares(self.report, self._column).loc[index]) * 100:.2f}%"),
            ("inputs", row["input_shapes"]),
            ("outputs", row["output_shapes"]),
            ("ONNX nodes", ", ".join(row["onnx_nodes"])),
            *self._roof_fields(str(row["name"])),
        ]  # fmt: skip
        cells = "".join(
            f"<tr><th style='text-align:left;padding-right:1em'>{html_text(k)}</th>"
            f"<td style='text-align:left'>{html_text(str(v))}</td></tr>"
            for k, v in fields
            if str(v) not in ("", "nan", "None", "nan / nan / nan / nan")
        )
        return f"<table class='nsdl-profile-details'>{cells}</table>"

    def _roof_fields(self, name: str) -> list[tuple[str, str]]:
        """The layer's place under the roofline, once the roofline was read (colour_by)."""
        if self._roofline is None:
            return []
        rows = self._roofline[self._roofline["name"] == name]
        if rows.empty:
            return []
        row = rows.iloc[0]
        pct = float(row["pct_of_roof"])
        roof = f"{pct:.0f}% of the {row['roof_dtype']} roof" if math.isfinite(pct) else "no roof"
        source = f" ({row['bound_source']})" if row["bound_source"] else ""
        return [("roofline", f"{roof}, {row['bound'] or 'bound unknown'}-bound{source}")]

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

    def overlay_label(self) -> str:
        """What the overlay's colours mean: 'GPU ms per inference', '% of roof', 'bound...'."""
        if self.colour_by == "pct_of_roof":
            note = self.roofline().attrs.get("note", "")
            return "% of the layer's roof" + (f" ({note})" if note else "")
        if self.colour_by == "bound":
            return "bound: " + ", ".join(f"{v:g} {k}" for k, v in BOUND_CODES.items())
        label = time_label(self.report, self._column)
        unit = {"GPU kernel time": "GPU ms", "host time": "host ms"}.get(label, "ms")
        return f"{unit} per inference"

    def roofline(self) -> Any:
        """The report's roofline table (`ProfileReport.roofline_table` of `model`), read once."""
        if self._roofline is None:
            self._roofline = self.report.roofline_table(self.model)
        return self._roofline

    def overlay_values(self) -> dict[str, float]:
        """Per ONNX node, the value the overlay colours (`colour_by`); a node that several
        layers ran takes its longest layer's value."""
        report = compute_only(self.report) if self.hide_non_compute else self.report
        if self.colour_by == "time":
            return report.node_times(self._column)
        table = self.roofline()
        table = table[table["name"].isin(set(report.layers["name"]))]
        table = table.sort_values("time_ms", kind="stable")  # the longest layer written last
        values: dict[str, float] = {}
        for nodes, pct, bound in zip(table["onnx_nodes"], table["pct_of_roof"], table["bound"],
                                     strict=True):  # fmt: skip
            value = float(pct) if self.colour_by == "pct_of_roof" else BOUND_CODES.get(bound)
            if value is not None and math.isfinite(value):  # NaN: nothing to colour
                values.update(dict.fromkeys(nodes, value))
        return values

    def show_overlay(self, colormap: str | None = None) -> None:
        """Colour the GraphView's nodes by `colour_by`: time per inference (GPU or host, as
        `times` says), % of roof (0-100) or bound (latency, memory, compute); without the
        non-compute rows when they are hidden."""
        if self.graph_view is None or not hasattr(self.graph_view, "set_overlay"):
            raise WidgetError("no GraphView bound: ProfileView(report, graph_view=view)")
        scale: dict[str, Any] = {}
        if self.colour_by == "pct_of_roof":
            scale = {"vmin": 0.0, "vmax": 100.0}
        elif self.colour_by == "bound":
            scale = {"vmin": 0.0, "vmax": float(max(BOUND_CODES.values()))}
        default = "coolwarm" if self.colour_by == "bound" else "viridis"
        self.graph_view.set_overlay(self.overlay_values(), label=self.overlay_label(),
                                    colormap=colormap or default, **scale)  # fmt: skip
        self._overlay_shown = True

    @traitlets.validate("colour_by")
    def _validate_colour_by(self, proposal: dict[str, Any]) -> str:
        value = str(proposal["value"])
        if value not in COLOUR_BY.values():
            raise traitlets.TraitError(
                f"colour_by={value!r}: use one of {', '.join(COLOUR_BY.values())}"
            )
        if value != "time":
            try:
                self.roofline()
            except NsdlError as exc:  # no model to count the work of: say how to give it
                raise traitlets.TraitError(f"colour_by={value!r}: {exc}") from exc
        return value

    @traitlets.observe("colour_by")
    def _on_colour_by(self, _change: dict[str, Any]) -> None:
        if self._overlay_shown:
            self.show_overlay()

    def clear_overlay(self) -> None:
        if self.graph_view is not None and hasattr(self.graph_view, "clear_overlay"):
            self.graph_view.clear_overlay()
        self._overlay_shown = False
