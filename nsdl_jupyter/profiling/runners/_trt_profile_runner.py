"""Per-layer TensorRT profiling, run by `_trt_runner.py` for the request kind "trt_profile".

A plug-in of the engine runner (it receives that module as `host` for TensorRT imports, the
logger, the build and the `@@nsdl` protocol), with the same rules: standard library only at
import time, Python 3.8+, so the kernel imports it for the pure parts (trtexec's profiling
command line, the engine/target match) without TensorRT.

Both backends leave trtexec-format exports in the work folder, so the parent turns either into a
report with one importer (`load_trtexec`):
- "tensorrt" / "tensorrt_rtx": the engine is deserialized (refitted from the ONNX model when it
  is refittable and a model was given), inputs are random at the optimization profile's opt
  shapes (or the parent's arrays), then a warm-up, a latency pass timed by CUDA events around
  each `execute_async_v3` with no profiler attached, and `passes` profiled runs whose per-layer
  times come from `IProfiler.report_layer_time` (`enqueue_emits_profile` off,
  `report_to_profiler` after each run). NVTX ranges name each pass (the `nvtx` module, when
  installed) and TensorRT's own per-layer NVTX ranges are detailed. Device buffers go through
  cuda-python, as NVIDIA's samples do.
- "trtexec": `trtexec --loadEngine ... --separateProfileRun --exportProfile --exportLayerInfo
  --exportTimes --profilingVerbosity=detailed` (argv list, never a shell).

WRITTEN FOR GPUs WE LACK: the Python-API pass needs full TensorRT 10/11 (not installable here)
or TensorRT-RTX on an RTX GPU; the tests run everything up to the first CUDA call.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # tensorrt-stubs, as in _trt_runner.py
    from tensorrt_bindings import tensorrt as api

_NON_GPU = (
    "profiling a TensorRT engine needs an NVIDIA GPU on the target, and the CUDA driver there "
    "reports none. Build here with export_engine, then profile on a GPU machine "
    "(target=SshTarget(...))"
)
_NO_DEVICE_TEXT = ("no CUDA-capable device", "cudaErrorNoDevice", "CUDA initialization failure")


# ---- pure parts (the kernel uses them too) --------------------------------------------------


def export_paths(workdir: str) -> dict[str, str]:
    """Where a profile run leaves its trtexec-format exports."""
    return {
        "profile": os.path.join(workdir, "trt.profile.json"),
        "layer_info": os.path.join(workdir, "trt.graph.json"),
        "times": os.path.join(workdir, "trt.timing.json"),
    }


def _shape_spec(shapes: dict[str, list[int]]) -> str:
    return ",".join(
        f"{name}:{'x'.join(str(int(d)) for d in dims)}" for name, dims in shapes.items()
    )


def trtexec_profile_argv(
    *,
    trtexec: str,
    engine: str,
    workdir: str,
    passes: int,
    warmup_ms: int,
    device: int,
    shapes: dict[str, list[int]] | None = None,
    input_files: dict[str, str] | None = None,
    plugins: list[str] | tuple[str, ...] = (),
) -> list[str]:
    """The trtexec command that profiles `engine` per layer in a separate profiling run."""
    out = export_paths(workdir)
    argv = [
        trtexec,
        f"--loadEngine={engine}",
        "--separateProfileRun",
        f"--exportProfile={out['profile']}",
        f"--exportLayerInfo={out['layer_info']}",
        f"--exportTimes={out['times']}",
        "--profilingVerbosity=detailed",
        f"--iterations={int(passes)}",
        "--duration=0",  # exactly `passes` iterations, not trtexec's default 3 s
        f"--warmUp={int(warmup_ms)}",
        f"--device={int(device)}",
    ]
    if shapes:
        argv.append(f"--shapes={_shape_spec(shapes)}")
    if input_files:
        argv.append("--loadInputs=" + ",".join(f"{n}:{p}" for n, p in input_files.items()))
    argv += [f"--dynamicPlugins={p}" for p in plugins]
    return argv


def engine_mismatch(
    expected: dict[str, Any], backend: str, version: str, gpu: str | None
) -> str | None:
    """Why an engine built as `expected` (its build metadata) cannot run here, or None.

    TensorRT engines are tied to the TensorRT version that built them and (unless hardware
    compatible) to the GPU model: say which, and what to do, before TensorRT fails obscurely.
    """
    built_backend = expected.get("backend")
    built_version = str(expected.get("version") or "")
    if built_backend and built_backend not in ("trtexec", backend) and backend != "trtexec":
        return (
            f"the engine was built with {built_backend} {built_version} and the target "
            f"runs {backend} {version}: an engine only loads in the TensorRT that built it; "
            "rebuild it there (pass the ONNX model to profile_trt) or pick that backend"
        )
    same_release = built_version.split(".")[:3] == version.split(".")[:3]
    if built_version and version and not same_release and not expected.get("version_compatible"):
        return (
            f"the engine was built with TensorRT {built_version} and the target has "
            f"{version}: rebuild it on the target (pass the ONNX model to profile_trt), or "
            "build it with version_compatible=True"
        )
    built_gpu = expected.get("gpu")
    if built_gpu and gpu and built_gpu != gpu and not expected.get("hardware_compatible"):
        return (
            f"the engine was built on {built_gpu} and the target's GPU is {gpu}: TensorRT "
            "engines are tuned to one GPU model; rebuild it on the target (pass the ONNX model "
            "to profile_trt), or build with hardware_compatible=True (Ampere and later)"
        )
    return None


def cuda_devices() -> int:
    """CUDA devices the driver sees in this process (0 without a driver), without CUDA
    Python packages: libcuda's cuInit and cuDeviceGetCount."""
    import ctypes

    for name in ("libcuda.so.1", "libcuda.so", "nvcuda.dll"):
        try:
            driver = ctypes.CDLL(name)
        except OSError:
            continue
        count = ctypes.c_int(0)
        if driver.cuInit(0) != 0 or driver.cuDeviceGetCount(ctypes.byref(count)) != 0:
            return 0
        return int(count.value)
    return 0


