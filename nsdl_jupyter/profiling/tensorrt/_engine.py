"""The TensorRT export activity: model + TrtSettings in, engine files out, TensorRT in a child.

`start_export_engine` stages the model on a target and starts `_trt_runner.py`; the returned
`EngineJob` reports build progress (TensorRT's IProgressMonitor), can be cancelled, and brings
the engine, build log, metadata and inspector JSON back beside `output`. `export_engine` does
the same and waits. `check_trt_capability` runs the ONNX parser alone and lists the nodes it
rejects. Nothing here imports TensorRT.
"""

from __future__ import annotations

import posixpath
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nsdl_jupyter._output_guard import guard_output, output_path, starts_with
from nsdl_jupyter.document import ModelDocument, external_tensors
from nsdl_jupyter.profiling._errors import (
    EngineBuildError,
    EngineMismatchError,
    OnnxParseError,
    ProfileCancelledError,
    ProfileError,
    RunnerCrashError,
    TrtSettingsError,
    TrtUnavailableError,
)
from nsdl_jupyter.profiling._job import (
    Progress,
    ProgressListener,
    StagedJob,
    check_timeout,
    wait_or_cancel,
)
from nsdl_jupyter.profiling._model_source import ModelSource, model_source
from nsdl_jupyter.profiling._runners import reading_answer, start_runner
from nsdl_jupyter.profiling.tensorrt._settings import RUNNER, TrtSettings, TrtSettingsKwargs
from nsdl_jupyter.targets import JobResult, LocalTarget, Target

if TYPE_CHECKING:
    from typing_extensions import Unpack  # typing.Unpack from Python 3.11

# what the runner writes beside the engine, by suffix, and the EngineExport field for it
_SIDE_FILES = {".build.log": "log", ".build.metadata.json": "metadata", ".graph.json": "inspector"}
_STDERR_LINES = 30


@dataclass(frozen=True)
class EngineExport:
    """A built engine: its files, the backend that built it, and what the builder held.

    `applied` is the builder config read back after the settings were applied (flags,
    optimization level, aux streams, workspace, profiles...) and `ignored` names the settings it
    does not hold although they were set (TensorRT-RTX 1.7 keeps its own hardware
    compatibility level, for one); `timing_cache` says whether a
    cache was loaded and saved (`answer["engine_cache"]`: whether an SshTarget's engine cache
    gave the engine, `hit`), `build_s` is TensorRT's build time alone. `inspector` is the
    engine inspector's layer JSON, None where the engine could not be loaded (no GPU).
    """

    engine: Path
    log: Path
    metadata: Path
    inspector: Path | None
    backend: str
    version: str
    engine_bytes: int
    build_s: float
    applied: dict[str, Any]
    ignored: list[str]
    timing_cache: dict[str, Any]
    progress_events: int
    answer: dict[str, Any] = field(repr=False)


@dataclass(frozen=True)
class RejectedNode:
    """A node the TensorRT ONNX parser rejects, with the parser's message."""

    index: int
    name: str
    op_type: str
    message: str


@dataclass(frozen=True)
class TrtCapability:
    """What the TensorRT ONNX parser of `backend` `version` says about a model."""

    backend: str
    version: str
    rejected: list[RejectedNode]
    layers: int

    @property
    def supported(self) -> bool:
        return not self.rejected

    def messages(self) -> dict[str, str]:
        """Node name -> the parser's message."""
        return {node.name: node.message for node in self.rejected}

    def marks(self) -> dict[str, str]:
        """`{node name: "error"}` for `GraphView.set_marks`: the rejected nodes on the graph."""
        return {node.name: "error" for node in self.rejected if node.name}


