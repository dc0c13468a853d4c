"""Nsight Compute counters per ONNX layer: ncu's CSV (`--csv --print-units base`, one row per
kernel and metric) parsed, each kernel placed on the node of its partner in the profiled pass
(`_kernel_alignment`, by (name, grid, block)), and per-layer columns made from its kernels,
weighted by kernel time (ncu's `gpu__time_duration.sum`).

Percentages are time-weighted means over a layer's kernels; counts (`.sum` metrics) are summed.
Kernels that find no partner are counted in the metadata, not placed.
"""

from __future__ import annotations

import csv
import io
import os
import re
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from nsdl_jupyter.profiling._errors import TraceFormatError
from nsdl_jupyter.profiling.gpu._free_pass import kernel_keys, reference_run
from nsdl_jupyter.profiling.gpu._kernel_alignment import align_kernels

DURATION = "gpu__time_duration.sum"
# The metric set (Hopper names that worked with ncu 2025.3 on an H200) -> layer column.
NCU_METRICS = {
    DURATION: "ncu_ms",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed": "sm_throughput_pct",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed": "dram_throughput_pct",
    "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active": ("tensor_active_pct"),
    "sm__warps_active.avg.pct_of_peak_sustained_active": "occupancy_pct",
    "lts__t_sector_hit_rate.pct": "l2_hit_pct",
    "sm__inst_executed_pipe_tensor_op_hmma.sum": "tensor_inst",
}
_COPY_NAMES = ("Memcpy", "Memset")
_DIMS = re.compile(r"\d+")


def _dims(text: str) -> str:
    values = _DIMS.findall(text)
    return "x".join(values) if values else text


def _dims_column(texts: pd.Series) -> np.ndarray:
    """'(256, 1, 1)' -> '256x1x1', converted once per distinct value."""
    converted: np.ndarray = texts.map({t: _dims(t) for t in texts.unique()}).to_numpy(object)
    return converted


def read_ncu_csv(path: str | os.PathLike[str]) -> pd.DataFrame:
    """One row per profiled kernel, in launch order: id, kernel, grid, block, stream and one
    float column per metric (ncu's metric names). Lines before the header (ncu's own messages)
    are skipped."""
    try:
        text = open(path, encoding="utf-8", errors="replace").read()  # noqa: SIM115
    except OSError as exc:
        raise TraceFormatError(f"cannot read ncu's CSV {path}: {exc}") from exc
    start = text.find('"ID"')
    if start < 0:
        raise TraceFormatError(f'{path} has no ncu CSV header (a line starting with "ID")')
    needed = ["ID", "Kernel Name", "Grid Size", "Block Size", "Metric Name", "Metric Value"]
    header = next(csv.reader([text[start : text.find("\n", start)]]))
    missing = [c for c in needed if c not in header]
    if missing:
        raise TraceFormatError(f"{path}: ncu CSV without column(s) {missing}")
    names = dict.fromkeys(needed[1:5], str)
    columns = [*needed, *(["Stream"] if "Stream" in header else [])]
    rows = pd.read_csv(io.StringIO(text[start:]), dtype=names, keep_default_na=False,
                       thousands=",", usecols=columns)  # fmt: skip
    ids_all = pd.to_numeric(rows["ID"], errors="coerce")
    rows = rows[ids_all.notna()]
    value = pd.to_numeric(rows["Metric Value"], errors="coerce")
    ids = ids_all[ids_all.notna()].astype(np.int64)
    metrics = (
        pd.DataFrame({"id": ids, "metric": rows["Metric Name"], "value": value})
        .drop_duplicates(["id", "metric"])
        .set_index(["id", "metric"])["value"]
        .unstack()
        .sort_index()
    )
    first = rows.assign(id=ids).drop_duplicates("id").set_index("id").sort_index()
    kernels = pd.DataFrame(
        {
            "id": first.index.to_numpy(),
            "kernel": first["Kernel Name"].to_numpy(dtype=object),
            "grid": _dims_column(first["Grid Size"]),
            "block": _dims_column(first["Block Size"]),
            "stream": first["Stream"].to_numpy() if "Stream" in first else 0,
        }
    )
    return pd.concat([kernels, metrics.reset_index(drop=True)], axis=1)


def place_counters(
    kernels: pd.DataFrame, reference: pd.DataFrame
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """`kernels` (read_ncu_csv) with a `layer` column from the profiled pass's kernel rows
    (`GpuTiming.frame`; one run of it, copies left out: ncu profiles kernels only); None
    where a kernel has no partner. And counts of what was placed."""
    ref = reference_run(reference)
    ref = ref[~ref["kernel"].str.startswith(_COPY_NAMES)].reset_index(drop=True)
    found = align_kernels(
        kernel_keys(ref),
        kernel_keys(kernels),
        reference_streams=ref["stream"].tolist(),
        measured_streams=kernels["stream"].tolist(),
    )
    layer = np.full(len(kernels), None, dtype=object)
    layer[found.pairs[:, 1]] = ref["layer"].to_numpy(dtype=object)[found.pairs[:, 0]]
    placed = kernels.assign(layer=layer)
    return placed, {
        "kernels": len(kernels),
        "placed": len(found.pairs),
        "unmatched": len(found.unmatched_measured),
        "reference_kernels": len(ref),
    }


def layer_counters(placed: pd.DataFrame) -> pd.DataFrame:
    """Per-layer columns (NCU_METRICS' names; other metrics keep theirs), indexed by layer:
    percentages weighted by kernel time, `.sum` counts summed, `ncu_ms` the summed time."""
    rows = placed[placed["layer"].notna()]
    metrics = [c for c in placed.columns if "__" in str(c)]
    weight = (
        rows[DURATION].fillna(0.0).to_numpy()
        if DURATION in rows
        else np.ones(len(rows), dtype=np.float64)
    )
    groups = rows.assign(_w=weight).groupby("layer", sort=False)
    columns: dict[str, pd.Series] = {"ncu_kernels": groups.size().astype("float64")}
    for metric in metrics:
        name = NCU_METRICS.get(metric, metric)
        if metric == DURATION:
            columns[name] = groups[metric].sum() / 1e6  # ns -> ms
        elif metric.endswith(".sum"):
            columns[name] = groups[metric].sum()
        else:
            weighted = (rows[metric] * weight).groupby(rows["layer"], sort=False).sum()
            total = groups["_w"].sum()
            columns[name] = weighted / total.where(total > 0)
    return pd.DataFrame(columns)


def counter_parts(
    csv_path: str | os.PathLike[str],
    reference: pd.DataFrame,
    answer: Mapping[str, Any],
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Per-layer counter columns and the report's `counters` metadata from ncu's CSV; a CSV
    that cannot be read gives no columns and says why in the metadata."""
    meta = {k: v for k, v in answer.items() if k != "file"}
    try:
        placed, counts = place_counters(read_ncu_csv(csv_path), reference)
    except TraceFormatError as exc:
        return pd.DataFrame(), {**meta, "available": False, "message": str(exc)}
    return layer_counters(placed), {**meta, **counts, "available": True}