# ---- the run --------------------------------------------------------------------------------


def profile(request: dict[str, Any], host: Any) -> dict[str, Any]:
    """Build (or take) the engine, profile it, leave the exports in the work folder."""
    host._Cancel.install()
    common = host._common
    settings = dict(request.get("settings") or {})
    backend, version = host.resolve_backend(settings)
    device = int(settings.get("device_index", 0))
    gpus = common._gpu_names()
    gpu_name = gpus[device] if device < len(gpus) else None
    expected = request.get("expected") or {}
    if request.get("engine"):
        why = engine_mismatch(expected, backend, version, gpu_name)
        if why is not None:
            raise host.TypedRunnerError(
                "EngineMismatchError", why, backend=backend, version=version
            )
    host.select_device(backend, settings)
    # trtexec checks its own device (its no-device error is mapped below); the Python API
    # needs a device the CUDA driver sees (NVML alone misses Jetson boards)
    if backend != "trtexec" and not cuda_devices():
        raise host.TypedRunnerError("TrtUnavailableError", _NON_GPU, backend=backend)
    built = None
    engine = request.get("engine")
    if not engine:
        built = host.build({**request, "settings": {**settings, "backend": backend}})
        engine = built["engine"]
    common._debug_crash(request, "profile")
    gpu: dict[str, Any] = {}
    lock = (
        common._clock_lock(device, gpu) if (request.get("gpu") or {}).get("lock_clocks") else None
    )
    try:
        if backend == "trtexec":
            answer = _profile_trtexec(request, host, settings, engine)
        else:
            answer = _profile_python(request, host, settings, backend, engine, gpu=gpu)
    finally:
        if lock is not None and lock.locked:
            lock.unlock()
            gpu["clocks"]["restored"] = True
    answer["gpu"] = gpu
    answer.update(
        backend=backend,
        version=version,
        gpu_name=gpu_name,
        device_index=device,
        engine=engine,
        built={k: v for k, v in (built or {}).items() if k != "network"} or None,
        passes=int(request["passes"]),
        iterations=int(answer.get("iterations", request["iterations"])),
        warmup=int(request.get("warmup", 0)),
        exports=export_paths(request["workdir"]),
    )
    return answer


