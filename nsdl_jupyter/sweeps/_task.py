"""One sweep task, as a Dask worker runs it: profile one configuration on one target and
answer a plain dict (the row's figures and the report as JSON), never raising for a failing
configuration. A dropped target link raises, so Dask's retries run the task again.

The runtime still runs in a child process (or on the SSH target), never in the worker.
"""

from __future__ import annotations

import math
import queue
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nsdl_jupyter.profiling import (
    ProfileCancelledError,
    ProfileReport,
    TargetLostError,
    TrtSettings,
    start_profile_ort,
    start_profile_trt,
)
from nsdl_jupyter.sweeps._cluster import cancel_event
from nsdl_jupyter.sweeps._identity import TargetIdentity, target_identity
from nsdl_jupyter.targets import LocalTarget, Target, TargetConnectionError

# how often a running task looks at the sweep's cancel flag (a scheduler request each time);
# the profile's own end is seen at once (job.wait returns)
POLL_S = 0.5

# SSH targets live in the kernel process; tasks of in-process workers find them by token, so
# a target (and its secrets) never enters a Dask task graph. Each has a pool of GPU indices:
# Dask's resources bound how many tasks run on a target, the pool says which GPU each takes.
_TARGETS: dict[str, tuple[Target, queue.Queue[int]]] = {}
_IDENTITY: list[TargetIdentity] = []  # this worker's own identity, found once (client= case)
_LOCK = threading.Lock()


def register_target(token: str, target: Target, gpus: int) -> None:
    pool: queue.Queue[int] = queue.Queue()
    for index in range(max(1, gpus)):
        pool.put(index)
    _TARGETS[token] = (target, pool)


def unregister_target(token: str) -> None:
    _TARGETS.pop(token, None)


@dataclass(frozen=True)
class TaskSpec:
    """What a worker needs for one run; plain data (a path or the model's bytes)."""

    key: str
    config: dict[str, Any]
    model: str | bytes
    model_name: str
    target_token: str | None
    identity: TargetIdentity | None
    cancel_event: str | None


def _worker_device() -> int:
    """The GPU of this worker in an embedded cluster (one worker per GPU, named 0..n-1)."""
    try:
        from distributed import get_worker

        name = get_worker().name
    except (ImportError, ValueError):
        return 0
    return int(name) if isinstance(name, int) or str(name).isdigit() else 0


def _stop_flag(name: str | None) -> Callable[[], bool]:
    if name is None:
        return lambda: False
    event = cancel_event(name)
    return lambda: bool(event.is_set())


def _local_identity() -> TargetIdentity:
    with _LOCK:
        if not _IDENTITY:
            _IDENTITY.append(target_identity(LocalTarget()))
        return _IDENTITY[0]


def _profile(
    config: Mapping[str, Any], model: Path, *, target: Target, device: int,
    workdir: Path, stop: Callable[[], bool],
) -> ProfileReport:  # fmt: skip
    backend = config["backend"]
    level = config["optimization_level"]
    job: Any
    if backend.startswith("ort-"):
        provider = "cpu" if backend == "ort-cpu" else "cuda"
        job = start_profile_ort(
            model,
            target=target,
            iterations=config["iterations"],
            warmup=config["warmup"],
            provider=provider,
            provider_options={"device_id": device} if provider == "cuda" else {},
            graph_optimization=level is None or level > 0,
            intra_op_threads=config["intra_op_threads"],
            spin_wait=config.get("spin_wait", True),
            trace_path=workdir / "trace.json",
        )
    else:
        settings = TrtSettings(
            fp16=config["precision"] == "fp16",
            optimization_level=3 if level is None else level,
            device_index=device,
        )
        job = start_profile_trt(
            model, settings, target=target, iterations=config["iterations"],
            warmup=config["warmup"],
        )  # fmt: skip
    while True:
        try:
            return job.wait(POLL_S)  # type: ignore[no-any-return]
        except TimeoutError:
            if stop():
                job.cancel()


def _number(value: Any) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return math.nan
    return number


def figures(report: ProfileReport, batch: int | None) -> dict[str, float]:
    """The row's figures from a report: latency percentiles, throughput, GPU, memory, build."""
    latency = report.latency
    mean = _number(latency["mean"])
    gpu = report.metadata.get("gpu") or {}
    timing = gpu.get("timing") or {} if isinstance(gpu, Mapping) else {}
    metrics = report.gpu_metrics
    util = metrics.get("gpu_util")
    memory = metrics.get("mem_used_mb")
    return {
        "p50_ms": _number(latency["p50"]),
        "p90_ms": _number(latency["p90"]),
        "p99_ms": _number(latency["p99"]),
        "mean_ms": mean,
        "throughput_per_s": (batch or 1) * 1000.0 / mean if mean > 0 else math.nan,
        "gpu_busy_ms": _number(timing.get("busy_ms_mean")),
        "gpu_util_pct": _number(util.mean()) if util is not None and len(util) else math.nan,
        "memory_mb": _number(memory.max()) if memory is not None and len(memory) else math.nan,
        "build_s": _number(report.metadata.get("build_s")),
    }


def run_task(spec: TaskSpec) -> dict[str, Any]:
    """Profile one configuration; the answer's `status` is 'ok', 'error' or 'cancelled'."""
    started = time.perf_counter()
    stop = _stop_flag(spec.cancel_event)
    answer: dict[str, Any] = {
        "key": spec.key, "status": "ok", "error": "", "report": None, "started": time.time(),
    }  # fmt: skip
    pool: queue.Queue[int] | None = None
    if spec.target_token is not None:
        target, pool = _TARGETS[spec.target_token]
        device = pool.get_nowait()  # Dask's resources leave one free for each running task
    else:
        target, device = LocalTarget(), _worker_device()
    try:
        identity = spec.identity or _local_identity()
        answer["identity"] = identity.columns()
        if stop():
            answer.update(status="cancelled", error="cancelled before it started")
            return answer
        with tempfile.TemporaryDirectory(prefix="nsdl-sweep-task-") as folder:
            workdir = Path(folder)
            model = spec.model
            if isinstance(model, bytes):
                path = workdir / f"{spec.model_name}.onnx"
                path.write_bytes(model)
            else:
                path = Path(model)
            try:
                report = _profile(
                    spec.config, path, target=target, device=device, workdir=workdir, stop=stop
                )
            except (TargetLostError, TargetConnectionError):
                raise  # the link dropped: Dask runs the task again (its retries)
            except ProfileCancelledError as error:
                answer.update(status="cancelled", error=str(error).splitlines()[0])
                return answer
            except Exception as error:  # one failing configuration never stops the sweep
                answer.update(status="error", error=f"{type(error).__name__}: {error}")
                return answer
            answer["figures"] = figures(report, spec.config.get("batch"))
            answer["report"] = report.to_json()
            return answer
    finally:
        answer["wall_s"] = time.perf_counter() - started
        answer["ended"] = time.time()
        if pool is not None:
            pool.put(device)


def worker_identity() -> TargetIdentity:
    """This worker's machine (run on each worker of a user's cluster by `Client.run`)."""
    return _local_identity()
