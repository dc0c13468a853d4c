"""pandas tables of a report, formatted for reading."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

if TYPE_CHECKING:
    from nsdl_jupyter.profiling import ProfileReport

TABLE_COLUMNS = [
    "name",
    "op_type",
    "provider",
    "precision",
    "calls",
    "mean_ms",
    "median_ms",
    "min_ms",
    "max_ms",
    "std_ms",
    "share",
    "input_shapes",
    "output_shapes",
]


def layers_table(
    report: ProfileReport,
    *,
    sort_by: str = "mean_ms",
    ascending: bool = False,
    filter_text: str = "",
    limit: int | None = None,
) -> pd.DataFrame:
    """The layers with the columns that carry information for this report, sorted/filtered.

    `filter_text` keeps rows whose name or op type contains it (case-insensitive).
    """
    layers = report.layers
    columns = [c for c in TABLE_COLUMNS if c in layers and not _empty(layers[c])]
    if sort_by not in layers:
        raise ValueError(f"sort_by={sort_by!r}: use one of {columns}")
    table = layers
    if filter_text:
        needle = filter_text.lower()
        mask = table["name"].str.lower().str.contains(needle, regex=False) | table[
            "op_type"
        ].str.lower().str.contains(needle, regex=False)
        table = table[mask]
    table = table.sort_values(sort_by, ascending=ascending, kind="stable")[columns]
    return table.head(limit) if limit is not None else table


def _empty(column: pd.Series) -> bool:
    if pd.api.types.is_numeric_dtype(column):
        return bool(column.isna().all())
    return bool((column.fillna("").astype(str) == "").all())