def _profile_trtexec(
    request: dict[str, Any], host: Any, settings: dict[str, Any], engine: str
) -> dict[str, Any]:
    path = host._trtexec_path(settings)
    if path is None:
        raise host.RunnerError("trtexec is not on PATH: give settings trtexec_path")
    inputs = request.get("inputs") or {}
    argv = trtexec_profile_argv(
        trtexec=path,
        engine=engine,
        workdir=request["workdir"],
        passes=int(request["passes"]),
        warmup_ms=int(request.get("warmup_ms", 200)),
        device=int(settings.get("device_index", 0)),
        shapes=request.get("shapes") or None,
        input_files=inputs.get("raw") or None,
        plugins=settings.get("plugins") or (),
    )
    log_path = os.path.join(request["workdir"], "profile.log")
    host.emit("progress", phase="profile", done=0, total=1)
    with open(log_path, "w", encoding="utf-8") as log:
        child = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
        while child.poll() is None:
            if host._Cancel.requested:
                child.terminate()
                child.wait()
                raise host.TypedRunnerError("Cancelled", "the profile was cancelled")
            time.sleep(0.1)
    with open(log_path, encoding="utf-8", errors="replace") as f:
        lines = f.readlines()
    exports = export_paths(request["workdir"])
    if child.returncode != 0 or not os.path.isfile(exports["profile"]):
        tail = "".join(lines[-8:]).strip()
        if any(text in line for line in lines for text in _NO_DEVICE_TEXT):
            raise host.TypedRunnerError("TrtUnavailableError", f"{_NON_GPU}. trtexec:\n{tail}")
        raise host.RunnerError(
            f"trtexec failed to profile the engine (exit code {child.returncode}):\n{tail}"
        )
    host.emit("progress", phase="profile", done=1, total=1)
    return {
        "argv": argv,
        "log": log_path,
        "latency_source": "trtexec --exportTimes (its --iterations are the passes)",
        "iterations": int(request["passes"]),
    }


# ---- the Python API (tensorrt 10/11, tensorrt_rtx) ---------------------------------------------


def _cudart(host: Any) -> Any:
    try:
        from cuda.bindings import runtime as cudart  # cuda-python 12.6 and later
    except ImportError:
        try:
            from cuda import cudart  # older cuda-python
        except ImportError as exc:
            raise host.TypedRunnerError(
                "TrtUnavailableError",
                f"profiling with the TensorRT Python API needs cuda-python for device buffers "
                f"and CUDA events: pip install cuda-python (matching the driver's CUDA) ({exc})",
            ) from None
    return cudart


def _check(host: Any, result: Any) -> Any:
    """cuda-python returns (error, *values): raise on an error, return the value(s)."""
    err, rest = result[0], result[1:]
    if int(err) != 0:
        raise host.RunnerError(f"CUDA call failed: {err}")
    return rest[0] if len(rest) == 1 else rest


class _Nvtx:
    """NVTX ranges around the passes when the `nvtx` module is installed (Nsight Systems
    traces then show where each pass starts)."""

    def __init__(self) -> None:
        try:
            import nvtx
        except ImportError:
            self.module = None
        else:
            self.module = nvtx

    def push(self, message: str) -> None:
        if self.module is not None:
            self.module.push_range(message)

    def pop(self) -> None:
        if self.module is not None:
            self.module.pop_range()


def _layer_profiler(trt: Any) -> Any:
    class LayerProfiler(trt.IProfiler):  # type: ignore[misc,name-defined]
        """Per-layer times of each profiled run, in the order TensorRT reports them."""

        def __init__(self) -> None:
            trt.IProfiler.__init__(self)
            self.runs: list[list[tuple[str, float]]] = [[]]

        def report_layer_time(self, layer_name: str, ms: float) -> None:
            self.runs[-1].append((str(layer_name), float(ms)))

        def next_run(self) -> None:
            self.runs.append([])

    return LayerProfiler()


def _deserialize(
    trt: Any, host: Any, logger: Any, path: str
) -> tuple[api.Runtime, api.ICudaEngine]:
    with open(path, "rb") as f:
        blob = f.read()
    runtime: api.Runtime = trt.Runtime(logger)
    engine = runtime.deserialize_cuda_engine(blob)
    if engine is None:
        said = "; ".join(logger.errors[-3:]) or "no reason given"
        kind = "EngineMismatchError" if "version" in said.lower() else "RunnerError"
        raise host.TypedRunnerError(
            kind,
            f"TensorRT could not load the engine {os.path.basename(path)}: {said}. An engine "
            "loads only in the TensorRT version (and, unless hardware compatible, on the GPU "
            "model) that built it: rebuild it on the target by passing the ONNX model",
        )
    return runtime, engine


def _refit(
    trt: Any, host: Any, logger: Any, engine: api.ICudaEngine, model: str | None
) -> dict[str, Any]:
    """Refit a refittable engine from the ONNX model's weights (a weight-stripped engine has
    none of its own)."""
    if not getattr(engine, "refittable", False):
        return {"refitted": False}
    if not model:
        return {"refitted": False, "message": "refittable engine, no ONNX model given"}
    refitter: api.Refitter = trt.Refitter(engine, logger)
    parser_refitter: api.OnnxParserRefitter = trt.OnnxParserRefitter(refitter, logger)
    if not parser_refitter.refit_from_file(model):
        raise host.RunnerError(
            f"refitting the engine from {os.path.basename(model)} failed: "
            + "; ".join(logger.errors[-3:])
        )
    if not refitter.refit_cuda_engine():
        raise host.RunnerError("refit_cuda_engine failed: " + "; ".join(logger.errors[-3:]))
    return {"refitted": True}