def _node_names(source: ModelSource | None, errors: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Fill in names the parser left empty from the node index (top-level graph order)."""
    nodes = list(source.model.graph) if source is not None else []
    named = []
    for error in errors:
        entry = dict(error)
        index = int(entry.get("node", -1))
        if not entry.get("name") and 0 <= index < len(nodes):
            entry["name"] = nodes[index].name or ""
        if not entry.get("operator") and 0 <= index < len(nodes):
            entry["operator"] = nodes[index].op_type
        named.append(entry)
    return named


_TYPED = {"EngineMismatchError": EngineMismatchError, "TrtUnavailableError": TrtUnavailableError}


def _raise_for(
    result: JobResult,
    source: ModelSource | None,
    what: str,
    error: type[ProfileError] = EngineBuildError,
) -> dict[str, Any]:
    """The runner's answer, or the error it stands for (same condition, same type); `error`
    for a failure the runner did not type."""
    stderr = "\n".join(result.stderr.strip().splitlines()[-_STDERR_LINES:])
    if result.cancelled or (result.error or {}).get("type") == "Cancelled":
        raise ProfileCancelledError(f"the {what} was cancelled; the child process ended", stderr)
    if result.error is not None:
        kind, message = result.error.get("type"), str(result.error.get("message"))
        if kind == "TrtSettingsError":
            raise TrtSettingsError(message)
        if kind == "OnnxParseError":
            raise OnnxParseError(message, _node_names(source, result.error.get("nodes") or []))
        if kind in _TYPED:
            raise _TYPED[str(kind)](message, stderr)
        if kind != "RunnerError":  # an unexpected exception in the runner: show where
            message = f"{kind}: {message}"
            if stderr:
                message += f"\n--- runner stderr (last lines) ---\n{stderr}"
        raise error(message, stderr)
    if result.result is None:
        raise RunnerCrashError(
            f"the TensorRT child process died ({result.crash_description}) during the {what}; "
            "the notebook kernel is unaffected."
            + (f"\n--- runner stderr (last lines) ---\n{stderr}" if stderr else ""),
            stderr,
        )
    return result.result


class EngineJob(StagedJob[EngineExport]):
    """A running engine build: `progress`, `cancel()`, `wait()` -> EngineExport."""

    def __init__(
        self,
        source: ModelSource,
        output: Path,
        settings: TrtSettings,
        target: Target,
        *,
        debug_crash_at: str | None = None,
    ) -> None:
        super().__init__(target)
        self.source, self.output, self.settings = source, output, settings
        self.events: list[dict[str, Any]] = []
        try:
            self._workdir = target.make_workdir()
            remote_model = _put_model(target, source, self._stage, self._workdir)
            request: dict[str, Any] = {
                "kind": "trt_build",
                "protocol": 1,
                "model": remote_model,
                "output": _remote_output(self._workdir, output.name, source, remote_model),
                "settings": settings.to_request(),
                **target_caches(target, settings, remote_model),
                "workdir": self._workdir,
            }
            self._job = self._start(RUNNER, request, debug_crash_at)
        except BaseException:
            self._cleanup()
            raise

    def _on_event(self, message: dict[str, Any]) -> None:
        if message.get("event") != "progress":
            return
        self.events.append(message)
        phase = str(message.get("step") or message.get("phase", ""))
        fraction = 0.02 + 0.93 * float(message.get("fraction", 0.0))
        total = int(message.get("total", 0))
        self._set_progress(Progress(phase, int(message.get("done", 0)), total, fraction))

    @property
    def done(self) -> bool:
        return self._job.done

    @property
    def returncode(self) -> int | None:
        """The runner's exit status once it ended (3: it stopped the build on a cancel)."""
        return self._result.returncode if self._result is not None else None

    def cancel(self) -> None:
        """Stop the build (SIGTERM: TensorRT stops at its next progress step; SIGKILL after a
        grace period); `wait()` then raises ProfileCancelledError."""
        self._job.cancel()

    def wait(self, timeout: float | None = None) -> EngineExport:
        """The export once the build has ended; TimeoutError when `timeout` passes first."""
        return self._wait_once(timeout, "build the engine")

    def _answer_from(self, result: JobResult) -> EngineExport:
        return self._finish(_raise_for(result, self.source, "build"))

    def _finish(self, answer: dict[str, Any]) -> EngineExport:
        self.target.get(answer["engine"], self.output)
        files: dict[str, Path | None] = {}
        for suffix, name in _SIDE_FILES.items():
            local = self.output.with_name(self.output.name + suffix)
            remote = answer["engine"] + suffix
            try:
                self.target.get(remote, local)
                files[name] = local
            except FileNotFoundError:
                files[name] = None
        log, metadata = files["log"], files["metadata"]
        assert log is not None, "the runner always writes the build log"
        assert metadata is not None, "the runner always writes the metadata"
        self._set_progress(Progress("done", 1, 1, 1.0))
        return EngineExport(
            engine=self.output,
            log=log,
            metadata=metadata,
            inspector=files["inspector"],
            backend=str(answer["backend"]),
            version=str(answer["version"]),
            engine_bytes=int(answer["engine_bytes"]),
            build_s=float(answer["build_s"]),
            applied=dict(answer.get("applied") or {}),
            ignored=list(answer.get("ignored") or []),
            timing_cache=dict(answer.get("timing_cache") or {}),
            progress_events=int(answer.get("progress_events", len(self.events))),
            answer=answer,
        )


def start_export_engine(
    model: Any,
    output: str | Path,
    settings: TrtSettings | None = None,
    *,
    target: Target | None = None,
    progress: ProgressListener | None = None,
    overwrite: bool = False,
    _debug_crash_at: str | None = None,
    **kwargs: Unpack[TrtSettingsKwargs],
) -> EngineJob:
    """Start building a TensorRT engine of `model` into `output`; returns the running job."""
    settings = TrtSettings.from_kwargs(settings, **kwargs)
    if isinstance(model, ModelDocument):
        settings = settings.with_model_properties(model.tensorrt)
    output = output_path(output, "engine path").expanduser().resolve()
    if output.is_dir():
        raise TrtSettingsError(f"output {output} is a folder: give the engine's file path")
    source = model_source(model)
    _guard_engine_files(output, source, overwrite=overwrite)
    output.parent.mkdir(parents=True, exist_ok=True)
    job = EngineJob(
        source, output, settings, target or LocalTarget(), debug_crash_at=_debug_crash_at
    )
    if progress is not None:
        job.add_listener(progress)
    return job


def export_engine(
    model: Any,
    output: str | Path,
    settings: TrtSettings | None = None,
    *,
    target: Target | None = None,
    progress: ProgressListener | None = None,
    timeout: float | None = None,
    overwrite: bool = False,
    **kwargs: Unpack[TrtSettingsKwargs],
) -> EngineExport:
    """Build a TensorRT engine of `model` (path, ModelProto, onnx_ir.Model or ModelDocument)
    into `output`, in a child process on `target` (default: this machine).

    Keyword arguments are TrtSettings fields (fp16=True, optimization_level=5, ...). A
    ModelDocument brings its TensorRT properties (`doc.tensorrt`: optimization profiles, layer
    precisions; see `TrtSettings.with_model_properties`). Beside the
    engine come `<output>.build.log`, `<output>.build.metadata.json` and, where the engine can
    be loaded (a GPU), `<output>.graph.json` (engine inspector). Raises TrtSettingsError for a
    setting the installed TensorRT lacks, OnnxParseError (with `.nodes`) when the parser
    rejects nodes, EngineBuildError, RunnerCrashError, or ProfileCancelledError.
    Before anything is written, OutputPathError when `output` or a side file is one of the
    model's files (model, external data, companion) or another model's data, or an existing
    file that is not an earlier engine export (`overwrite=True` replaces it).
    """
    check_timeout(timeout)
    job = start_export_engine(
        model, output, settings, target=target, progress=progress, overwrite=overwrite, **kwargs
    )
    return wait_or_cancel(job, timeout, "build", EngineBuildError)


def _guard_engine_files(output: Path, source: ModelSource, *, overwrite: bool) -> None:
    """The engine and its side files pass the output guard; an earlier export (its build
    metadata beside it) is replaced without `overwrite`."""
    earlier = starts_with(output.with_name(output.name + ".build.metadata.json"), b"{")
    for path in [output, *(output.with_name(output.name + s) for s in _SIDE_FILES)]:
        guard_output(path, reading=[source.origin], overwrite=overwrite or earlier, what="engine")


def _remote_output(workdir: str, name: str, source: ModelSource, remote_model: str) -> str:
    """Where the runner writes the engine: beside the staged model, never over it or over
    its data files (an engine named like the model gets another name)."""
    data = (str(tensor.location).split("/")[0] for tensor in external_tensors(source.model))
    taken = {Path(remote_model).name, "model.onnx.data", *data}
    while name in taken or any(f"{name}{suffix}" in taken for suffix in _SIDE_FILES):
        name = f"engine-{name}"
    return f"{workdir}/{name}"


def target_caches(target: Target, settings: TrtSettings, model: str | None) -> dict[str, Any]:
    """The request fields that keep TensorRT's timing caches and the engines built from `model`
    (its path on the target) in a target's own cache folders, where it has them (SshTarget:
    its deploy folder, so cache_info, clear_cache and the size cap cover them); an identical
    build later reuses the stored engine. Elsewhere: the settings' cache_dir alone."""
    folder_of = getattr(target, "cache_folder", None)
    if folder_of is None:
        return {"cache_dir": settings.cache_dir}
    fields: dict[str, Any] = {"cache_dir": settings.cache_dir or folder_of("tensorrt")}
    if model is not None:  # deployed into a folder named by the model's content hash
        digest = posixpath.basename(posixpath.dirname(model))
        fields["engine_cache"] = {"folder": folder_of("engines"), "model": digest}
    return fields


def _put_model(target: Target, source: ModelSource, stage: Path, workdir: str) -> str:
    """The model (and its external data files) where the runner on `target` reads it."""
    written = source.write(stage)
    return target.put(written, workdir, companions=source.data_files(written))


def _run_once(
    request: dict[str, Any],
    target: Target,
    timeout: float | None,
    model: tuple[ModelSource, Path] | None = None,
) -> JobResult:
    """One short runner request (probe, capability) in a fresh work folder; `model` is a
    source and the staging folder to write it in."""
    workdir = target.make_workdir()
    try:
        request = {**request, "protocol": 1, "workdir": workdir}
        if model is not None:
            request["model"] = _put_model(target, model[0], model[1], workdir)
        job = start_runner(target, RUNNER, request, workdir)
        try:
            return job.wait(timeout)
        except TimeoutError:
            job.cancel()
            raise EngineBuildError(
                f"the TensorRT runner did not answer within {timeout} s"
            ) from None
    finally:
        target.remove_workdir(workdir)


def check_trt_capability(
    model: Any,
    settings: TrtSettings | None = None,
    *,
    target: Target | None = None,
    timeout: float | None = 300,
    **kwargs: Unpack[TrtSettingsKwargs],
) -> TrtCapability:
    """The nodes the TensorRT ONNX parser rejects, with its messages, through the `tensorrt`
    or `tensorrt_rtx` module on `target` (TensorRT-RTX's parser runs without a GPU)."""
    settings = TrtSettings.from_kwargs(settings, **kwargs)
    source = model_source(model)
    request = {"kind": "trt_capability", "settings": settings.to_request()}
    with tempfile.TemporaryDirectory(prefix="nsdl-trt-cap-") as stage:
        result = _run_once(request, target or LocalTarget(), timeout, (source, Path(stage)))
    with reading_answer(result, "check TensorRT's capability"):
        answer = _raise_for(result, source, "capability check")
        rejected = [
            RejectedNode(
                int(e.get("node", -1)), str(e["name"]), str(e["operator"]), str(e["message"])
            )
            for e in _node_names(source, answer.get("errors") or [])
        ]
        return TrtCapability(
            str(answer["backend"]), str(answer["version"]), rejected, int(answer["layers"])
        )


def trt_backends(
    settings: TrtSettings | None = None, *, target: Target | None = None
) -> dict[str, dict[str, str]]:
    """Which TensorRT backends `target` has: {backend: {"version": ...} or {"error": ...}}."""
    request = {"kind": "trt_probe", "settings": (settings or TrtSettings()).to_request()}
    result = _run_once(request, target or LocalTarget(), 120)
    with reading_answer(result, "list its TensorRT backends"):
        answer = _raise_for(result, None, "probe")
        return {k: dict(v) for k, v in answer["backends"].items()}
