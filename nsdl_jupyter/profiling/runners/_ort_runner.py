"""The onnxruntime profiling runner: one JSON request in, JSON lines out, in a child process.

This file is deliberately self-contained: it needs only onnxruntime, numpy and the standard
library, so a target copies this one file to any machine (a bare GPU box over SSH included)
and runs `python3 _ort_runner.py REQUEST.json`. It never imports nsdl_jupyter.

Protocol: every message is one stdout line `@@nsdl {json}`. Stdout is kept for them alone: before
a runtime loads, `main` points file descriptor 1 at stderr and writes messages to a copy of the
old one, so nothing onnxruntime, TensorRT or a model's text prints there can pass for one
(onnxruntime's warnings quote initializer names). Messages: `{"event": "progress", "phase", "done",
"total"}`, `{"event": "result", ...}` or `{"event": "error", "type", "message"}` (exit code 2).
A crash (segfault, OOM kill) ends the process without a result: the parent reports it.

Requests (`kind`):
- "probe": onnxruntime version, available providers, for each a load check, the device names.
- "target_check": what a target offers (OS, arch, Python, onnxruntime as "probe", TensorRT,
  trtexec, GPUs and driver, free space): the dependency table of a remote target.
- "ort_profile": two sessions on the same inputs. First a bare pass (profiling off) for the
  end-to-end latencies, because onnxruntime's profiler synchronises after every node and
  inflates the run time (ResNet-50 on an H200: 2.40 ms bare, 3.57 ms profiled). Then a
  profiled pass whose trace file is left in the work directory for the parent to parse.
  On a GPU (`_ort_gpu_passes.py`): a free-running CUPTI pass in the bare session, the peaks
  micro-benchmark and, when asked, the ncu counter pass ("ort_counters_pass", run under ncu).

With `NSDL_STDIN_WATCHDOG=1` (set by the SSH target) the runner ends its whole process group
as soon as its stdin reaches EOF: over SSH that is the connection closing, so a dropped link
leaves nothing running. A local child has its stdin closed from the start and no such variable.

Keep it runnable on Python 3.8+: it may run on a GPU box with an older system Python.
"""

from __future__ import annotations

import base64
import contextlib
import ctypes
import gc
import json
import os
import platform
import shutil
import signal
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Iterator
from typing import Any

PREFIX = "@@nsdl "
PROTOCOL_VERSION = 1
# A 76-byte ONNX model (Identity on float[1], opset 13), used to check that a provider loads.
_PROBE_MODEL = base64.b64decode(
    "CAg6QgoXCgF4EgF5GgVwcm9iZSIISWRlbnRpdHkSBXByb2JlWg8KAXgSCgoICAESBAoCCAFiDwoBeRIKCggIARIECgII"
    "AUIECgAQDQ=="
)
_PROGRESS_INTERVAL_S = 0.1


class RunnerError(Exception):
    """A user-level failure with a message that says what to change."""


# The file descriptor of the messages once `main` has set it aside; in the environment, so
# every copy of this module that a sibling runner loads by path writes to the same one.
_MESSAGE_FD = "NSDL_MESSAGE_FD"
_emit_lock = threading.Lock()


def _keep_stdout_for_messages() -> None:
    """Set stdout aside for `emit` alone and point file descriptor 1 at stderr."""
    sys.stdout.flush()
    os.environ[_MESSAGE_FD] = str(os.dup(1))  # not inherited by children (PEP 446)
    os.dup2(2, 1)


def emit(event: str, **fields: Any) -> None:
    line = (PREFIX + json.dumps({"event": event, **fields}, separators=(",", ":")) + "\n").encode()
    fd = os.environ.get(_MESSAGE_FD)
    with _emit_lock:
        if fd is None:  # imported, not run by `main`
            sys.stdout.write(line.decode())
            sys.stdout.flush()
            return
        view = memoryview(line)
        while view:
            view = view[os.write(int(fd), view) :]