def _random(np: Any, shape: list[int], dtype: Any, rng: Any) -> Any:
    """The onnxruntime runner's rule: floats normal, integers 0 or 1, booleans either."""
    if np.issubdtype(dtype, np.floating):
        return rng.standard_normal(shape).astype(dtype)
    if dtype == np.bool_:
        return rng.integers(0, 2, shape).astype(bool)
    return rng.integers(0, 2, shape).astype(dtype)


def _bind(
    trt: Any,
    engine: api.ICudaEngine,
    context: api.IExecutionContext,
    request: dict[str, Any],
    *,
    np: Any,
    cudart: Any,
    host: Any,
) -> tuple[list[Any], dict[str, Any]]:
    """Inputs at the profile's opt shapes (or the parent's arrays) copied to the GPU once,
    output buffers allocated; every tensor address set on the context."""
    index = int(request.get("optimization_profile", 0))
    inputs = request.get("inputs") or {}
    arrays: dict[str, Any] = {}
    if inputs.get("mode") == "npz":
        with np.load(inputs["path"], allow_pickle=False) as data:
            arrays = {name: data[name] for name in data.files}
    rng = np.random.default_rng(int(inputs.get("seed", 0)))
    names = [engine.get_tensor_name(i) for i in range(engine.num_io_tensors)]
    is_input = {n: engine.get_tensor_mode(n) == trt.TensorIOMode.INPUT for n in names}
    described: dict[str, Any] = {}
    buffers: list[Any] = []
    for name in (n for n in names if is_input[n]):
        dtype = np.dtype(trt.nptype(engine.get_tensor_dtype(name)))
        shape: list[int] = host._dims(engine.get_tensor_shape(name))
        if name in arrays:
            host_array = np.ascontiguousarray(arrays[name].astype(dtype))
        else:
            if any(d < 0 for d in shape):
                shape = host._dims(engine.get_tensor_profile_shape(name, index)[1])  # min, opt, max
            host_array = _random(np, shape, dtype, rng)
        context.set_input_shape(name, list(host_array.shape))
        pointer = _check(host, cudart.cudaMalloc(max(host_array.nbytes, 1)))
        _check(
            host,
            cudart.cudaMemcpy(
                pointer,
                host_array.ctypes.data,
                host_array.nbytes,
                cudart.cudaMemcpyKind.cudaMemcpyHostToDevice,
            ),
        )
        context.set_tensor_address(name, int(pointer))
        buffers.append(pointer)
        described[name] = {"shape": list(host_array.shape), "dtype": str(dtype)}
    for name in (n for n in names if not is_input[n]):
        dtype = np.dtype(trt.nptype(engine.get_tensor_dtype(name)))
        shape = [max(d, 0) for d in host._dims(context.get_tensor_shape(name))]
        nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        pointer = _check(host, cudart.cudaMalloc(max(nbytes, 1)))
        context.set_tensor_address(name, int(pointer))
        buffers.append(pointer)
    return buffers, described


