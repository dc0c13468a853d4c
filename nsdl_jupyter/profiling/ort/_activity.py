"""The ONNX Runtime profile activity: settings in, ProfileReport out, runtime in a child process.

`start_profile_ort` checks everything it can in the kernel (model, settings, input folder),
stages the job on a target and starts the runner (`_ort_runner.py`); the returned `ProfileJob`
reports progress, can be cancelled, and turns the runner's answer and trace into a report.
`profile_ort` does the same and waits. Nothing here imports onnxruntime.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from nsdl_jupyter._output_guard import guard_output, starts_with
from nsdl_jupyter.profiling._errors import (
    ProfileCancelledError,
    ProfileError,
    ProfileSettingsError,
    RunnerCrashError,
    TargetLostError,
)
from nsdl_jupyter.profiling._files import readable_file
from nsdl_jupyter.profiling._inputs import check_dim_sizes, load_input_folder, write_npz
from nsdl_jupyter.profiling._job import (
    Progress,
    ProgressListener,
    StagedJob,
    check_timeout,
    wait_or_cancel,
)
from nsdl_jupyter.profiling._model_source import ModelSource, model_source
from nsdl_jupyter.profiling._node_labels import node_labels
from nsdl_jupyter.profiling._report import ProfileReport, now_iso, recorded_path
from nsdl_jupyter.profiling._runners import RUNNER
from nsdl_jupyter.profiling.gpu._ncu_counters import NCU_METRICS
from nsdl_jupyter.profiling.gpu._report import gpu_report_parts
from nsdl_jupyter.profiling.ort._fusion_map import LayerMapping, fused_node_mapping
from nsdl_jupyter.profiling.ort._settings import OrtProfileSettings, OrtSettingsKwargs
from nsdl_jupyter.profiling.ort._trace import parse_ort_trace
from nsdl_jupyter.targets import JobResult, LocalTarget, Target

if TYPE_CHECKING:
    from typing_extensions import Unpack  # typing.Unpack from Python 3.11

_STDERR_IN_MESSAGE = 30  # lines of the runner's stderr quoted in an error message

NODE_TIME_NOTE = (
    "Per-node times come from onnxruntime's profiler: host-side time around each kernel, with "
    "a device synchronisation per node on GPU providers, so they add up to more than the "
    "end-to-end latency. End-to-end figures come from a separate pass with profiling off."
)


def _tail(stderr: str, lines: int = _STDERR_IN_MESSAGE) -> str:
    kept = stderr.strip().splitlines()[-lines:]
    return "\n".join(kept)


class ProfileJob(StagedJob[ProfileReport]):
    """A running profile: `progress`, `cancel()`, `wait()` -> ProfileReport."""

    def __init__(
        self,
        source: ModelSource,
        settings: OrtProfileSettings,
        target: Target,
        *,
        overwrite: bool = False,
        debug_crash_at: str | None = None,
    ) -> None:
        self.settings = settings
        self.source = source
        self.trace_path = guard_output(
            settings.trace_path or settings.default_trace_path(source.name),
            reading=[source.origin],
            overwrite=overwrite,
            earlier=lambda path: starts_with(path, b"["),  # onnxruntime's traces: JSON lists
            what="trace_path",
        )
        # Everything that can be wrong with the inputs is found before a process starts.
        arrays = None
        if settings.input_folder is not None:
            arrays = load_input_folder(settings.input_folder, source.inputs)
        else:
            check_dim_sizes(settings.dim_sizes, source.free_dims)

        super().__init__(target)
        try:
            self._workdir = target.make_workdir()
            model_path = source.write(self._stage)
            self._staged_model = model_path
            request: dict[str, Any] = {
                "kind": "ort_profile",
                "protocol": 1,
                "model": target.put(
                    model_path, self._workdir, companions=source.data_files(model_path)
                ),
                "provider": settings.provider,
                "provider_options": settings.provider_options,
                "graph_optimization": settings.graph_optimization,
                "iterations": settings.iterations,
                "warmup": settings.warmup,
                "intra_op_threads": settings.intra_op_threads,
                "spin_wait": settings.spin_wait,
                "workdir": self._workdir,
                "inputs": {"mode": "random", "dims": settings.dim_sizes, "seed": settings.seed},
                "io_binding": settings.io_binding,
                "gpu": {
                    "timing": settings.gpu_timing,
                    "metrics_interval_ms": settings.metrics_interval_ms,
                    "lock_clocks": settings.lock_clocks,
                    "peaks": settings.peaks,
                    "counters": counter_request(settings),
                },
            }
            if arrays is not None:
                npz = self._stage / "inputs.npz"
                strings = write_npz(arrays, npz)
                request["inputs"] = {
                    "mode": "npz",
                    "path": target.put(npz, self._workdir),
                    "strings": strings,
                }
            self._job = self._start(RUNNER, request, debug_crash_at)
        except BaseException:
            self._cleanup()
            raise

    # ---- progress -------------------------------------------------------------------------

    def _on_event(self, message: dict[str, Any]) -> None:
        if self._note_clocks(message):
            return
        if message.get("event") != "progress":
            return
        warmup, n = self.settings.warmup, self.settings.iterations
        # the free-running pass shares the profile's share of the bar; peaks and counters
        # (one-off, their own length) show at its end
        end = 2 * (warmup + n)
        offsets = {"warm-up": 0, "latency": warmup, "free-running": warmup + n,
                   "profile": warmup + n, "peaks": end, "counters": end}  # fmt: skip
        total_steps = 2 * (warmup + n)
        phase = str(message.get("phase", ""))
        done = int(message.get("done", 0))
        overall = (offsets.get(phase, 0) + done) / total_steps if total_steps else 0.0
        self._set_progress(Progress(phase, done, int(message.get("total", 0)), 0.95 * overall))

    # ---- control --------------------------------------------------------------------------

    @property
    def done(self) -> bool:
        return self._ended.is_set()

    @property
    def stderr(self) -> str:
        return self._result.stderr if self._result is not None else ""

    def wait(self, timeout: float | None = None) -> ProfileReport:
        """The report, once the run has ended.

        Raises ProfileError (the runner reported an error), RunnerCrashError (the child died)
        or ProfileCancelledError; TimeoutError when `timeout` passes first (still running).
        """
        return self._wait_once(timeout, "profile")

    def _answer_from(self, result: JobResult) -> ProfileReport:
        self._restore_clocks_if_left(result.result)
        stderr = _tail(result.stderr)
        if result.cancelled:
            self._set_progress(Progress("cancelled", 0, 0, self.progress.fraction))
            raise ProfileCancelledError(
                "the profile was cancelled; the child process was ended", stderr
            )
        if result.lost is not None and result.result is None and result.error is None:
            phase = (result.last_progress or {}).get("phase", "session creation")
            raise TargetLostError(f"{result.lost} (it was in {phase})", stderr)
        if result.error is not None:
            message = f"{result.error.get('type')}: {result.error.get('message')}"
            if stderr:
                message += f"\n--- runner stderr (last lines) ---\n{stderr}"
            raise ProfileError(message, stderr)
        if result.result is None:
            phase = (result.last_progress or {}).get("phase", "session creation")
            raise RunnerCrashError(
                f"the onnxruntime child process died ({result.crash_description}) during "
                f"{phase}; the notebook kernel is unaffected. "
                + (
                    f"\n--- runner stderr (last lines) ---\n{stderr}"
                    if stderr
                    else "It wrote nothing on stderr."
                ),
                stderr,
            )
        self._set_progress(Progress("parsing", 0, 1, 0.96))
        answer = result.result
        optimized = self._stage / "optimized.onnx"
        wanted = {answer["trace"]: self.trace_path}
        if answer.get("optimized_model"):
            wanted[answer["optimized_model"]] = optimized
        gpu = answer.get("gpu") or {}
        fetched: dict[str, Path | None] = {}
        for key, name in (
            ("timing", "gpu_kernels.npz"),
            ("free_running", "gpu_kernels_free.npz"),
            ("counters", "ncu_counters.csv"),
        ):
            remote = (gpu.get(key) or {}).get("file")
            fetched[name] = self._stage / name if remote else None
            if remote:
                wanted[remote] = self._stage / name
        self.target.get_many(wanted)  # one round trip (without SFTP: one command, not one each)
        mapping = None
        if answer.get("optimized_model"):
            mapping = fused_node_mapping(self._staged_model, optimized)
        report = _report_from_run(
            answer, self.trace_path, self.source, self.settings, mapping=mapping, files=fetched
        )
        self._set_progress(Progress("done", 1, 1, 1.0))
        return report


def counter_request(settings: OrtProfileSettings) -> dict[str, Any] | None:
    """The runner's `gpu.counters` request: ncu's metric set and caps (None: no counters)."""
    if not settings.counters:
        return None
    return {
        "metrics": list(NCU_METRICS),
        "max_kernels": settings.counters_max_kernels,
        "kernel_name": settings.counters_kernel_name,
        "ncu_path": settings.counters_ncu_path,
    }


def _report_from_run(
    answer: dict[str, Any],
    trace_path: Path,
    source: ModelSource,
    settings: OrtProfileSettings,
    *,
    mapping: Mapping[str, LayerMapping] | None = None,
    files: Mapping[str, Path | None] | None = None,
) -> ProfileReport:
    parsed = parse_ort_trace(
        trace_path,
        skip_runs=int(answer.get("skip_runs", 0)),
        graph_nodes=source.node_names,
        mapping=mapping,
    )
    files = files or {}
    gpu = gpu_report_parts(
        answer.get("gpu") or {},
        parsed,
        files.get("gpu_kernels.npz"),
        source.io_nodes,
        free_kernels=files.get("gpu_kernels_free.npz"),
        counters_csv=files.get("ncu_counters.csv"),
    )
    latencies = np.asarray(answer["latencies_ms"], dtype=np.float64)
    metadata = {
        "source": "onnxruntime",
        "runtime": "onnxruntime",
        "runtime_version": answer.get("ort_version"),
        "provider": answer.get("provider"),
        "providers": answer.get("providers"),
        "device": answer.get("device"),
        "python": answer.get("python"),
        "iterations": answer.get("iterations"),
        "warmup": answer.get("warmup"),
        "graph_optimization": answer.get("graph_optimization"),
        "model_name": source.name,
        "model_path": recorded_path(source.path, full_paths=settings.full_paths),
        "trace_path": recorded_path(trace_path, full_paths=settings.full_paths),
        "inputs": answer.get("inputs"),
        "session_create_ms": answer.get("session_create_ms"),
        "created": now_iso(),
        "latency_source": "separate pass with profiling off",
        "profiled_run_ms": parsed.run_ms.tolist(),
        "node_sum_ms": parsed.node_sum_ms.tolist(),
        "trace_events": parsed.n_events,
        "timing_note": NODE_TIME_NOTE,
        "settings": settings.to_json(),
        "gpu": gpu.metadata,
        "io_binding": settings.io_binding,
    }
    if "peaks" in gpu.metadata:
        metadata["peaks"] = gpu.metadata["peaks"]
    if settings.full_paths:
        metadata["host"] = answer.get("host")
    layers = gpu.layers.assign(node=node_labels(gpu.layers, source.model))
    return ProfileReport(
        layers,
        latencies_ms=latencies,
        timeline_events=parsed.timeline,
        metadata=metadata,
        kernels=gpu.kernels,
        kernel_timeline=gpu.kernel_timeline,
        gpu_metrics=gpu.metrics,
    )


def start_profile_ort(
    model: Any,
    settings: OrtProfileSettings | None = None,
    *,
    target: Target | None = None,
    progress: ProgressListener | None = None,
    overwrite: bool = False,
    _debug_crash_at: str | None = None,
    **kwargs: Unpack[OrtSettingsKwargs],
) -> ProfileJob:
    """Start profiling `model` with onnxruntime in a child process; returns the running job.

    Settings come from `settings` and/or keyword arguments (see OrtProfileSettings). The trace
    replaces an earlier trace at `trace_path`, another file only with `overwrite=True`, and
    never the model's own files (OutputPathError before anything runs).
    """
    settings = OrtProfileSettings.from_kwargs(settings, **kwargs)
    job = ProfileJob(
        model_source(model), settings, target or LocalTarget(),
        overwrite=overwrite, debug_crash_at=_debug_crash_at,
    )  # fmt: skip
    if progress is not None:
        job.add_listener(progress)
    return job


def profile_ort(
    model: Any,
    settings: OrtProfileSettings | None = None,
    *,
    target: Target | None = None,
    progress: ProgressListener | None = None,
    timeout: float | None = None,
    overwrite: bool = False,
    **kwargs: Unpack[OrtSettingsKwargs],
) -> ProfileReport:
    """Profile `model` (path, ModelProto, onnx_ir.Model or ModelDocument) with onnxruntime.

    Runs in a child process (a runtime crash becomes RunnerCrashError; interrupting the kernel
    cancels the run). Keyword arguments are OrtProfileSettings fields: iterations, warmup,
    provider, provider_options, graph_optimization, dim_sizes, input_folder, trace_path, seed,
    intra_op_threads. `overwrite`: see `start_profile_ort`.
    """
    check_timeout(timeout)
    job = start_profile_ort(
        model, settings, target=target, progress=progress, overwrite=overwrite, **kwargs
    )
    return wait_or_cancel(job, timeout, "profile", ProfileError)


def load_ort_profile(
    trace_path: str | Path,
    model: Any = None,
    *,
    skip_runs: int = 0,
    full_paths: bool = False,
    optimized_model: str | Path | None = None,
) -> ProfileReport:
    """A ProfileReport from a trace written by onnxruntime's own profiler, from any machine.

    `model` (optional) marks which rows are nodes of that graph; with `optimized_model` (the
    file onnxruntime wrote for `SessionOptions.optimized_model_filepath` in the profiled
    session) fused and inserted rows are mapped back to the model's nodes too. `skip_runs`
    drops the first runs as warm-up. Without a separate bare pass, end-to-end latencies are
    the profiled run times, which the profiler inflates (the metadata says so). The metadata
    records the trace's file name (or path relative to the working folder) unless
    `full_paths` is set.
    """
    trace_path = readable_file(trace_path, "onnxruntime trace")
    source = model_source(model) if model is not None else None
    mapping = None
    if optimized_model is not None:
        if source is None:
            raise ProfileSettingsError("optimized_model needs the model it was made from: model=")
        with tempfile.TemporaryDirectory(prefix="nsdl-map-") as folder:
            mapping = fused_node_mapping(source.write(Path(folder)), Path(optimized_model))
    parsed = parse_ort_trace(
        trace_path,
        skip_runs=skip_runs,
        graph_nodes=source.node_names if source else None,
        mapping=mapping,
    )
    provider = parsed.providers[0] if len(parsed.providers) == 1 else ", ".join(parsed.providers)
    metadata = {
        "source": "onnxruntime",
        "runtime": "onnxruntime",
        "provider": provider,
        "iterations": len(parsed.run_ms),
        "warmup": skip_runs,
        "model_name": source.name if source else trace_path.name.removesuffix(".json"),
        "trace_path": recorded_path(trace_path, full_paths=full_paths),
        "created": now_iso(),
        "latency_source": "profiled runs (profiler on: inflated)",
        "profiled_run_ms": parsed.run_ms.tolist(),
        "node_sum_ms": parsed.node_sum_ms.tolist(),
        "trace_events": parsed.n_events,
        "timing_note": NODE_TIME_NOTE.replace(
            "End-to-end figures come from a separate pass with profiling off.",
            "This trace has no bare pass: its end-to-end figures are the profiled run times.",
        ),
    }
    layers = parsed.layers
    if source is not None:
        layers = layers.assign(node=node_labels(layers, source.model))
    return ProfileReport(
        layers,
        latencies_ms=parsed.run_ms,
        timeline_events=parsed.timeline,
        metadata=metadata,
    )
