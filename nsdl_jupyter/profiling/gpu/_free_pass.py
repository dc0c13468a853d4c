"""Per-layer GPU times from a free-running pass: CUPTI kernel records of runs made without
onnxruntime's profiler (which syncs after every node and stretches the kernels' neighbourhood),
each kernel given the node of its partner in the profiled pass (`_kernel_alignment`).

Kernels that find no partner go to the layer "(unaligned kernels)", counted and timed in the
alignment summary, so the per-layer times still add up to the pass's kernel time.
"""

from __future__ import annotations

import os
from collections.abc import Hashable
from typing import Any

import numpy as np
import pandas as pd

from nsdl_jupyter.profiling._errors import TraceFormatError
from nsdl_jupyter.profiling.gpu._kernel_alignment import KernelAlignment, align_kernels
from nsdl_jupyter.profiling.gpu._kernels import (
    GpuTiming,
    kernel_rows,
    read_kernel_records,
    timing_from_frame,
)

UNALIGNED = "(unaligned kernels)"


def kernel_keys(frame: pd.DataFrame) -> list[Hashable]:
    """(name, grid, block) per row: what two passes of one model launch alike."""
    return list(zip(frame["kernel"], frame["grid"], frame["block"], strict=True))


def reference_run(frame: pd.DataFrame) -> pd.DataFrame:
    """The run of the profiled pass whose kernel sequence is the most common one, by start."""
    runs = {int(r): g.sort_values("start_ns", kind="stable") for r, g in frame.groupby("run")}
    if not runs:
        return frame.iloc[0:0]
    sequences: dict[tuple[Hashable, ...], int] = {}
    for run, group in runs.items():
        sequences.setdefault(tuple(kernel_keys(group)), run)
    counts = pd.Series([tuple(kernel_keys(g)) for g in runs.values()]).value_counts()
    return runs[sequences[counts.index[0]]].reset_index(drop=True)


def free_running_timing(
    path: str | os.PathLike[str], reference: GpuTiming
) -> tuple[GpuTiming, dict[str, Any]]:
    """The free pass's kernel file (`path`, with `run_start_ns`) timed per layer, each kernel
    on the node of its partner in the profiled pass `reference`; and an alignment summary."""
    if reference.frame is None:
        raise TraceFormatError("the profiled pass's kernel rows are missing (GpuTiming.frame)")
    records = read_kernel_records(path)
    n_runs = len(records.run_start_ns)
    run = np.searchsorted(records.run_start_ns, records.start_ns, side="right") - 1
    keep = run >= 0
    frame = kernel_rows(records, run, keep).sort_values(["run", "start_ns"], kind="stable")
    ref = reference_run(reference.frame)
    ref_keys = kernel_keys(ref)
    ref_layers = ref["layer"].to_numpy(dtype=object)
    layers = np.full(len(frame), UNALIGNED, dtype=object)
    cache: dict[tuple[Hashable, ...], KernelAlignment] = {}
    missing_in_free = 0
    for rows in frame.groupby("run", sort=True).indices.values():
        part = frame.iloc[rows]
        keys = kernel_keys(part)
        streams = part["stream"].tolist()
        signature = (*keys, *streams)
        if signature not in cache:
            cache[signature] = align_kernels(
                ref_keys,
                keys,
                reference_streams=ref["stream"].tolist(),
                measured_streams=streams,
            )
        found = cache[signature]
        layers[rows[found.pairs[:, 1]]] = ref_layers[found.pairs[:, 0]]
        missing_in_free += len(found.unmatched_reference)
    frame["layer"] = layers
    unaligned = frame["layer"] == UNALIGNED
    runs = max(n_runs, 1)
    summary = {
        "runs": n_runs,
        "kernels_per_run": len(frame) / runs,
        "reference_kernels_per_run": len(ref_keys),
        "unaligned_kernels_per_run": float(unaligned.sum()) / runs,
        "unaligned_ms_per_run": float(frame.loc[unaligned, "duration_ms"].sum()) / runs,
        "reference_kernels_unmatched_per_run": missing_in_free / runs,
        "distinct_sequences": len(cache),
    }
    return timing_from_frame(frame.reset_index(drop=True), n_runs, 0), summary
