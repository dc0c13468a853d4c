"""The onnxruntime runner's extra GPU passes: a free-running CUPTI pass, the attainable peaks
micro-benchmark, and the Nsight Compute (ncu) counter pass.

A sibling of `_ort_runner.py` with the same rules: standard library and numpy, onnxruntime and
the optional GPU modules (through `_gpu_runner.py`) only; it never imports nsdl_jupyter, and
it is loaded by path.

- `free_running_pass`: runs the model with CUPTI recording kernels and copies only (no
  onnxruntime profiler, no API records), noting when each run starts; the parent aligns these
  kernels to the profiled pass's nodes for per-layer times without the profiler's syncs.
- `measure_peaks`: a large MatMul chain per dtype (float32 with TF32 off, tf32, float16,
  bfloat16) and two large elementwise chains (Mul by a scalar: 2 transfers per element; Add of
  two tensors: 3), through the same runtime and provider; FLOP/s and bytes/s from the best run's
  CUPTI kernel time (copies left out; wall time without CUPTI), the input and output kept on
  the device, cached per (GPU name, SM clock).
  The models are written here as protobuf bytes: the runner has no onnx package.
- `ncu_counters`: runs the runner once more under `ncu` (request kind "ort_counters_pass"),
  which profiles the kernels of one inference after the warm-up (`--profile-from-start off`
  and cuProfilerStart/Stop around that inference), capped by `--launch-count` and an optional
  `--kernel-name` filter; the CSV is left in the work directory for the parent.
"""

from __future__ import annotations

import ctypes
import functools
import glob
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

GPU_PROVIDERS = ("CUDAExecutionProvider", "TensorrtExecutionProvider")
PEAKS_VERSION = 2  # 2: best run, not the mean; Add chain beside the Mul chain
_ONNX_TYPES = {"float32": 1, "float16": 10, "bfloat16": 16}
_ELEM_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2}
_NCU_CANDIDATES = ("/usr/local/cuda/bin/ncu", "/opt/nvidia/nsight-compute/*/ncu")


# ---- free-running pass -------------------------------------------------------------------


def free_running_pass(
    tracer: Any, run_once: Callable[[], Any], runs: int, path: str, profiling_start_ns: int
) -> dict[str, Any]:
    """`runs` inferences with `tracer` (a KernelTracer without API records) on; its records and
    run starts written to `path`; returns the tracer's summary."""
    tracer.start()
    for _ in range(runs):
        tracer.mark_run()
        run_once()
    tracer.stop()
    summary: dict[str, Any] = tracer.save(path, profiling_start_ns)
    return {"available": True, "file": path, "runs": runs, **summary}


# ---- a minimal ONNX writer (protobuf wire format) ----------------------------------------


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _int_field(number: int, value: int) -> bytes:
    return _varint(number << 3) + _varint(value)


def _text(number: int, value: str) -> bytes:
    return _field(number, value.encode("utf-8"))


def _value_info(name: str, elem_type: int, shape: list[int]) -> bytes:
    dims = b"".join(_field(1, _int_field(1, d)) for d in shape)
    tensor_type = _int_field(1, elem_type) + _field(2, dims)
    return _text(1, name) + _field(2, _field(1, tensor_type))


def _tensor(name: str, elem_type: int, shape: list[int], raw: bytes) -> bytes:
    dims = b"".join(_int_field(1, d) for d in shape)
    return dims + _int_field(2, elem_type) + _text(8, name) + _field(9, raw)


def _node(op_type: str, inputs: list[str], outputs: list[str], name: str) -> bytes:
    return (
        b"".join(_text(1, i) for i in inputs)
        + b"".join(_text(2, o) for o in outputs)
        + _text(3, name)
        + _text(4, op_type)
    )


