"""The TensorRT profile activity: a model or a prebuilt engine in, a ProfileReport out.

`start_profile_trt` checks what it can in the kernel (the engine's build metadata, the input
folder), stages the job on a target and starts the engine runner with a "trt_profile" request
(`_trt_profile_runner.py` does the work); the runner builds the engine when given a model,
profiles it, and leaves trtexec-format exports that `load_trtexec` turns into the report, for
the Python API and trtexec backends alike. Nothing here imports TensorRT.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from nsdl_jupyter.profiling._errors import ProfileError, ProfileSettingsError
from nsdl_jupyter.profiling._inputs import load_input_folder, write_npz
from nsdl_jupyter.profiling._job import (
    Progress,
    ProgressListener,
    StagedJob,
    check_timeout,
    wait_or_cancel,
)
from nsdl_jupyter.profiling._model_source import ModelSource, model_source
from nsdl_jupyter.profiling._report import ProfileReport, recorded_path
from nsdl_jupyter.profiling.tensorrt._engine import _put_model, _raise_for, target_caches
from nsdl_jupyter.profiling.tensorrt._settings import RUNNER, TrtSettings
from nsdl_jupyter.profiling.tensorrt._trtexec import load_trtexec
from nsdl_jupyter.targets import JobResult, LocalTarget, Target

ENGINE_SUFFIXES = (".engine", ".plan", ".trt")
TRT_PROFILE_NOTE = (
    "Per-layer times from TensorRT's IProfiler (report_layer_time) over the profiled passes, "
    "or from trtexec --exportProfile; fused layers cover several ONNX nodes. End-to-end "
    "figures from a separate pass without the profiler (CUDA events around each inference, "
    "or trtexec --exportTimes)."
)
_PHASES = {
    "parse": (0.0, 0.02),
    "build": (0.02, 0.45),
    "warm-up": (0.45, 0.5),
    "latency": (0.5, 0.7),
    "profile": (0.7, 0.95),
}
_DIRECTORIES = re.compile(r"(?:/[^/,:=\s]+)+/")


@dataclass(frozen=True)
class TrtProfileOptions:
    """How to run the profile (the build settings are the TrtSettings).

    `passes`: profiled runs whose per-layer times are averaged; `iterations` / `warmup`: runs
    of the latency pass and before it; `optimization_profile`: whose opt shapes the random
    inputs take; `input_folder`: TensorProto files named after the inputs instead (needs the
    ONNX model); `lock_clocks`: lock the GPU clocks during the measured passes where allowed;
    `hide_non_compute`: leave reformat and no-op layers out of the rows.
    """

    passes: int = 10
    iterations: int = 100
    warmup: int = 10
    optimization_profile: int = 0
    input_folder: Path | None = None
    seed: int = 0
    lock_clocks: bool = False
    metrics_interval_ms: float = 10.0
    hide_non_compute: bool = False
    full_paths: bool = False

    def __post_init__(self) -> None:
        for name in ("passes", "iterations"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ProfileSettingsError(f"{name}={value!r}: give a whole number >= 1")
        for name in ("warmup", "optimization_profile", "seed"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ProfileSettingsError(f"{name}={value!r}: give a whole number >= 0")
        if self.input_folder is not None:
            object.__setattr__(self, "input_folder", Path(self.input_folder).expanduser())


def engine_file(model_or_engine: Any) -> Path | None:
    """The engine file when `model_or_engine` is one (a path ending .engine/.plan/.trt, or an
    EngineExport from export_engine), else None (an ONNX model)."""
    engine = getattr(model_or_engine, "engine", None)
    if isinstance(engine, Path) and hasattr(model_or_engine, "engine_bytes"):
        return engine
    if isinstance(model_or_engine, (str, Path)):
        path = Path(model_or_engine).expanduser()
        if path.suffix.lower() in ENGINE_SUFFIXES:
            if not path.is_file():
                raise FileNotFoundError(f"no engine file at {path}")
            return path.resolve()
    return None


def built_as(engine: Path) -> dict[str, Any]:
    """What built `engine`, from the `<engine>.build.metadata.json` that export_engine writes
    beside it: backend, version, GPU and the compatibility settings ({} when absent)."""
    path = engine.with_name(engine.name + ".build.metadata.json")
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    settings: dict[str, Any] = data.get("settings") or {}
    gpus: list[Any] = data.get("gpus") or []
    if not isinstance(settings, dict) or not isinstance(gpus, list):
        return {}
    device = int(settings.get("device_index", 0) or 0)
    return {
        "backend": data.get("backend"),
        "version": data.get("version"),
        "gpu": gpus[device] if device < len(gpus) else None,
        "version_compatible": bool(settings.get("version_compatible")),
        "hardware_compatible": bool(settings.get("hardware_compatible")),
        "refit": settings.get("refit", "none"),
    }


def _opt_shapes(settings: TrtSettings, index: int) -> dict[str, list[int]]:
    profiles = settings.optimization_profiles
    if not profiles:
        return {}
    if index >= len(profiles):
        raise ProfileSettingsError(
            f"optimization_profile={index}, but the settings have {len(profiles)} profile(s)"
        )
    return {name: list(dims["opt"]) for name, dims in profiles[index].items()}


class TrtProfileJob(StagedJob[ProfileReport]):
    """A running TensorRT profile: `progress`, `cancel()`, `wait()` -> ProfileReport."""

    def __init__(
        self,
        source: ModelSource | None,
        engine: Path | None,
        settings: TrtSettings,
        options: TrtProfileOptions,
        target: Target,
        *,
        debug_crash_at: str | None = None,
    ) -> None:
        self.source, self.engine, self.settings, self.options = source, engine, settings, options
        self.built_as = built_as(engine) if engine is not None else {}
        if self.built_as.get("refit") == "stripped" and source is None:
            raise ProfileSettingsError(
                "this engine was built weight-stripped (refit='stripped'): pass the ONNX model "
                "it was built from, profile_trt(engine, model=onnx_model), to refit its weights"
            )
        shapes = _opt_shapes(settings, options.optimization_profile)
        arrays = None
        if options.input_folder is not None:
            if source is None:
                raise ProfileSettingsError(
                    "input_folder needs the ONNX model the engine was built from, to know its "
                    "inputs: profile_trt(engine, model=onnx_model, input_folder=...)"
                )
            arrays = load_input_folder(options.input_folder, source.inputs)
        super().__init__(target)
        try:
            self._workdir = target.make_workdir()
            request: dict[str, Any] = {
                "kind": "trt_profile",
                "protocol": 1,
                "settings": settings.to_request(),
                **target_caches(target, settings, None),
                "workdir": self._workdir,
                "passes": options.passes,
                "iterations": options.iterations,
                "warmup": options.warmup,
                "optimization_profile": options.optimization_profile,
                "shapes": shapes,
                "inputs": {"mode": "random", "seed": options.seed},
                "gpu": {
                    "lock_clocks": options.lock_clocks,
                    "metrics_interval_ms": options.metrics_interval_ms,
                },
                "expected": self.built_as,
            }
            if source is not None:
                request["model"] = _put_model(target, source, self._stage, self._workdir)
                request.update(target_caches(target, settings, request["model"]))
            if engine is not None:
                request["engine"] = target.put(engine, self._workdir)
            else:
                request["output"] = f"{self._workdir}/{(source.name if source else 'model')}.engine"
            if arrays is not None:
                request["inputs"] = self._put_inputs(arrays)
            self._job = self._start(RUNNER, request, debug_crash_at)
        except BaseException:
            self._cleanup()
            raise

    def _put_inputs(self, arrays: dict[str, Any]) -> dict[str, Any]:
        """The input folder's arrays as an npz (Python API) and raw files (trtexec
        --loadInputs), both on the target."""
        npz = self._stage / "inputs.npz"
        if write_npz(arrays, npz):
            raise ProfileSettingsError("TensorRT engines take no string inputs")
        raw = {}
        for index, (name, array) in enumerate(arrays.items()):
            local = self._stage / f"input_{index}.bin"
            array.tofile(local)
            raw[name] = self.target.put(local, self._workdir)
        return {"mode": "npz", "path": self.target.put(npz, self._workdir), "raw": raw}

    def _on_event(self, message: dict[str, Any]) -> None:
        if self._note_clocks(message) or message.get("event") != "progress":
            return
        phase = str(message.get("phase", ""))
        done, total = int(message.get("done", 0)), int(message.get("total", 0))
        low, high = _PHASES.get(phase, (0.7, 0.95))
        inner = float(message["fraction"]) if "fraction" in message else done / max(total, 1)
        label = str(message.get("step") or phase)
        self._set_progress(Progress(label, done, total, low + (high - low) * min(inner, 1.0)))

    @property
    def done(self) -> bool:
        return self._job.done

    def wait(self, timeout: float | None = None) -> ProfileReport:
        """The report once the run has ended; TimeoutError when `timeout` passes first."""
        return self._wait_once(timeout, "profile with TensorRT")

    def _answer_from(self, result: JobResult) -> ProfileReport:
        self._restore_clocks_if_left(result.result)
        return self._finish(_raise_for(result, self.source, "profile", ProfileError))

    def _finish(self, answer: dict[str, Any]) -> ProfileReport:
        self._set_progress(Progress("parsing", 0, 1, 0.96))
        exports = dict(answer["exports"])
        local = {key: self._stage / Path(remote).name for key, remote in exports.items()}
        self.target.get_many({remote: local[key] for key, remote in exports.items()})
        name = self.source.name if self.source is not None else None
        if name is None and self.engine is not None:
            name = self.engine.name.rsplit(".", 1)[0]
        report = load_trtexec(
            profile=local["profile"],
            layer_info=local["layer_info"],
            times=local["times"],
            model=self.source.model if self.source is not None else None,
            name=name,
            hide_non_compute=self.options.hide_non_compute,
        )
        report.metadata.update(self._metadata(answer))
        metrics = ((answer.get("gpu") or {}).get("metrics") or {}).get("columns")
        if metrics:
            report.gpu_metrics = pd.DataFrame(metrics)
        self._set_progress(Progress("done", 1, 1, 1.0))
        return report

    def _metadata(self, answer: dict[str, Any]) -> dict[str, Any]:
        full = self.options.full_paths
        built = answer.get("built") or {}
        return {
            "source": "tensorrt",
            "runtime": "TensorRT",
            "runtime_version": answer.get("version"),
            "backend": answer.get("backend"),
            "provider": "TensorRT",
            "device": answer.get("gpu_name"),
            "iterations": answer.get("iterations"),
            "passes": answer.get("passes"),
            "warmup": answer.get("warmup"),
            "inputs": answer.get("inputs"),
            "optimization_profile": self.options.optimization_profile,
            "latency_source": answer.get("latency_source"),
            "timing_note": TRT_PROFILE_NOTE,
            "engine_path": recorded_path(self.engine, full_paths=full),
            "engine_built_as": self.built_as or None,
            "built_here": bool(built),
            "build_s": built.get("build_s"),
            "refit": answer.get("refit"),
            "nvtx": answer.get("nvtx"),
            "gpu": {k: v for k, v in (answer.get("gpu") or {}).items() if k != "metrics"},
            "settings": self.settings.to_json(),
            "trtexec_argv": [
                arg if full else _DIRECTORIES.sub("", arg) for arg in answer.get("argv") or []
            ]
            or None,
            "profile_path": None,
            "layer_info_path": None,
            "times_path": None,
        }


def start_profile_trt(
    model_or_engine: Any,
    settings: TrtSettings | None = None,
    *,
    model: Any = None,
    target: Target | None = None,
    progress: ProgressListener | None = None,
    passes: int = 10,
    iterations: int = 100,
    warmup: int = 10,
    optimization_profile: int = 0,
    input_folder: str | Path | None = None,
    seed: int = 0,
    lock_clocks: bool = False,
    hide_non_compute: bool = False,
    full_paths: bool = False,
    _debug_crash_at: str | None = None,
    **kwargs: Any,
) -> TrtProfileJob:
    """Start profiling a model or a prebuilt engine with TensorRT; returns the running job."""
    settings = TrtSettings.from_kwargs(settings, **kwargs)
    options = TrtProfileOptions(
        passes=passes,
        iterations=iterations,
        warmup=warmup,
        optimization_profile=optimization_profile,
        input_folder=Path(input_folder) if input_folder is not None else None,
        seed=seed,
        lock_clocks=lock_clocks,
        hide_non_compute=hide_non_compute,
        full_paths=full_paths,
    )
    engine = engine_file(model_or_engine)
    if engine is None and model is not None:
        raise ProfileSettingsError(
            "model= goes with a prebuilt engine (its weights for a refit, its inputs and node "
            "names); pass the ONNX model itself as the first argument to build and profile it"
        )
    source = (
        model_source(model if engine is not None else model_or_engine)
        if (engine is None or model is not None)
        else None
    )
    job = TrtProfileJob(
        source, engine, settings, options, target or LocalTarget(), debug_crash_at=_debug_crash_at
    )
    if progress is not None:
        job.add_listener(progress)
    return job


def profile_trt(
    model_or_engine: Any,
    settings: TrtSettings | None = None,
    *,
    model: Any = None,
    target: Target | None = None,
    progress: ProgressListener | None = None,
    timeout: float | None = None,
    passes: int = 10,
    iterations: int = 100,
    warmup: int = 10,
    optimization_profile: int = 0,
    input_folder: str | Path | None = None,
    seed: int = 0,
    lock_clocks: bool = False,
    hide_non_compute: bool = False,
    full_paths: bool = False,
    **kwargs: Any,
) -> ProfileReport:
    """Profile an ONNX model (built first, with `settings`) or a prebuilt engine (a .engine /
    .plan file or an EngineExport) per layer with TensorRT, in a child process on `target`.

    The report has one row per engine layer (precision, tactic, formats, `onnx_nodes`) with its
    time over `passes` profiled runs, and end-to-end latencies from `iterations` runs without
    the profiler. A prebuilt engine must match the target's TensorRT and GPU
    (EngineMismatchError says what differs); `model=` gives its ONNX model, for a refit of a
    refittable engine, an input folder and node names. Keyword arguments are TrtSettings fields.
    Raises TrtUnavailableError where the target cannot run engines (no GPU, no cuda-python).
    """
    check_timeout(timeout)
    job = start_profile_trt(
        model_or_engine,
        settings,
        model=model,
        target=target,
        progress=progress,
        passes=passes,
        iterations=iterations,
        warmup=warmup,
        optimization_profile=optimization_profile,
        input_folder=input_folder,
        seed=seed,
        lock_clocks=lock_clocks,
        hide_non_compute=hide_non_compute,
        full_paths=full_paths,
        **kwargs,
    )
    return wait_or_cancel(job, timeout, "profile", ProfileError)
