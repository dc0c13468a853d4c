"""GPU truth for the profiling runner: CUPTI kernel tracing, NVML sampling, locked clocks.

A sibling of `_ort_runner.py` with the same rules: standard library and numpy only, plus the
optional `cupti` (cupti-python) and `pynvml` (nvidia-ml-py) modules, imported when asked for;
it never imports nsdl_jupyter. A target deploys both files side by side.

- `KernelTracer` records, with CUPTI's activity API, every kernel, memcpy and memset this
  process launches (GPU start/end, name, grid, block, stream) and the driver/runtime API call
  that launched it (host start time). Host times are converted to the wall clock
  (`time.time_ns`, what onnxruntime's profiler start time uses) from pairs of readings of
  both clocks taken around the traced pass, so each launch can be placed inside the
  onnxruntime node that made it.
- `MetricSampler` reads NVML at a fixed rate in a thread: clocks, utilisation, memory, power,
  temperature, throttle reasons.
- `ClockLock` locks the GPU and memory clocks to the default application clocks and resets
  them afterwards; without permission it says why and the run goes on unlocked.
"""

from __future__ import annotations

import contextlib
import threading
import time
from typing import Any

_KERNEL_KINDS = ("CONCURRENT_KERNEL",)
_COPY_KINDS = ("MEMCPY", "MEMSET")
_API_KINDS = ("RUNTIME", "DRIVER")
_METRIC_COLUMNS = (
    "t_ns",
    "sm_clock_mhz",
    "mem_clock_mhz",
    "gpu_util",
    "mem_util",
    "mem_used_mb",
    "power_w",
    "temperature_c",
    "throttle_reasons",
)


class GpuUnavailableError(Exception):
    """A GPU feature cannot run here; the message says what to install or change."""


def _import_cupti() -> Any:
    try:
        from cupti import cupti
    except ImportError as exc:
        raise GpuUnavailableError(
            "per-kernel GPU times need CUPTI's Python module: pip install 'nsdl_jupyter[gpu]' "
            f"(cupti-python matching the CUDA version of the driver) on the GPU machine ({exc})"
        ) from None
    return cupti


def _import_nvml() -> Any:
    try:
        import pynvml
    except ImportError as exc:
        raise GpuUnavailableError(
            f"GPU metrics and locked clocks need NVML's Python module: pip install nvidia-ml-py "
            f"({exc})"
        ) from None
    try:
        pynvml.nvmlInit()
    except Exception as exc:  # pynvml raises NVMLError subclasses per error code
        raise GpuUnavailableError(f"NVML could not start (no NVIDIA driver?): {exc}") from None
    return pynvml


_CURRENT: list[KernelTracer] = []  # the tracer that receives CUPTI's buffers
_REGISTERED: list[bool] = []


def _requested() -> tuple[int, int]:
    return 8 * 1024 * 1024, 0


def _completed(activities: list[Any]) -> None:
    if _CURRENT:
        _CURRENT[0]._completed(activities)