def onnx_model(
    nodes: list[bytes],
    inputs: list[bytes],
    outputs: list[bytes],
    initializers: list[bytes],
    opset: int = 17,
) -> bytes:
    """ModelProto bytes (IR 8) of a graph given as encoded nodes, value infos, tensors."""
    graph = (
        b"".join(_field(1, n) for n in nodes)
        + _text(2, "nsdl_peaks")
        + b"".join(_field(5, t) for t in initializers)
        + b"".join(_field(11, i) for i in inputs)
        + b"".join(_field(12, o) for o in outputs)
    )
    opset_import = _text(1, "") + _int_field(2, opset)
    return _int_field(1, 8) + _field(8, opset_import) + _field(7, graph)


def _raw(values: Any, dtype: str) -> bytes:
    """Tensor bytes of a float32 array in `dtype` (bfloat16: the upper half of float32)."""
    import numpy as np

    if dtype == "bfloat16":
        bits = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32)
        return bytes((bits >> 16).astype("<u2").tobytes())
    return bytes(np.ascontiguousarray(values, dtype=dtype).tobytes())


@functools.lru_cache(maxsize=1)
def _operands(n: int) -> tuple[Any, Any]:
    """Two n x n float32 matrices of normal values (B scaled by 1/sqrt(n), so a chain keeps
    the values' size): a random 256 x 256 block tiled, as fast to make as a copy (drawing
    67 M random numbers takes seconds) and, unlike zeros, no easier for the tensor cores."""
    import numpy as np

    rng = np.random.default_rng(0)
    reps = -(-n // 256)
    a = np.tile(rng.standard_normal((256, 256), dtype=np.float32), (reps, reps))[:n, :n]
    b = np.tile(rng.standard_normal((256, 256), dtype=np.float32), (reps, reps))[:n, :n]
    return a, b / np.float32(np.sqrt(n))


def matmul_chain_model(n: int, dtype: str, chain: int) -> bytes:
    """Y = A.B.B...B (`chain` MatMuls of n x n x n) with A and B as initializers, no graph
    input: one run is `chain` large GEMMs."""
    elem = _ONNX_TYPES[dtype]
    a, b = _operands(n)
    nodes = [
        _node("MatMul", ["A" if i == 0 else f"y{i}", "B"], [f"y{i + 1}"], f"mm{i}")
        for i in range(chain)
    ]
    return onnx_model(
        nodes,
        [],
        [_value_info(f"y{chain}", elem, [n, n])],
        [_tensor("A", elem, [n, n], _raw(a, dtype)), _tensor("B", elem, [n, n], _raw(b, dtype))],
    )


def elementwise_chain_model(op: str, count: int, chain: int) -> bytes:
    """Y = X op s op s ... (`chain` float32 nodes of `count` elements). "Mul": s is a scalar
    initializer, each node reads and writes once (2 transfers per element); "Add": s is a second
    input Z of `count` elements, each node reads two and writes one (3 transfers)."""
    second = "s" if op == "Mul" else "Z"
    nodes = [
        _node(op, ["X" if i == 0 else f"y{i}", second], [f"y{i + 1}"], f"{op.lower()}{i}")
        for i in range(chain)
    ]
    inputs = [_value_info("X", 1, [count])]
    initializers = []
    if op == "Mul":
        initializers.append(_tensor("s", 1, [], struct.pack("<f", 1.0)))
    else:
        inputs.append(_value_info("Z", 1, [count]))
    return onnx_model(nodes, inputs, [_value_info(f"y{chain}", 1, [count])], initializers)


def scale_chain_model(count: int, chain: int) -> bytes:
    """Y = X·s·s·…·s (`chain` float32 Muls of `count` elements): each reads and writes it once."""
    return elementwise_chain_model("Mul", count, chain)


# ---- attainable peaks ----------------------------------------------------------------------


def _peaks_cache(gpu: str, clock_mhz: int) -> str:
    folder = os.path.join(
        os.environ.get("NSDL_CACHE_DIR")
        or os.path.join(os.path.expanduser("~"), ".cache", "nsdl_jupyter"),
        "peaks",
    )
    tag = re.sub(r"[^A-Za-z0-9.]+", "-", f"{gpu}-{clock_mhz}MHz").strip("-")
    return os.path.join(folder, f"peaks-{tag}.json")


def _best_run_seconds(kernels: list[tuple[Any, ...]], runs: int) -> float:
    """The smallest per-run sum of kernel durations: the kernels (copies and memsets, whose
    grid is (0, 0, 0), left out) in start order, cut into `runs` equal runs; 0 if they do not
    divide evenly."""
    timed = sorted((k[1], k[2]) for k in kernels if k[5] != (0, 0, 0))
    if not timed or len(timed) % runs:
        return 0.0
    per_run = len(timed) // runs
    sums = [
        sum(end - start for start, end in timed[i * per_run : (i + 1) * per_run])
        for i in range(runs)
    ]
    return float(min(sums)) / 1e9


def _timed(
    ort: Any,
    model: bytes,
    *,
    provider: str,
    options: dict[str, Any],
    feeds: dict[str, Any],
    runs: int,
    tracer_factory: Callable[[], Any] | None,
) -> tuple[float, str]:
    """Seconds of the best of `runs` runs of `model` (kernel time with CUPTI, else wall) and how
    it was timed. Inputs (OrtValues) and the output stay on the device: no copy is timed."""
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL  # no folding
    providers: list[Any] = [(provider, options)] if options else [provider]
    sess = ort.InferenceSession(model, so, providers=providers)
    device = "cuda" if provider in GPU_PROVIDERS else "cpu"
    device_id = int(options.get("device_id", 0))
    binding = sess.io_binding()
    for name, value in feeds.items():
        binding.bind_ortvalue_input(name, value)
    binding.bind_output(sess.get_outputs()[0].name, device, device_id)
    for _ in range(2):
        sess.run_with_iobinding(binding)
    tracer = tracer_factory() if tracer_factory is not None else None
    if tracer is not None:
        tracer.start()
    walls = []
    for _ in range(runs):
        start = time.perf_counter()
        sess.run_with_iobinding(binding)
        walls.append(time.perf_counter() - start)
    if tracer is not None:
        tracer.stop()
        kernel = _best_run_seconds(tracer.kernels, runs)
        if kernel > 0:
            return kernel, "CUPTI kernel time, best run"
    return min(walls), "wall time, best run"


_ELEMENTWISE_CHAIN = 8
_TRANSFERS = {"Mul": 2, "Add": 3}  # float32 transfers per element and node


def _bandwidths(
    ort: Any,
    provider: str,
    options: dict[str, Any],
    *,
    elements: int,
    runs: int,
    tracer_factory: Callable[[], Any] | None,
) -> dict[str, float]:
    """Bytes/s of each elementwise chain (op -> rate), its inputs made on the device."""
    import numpy as np

    device = "cuda" if provider in GPU_PROVIDERS else "cpu"
    device_id = int(options.get("device_id", 0))
    x = ort.OrtValue.ortvalue_from_numpy(np.ones(elements, dtype=np.float32), device, device_id)
    rates: dict[str, float] = {}
    for op, transfers in _TRANSFERS.items():
        feeds = {"X": x} if op == "Mul" else {"X": x, "Z": x}
        seconds, _ = _timed(
            ort,
            elementwise_chain_model(op, elements, _ELEMENTWISE_CHAIN),
            provider=provider,
            options=options,
            feeds=feeds,
            runs=runs,
            tracer_factory=tracer_factory,
        )
        rates[op] = _ELEMENTWISE_CHAIN * transfers * 4 * elements / seconds
    return rates


def measure_peaks(
    ort: Any,
    provider: str,
    options: dict[str, Any],
    *,
    gpu_name: str,
    sm_clock_mhz: int,
    size: int = 8192,
    elements: int = 256 * 1024 * 1024,
    runs: int = 3,
    tracer_factory: Callable[[], Any] | None = None,
    use_cache: bool = True,
) -> dict[str, Any]:
    """{"gpu", "sm_clock_mhz", "flops_per_s": {dtype: ...}, "bytes_per_s", ...}: the rates a
    large GEMM per dtype and a large elementwise chain reach here, cached per GPU and clock.
    A dtype the provider cannot run is left out (its reason under "skipped")."""
    cache = _peaks_cache(gpu_name, sm_clock_mhz)
    if use_cache and os.path.isfile(cache):
        with open(cache, encoding="utf-8") as f:
            cached = json.load(f)
        if cached.get("version") == PEAKS_VERSION and cached.get("size") == size:
            return {**cached, "cached": True}
    started = time.perf_counter()
    chain = 4
    flops: dict[str, float] = {}
    skipped: dict[str, str] = {}
    method = ""
    on_gpu = provider in GPU_PROVIDERS
    variants = [("float32", "float32", {"use_tf32": 0} if on_gpu else {})]
    if on_gpu:
        variants.append(("tf32", "float32", {"use_tf32": 1}))
    variants += [("float16", "float16", {}), ("bfloat16", "bfloat16", {})]
    for label, dtype, extra in variants:
        try:
            seconds, method = _timed(
                ort,
                matmul_chain_model(size, dtype, chain),
                provider=provider,
                options={**options, **extra},
                feeds={},
                runs=runs,
                tracer_factory=tracer_factory,
            )
            flops[label] = chain * 2.0 * size**3 / seconds
        except Exception as exc:  # e.g. no bfloat16 MatMul kernel for this provider
            skipped[label] = str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__
    bandwidth = _bandwidths(
        ort, provider, options, elements=elements, runs=max(runs, 10), tracer_factory=tracer_factory
    )
    result = {
        "version": PEAKS_VERSION,
        "gpu": gpu_name,
        "sm_clock_mhz": sm_clock_mhz,
        "flops_per_s": flops,
        "bytes_per_s": max(bandwidth.values()),
        "bytes_per_s_by_op": bandwidth,
        "method": f"{method or 'wall time, best run'}; MatMul {size}^3 x{chain} per dtype; "
        f"bytes/s the best of float32 Mul by a scalar (read + write) and Add of two tensors "
        f"(2 reads + write), {elements} elements x{_ELEMENTWISE_CHAIN}",
        "size": size,
        "runtime": f"onnxruntime {ort.__version__} {provider}",
        "seconds": time.perf_counter() - started,
    }
    if skipped:
        result["skipped"] = skipped
    if use_cache:
        os.makedirs(os.path.dirname(cache), exist_ok=True)
        partial = cache + ".partial"
        with open(partial, "w", encoding="utf-8") as f:
            json.dump(result, f)
        os.replace(partial, cache)
    return {**result, "cached": False}


def sm_clock_mhz(device: int) -> int:
    """The SM clock now (NVML through ctypes); 0 where NVML does not answer."""
    try:
        nvml = ctypes.CDLL("libnvidia-ml.so.1")
        if nvml.nvmlInit_v2() != 0:
            return 0
        handle = ctypes.c_void_p()
        clock = ctypes.c_uint(0)
        if nvml.nvmlDeviceGetHandleByIndex_v2(device, ctypes.byref(handle)) != 0:
            return 0
        if nvml.nvmlDeviceGetClockInfo(handle, 1, ctypes.byref(clock)) != 0:  # 1: NVML_CLOCK_SM
            return 0
        return int(clock.value)
    except (OSError, AttributeError):
        return 0


# ---- Nsight Compute counters ---------------------------------------------------------------


def find_ncu(explicit: str | None) -> str | None:
    if explicit:
        return explicit if os.access(explicit, os.X_OK) else None
    found = shutil.which("ncu")
    if found:
        return found
    for pattern in _NCU_CANDIDATES:
        for candidate in sorted(glob.glob(pattern), reverse=True):
            if os.access(candidate, os.X_OK):
                return candidate
    return None


def ncu_command(ncu: str, request_path: str, csv_path: str, settings: dict[str, Any]) -> list[str]:
    """The ncu argument list (no shell): one inference's kernels, the metric set, the caps."""
    command = [
        ncu,
        "--csv",
        "--print-units",
        "base",
        "--print-kernel-base",
        "mangled",
        "--metrics",
        ",".join(settings["metrics"]),
        "--profile-from-start",
        "off",
        "--clock-control",
        str(settings.get("clock_control", "none")),
        "--launch-count",
        str(int(settings.get("max_kernels", 2000))),
        "--log-file",
        csv_path,
    ]
    if settings.get("kernel_name"):
        command += ["--kernel-name", "regex:" + str(settings["kernel_name"])]
    return [*command, sys.executable, os.path.abspath(sys.argv[0]), request_path]


_PERMISSION = ("ERR_NVGPUCTRPERM", "permission")


def ncu_counters(request: dict[str, Any]) -> dict[str, Any]:
    """Run the runner under ncu for one inference; {"available", "file", "seconds", ...} or
    {"available": False, "message"} (no ncu, no permission, it failed): never raises."""
    settings = dict((request.get("gpu") or {}).get("counters") or {})
    ncu = find_ncu(settings.get("ncu_path"))
    if ncu is None and settings.get("ncu_path"):
        return {
            "available": False,
            "message": f"no GPU counters: {settings['ncu_path']} (counters_ncu_path) is not an "
            "executable on the target; give the path of Nsight Compute's `ncu` there",
        }
    if ncu is None:
        return {
            "available": False,
            "message": "no GPU counters: Nsight Compute's `ncu` is not on PATH nor in "
            "/usr/local/cuda/bin on the target; install Nsight Compute (or give its path as "
            "counters_ncu_path) to get per-layer counters",
        }
    workdir = request["workdir"]
    child: dict[str, Any] = {
        key: request[key]
        for key in (
            "protocol",
            "model",
            "provider",
            "provider_options",
            "graph_optimization",
            "intra_op_threads",
            "inputs",
            "io_binding",
            "warmup",
        )
        if key in request
    }
    child["kind"] = "ort_counters_pass"
    child_path = os.path.join(workdir, "counters_request.json")
    with open(child_path, "w", encoding="utf-8") as f:
        json.dump(child, f)
    csv_path = os.path.join(workdir, "ncu_counters.csv")
    command = ncu_command(ncu, child_path, csv_path, settings)
    started = time.perf_counter()
    try:
        done = subprocess.run(
            command,
            capture_output=True,
            text=True,
            timeout=float(settings.get("timeout_s", 600)),
            check=False,
        )
    except subprocess.TimeoutExpired:
        return {
            "available": False,
            "message": f"ncu ran past {settings.get('timeout_s', 600)} s and was stopped; "
            "profile fewer kernels (counters_max_kernels, counters_kernel_name)",
        }
    seconds = time.perf_counter() - started
    said = (done.stdout + done.stderr)[-4000:]
    log = ""
    if os.path.isfile(csv_path):
        with open(csv_path, encoding="utf-8", errors="replace") as f:
            log = f.read()
    errors = [ln for ln in (said + "\n" + log[-4000:]).splitlines() if "==ERROR==" in ln]
    if any(word in line for line in errors for word in _PERMISSION):
        return {
            "available": False,
            "seconds": seconds,
            "message": "no GPU counters: ncu has no permission to read the GPU's performance "
            "counters (ERR_NVGPUCTRPERM); run as root or allow it: "
            "NVreg_RestrictProfilingToAdminUsers=0 (" + errors[0].strip()[:300] + ")",
        }
    if '"ID"' not in log:
        return {
            "available": False,
            "seconds": seconds,
            "message": f"ncu gave no counters (exit {done.returncode}): "
            + ("; ".join(e.strip() for e in errors[:3]) or said.strip()[-600:]),
        }
    return {
        "available": True,
        "file": csv_path,
        "seconds": seconds,
        "ncu": ncu,
        "metrics": list(settings["metrics"]),
        "clock_control": str(settings.get("clock_control", "none")),
        "max_kernels": int(settings.get("max_kernels", 2000)),
        "kernel_name": settings.get("kernel_name"),
        "warnings": [e.strip() for e in errors[:5]],
    }


def profiler_range(start: bool) -> None:
    """cuProfilerStart/Stop (CUDA driver): ncu's --profile-from-start off profiles inside."""
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return
    (cuda.cuProfilerStart if start else cuda.cuProfilerStop)()