class Progress:
    """Throttled progress messages: at most one per 0.1 s, plus the last one of a phase."""

    def __init__(self, phase: str, total: int) -> None:
        self.phase = phase
        self.total = total
        self._last = 0.0
        emit("progress", phase=phase, done=0, total=total)

    def step(self, done: int) -> None:
        now = time.monotonic()
        if done >= self.total or now - self._last >= _PROGRESS_INTERVAL_S:
            self._last = now
            emit("progress", phase=self.phase, done=done, total=self.total)


def _debug_crash(request: dict[str, Any], where: str) -> None:
    """Test hook: really crash the process at `where` (to prove the parent survives it)."""
    if request.get("debug_crash_at") != where:
        return
    if request.get("debug_crash_kind") == "abort":
        os.abort()
    ctypes.string_at(0)  # reads address 0: SIGSEGV, like a crashing runtime


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _gpu_names() -> list[str]:
    """GPU names from NVML (the driver's library), without any Python package."""
    names: list[str] = []
    for lib in ("libnvidia-ml.so.1", "libnvidia-ml.so", "nvml.dll"):
        try:
            nvml = ctypes.CDLL(lib)
        except OSError:
            continue
        try:
            if nvml.nvmlInit_v2() != 0:
                return names
            count = ctypes.c_uint(0)
            nvml.nvmlDeviceGetCount_v2(ctypes.byref(count))
            for i in range(count.value):
                handle = ctypes.c_void_p()
                if nvml.nvmlDeviceGetHandleByIndex_v2(i, ctypes.byref(handle)) != 0:
                    continue
                buf = ctypes.create_string_buffer(96)
                if nvml.nvmlDeviceGetName(handle, buf, 96) == 0:
                    names.append(buf.value.decode("utf-8", "replace"))
            nvml.nvmlShutdown()
        except (AttributeError, OSError):
            pass
        return names
    return names


def _device_for(provider: str, provider_options: dict[str, Any]) -> str:
    if provider in ("CUDAExecutionProvider", "TensorrtExecutionProvider"):
        gpus = _gpu_names()
        index = int(provider_options.get("device_id", 0))
        if index < len(gpus):
            return f"GPU {index}: {gpus[index]}"
        return f"GPU {index}"
    if provider == "DmlExecutionProvider":
        return f"DirectML device {provider_options.get('device_id', 0)}"
    return _cpu_name()


@contextlib.contextmanager
def _captured_stderr() -> Iterator[list[str]]:
    """Capture what native code writes on fd 2 (onnxruntime's provider load errors)."""
    lines: list[str] = []
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile(mode="w+b") as tmp:
        os.dup2(tmp.fileno(), 2)
        try:
            yield lines
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            tmp.seek(0)
            text = tmp.read().decode("utf-8", "replace")
            lines.extend(text.splitlines())
            # Keep what was said visible in the child's stderr too (the parent shows it on failure).
            sys.stderr.write(text)


def _import_ort() -> Any:
    try:
        import onnxruntime
    except ImportError as exc:
        raise RunnerError(
            f"onnxruntime is not importable by {sys.executable} ({exc}); install onnxruntime "
            "(or onnxruntime-gpu for CUDA/TensorRT) into the Python that runs the profile"
        ) from exc
    return onnxruntime


def _load_reason(lines: list[str]) -> str:
    useful = [ln for ln in lines if "rror" in ln or "ailed" in ln or "cannot" in ln]
    return (useful or lines or ["the session silently fell back to CPUExecutionProvider"])[-1]


def probe(_request: dict[str, Any]) -> dict[str, Any]:
    ort = _import_ort()
    available = list(ort.get_available_providers())
    load_errors: dict[str, str] = {}
    for provider in available:
        if provider in ("CPUExecutionProvider", "AzureExecutionProvider"):
            continue
        with _captured_stderr() as lines:
            try:
                sess = ort.InferenceSession(_PROBE_MODEL, providers=[provider])
                used = sess.get_providers()
            except Exception as exc:
                used = []
                lines.append(str(exc))
        if provider not in used:
            load_errors[provider] = _load_reason(lines)
    return {
        "ort_version": ort.__version__,
        "python": sys.version.split()[0],
        "available": available,
        "all": list(ort.get_all_providers()),
        "load_errors": load_errors,
        "cpu": _cpu_name(),
        "gpus": _gpu_names(),
        "host": platform.node(),
    }


