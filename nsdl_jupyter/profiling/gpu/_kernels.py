"""Per-node GPU times: CUPTI kernel records placed in the onnxruntime nodes that launched them.

The runner (`_gpu_runner.KernelTracer`) writes every kernel, memcpy and memset of the profiled
pass with the wall-clock time of the API call that launched it. onnxruntime's trace says when
each node ran on the host (microseconds since its profiler started, whose wall-clock start the
runner records too). A kernel belongs to the node whose host window holds its launch (the
innermost one when nodes nest); kernels launched outside every node go to the layer "(input copy)"
when launched before the run's first node and "(output copy)" after it (onnxruntime copies
inputs to and outputs from the GPU there); those of warm-up runs are dropped.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from nsdl_jupyter.profiling._errors import TraceFormatError
from nsdl_jupyter.profiling.ort._trace import NodeWindows

INPUT_COPY = "(input copy)"
OUTPUT_COPY = "(output copy)"
KERNEL_COLUMNS = ["layer", "kernel", "grid", "block", "stream", "calls", "mean_ms", "total_ms"]
KERNEL_TIMELINE_COLUMNS = ["layer", "kernel", "stream", "start_ms", "duration_ms"]
_NEST_SEARCH = 16  # windows looked back through to find the one holding a launch


@dataclass(frozen=True)
class GpuTiming:
    """Kernel times per layer and per kernel, and GPU busy time per inference."""

    gpu_ms: dict[str, float]  # per layer: mean over runs of its kernels' summed durations
    kernel_count: dict[str, float]  # per layer: kernels per run
    kernels: pd.DataFrame  # KERNEL_COLUMNS: one row per (layer, kernel, grid, block, stream)
    timeline: pd.DataFrame  # KERNEL_TIMELINE_COLUMNS: the kernels of one run
    busy_ms: np.ndarray  # per run: union of the kernels' intervals
    span_ms: np.ndarray  # per run: first kernel start to last kernel end
    placed_share: float  # share of kernel time placed in a node (not an input/output copy)
    # one row per kernel of the kept runs (layer, kernel, grid, block, stream, run, start_ns,
    # end_ns, duration_ms): the reference that other passes are aligned to
    frame: pd.DataFrame | None = None


@dataclass(frozen=True)
class _Records:
    names: list[str]
    name_id: np.ndarray
    start_ns: np.ndarray
    end_ns: np.ndarray
    launch_ns: np.ndarray
    stream: np.ndarray
    grid: np.ndarray
    block: np.ndarray
    profiling_start_ns: int
    run_start_ns: np.ndarray  # a free-running pass: when each run began (wall ns); else empty


def read_kernel_records(path: str | os.PathLike[str]) -> _Records:
    """The runner's kernel file (numpy .npz without pickles), checked."""
    try:
        with np.load(Path(path), allow_pickle=False) as data:
            blob = bytes(data["names_utf8"].astype(np.uint8))
            lengths = data["name_lengths"].astype(np.int64)
            ends = np.cumsum(lengths)
            names = [
                blob[int(e - n) : int(e)].decode("utf-8", "replace")
                for e, n in zip(ends, lengths, strict=True)
            ]
            records = _Records(
                names=names,
                name_id=data["name_id"].astype(np.int64),
                start_ns=data["start_ns"].astype(np.int64),
                end_ns=data["end_ns"].astype(np.int64),
                launch_ns=data["launch_ns"].astype(np.int64),
                stream=data["stream"].astype(np.int64),
                grid=data["grid"].astype(np.int64).reshape(-1, 3),
                block=data["block"].astype(np.int64).reshape(-1, 3),
                profiling_start_ns=int(data["profiling_start_ns"][0]),
                run_start_ns=data["run_start_ns"].astype(np.int64)
                if "run_start_ns" in data.files
                else np.zeros(0, dtype=np.int64),
            )
    except (OSError, KeyError, ValueError, IndexError, TypeError) as exc:
        raise TraceFormatError(f"{path} is not a kernel record file of the runner: {exc}") from exc
    count = len(records.name_id)
    columns = (records.start_ns, records.end_ns, records.launch_ns, records.stream)
    if any(len(c) != count for c in columns) or len(records.grid) != count:
        raise TraceFormatError(f"{path}: kernel columns of different lengths")
    if count and (records.name_id.min() < 0 or records.name_id.max() >= len(names)):
        raise TraceFormatError(f"{path}: kernel name index out of range")
    return records


def dims_text(dims: np.ndarray) -> list[str]:
    """Grid or block sizes as the kernel tables write them: '8x1x1'."""
    return [f"{x}x{y}x{z}" for x, y, z in dims]


def attribute_kernels(path: str | os.PathLike[str], windows: NodeWindows) -> GpuTiming:
    """Place the kernels of `path` in the node windows of the trace (see the module doc)."""
    records = read_kernel_records(path)
    n_runs = len(windows.run_start_us)
    launch_us = (records.launch_ns - records.profiling_start_ns) / 1e3
    window = _holding_window(windows, launch_us, records.launch_ns >= 0)
    run = np.where(window >= 0, windows.run[np.clip(window, 0, None)], -1)
    # kernels launched between nodes (input/output copies) still count in their run
    if n_runs:
        between = (window < 0) & (records.launch_ns >= 0)
        by_start = np.searchsorted(windows.run_start_us, launch_us, side="right") - 1
        run = np.where(between, by_start, run)
    keep = run >= 0  # warm-up runs and unplaceable records are dropped
    layer_names = np.array([*windows.names, INPUT_COPY, OUTPUT_COPY], dtype=object)
    first_node_us = _first_start_per_run(windows)
    before = launch_us < first_node_us[np.clip(run, 0, max(n_runs - 1, 0))] if n_runs else run
    outside_id = np.where(before, len(windows.names), len(windows.names) + 1)
    layer_id = np.where(window >= 0, windows.name_id[np.clip(window, 0, None)], outside_id)
    frame = kernel_rows(records, run, keep)
    frame.insert(0, "layer", layer_names[layer_id[keep]])
    return timing_from_frame(frame, n_runs, windows.representative)


