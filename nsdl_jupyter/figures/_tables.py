"""pandas tables of a report, formatted for reading."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from nsdl_jupyter.figures._errors import FigureError
from nsdl_jupyter.figures._filters import hidden_layer_names, shown, time_column

if TYPE_CHECKING:
    from nsdl_jupyter.profiling import ProfileReport

TABLE_COLUMNS = [
    "node",
    "name",
    "op_type",
    "provider",
    "precision",
    "mapped_as",
    "calls",
    "gpu_ms",
    "kernels",
    "mean_ms",
    "median_ms",
    "min_ms",
    "max_ms",
    "std_ms",
    "share",
    "input_shapes",
    "output_shapes",
]
_FILTERED = ("node", "name", "op_type")
KERNEL_TABLE_COLUMNS = [
    "layer",
    "kernel",
    "grid",
    "block",
    "stream",
    "calls",
    "mean_ms",
    "total_ms",
    "share",
]


def layers_table(
    report: ProfileReport,
    *,
    sort_by: str | None = None,
    ascending: bool = False,
    filter_text: str = "",
    limit: int | None = None,
    hide_non_compute: bool = False,
) -> pd.DataFrame:
    """The layers with the columns that carry information for this report, sorted/filtered.

    `sort_by` defaults to the report's time column (`gpu_ms` when it has GPU times, else
    `mean_ms`); `filter_text` keeps rows whose model node, onnxruntime name or op type contains
    it (case-insensitive);
    `hide_non_compute` leaves out copies, layout reorders and shape-only ops. The index is
    that of `report.layers`.
    """
    sort_by = sort_by or time_column(report)
    layers = report.layers
    if hide_non_compute:
        layers = layers[~layers["name"].isin(hidden_layer_names(report))]
    columns = [c for c in TABLE_COLUMNS if c in layers and not _empty(layers[c])]
    if sort_by not in layers:
        raise FigureError(f"sort_by={sort_by!r}: use one of {columns}")
    table = layers
    if filter_text:
        needle = filter_text.lower()
        mask = np.logical_or.reduce(
            [table[c].str.lower().str.contains(needle, regex=False) for c in _FILTERED]
        )
        table = table[mask]
    table = _whole_calls(table.sort_values(sort_by, ascending=ascending, kind="stable")[columns])
    return table.head(limit) if limit is not None else table


def kernels_table(
    report: ProfileReport, layer: str | None = None, *, hide_non_compute: bool = False
) -> pd.DataFrame:
    """The GPU kernels per inference of one layer (`layer`) or of all, slowest first: kernel
    name, grid, block, stream, launches per inference (`calls`), mean and total ms per
    inference, and `share` of the rows shown. Empty (same columns) for a report without GPU
    kernel times; ValueError for a layer the report does not have."""
    if layer is not None and not (report.layers["name"] == layer).any():
        raise FigureError(f"layer={layer!r}: no layer of that name in {report.name}")
    kernels = shown(report, hide_non_compute).kernels
    if kernels.empty:
        return pd.DataFrame(columns=KERNEL_TABLE_COLUMNS)
    if layer is not None:
        kernels = kernels[kernels["layer"] == layer]
    table = kernels.sort_values("total_ms", ascending=False, kind="stable")
    total = float(table["total_ms"].sum())
    table = table.assign(share=table["total_ms"] / total if total > 0 else 0.0)
    return _whole_calls(table[[c for c in KERNEL_TABLE_COLUMNS if c in table]])


def _whole_calls(table: pd.DataFrame) -> pd.DataFrame:
    """`calls` per inference shown as 1, not 1.0, when every count is whole (the usual case;
    a node that ran in only some of the measured inferences keeps its fraction)."""
    if "calls" not in table or table.empty:
        return table
    calls = table["calls"]
    if calls.notna().all() and bool((calls == calls.round()).all()):
        return table.assign(calls=calls.astype("int64"))
    return table


def _empty(column: pd.Series) -> bool:
    if pd.api.types.is_numeric_dtype(column):
        return bool(column.isna().all())
    return bool((column.fillna("").astype(str) == "").all())
