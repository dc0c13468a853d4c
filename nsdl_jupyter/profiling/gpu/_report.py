"""The GPU parts of an onnxruntime report: kernel times per layer, kernel tables, NVML samples,
clock state; and the message that says why any of them is missing."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from nsdl_jupyter.profiling.gpu._kernels import INPUT_COPY, OUTPUT_COPY, attribute_kernels
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


def gpu_report_parts(
    answer_gpu: dict[str, Any],
    parsed: ParsedTrace,
    kernels: Path | None,
    io_nodes: tuple[list[str], list[str]] = ([], []),
) -> GpuParts:
    """`gpu_ms`/`kernels` columns on the layers, the kernel tables and the metrics frame, from
    the runner's `gpu` answer and its kernel file (fetched to `kernels`). Input and output
    copies are inserted rows drawn on `io_nodes` (the nodes that read the graph's inputs,
    those that write its outputs)."""
    parts = GpuParts(parsed.layers, metadata={})
    if not answer_gpu:
        return parts
    timing = dict(answer_gpu.get("timing") or {})
    timing.pop("file", None)
    if kernels is not None:
        found = attribute_kernels(kernels, parsed.windows)
        layers = parsed.layers.copy()
        layers["gpu_ms"] = layers["name"].map(found.gpu_ms).fillna(0.0).astype("float64")
        layers["kernels"] = layers["name"].map(found.kernel_count).fillna(0.0).astype("float64")
        copies = [
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
        if copies:
            layers = pd.concat([layers, pd.DataFrame(copies)], ignore_index=True)
        parts.layers = layers
        parts.kernels = found.kernels
        parts.kernel_timeline = found.timeline
        timing.update(
            available=True,
            busy_ms_mean=float(np.mean(found.busy_ms)) if len(found.busy_ms) else None,
            span_ms_mean=float(np.mean(found.span_ms)) if len(found.span_ms) else None,
            idle_ms_mean=float(np.mean(found.span_ms - found.busy_ms))
            if len(found.busy_ms)
            else None,
            busy_ms=found.busy_ms.tolist(),
            placed_share=found.placed_share,
        )
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
    if answer_gpu.get("clocks"):
        parts.metadata["clocks"] = dict(answer_gpu["clocks"])
    return parts
