"""The checks of GPU-true profiling, shared by the gpu-marked test and the device script
(tests/fixtures/gpu_truth/make.sh), which runs them without pytest on the H200."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np

from nsdl_jupyter.profiling import ProfileReport

MODELS = ("resnet50", "efficientnet_b0", "vit_b_16")


def export_torchvision(name: str, path: Path, batch: int = 8) -> Path:
    """A torchvision classifier with random weights, exported by torch's TorchScript exporter."""
    import torch
    import torchvision

    model = getattr(torchvision.models, name)(weights=None).eval()
    example = torch.randn(batch, 3, 224, 224)
    torch.onnx.export(model, (example,), str(path), opset_version=17, dynamo=False)
    return path


def bare_loop_p50(path: Path, iterations: int = 100, warmup: int = 50) -> float:
    """Median ms of a plain onnxruntime CUDA loop, as a user would time it, with the clocks
    locked as the profile locks them (unlocked, a small model's GPU does not boost fully)."""
    import onnxruntime as ort

    from nsdl_jupyter.profiling.runners import _gpu_runner

    lock = _gpu_runner.ClockLock(0)
    lock.lock()
    try:
        return _timed_loop(ort, path, iterations, warmup)
    finally:
        lock.unlock()


def _timed_loop(ort: Any, path: Path, iterations: int, warmup: int) -> float:
    session = ort.InferenceSession(str(path), providers=["CUDAExecutionProvider"])
    feed = {
        i.name: np.random.default_rng(0).standard_normal(i.shape).astype(np.float32)
        for i in session.get_inputs()
    }
    for _ in range(warmup):
        session.run(None, feed)
    times = []
    for _ in range(iterations):
        start = time.perf_counter()
        session.run(None, feed)
        times.append((time.perf_counter() - start) * 1e3)
    return float(np.median(times))


def problems(report: ProfileReport, bare_p50_ms: float) -> list[str]:
    """What the issue's verification asks of a GPU report, as a list of failures."""
    found = []
    gpu = report.metadata.get("gpu", {})
    timing = gpu.get("timing", {})
    if not timing.get("available"):
        return [f"no GPU timing: {timing.get('message')}"]
    busy = float(timing["busy_ms_mean"])
    summed = float(report.layers["gpu_ms"].sum())
    if not 0.9 * busy <= summed <= 1.0 * busy + 1e-6:
        found.append(f"summed gpu_ms {summed:.3f} not within 0.9-1.0 x busy {busy:.3f}")
    e2e = float(report.latency["p50"])
    if busy > e2e:
        found.append(f"GPU busy {busy:.3f} ms > end-to-end p50 {e2e:.3f} ms")
    share = report.mapped_share()
    if share < 0.95:
        found.append(f"only {share:.1%} of GPU time on ONNX nodes")
    if abs(e2e - bare_p50_ms) > 0.03 * bare_p50_ms:
        found.append(f"e2e p50 {e2e:.3f} ms vs bare loop {bare_p50_ms:.3f} ms: over 3 % apart")
    if report.gpu_metrics.empty or report.gpu_metrics["sm_clock_mhz"].isna().all():
        found.append("no NVML samples")
    clocks = gpu.get("clocks", {})
    if not clocks.get("locked"):
        found.append(f"clocks not locked: {clocks.get('warning')}")
    elif clocks.get("sm_mhz") and not report.gpu_metrics.empty:
        sm = report.gpu_metrics["sm_clock_mhz"].dropna()
        if len(sm) and float(sm.median()) != float(clocks["sm_mhz"]):
            found.append(f"SM clock {sm.median()} MHz while locked at {clocks['sm_mhz']} MHz")
    return found
