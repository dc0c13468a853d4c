"""The GPU parts of an onnxruntime report: kernel times per layer, kernel tables, NVML samples,
clock state; and the message that says why any of them is missing."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from nsdl_jupyter.profiling.gpu._free_pass import UNALIGNED, free_running_timing
from nsdl_jupyter.profiling.gpu._kernels import (
    INPUT_COPY,
    OUTPUT_COPY,
    GpuTiming,
    attribute_kernels,
)
from nsdl_jupyter.profiling.gpu._ncu_counters import counter_parts
from nsdl_jupyter.profiling.ort._trace import ParsedTrace

NO_GPU_TIMING = (
    "no per-kernel GPU times: the layer times are onnxruntime's host times (each node timed "
    "on the CPU, with a sync after it)"
)


@dataclass
class GpuParts:
    layers: pd.DataFrame
    metadata: dict[str, Any] = field(default_factory=dict)
    kernels: pd.DataFrame | None = None
    kernel_timeline: pd.DataFrame | None = None
    metrics: pd.DataFrame | None = None


def _mean(values: np.ndarray) -> float | None:
    return float(np.mean(values)) if len(values) else None


def _layers_with_times(
    layers: pd.DataFrame, found: GpuTiming, io_nodes: tuple[list[str], list[str]]
) -> pd.DataFrame:
    layers = layers.copy()
    layers["gpu_ms"] = layers["name"].map(found.gpu_ms).fillna(0.0).astype("float64")
    layers["kernels"] = layers["name"].map(found.kernel_count).fillna(0.0).astype("float64")
    extra = [
        {
            "name": name,
            "op_type": "Memcpy",
            "provider": "CUDAExecutionProvider",
            "mapped_as": "inserted",
            "onnx_nodes": nodes,
            "onnx_weights": [1.0 / len(nodes)] * len(nodes),
            "gpu_ms": found.gpu_ms[name],
            "kernels": found.kernel_count[name],
        }
        for name, nodes in zip((INPUT_COPY, OUTPUT_COPY), io_nodes, strict=True)
        if name in found.gpu_ms
    ]
    if UNALIGNED in found.gpu_ms:
        extra.append(
            {
                "name": UNALIGNED,
                "op_type": UNALIGNED,
                "provider": "CUDAExecutionProvider",
                "mapped_as": "unmapped",
                "onnx_nodes": [],
                "gpu_ms": found.gpu_ms[UNALIGNED],
                "kernels": found.kernel_count[UNALIGNED],
            }
        )
    if extra:
        layers = pd.concat([layers, pd.DataFrame(extra)], ignore_index=True)
    return layers


def _copy_share(found: GpuTiming) -> float | None:
    total = sum(found.gpu_ms.values())
    copies = found.gpu_ms.get(INPUT_COPY, 0.0) + found.gpu_ms.get(OUTPUT_COPY, 0.0)
    return copies / total if total > 0 else None


def gpu_report_parts(
    answer_gpu: dict[str, Any],
    parsed: ParsedTrace,
    kernels: Path | None,
    io_nodes: tuple[list[str], list[str]] = ([], []),
    *,
    free_kernels: Path | None = None,
    counters_csv: Path | None = None,
) -> GpuParts:
    """`gpu_ms`/`kernels` columns on the layers, the kernel tables and the metrics frame, from
    the runner's `gpu` answer and its kernel file (fetched to `kernels`). With the kernel file
    of a free-running pass (`free_kernels`), `gpu_ms` are that pass's kernel times, each kernel
    on the node of its partner in the profiled pass (`gpu_ms_profiled` keeps the profiled
    pass's). Input and output copies are inserted rows drawn on `io_nodes` (the nodes that read
    the graph's inputs, those that write its outputs). With Nsight Compute's CSV
    (`counters_csv`), per-layer counter columns are added (`_ncu_counters`)."""
    parts = GpuParts(parsed.layers, metadata={})
    if not answer_gpu:
        return parts
    timing = dict(answer_gpu.get("timing") or {})
    timing.pop("file", None)
    free = dict(answer_gpu.get("free_running") or {})
    free.pop("file", None)
    if kernels is not None:
        profiled = attribute_kernels(kernels, parsed.windows)
        found = profiled
        if free_kernels is not None:
            found, alignment = free_running_timing(free_kernels, profiled)
            free.update(available=True, alignment=alignment)
        layers = _layers_with_times(parsed.layers, found, io_nodes)
        if found is not profiled:
            layers["gpu_ms_profiled"] = (
                layers["name"].map(profiled.gpu_ms).fillna(0.0).astype("float64")
            )
        parts.layers = layers
        parts.kernels = found.kernels
        parts.kernel_timeline = found.timeline
        timing.update(
            available=True,
            gpu_ms_source="free-running pass (CUPTI only, no onnxruntime profiler), kernels "
            "aligned to the profiled pass's nodes"
            if found is not profiled
            else "profiled pass (onnxruntime's profiler on: it syncs after every node)",
            busy_ms_mean=_mean(found.busy_ms),
            span_ms_mean=_mean(found.span_ms),
            idle_ms_mean=_mean(found.span_ms - found.busy_ms),
            busy_ms=found.busy_ms.tolist(),
            placed_share=found.placed_share,
            copy_share=_copy_share(found),
            profiled_busy_ms_mean=_mean(profiled.busy_ms),
            free_running_busy_ms_mean=_mean(found.busy_ms) if found is not profiled else None,
            free_running=free,
        )
        if counters_csv is not None and profiled.frame is not None:
            columns, counters = counter_parts(
                counters_csv, profiled.frame, answer_gpu.get("counters") or {}
            )
            if not columns.empty:
                parts.layers = parts.layers.merge(
                    columns, how="left", left_on="name", right_index=True
                )
            parts.metadata["counters"] = counters
    elif not timing.get("message"):
        timing = {"available": False, "message": NO_GPU_TIMING}
    parts.metadata["timing"] = timing
    metrics = answer_gpu.get("metrics") or {}
    columns = metrics.get("columns")
    if isinstance(columns, dict) and columns:
        frame = pd.DataFrame(columns)
        if "t_ns" in frame:
            frame.insert(0, "t_ms", frame.pop("t_ns") / 1e6)
        parts.metrics = frame
    parts.metadata["metrics"] = {k: v for k, v in metrics.items() if k != "columns"}
    if answer_gpu.get("per_layer_metrics_unavailable"):
        parts.metadata["per_layer_metrics_unavailable"] = dict(
            answer_gpu["per_layer_metrics_unavailable"]
        )
    if "counters" not in parts.metadata and answer_gpu.get("counters"):
        parts.metadata["counters"] = {
            k: v for k, v in answer_gpu["counters"].items() if k != "file"
        }
    if answer_gpu.get("peaks"):
        parts.metadata["peaks"] = dict(answer_gpu["peaks"])
    if answer_gpu.get("clocks"):
        parts.metadata["clocks"] = dict(answer_gpu["clocks"])
    return parts