def _profile_python(  # noqa: PLR0915 (one run, in order: load, bind, time, profile, write)
    request: dict[str, Any],
    host: Any,
    settings: dict[str, Any],
    backend: str,
    engine_path: str,
    *,
    gpu: dict[str, Any],
) -> dict[str, Any]:
    import numpy as np

    trt = host._import(backend)
    cudart = _cudart(host)
    common = host._common
    workdir = request["workdir"]
    passes, iterations = int(request["passes"]), int(request["iterations"])
    warmup = int(request.get("warmup", 0))
    device = int(settings.get("device_index", 0))
    log_path = os.path.join(workdir, "profile.log")
    nvtx = _Nvtx()
    gpu_request = dict(request.get("gpu") or {})
    with open(log_path, "w", encoding="utf-8") as log:
        logger = host._logger(trt, log)
        host._load_plugins(trt, settings)
        _runtime, engine = _deserialize(trt, host, logger, engine_path)
        # a prebuilt engine takes the model's weights; one built in this run already has them
        weights = request.get("model") if request.get("engine") else None
        refit = _refit(trt, host, logger, engine, weights)
        context: api.IExecutionContext = engine.create_execution_context()
        if hasattr(context, "nvtx_verbosity"):
            context.nvtx_verbosity = trt.ProfilingVerbosity.DETAILED
        stream = _check(host, cudart.cudaStreamCreate())
        handle = int(stream)
        context.set_optimization_profile_async(int(request.get("optimization_profile", 0)), handle)
        buffers, described = _bind(trt, engine, context, request, np=np, cudart=cudart, host=host)
        start, end = _check(host, cudart.cudaEventCreate()), _check(host, cudart.cudaEventCreate())
        progress = common.Progress("warm-up", warmup)
        for i in range(warmup):
            context.execute_async_v3(handle)
            progress.step(i + 1)
        _check(host, cudart.cudaStreamSynchronize(stream))
        # the latency pass: no profiler attached, CUDA events around each inference
        sampler = common._sampler(device, gpu_request, gpu)
        latencies: list[float] = []
        progress = common.Progress("latency", iterations)
        nvtx.push("nsdl latency pass")
        for i in range(iterations):
            _check(host, cudart.cudaEventRecord(start, stream))
            context.execute_async_v3(handle)
            _check(host, cudart.cudaEventRecord(end, stream))
            _check(host, cudart.cudaEventSynchronize(end))
            latencies.append(float(_check(host, cudart.cudaEventElapsedTime(start, end))))
            progress.step(i + 1)
            if host._Cancel.requested:
                raise host.TypedRunnerError("Cancelled", "the profile was cancelled")
        nvtx.pop()
        if sampler is not None:
            sampler.stop()
            gpu["metrics"] = {
                "interval_ms": float(gpu_request.get("metrics_interval_ms", 10.0)),
                "columns": sampler.columns(),
                "unavailable": sampler.unavailable,
            }
        # the profiled passes: per-layer times from IProfiler, reported after each run
        profiler = _layer_profiler(trt)
        context.profiler = profiler
        context.enqueue_emits_profile = False
        progress = common.Progress("profile", passes)
        for i in range(passes):
            nvtx.push(f"nsdl profiled run {i}")
            context.execute_async_v3(handle)
            _check(host, cudart.cudaStreamSynchronize(stream))
            context.report_to_profiler()
            nvtx.pop()
            if i + 1 < passes:
                profiler.next_run()
            progress.step(i + 1)
            if host._Cancel.requested:
                raise host.TypedRunnerError("Cancelled", "the profile was cancelled")
        inspector: api.EngineInspector = engine.create_engine_inspector()
        inspector.execution_context = context
        layer_info = inspector.get_engine_information(trt.LayerInformationFormat.JSON)
        for pointer in buffers:
            cudart.cudaFree(pointer)
        cudart.cudaStreamDestroy(stream)
    exports = export_paths(workdir)
    write_exports(exports, profiler.runs, latencies, str(layer_info))
    return {
        "log": log_path,
        "inputs": described,
        "refit": refit,
        "nvtx": nvtx.module is not None,
        "latency_source": "CUDA events around execute_async_v3, a pass without the profiler",
        "layer_order": [name for name, _ in profiler.runs[0]],
    }


def write_exports(
    exports: dict[str, str],
    runs: list[list[tuple[str, float]]],
    latencies: list[float],
    layer_info: str,
) -> None:
    """IProfiler runs and CUDA-event latencies as trtexec's --exportProfile / --exportTimes
    JSON, the inspector's JSON as --exportLayerInfo: one importer reads both backends."""
    order: list[str] = []
    times: dict[str, list[float]] = {}
    for run in runs:
        for name, ms in run:
            if name not in times:
                order.append(name)
                times[name] = []
            times[name].append(ms)
    total = sum(sum(v) for v in times.values()) or 1.0
    profile: list[dict[str, Any]] = [{"count": len(runs)}]
    for name in order:
        values = sorted(times[name])
        middle = len(values) // 2
        median = values[middle] if len(values) % 2 else (values[middle - 1] + values[middle]) / 2
        profile.append(
            {
                "name": name,
                "timeMs": sum(values),
                "averageMs": sum(values) / len(values),
                "medianMs": median,
                "percentage": 100.0 * sum(values) / total,
            }
        )
    with open(exports["profile"], "w", encoding="utf-8") as f:
        json.dump(profile, f)
    with open(exports["times"], "w", encoding="utf-8") as f:
        json.dump([{"computeMs": ms, "latencyMs": ms} for ms in latencies], f)
    with open(exports["layer_info"], "w", encoding="utf-8") as f:
        f.write(layer_info)