_NUMPY_DTYPES = {
    "tensor(float)": "float32",
    "tensor(float16)": "float16",
    "tensor(double)": "float64",
    "tensor(int8)": "int8",
    "tensor(int16)": "int16",
    "tensor(int32)": "int32",
    "tensor(int64)": "int64",
    "tensor(uint8)": "uint8",
    "tensor(uint16)": "uint16",
    "tensor(uint32)": "uint32",
    "tensor(uint64)": "uint64",
    "tensor(bool)": "bool",
    "tensor(string)": "object",
}


def _random_inputs(
    sess: Any, dims: dict[str, int], seed: int
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Random feeds for every input: free dimensions take the user's size by name, else 1."""
    import numpy as np

    rng = np.random.default_rng(seed)
    feeds: dict[str, Any] = {}
    described: dict[str, Any] = {}
    for arg in sess.get_inputs():
        shape = [
            d if isinstance(d, int) and d >= 0 else int(dims.get(str(d), 1)) for d in arg.shape
        ]
        dtype = _NUMPY_DTYPES.get(arg.type)
        if dtype is None:
            raise RunnerError(
                f"input {arg.name!r} has type {arg.type}, which random inputs do not cover; "
                "give an input folder with a TensorProto file for it instead"
            )
        if dtype.startswith("float"):
            value = rng.standard_normal(shape).astype(dtype)
        elif dtype == "bool":
            value = rng.integers(0, 2, shape).astype(bool)
        elif dtype == "object":
            value = np.full(shape, "a", dtype=object)
        else:
            # 0 or 1: valid as token ids, token types, attention masks and most indices.
            value = rng.integers(0, 2, shape).astype(dtype)
        feeds[arg.name] = value
        described[arg.name] = {"shape": shape, "dtype": dtype}
    return feeds, described


def _file_inputs(
    sess: Any, path: str, strings: dict[str, str]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Feeds from the parent's npz; a string input comes as byte lengths + UTF-8 bytes."""
    import numpy as np

    with np.load(path, allow_pickle=False) as data:
        feeds = {name: data[name] for name in data.files if name not in strings.values()}
        for name, key in strings.items():
            lengths = feeds[name]
            blob = data[key].tobytes()
            ends = np.cumsum(lengths.ravel()).tolist()
            starts = [0, *ends[:-1]]
            values = [blob[a:b].decode("utf-8") for a, b in zip(starts, ends)]  # noqa: B905 (Python 3.8)
            feeds[name] = np.array(values, dtype=object).reshape(lengths.shape)
    missing = [arg.name for arg in sess.get_inputs() if arg.name not in feeds]
    if missing:
        raise RunnerError(f"the input file {path} has no array for input(s) {missing}")
    described = {n: {"shape": list(v.shape), "dtype": str(v.dtype)} for n, v in feeds.items()}
    return feeds, described


def _session(
    ort: Any, request: dict[str, Any], *, profile_prefix: str | None
) -> tuple[Any, list[str]]:
    so = ort.SessionOptions()
    so.graph_optimization_level = (
        ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        if request.get("graph_optimization", True)
        else ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    )
    threads = request.get("intra_op_threads")
    if threads:
        so.intra_op_num_threads = int(threads)
    if request.get("spin_wait") is False:  # runs that share the cores: idle threads sleep
        so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    if profile_prefix is not None:
        so.enable_profiling = True
        so.profile_file_prefix = profile_prefix
        if request.get("graph_optimization", True):
            # The graph onnxruntime runs (fused nodes and all), for mapping the trace's rows
            # back to the model's nodes; weights go to a side file that is never fetched.
            so.optimized_model_filepath = profile_prefix + "_optimized.onnx"
            so.add_session_config_entry(
                "session.optimized_model_external_initializers_file_name",
                os.path.basename(profile_prefix) + "_optimized.onnx.data",
            )
            so.add_session_config_entry(
                "session.optimized_model_external_initializers_min_size_in_bytes", "1024"
            )
    provider = request["provider"]
    options = request.get("provider_options") or {}
    providers: list[Any] = [(provider, options)] if options else [provider]
    if provider != "CPUExecutionProvider":
        providers.append("CPUExecutionProvider")
    # Not under _captured_stderr: if the runtime crashes here, what it said must stay in the
    # stderr that the parent shows.
    sess = ort.InferenceSession(request["model"], so, providers=providers)
    used = list(sess.get_providers())
    if provider not in used:
        raise RunnerError(
            f"{provider} did not load and onnxruntime fell back to {used} (its reason is in "
            "the runner's stderr). Install the CUDA/cuDNN libraries that this onnxruntime "
            "build needs, or pick another execution provider"
        )
    return sess, used


def _run_fn(ort: Any, sess: Any, feeds: dict[str, Any], output_names: list[str],
            request: dict[str, Any]) -> Any:  # fmt: skip
    """One inference as a call. With `io_binding`, inputs are copied to the provider's device
    once and outputs stay there (onnxruntime IOBinding): runs without host copies."""
    if not request.get("io_binding"):
        return lambda: sess.run(output_names, feeds)
    device = "cuda" if request["provider"] in _GPU_PROVIDERS else "cpu"
    device_id = int((request.get("provider_options") or {}).get("device_id", 0))
    binding = sess.io_binding()
    values = {n: ort.OrtValue.ortvalue_from_numpy(v, device, device_id) for n, v in feeds.items()}
    for name, value in values.items():
        binding.bind_ortvalue_input(name, value)
    for name in output_names:
        binding.bind_output(name, device, device_id)

    def run() -> None:
        sess.run_with_iobinding(binding)
        _ = values  # the bound inputs live as long as the call

    return run


def _percentile(sorted_values: list[float], q: float) -> float:
    if not sorted_values:
        return float("nan")
    pos = (len(sorted_values) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def ort_profile(request: dict[str, Any]) -> dict[str, Any]:
    ort = _import_ort()
    iterations = int(request["iterations"])
    warmup = int(request.get("warmup", 0))
    workdir = request["workdir"]
    inputs = request.get("inputs") or {"mode": "random"}

    _debug_crash(request, "session")
    t0 = time.perf_counter()
    sess, used = _session(ort, request, profile_prefix=None)
    session_ms = (time.perf_counter() - t0) * 1e3
    if inputs.get("mode") == "npz":
        feeds, described = _file_inputs(sess, inputs["path"], inputs.get("strings") or {})
    else:
        feeds, described = _random_inputs(
            sess, dict(inputs.get("dims") or {}), int(inputs.get("seed", 0))
        )
    output_names = [o.name for o in sess.get_outputs()]

    gpu_request = dict(request.get("gpu") or {})
    on_gpu = request["provider"] in _GPU_PROVIDERS
    device = int((request.get("provider_options") or {}).get("device_id", 0))
    gpu: dict[str, Any] = {}
    lock = _clock_lock(device, gpu) if on_gpu and gpu_request.get("lock_clocks") else None
    try:
        run_once = _run_fn(ort, sess, feeds, output_names, request)
        progress = Progress("warm-up", warmup)
        for i in range(warmup):
            run_once()
            progress.step(i + 1)
        _debug_crash(request, "run")
        # The bare pass: what a plain onnxruntime loop measures, with the profiler off (NVML
        # is read meanwhile, from another thread, when asked).
        sampler = _sampler(device, gpu_request, gpu) if on_gpu else None
        latencies: list[float] = []
        progress = Progress("latency", iterations)
        clock = time.perf_counter_ns
        for i in range(iterations):
            start = clock()
            run_once()
            latencies.append((clock() - start) / 1e6)
            progress.step(i + 1)
        if sampler is not None:
            gpu["metrics"] = _sampled(sampler, gpu_request)
        _free_running(run_once, iterations, workdir, gpu, on_gpu and gpu_request)
        del sess, run_once
        gc.collect()

        written = _profiled_pass(
            ort, request, feeds, output_names=output_names, gpu_request=gpu_request, gpu=gpu
        )
        if on_gpu:
            _after_profile(ort, request, gpu_request, gpu)
    finally:
        if lock is not None and lock.locked:
            lock.unlock()
            gpu["clocks"]["restored"] = True
    trace = os.path.join(workdir, "trace.json")
    shutil.move(written if os.path.isabs(written) else os.path.abspath(written), trace)

    ordered = sorted(latencies)
    optimized = os.path.join(workdir, "ort_profile_optimized.onnx")
    return {
        "trace": trace,
        "optimized_model": optimized if os.path.isfile(optimized) else None,
        "skip_runs": warmup,
        "latencies_ms": latencies,
        "latency_p50_ms": _percentile(ordered, 0.5),
        "session_create_ms": session_ms,
        "ort_version": ort.__version__,
        "provider": request["provider"],
        "providers": used,
        "device": _device_for(request["provider"], request.get("provider_options") or {}),
        "graph_optimization": bool(request.get("graph_optimization", True)),
        "iterations": iterations,
        "warmup": warmup,
        "inputs": described,
        "host": platform.node(),
        "python": sys.version.split()[0],
        "gpu": gpu,
    }


def _profiled_pass(
    ort: Any,
    request: dict[str, Any],
    feeds: dict[str, Any],
    *,
    output_names: list[str],
    gpu_request: dict[str, Any],
    gpu: dict[str, Any],
) -> str:
    """A second session with the profiler on; its warm-up runs are in the trace too, and the
    parent skips them when it parses (`skip_runs`). On a GPU, CUPTI records every kernel
    meanwhile, for per-node GPU times. Returns the trace file onnxruntime wrote."""
    iterations = int(request["iterations"]) + int(request.get("warmup", 0))
    workdir = request["workdir"]
    profiled, _ = _session(ort, request, profile_prefix=os.path.join(workdir, "ort_profile"))
    on_gpu = request["provider"] in _GPU_PROVIDERS
    tracer = _tracer(gpu) if on_gpu and gpu_request.get("timing", True) else None
    progress = Progress("profile", iterations)
    run_once = _run_fn(ort, profiled, feeds, output_names, request)
    if tracer is not None:
        tracer.start()
    for i in range(iterations):
        run_once()
        progress.step(i + 1)
    if tracer is not None:
        tracer.stop()
        kernels = os.path.join(workdir, "gpu_kernels.npz")
        summary = tracer.save(kernels, int(profiled.get_profiling_start_time_ns()))
        gpu["timing"] = {"available": True, "file": kernels, **summary}
        gpu["per_layer_metrics_unavailable"] = tracer.per_layer_metrics()
    written: str = profiled.end_profiling()
    return written


# ---- GPU truth: the sibling module _gpu_runner.py (CUPTI, NVML), loaded only on a GPU run

_GPU_PROVIDERS = ("CUDAExecutionProvider", "TensorrtExecutionProvider")


_SIBLINGS: dict[str, Any] = {}


def _sibling(filename: str, module_name: str) -> Any:
    """A sibling runner file, loaded by path once (this file runs as a plain script)."""
    if filename in _SIBLINGS:
        return _SIBLINGS[filename]
    import importlib.util

    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), filename)
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None or not os.path.isfile(path):
        raise RunnerError(f"{path} is missing: deploy it beside {os.path.basename(__file__)}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    _SIBLINGS[filename] = module
    return module


def _gpu_runner() -> Any:
    """The sibling file _gpu_runner.py (CUPTI, NVML)."""
    return _sibling("_gpu_runner.py", "_nsdl_gpu_runner")


def _clock_lock(device: int, gpu: dict[str, Any]) -> Any:
    runner = _gpu_runner()
    try:
        lock = runner.ClockLock(device)
    except runner.GpuUnavailableError as exc:
        gpu["clocks"] = {"locked": False, "warning": str(exc)}
        return None
    if lock.lock():
        # said before the measured passes: if this process dies, the parent resets them
        emit("clocks_locked", device=device)
    gpu["clocks"] = {
        "locked": lock.locked,
        "sm_mhz": lock.sm_mhz,
        "mem_mhz": lock.mem_mhz,
        "warning": lock.warning,
    }
    return lock


def _sampler(device: int, gpu_request: dict[str, Any], gpu: dict[str, Any]) -> Any:
    interval = gpu_request.get("metrics_interval_ms", 10.0)
    if not interval:
        return None
    runner = _gpu_runner()
    try:
        sampler = runner.MetricSampler(device, float(interval))
    except runner.GpuUnavailableError as exc:
        gpu["metrics"] = {"available": False, "message": str(exc)}
        return None
    sampler.start()
    return sampler


def _tracer(gpu: dict[str, Any]) -> Any:
    runner = _gpu_runner()
    try:
        return runner.KernelTracer()
    except runner.GpuUnavailableError as exc:
        gpu["timing"] = {"available": False, "message": str(exc)}
        return None


def _passes() -> Any:
    return _sibling("_ort_gpu_passes.py", "_nsdl_ort_gpu_passes")


def _sampled(sampler: Any, gpu_request: dict[str, Any]) -> dict[str, Any]:
    sampler.stop()
    return {
        "interval_ms": float(gpu_request.get("metrics_interval_ms", 10.0)),
        "columns": sampler.columns(),
        "unavailable": sampler.unavailable,
    }


def _after_profile(
    ort: Any, request: dict[str, Any], gpu_request: dict[str, Any], gpu: dict[str, Any]
) -> None:
    """Peaks and counters, at the clocks the profile ran at (still locked)."""
    if gpu_request.get("peaks", True):
        gpu["peaks"] = _peaks(ort, request, gpu)
    if gpu_request.get("counters"):
        Progress("counters", 1)
        gpu["counters"] = _passes().ncu_counters(request)


def _free_running(run_once: Any, runs: int, workdir: str, gpu: dict[str, Any], asked: Any) -> None:
    """Kernel times without onnxruntime's profiler (`_ort_gpu_passes.free_running_pass`), on
    a GPU run that asked for timing (`asked`: the `gpu` request, falsy off the GPU)."""
    if not asked or not asked.get("timing", True) or not asked.get("free_running", True):
        return
    runner = _gpu_runner()
    try:
        tracer = runner.KernelTracer(api=False)
    except runner.GpuUnavailableError as exc:
        gpu["free_running"] = {"available": False, "message": str(exc)}
        return
    Progress("free-running", 1)
    path = os.path.join(workdir, "gpu_kernels_free.npz")
    gpu["free_running"] = _passes().free_running_pass(tracer, run_once, runs, path, 0)


def _peaks(ort: Any, request: dict[str, Any], gpu: dict[str, Any]) -> dict[str, Any]:
    """The attainable peaks of this GPU at its clock now (cached; a few seconds once)."""
    Progress("peaks", 1)
    passes = _passes()
    options = dict(request.get("provider_options") or {})
    device = int(options.get("device_id", 0))
    clocks = gpu.get("clocks") or {}
    clock = int(clocks.get("sm_mhz") or 0) if clocks.get("locked") else passes.sm_clock_mhz(device)
    names = _gpu_names()
    runner = _gpu_runner()

    def tracer() -> Any:
        try:
            return runner.KernelTracer(api=False)
        except runner.GpuUnavailableError:
            return None

    try:
        return dict(
            passes.measure_peaks(
                ort,
                "CUDAExecutionProvider",
                {"device_id": device},
                gpu_name=names[device] if device < len(names) else f"GPU {device}",
                sm_clock_mhz=clock,
                tracer_factory=tracer,
            )
        )
    except Exception as exc:  # out of memory on a small GPU, a provider without MatMul...
        return {"available": False, "message": f"peaks not measured: {exc}"}


def ort_counters_pass(request: dict[str, Any]) -> dict[str, Any]:
    """Under ncu: warm up, then one inference inside cuProfilerStart/Stop (the only kernels
    ncu profiles with --profile-from-start off)."""
    ort = _import_ort()
    sess, _ = _session(ort, request, profile_prefix=None)
    inputs = request.get("inputs") or {"mode": "random"}
    if inputs.get("mode") == "npz":
        feeds, _ = _file_inputs(sess, inputs["path"], inputs.get("strings") or {})
    else:
        feeds, _ = _random_inputs(sess, dict(inputs.get("dims") or {}), int(inputs.get("seed", 0)))
    run_once = _run_fn(ort, sess, feeds, [o.name for o in sess.get_outputs()], request)
    for _ in range(max(int(request.get("warmup", 0)), 1)):
        run_once()
    passes = _passes()
    passes.profiler_range(True)
    run_once()
    passes.profiler_range(False)
    return {"runs": 1}


def restore_clocks(request: dict[str, Any]) -> dict[str, Any]:
    """Reset locked clocks (the parent asks after a profile run that locked them died)."""
    runner = _gpu_runner()
    try:
        return dict(runner.restore_clocks(int(request.get("device", 0))))
    except runner.GpuUnavailableError as exc:
        raise RunnerError(str(exc)) from None


def _version_of(distribution: str) -> str | None:
    try:
        from importlib import metadata

        return str(metadata.version(distribution))
    except Exception:  # not installed, or no importlib.metadata (Python < 3.8)
        return None


def _version_beside(module: str, locations: Any) -> str | None:
    """The version in the `*.dist-info` beside the module whose RECORD lists it: a look at a
    few files, where `packages_distributions()` reads every installed distribution (~1 s)."""
    for location in locations:
        folder = os.path.dirname(os.path.abspath(str(location)))
        prefix = module.lower().replace("-", "_")
        try:
            names = [n for n in os.listdir(folder) if n.endswith(".dist-info")]
        except OSError:
            continue
        for name in sorted(n for n in names if n.lower().startswith(prefix)):
            try:
                with open(os.path.join(folder, name, "RECORD"), encoding="utf-8") as f:
                    if any(line.startswith((module + "/", module + ".py")) for line in f):
                        return name[: -len(".dist-info")].rsplit("-", 1)[1]
            except (OSError, IndexError):
                continue
    return None


def _module_version(module: str) -> str | None:
    """The version of the installed distribution that provides `module` (None when the module
    cannot be imported), found by the module, not by one distribution's name: TensorRT ships
    as tensorrt, tensorrt-cu12, tensorrt-cu13, tensorrt-rtx-cu13 and more."""
    import importlib.util

    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    found = _version_beside(module, spec.submodule_search_locations or [spec.origin or ""])
    if found:
        return found
    try:
        from importlib import metadata

        names = metadata.packages_distributions().get(module, [])  # Python 3.10+
    except Exception:
        names = []
    for name in [*names, module, module.replace("_", "-")]:
        version = _version_of(name)
        if version:
            return version
    return "installed (version unknown)"


def _target_probe() -> Any:
    """The targets' probe (nsdl_jupyter/targets/_target_probe.py): deployed beside the runner
    files on a remote target, found in its package folder on this machine."""
    here = os.path.dirname(os.path.abspath(__file__))
    packaged = os.path.join(here, os.pardir, os.pardir, "targets", "_target_probe.py")
    if not os.path.isfile(os.path.join(here, "_target_probe.py")) and os.path.isfile(packaged):
        return _sibling(os.path.relpath(packaged, here), "nsdl_target_probe")
    return _sibling("_target_probe.py", "nsdl_target_probe")


def _runtime_set(request: dict[str, Any]) -> dict[str, Any] | None:
    """For an SSH target with a runtime set: which of the wheels asked for are here, and the
    set's venv when it is ready. The first time through, a ready venv's python runs this check
    again (same process, so the same process group and the same pipes)."""
    wanted = request.get("runtime_sets")
    if not isinstance(wanted, dict):
        return None
    probe = _target_probe()
    root = str(request.get("deploy_root") or os.getcwd())
    base = os.environ.pop("NSDL_BASE_PLATFORM", None)
    facts = json.loads(base) if base else probe.platform_facts()
    venv = os.environ.pop("NSDL_READY_VENV", None)
    if base is None:
        venv = probe.ready_venv(root, wanted.get("sets") or {}, facts)
        if venv is not None:
            os.environ["NSDL_BASE_PLATFORM"] = json.dumps(facts)
            os.environ["NSDL_READY_VENV"] = venv
            sys.stdout.flush()
            fd = os.environ.pop(_MESSAGE_FD, None)
            if fd is not None:
                os.dup2(int(fd), 1)  # the messages' stdout, as the launcher gave it
            python = os.path.join(venv, "bin", "python")
            os.execv(python, [python, "-u", os.path.abspath(sys.argv[0]), *sys.argv[1:]])
    asked = [str(p) for p in wanted.get("paths") or []]
    return {
        "platform": facts,
        "asked": asked,
        "present": probe.present(root, asked),
        "ready_venv": venv,
    }


def _os_name() -> str:
    try:
        with open("/etc/os-release", encoding="utf-8") as f:
            for line in f:
                if line.startswith("PRETTY_NAME="):
                    return line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    return f"{platform.system()} {platform.release()}"


def _cores() -> int:
    """The cores this process may run on (its affinity, which a container can narrow)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # no affinity outside Linux
        return os.cpu_count() or 0


def target_check(request: dict[str, Any]) -> dict[str, Any]:
    """What this machine offers for profiling; never raises for a missing piece."""
    runtime_set = _runtime_set(request)
    try:
        ort: dict[str, Any] = {"available": True, **probe(request)}
    except RunnerError as exc:
        ort = {"available": False, "message": str(exc)}
    trtexec = shutil.which("trtexec")
    for candidate in ("/usr/src/tensorrt/bin/trtexec", "/opt/tensorrt/bin/trtexec"):
        if trtexec is None and os.access(candidate, os.X_OK):
            trtexec = candidate
    usage = shutil.disk_usage(request.get("deploy_dir") or os.getcwd())
    return {
        "os": _os_name(),
        "system": platform.system(),
        "arch": platform.machine(),
        "cores": _cores(),
        "python": sys.version.split()[0],
        "python_executable": sys.executable,
        "onnxruntime": ort,
        "tensorrt": _module_version("tensorrt"),
        "tensorrt_rtx": _module_version("tensorrt_rtx"),
        "trtexec": trtexec,
        "nvidia_smi": _target_probe().nvidia_smi(),
        "runtime_sets": runtime_set,
        "disk_free_bytes": usage.free,
        "host": platform.node(),
    }


HANDLERS = {
    "probe": probe,
    "target_check": target_check,
    "ort_profile": ort_profile,
    "restore_clocks": restore_clocks,
    "ort_counters_pass": ort_counters_pass,
}


def _exit_when_stdin_closes() -> None:
    """With NSDL_STDIN_WATCHDOG=1: when stdin reaches EOF (the SSH connection closed), end
    this process group, the runner and whatever it started, at once."""
    if os.environ.get("NSDL_STDIN_WATCHDOG") != "1":
        return

    def watch() -> None:
        try:
            while os.read(0, 4096):
                pass
        except OSError:
            pass
        try:
            os.killpg(os.getpgrp(), signal.SIGKILL)
        finally:
            os._exit(3)

    threading.Thread(target=watch, name="nsdl-stdin-watchdog", daemon=True).start()


def main(argv: list[str], handlers: dict[str, Any] | None = None) -> int:
    """Run the request named on the command line with `handlers` (kind -> function; default
    this runner's). A RunnerError with `kind` and `fields` is reported as that error type
    with those fields, and ends the process with its `exit_code` (default 2)."""
    handlers = HANDLERS if handlers is None else handlers
    if len(argv) != 2:
        sys.stderr.write(f"usage: {os.path.basename(argv[0])} REQUEST.json\n")
        return 2
    _keep_stdout_for_messages()
    _exit_when_stdin_closes()
    try:
        with open(argv[1], encoding="utf-8") as f:
            request = json.load(f)
        handler = handlers.get(request.get("kind", ""))
        if handler is None:
            raise RunnerError(
                f"unknown request kind {request.get('kind')!r}; use {sorted(handlers)}"
            )
        if int(request.get("protocol", PROTOCOL_VERSION)) != PROTOCOL_VERSION:
            raise RunnerError(f"protocol {request.get('protocol')} != runner's {PROTOCOL_VERSION}")
        emit("result", **handler(request))
    except RunnerError as exc:
        fields = dict(getattr(exc, "fields", {}))
        emit("error", type=getattr(exc, "kind", "RunnerError"), message=str(exc), **fields)
        return int(getattr(exc, "exit_code", 2))
    except Exception as exc:
        traceback.print_exc()
        emit("error", type=type(exc).__name__, message=str(exc))
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