def kernel_rows(records: _Records, run: np.ndarray, keep: np.ndarray) -> pd.DataFrame:
    """The kept kernel records as rows (kernel, grid, block, stream, run, start/end, duration):
    the columns every pass's kernels share, before they are placed on layers."""
    return pd.DataFrame(
        {
            "kernel": np.array(records.names, dtype=object)[records.name_id[keep]],
            "grid": dims_text(records.grid[keep]),
            "block": dims_text(records.block[keep]),
            "stream": records.stream[keep],
            "run": run[keep],
            "start_ns": records.start_ns[keep],
            "end_ns": records.end_ns[keep],
            "duration_ms": (records.end_ns[keep] - records.start_ns[keep]) / 1e6,
        }
    )


def timing_from_frame(frame: pd.DataFrame, n_runs: int, representative: int) -> GpuTiming:
    """Per-layer and per-kernel times of placed kernel rows (columns as `GpuTiming.frame`)."""
    runs = max(n_runs, 1)
    per_layer = frame.groupby("layer", sort=False)["duration_ms"].agg(["sum", "size"])
    grouped = frame.groupby(["layer", "kernel", "grid", "block", "stream"], sort=False)
    kernels = grouped["duration_ms"].agg(calls="size", mean_ms="mean", total_ms="sum")
    kernels["calls"] = kernels["calls"] / runs
    kernels["total_ms"] = kernels["total_ms"] / runs
    kernels = kernels.reset_index()[KERNEL_COLUMNS].sort_values("total_ms", ascending=False)
    busy, span = _busy(frame, n_runs)
    total = float(frame["duration_ms"].sum())
    copies = frame["layer"].isin([INPUT_COPY, OUTPUT_COPY])
    placed = float(frame.loc[~copies, "duration_ms"].sum())
    return GpuTiming(
        gpu_ms={str(k): float(v) / runs for k, v in per_layer["sum"].items()},
        kernel_count={str(k): float(v) / runs for k, v in per_layer["size"].items()},
        kernels=kernels.reset_index(drop=True),
        timeline=_one_run(frame, representative),
        busy_ms=busy,
        span_ms=span,
        placed_share=placed / total if total > 0 else float("nan"),
        frame=frame,
    )


def _first_start_per_run(windows: NodeWindows) -> np.ndarray:
    first = np.full(len(windows.run_start_us), np.inf)
    np.minimum.at(first, windows.run, windows.ts_us.astype(np.float64))
    return first


def _holding_window(windows: NodeWindows, launch_us: np.ndarray, known: np.ndarray) -> np.ndarray:
    """Index of the innermost window holding each launch time, -1 where none does."""
    order = np.lexsort((windows.depth, windows.ts_us))  # by start, outer before inner
    starts = windows.ts_us[order]
    ends = starts + windows.dur_us[order]
    found = np.full(len(launch_us), -1, dtype=np.int64)
    candidate = np.searchsorted(starts, launch_us, side="right") - 1
    pending = known & (candidate >= 0)
    for back in range(_NEST_SEARCH):
        index = candidate - back
        valid = pending & (index >= 0)
        safe = np.clip(index, 0, None)
        inside = valid & (launch_us <= ends[safe]) & (launch_us >= starts[safe])
        found = np.where(inside, order[safe], found)
        pending &= ~inside
        if not pending.any():
            break
    return found


def _busy(frame: pd.DataFrame, n_runs: int) -> tuple[np.ndarray, np.ndarray]:
    busy = np.zeros(n_runs)
    span = np.zeros(n_runs)
    for run, group in frame.groupby("run", sort=True):
        starts = group["start_ns"].to_numpy()
        ends = group["end_ns"].to_numpy()
        order = np.argsort(starts, kind="stable")
        starts, ends = starts[order], ends[order]
        reach = np.maximum.accumulate(ends)
        # an interval opens a new busy stretch when it starts after all before it ended
        gaps = np.maximum(starts[1:] - reach[:-1], 0)
        span[int(run)] = (reach[-1] - starts[0]) / 1e6
        busy[int(run)] = span[int(run)] - gaps.sum() / 1e6
    return busy, span


def _one_run(frame: pd.DataFrame, representative: int) -> pd.DataFrame:
    """The kernels of the representative run, times from that run's first kernel."""
    chosen = frame[frame["run"] == representative]
    if chosen.empty:
        return pd.DataFrame(columns=KERNEL_TIMELINE_COLUMNS)
    origin = int(chosen["start_ns"].min())
    timeline = pd.DataFrame(
        {
            "layer": chosen["layer"].to_numpy(),
            "kernel": chosen["kernel"].to_numpy(),
            "stream": chosen["stream"].to_numpy(),
            "start_ms": (chosen["start_ns"].to_numpy() - origin) / 1e6,
            "duration_ms": chosen["duration_ms"].to_numpy(),
        }
    )
    return timeline.sort_values("start_ms", kind="stable").reset_index(drop=True)
