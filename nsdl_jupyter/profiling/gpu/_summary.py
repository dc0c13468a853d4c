"""What a report says about its GPU run in words: busy and idle time, clocks, metrics, and why
GPU timing is missing. One list of (label, text) rows for `summary()` and the HTML repr."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any


def _ms(value: Any) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return math.nan
    return number


def _busy_row(timing: Mapping[str, Any]) -> str:
    busy, idle, span = (
        _ms(timing.get(k)) for k in ("busy_ms_mean", "idle_ms_mean", "span_ms_mean")
    )
    if math.isnan(busy):
        return ""
    text = f"{busy:.3f} ms busy per inference (union of kernel intervals)"
    profiled = _ms(timing.get("profiled_busy_ms_mean"))
    if timing.get("free_running_busy_ms_mean") is not None and not math.isnan(profiled):
        return text + (
            f" in a free-running pass (no onnxruntime profiler); {profiled:.3f} ms in the "
            "profiled pass, whose per-node syncs stretch the kernels"
        )
    if not math.isnan(idle) and not math.isnan(span) and span > 0:
        text += (
            f"; in the traced pass {idle:.3f} ms idle of {span:.3f} ms (onnxruntime's profiler "
            "waits after each node there: compare busy with the end-to-end latency)"
        )
    return text


def _clocks_row(clocks: Mapping[str, Any]) -> str:
    if clocks.get("locked"):
        text = f"SM clock locked at {clocks.get('sm_mhz', '?')} MHz"
        if clocks.get("mem_mhz"):
            text += f" (memory at {clocks['mem_mhz']} MHz)"
        if clocks.get("restored") is False:
            text += " (NOT restored after the run)"
    else:
        text = "not locked (boost clocks: times vary with load and temperature)"
    if clocks.get("warning"):
        text += f"; warning: {clocks['warning']}"
    return text


def _metrics_row(metrics: Mapping[str, Any], samples: int) -> str:
    parts = []
    if samples:
        interval = metrics.get("interval_ms")
        every = f" every {interval:g} ms" if isinstance(interval, (int, float)) else ""
        parts.append(f"{samples} NVML samples{every}")
    unavailable = metrics.get("unavailable") or {}
    if isinstance(unavailable, Mapping) and unavailable:
        parts.append("unavailable: " + "; ".join(f"{k} ({v})" for k, v in unavailable.items()))
    if metrics.get("message"):
        parts.append(str(metrics["message"]))
    return ", ".join(parts)


def _copies_row(timing: Mapping[str, Any], io_binding: Any) -> str:
    share = _ms(timing.get("copy_share"))
    if math.isnan(share) or share <= 0:
        return ""
    text = f"{share:.1%} of GPU time copies inputs/outputs between host and GPU"
    if not io_binding:
        text += "; profile_ort(..., io_binding=True) keeps them on the GPU and removes them"
    return text


def _counters_row(counters: Mapping[str, Any]) -> str:
    if not counters.get("available"):
        return str(counters.get("message") or "unavailable")
    text = f"Nsight Compute: {counters.get('placed', 0)} kernels of one inference on layers"
    if counters.get("unmatched"):
        text += f" ({counters['unmatched']} without a node)"
    if isinstance(counters.get("seconds"), (int, float)):
        text += f"; ncu ran {counters['seconds']:.1f} s"
    return text


def gpu_summary_rows(metadata: Mapping[str, Any], metric_samples: int = 0) -> list[tuple[str, str]]:
    """Rows describing `metadata["gpu"]`: GPU timing (or why there is none), busy/idle per
    inference, clocks, NVML metrics. Empty for a report without a GPU part."""
    gpu = metadata.get("gpu")
    if not isinstance(gpu, Mapping):
        return []
    rows: list[tuple[str, str]] = []
    timing = gpu.get("timing")
    if isinstance(timing, Mapping):
        if timing.get("available"):
            rows.append(("layer times", "GPU kernel time (CUPTI), per inference"))
            busy = _busy_row(timing)
            if busy:
                rows.append(("GPU busy / idle", busy))
            copies = _copies_row(timing, metadata.get("io_binding"))
            if copies:
                rows.append(("host copies", copies))
        else:
            message = str(timing.get("message") or "GPU timing unavailable")
            rows.append(("GPU timing", f"unavailable: {message}; layer times are host times"))
    clocks = gpu.get("clocks")
    if isinstance(clocks, Mapping) and clocks:
        rows.append(("GPU clocks", _clocks_row(clocks)))
    metrics = gpu.get("metrics")
    if isinstance(metrics, Mapping):
        text = _metrics_row(metrics, metric_samples)
        if text:
            rows.append(("GPU metrics", text))
    counters = gpu.get("counters")
    if isinstance(counters, Mapping) and counters:
        rows.append(("GPU counters", _counters_row(counters)))
    per_layer = gpu.get("per_layer_metrics_unavailable")
    has_counters = isinstance(counters, Mapping) and counters.get("available")
    if isinstance(per_layer, Mapping) and per_layer and not has_counters:
        reasons = sorted({str(v) for v in per_layer.values()})
        rows.append(
            ("per-layer metrics", f"{', '.join(per_layer)}: unavailable ({'; '.join(reasons)})")
        )
    return rows