class KernelTracer:
    """CUPTI activity records of this process's GPU work, between `start` and `stop`.

    With `api=False` the launching API calls are not recorded (a free-running pass: kernels
    and copies only, the least CUPTI can add); `mark_run()` then notes when each run begins."""

    def __init__(self, *, api: bool = True) -> None:
        self._cupti = _import_cupti()
        self._kinds = (*_KERNEL_KINDS, *_COPY_KINDS, *(_API_KINDS if api else ()))
        self.run_starts: list[int] = []  # CUPTI clock, one per mark_run()
        self.kernels: list[tuple[Any, ...]] = []  # (name, start, end, corr, stream, grid, block)
        self.launches: dict[int, int] = {}  # correlation id -> host start (CUPTI clock)
        self.clock_pairs: list[tuple[int, int]] = []  # (cupti ns, wall ns)
        self.dropped = 0
        self._lock = threading.Lock()

    def _completed(self, activities: list[Any]) -> None:
        cupti = self._cupti
        kernels: list[tuple[Any, ...]] = []
        launches: dict[int, int] = {}
        for record in activities:
            kind = record.kind
            if kind in (cupti.ActivityKind.CONCURRENT_KERNEL, cupti.ActivityKind.KERNEL):
                kernels.append(
                    (
                        str(record.name),
                        int(record.start),
                        int(record.end),
                        int(record.correlation_id),
                        int(record.stream_id),
                        (int(record.grid_x), int(record.grid_y), int(record.grid_z)),
                        (int(record.block_x), int(record.block_y), int(record.block_z)),
                    )
                )
            elif kind in (cupti.ActivityKind.MEMCPY, cupti.ActivityKind.MEMSET):
                label = (
                    "Memcpy " + cupti.ActivityMemcpyKind(record.copy_kind).name
                    if kind == cupti.ActivityKind.MEMCPY
                    else "Memset"
                )
                kernels.append(
                    (
                        label,
                        int(record.start),
                        int(record.end),
                        int(record.correlation_id),
                        int(record.stream_id),
                        (0, 0, 0),
                        (0, 0, 0),
                    )
                )
            elif kind in (cupti.ActivityKind.RUNTIME, cupti.ActivityKind.DRIVER):
                corr = int(record.correlation_id)
                start = int(record.start)
                if corr not in launches or start < launches[corr]:
                    launches[corr] = start
        with self._lock:
            self.kernels.extend(kernels)
            for corr, start in launches.items():
                if corr not in self.launches or start < self.launches[corr]:
                    self.launches[corr] = start

    def _pair(self) -> None:
        for _ in range(3):
            before = time.time_ns()
            stamp = int(self._cupti.get_timestamp())
            after = time.time_ns()
            self.clock_pairs.append((stamp, (before + after) // 2))

    def start(self) -> None:
        cupti = self._cupti
        _CURRENT[:] = [self]
        if not _REGISTERED:
            # once per process: later tracers (free pass, peaks) receive through _CURRENT
            cupti.activity_register_callbacks(_requested, _completed)
            _REGISTERED.append(True)
        for name in self._kinds:
            cupti.activity_enable(getattr(cupti.ActivityKind, name))
        self._pair()

    def mark_run(self) -> None:
        self.run_starts.append(int(self._cupti.get_timestamp()))

    def stop(self) -> None:
        cupti = self._cupti
        self._pair()
        cupti.activity_flush_all(1)
        for name in self._kinds:
            with contextlib.suppress(Exception):  # a kind this CUPTI never enabled
                cupti.activity_disable(getattr(cupti.ActivityKind, name))

    def offset_ns(self) -> int:
        """Add to a CUPTI timestamp to get wall-clock ns (median over the readings)."""
        offsets = sorted(wall - stamp for stamp, wall in self.clock_pairs)
        return offsets[len(offsets) // 2] if offsets else 0

    def per_layer_metrics(self) -> dict[str, str]:
        """Why per-layer Tensor Core, SM and DRAM throughput are not in a plain profile."""
        why = (
            "per-layer hardware counters come from Nsight Compute: profile_ort(..., "
            "counters=True) where ncu is on the GPU machine"
        )
        return dict.fromkeys(("tensor_core_util", "sm_throughput", "dram_throughput"), why)

    def kernel_seconds(self) -> float:
        """Summed duration of the recorded kernels (copies and memsets left out)."""
        return float(sum(k[2] - k[1] for k in self.kernels if k[5] != (0, 0, 0))) / 1e9

    def save(self, path: str, profiling_start_ns: int) -> dict[str, Any]:
        """Write the records as columns (numpy .npz) and return a summary for the answer."""
        import numpy as np

        offset = self.offset_ns()
        names: dict[str, int] = {}
        name_id = [names.setdefault(k[0], len(names)) for k in self.kernels]
        missing = -1
        launch = [self.launches.get(k[3], missing) for k in self.kernels]
        columns: dict[str, Any] = {
            "name_id": np.asarray(name_id, dtype=np.int32),
            "start_ns": np.asarray([k[1] + offset for k in self.kernels], dtype=np.int64),
            "end_ns": np.asarray([k[2] + offset for k in self.kernels], dtype=np.int64),
            "launch_ns": np.asarray(
                [t + offset if t != missing else -1 for t in launch], dtype=np.int64
            ),
            "stream": np.asarray([k[4] for k in self.kernels], dtype=np.int64),
            "grid": np.asarray([k[5] for k in self.kernels], dtype=np.int32).reshape(-1, 3),
            "block": np.asarray([k[6] for k in self.kernels], dtype=np.int32).reshape(-1, 3),
            # names as one UTF-8 blob and lengths: no object arrays, so no pickle to load
            "names_utf8": np.frombuffer("".join(names).encode("utf-8"), dtype=np.uint8),
            "name_lengths": np.asarray([len(n.encode("utf-8")) for n in names], dtype=np.int64),
            "profiling_start_ns": np.asarray([profiling_start_ns], dtype=np.int64),
            "run_start_ns": np.asarray([t + offset for t in self.run_starts], dtype=np.int64),
        }
        with open(path, "wb") as handle:
            np.savez_compressed(handle, **columns)
        return {
            "kernels": len(self.kernels),
            "launches_found": int(sum(1 for t in launch if t != missing)),
            "clock_offset_ns": offset,
            "clock_spread_ns": _spread(self.clock_pairs),
        }


def _spread(pairs: list[tuple[int, int]]) -> int:
    offsets = [wall - stamp for stamp, wall in pairs]
    return max(offsets) - min(offsets) if offsets else 0


class MetricSampler:
    """NVML readings of one GPU every `interval_ms`, in a thread, between start and stop."""

    def __init__(self, device_index: int, interval_ms: float) -> None:
        self._nvml = _import_nvml()
        self._handle = self._nvml.nvmlDeviceGetHandleByIndex(device_index)
        self._interval = max(interval_ms, 1.0) / 1e3
        self.rows: list[tuple[float, ...]] = []
        self.unavailable: dict[str, str] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="nvml-sampler", daemon=True)
        self._t0 = 0

    def _read(self, name: str, read: Any) -> float:
        if name in self.unavailable:
            return float("nan")
        try:
            return float(read())
        except Exception as exc:  # NVML_ERROR_NOT_SUPPORTED and friends
            self.unavailable[name] = str(exc)
            return float("nan")

    def _sample(self) -> tuple[float, ...]:
        nvml, h = self._nvml, self._handle
        util = None
        try:
            util = nvml.nvmlDeviceGetUtilizationRates(h)
        except Exception as exc:
            self.unavailable.setdefault("utilisation", str(exc))
        return (
            float(time.time_ns() - self._t0),
            self._read("sm_clock_mhz", lambda: nvml.nvmlDeviceGetClockInfo(h, nvml.NVML_CLOCK_SM)),
            self._read(
                "mem_clock_mhz", lambda: nvml.nvmlDeviceGetClockInfo(h, nvml.NVML_CLOCK_MEM)
            ),
            float(util.gpu) if util is not None else float("nan"),
            float(util.memory) if util is not None else float("nan"),
            self._read("mem_used_mb", lambda: nvml.nvmlDeviceGetMemoryInfo(h).used / 2**20),
            self._read("power_w", lambda: nvml.nvmlDeviceGetPowerUsage(h) / 1e3),
            self._read(
                "temperature_c",
                lambda: nvml.nvmlDeviceGetTemperature(h, nvml.NVML_TEMPERATURE_GPU),
            ),
            self._read("throttle_reasons", lambda: nvml.nvmlDeviceGetCurrentClocksEventReasons(h)),
        )

    def _run(self) -> None:
        while not self._stop.is_set():
            self.rows.append(self._sample())
            self._stop.wait(self._interval)

    def start(self) -> None:
        self._t0 = time.time_ns()
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self.rows.append(self._sample())

    def columns(self) -> dict[str, list[float]]:
        return {name: [row[i] for row in self.rows] for i, name in enumerate(_METRIC_COLUMNS)}

    def start_ns(self) -> int:
        return self._t0


def _clock_event_reasons(nvml: Any, handle: Any) -> int:
    """Why clocks are held down (a bit mask); the call was renamed in newer NVML."""
    reasons = getattr(nvml, "nvmlDeviceGetCurrentClocksEventReasons", None)
    if reasons is None:
        reasons = nvml.nvmlDeviceGetCurrentClocksThrottleReasons
    return int(reasons(handle))


class ClockLock:
    """GPU and memory clocks locked to the default application clocks, then reset."""

    def __init__(self, device_index: int) -> None:
        self._nvml = _import_nvml()
        self._handle = self._nvml.nvmlDeviceGetHandleByIndex(device_index)
        self.device_index = device_index
        self.locked = False
        self.sm_mhz: int | None = None
        self.mem_mhz: int | None = None
        self.warning = ""

    def lock(self) -> bool:
        nvml, h = self._nvml, self._handle
        try:
            self.sm_mhz = int(
                nvml.nvmlDeviceGetDefaultApplicationsClock(h, nvml.NVML_CLOCK_GRAPHICS)
            )
            self.mem_mhz = int(nvml.nvmlDeviceGetDefaultApplicationsClock(h, nvml.NVML_CLOCK_MEM))
            nvml.nvmlDeviceSetGpuLockedClocks(h, self.sm_mhz, self.sm_mhz)
            self.locked = True
        except Exception as exc:  # NoPermission without root, NotSupported on some boards
            self.warning = (
                f"clocks not locked ({exc}): times may vary with boost and temperature; run as "
                "root (or with clock permissions: nvidia-smi -acp UNRESTRICTED) to lock them"
            )
            return False
        try:
            nvml.nvmlDeviceSetMemoryLockedClocks(h, self.mem_mhz, self.mem_mhz)
        except Exception as exc:
            self.warning = f"memory clock not locked ({exc}); the SM clock is"
        return True

    def unlock(self) -> None:
        reset_clocks(self._nvml, self._handle)
        self.locked = False


def reset_clocks(nvml: Any, handle: Any) -> None:
    """Give the GPU its own clock management back (also after a runner that crashed)."""
    for reset in ("nvmlDeviceResetGpuLockedClocks", "nvmlDeviceResetMemoryLockedClocks"):
        with contextlib.suppress(Exception):  # not locked, or not supported: nothing to reset
            getattr(nvml, reset)(handle)


def restore_clocks(device_index: int) -> dict[str, Any]:
    """The `restore_clocks` request: reset locked clocks, and read back what runs now."""
    nvml = _import_nvml()
    handle = nvml.nvmlDeviceGetHandleByIndex(device_index)
    reset_clocks(nvml, handle)
    return {
        "device": device_index,
        "sm_clock_mhz": int(nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_SM)),
        "restored": True,
    }
