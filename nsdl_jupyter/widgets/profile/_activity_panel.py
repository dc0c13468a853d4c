"""ActivityPanel: the "Profile Model" dialog as a widget, running `start_profile_ort`, and the
"Export TensorRT Engine" dialog running `start_export_engine` (framework ONNX Runtime / TensorRT).

Built from ipywidgets only. The settings mirror OrtProfileSettings; execution providers the
target's onnxruntime lacks are shown disabled with the reason. Run starts the child process;
a progress bar follows it, Cancel ends it, a failure shows the error and the runner's stderr,
and a finished run shows a ProfileView of the report (bound to `graph_view`, if given).
At the top a TargetPicker chooses where it runs (this machine or an SSH connection); the
runner's log, streamed from the target, is shown below the progress bar.
With TensorRT, the TrtSettingsForm shows every engine setting (defaults of the seed), gated by
the TensorRT the target has (probed when TensorRT is first chosen); Export builds the engine
with progress and cancel, and Profile runs `start_profile_trt` with the run's controls (passes,
iterations and warm-up, a prebuilt engine instead of a build, lock clocks, hide non-compute:
the controls the ONNX Runtime side has are the same widgets). The settings are kept per model
in its companion file.
A second tab, Sweep, holds a SweepPanel of the same model: axes, saved targets, run, table.
A third, Fleet, the saved targets' GPU slots, drivers, runtimes and caches (FleetView).
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

import ipywidgets as widgets
import traitlets

from nsdl_jupyter._display import html_text, shown_path
from nsdl_jupyter._paths import output_folder, safe_file_name
from nsdl_jupyter._static_export import StaticPictureMixin
from nsdl_jupyter.document import ModelDocument
from nsdl_jupyter.profiling import (
    ENGINE_SUFFIXES,
    EngineExport,
    EngineJob,
    InputFolderError,
    OnnxParseError,
    OrtProfileSettings,
    ProfileCancelledError,
    ProfileJob,
    ProfileReport,
    ProfileSettingsError,
    Progress,
    TargetLostError,
    TrtSettings,
    TrtSettingsError,
    model_source,
    probe_runtime,
    start_export_engine,
    start_profile_ort,
    start_profile_trt,
    trt_backends,
)
from nsdl_jupyter.targets import Target
from nsdl_jupyter.widgets._main_shell import MainShellBox
from nsdl_jupyter.widgets._options import BoxOptions, check_options
from nsdl_jupyter.widgets.profile._failure import failure_html
from nsdl_jupyter.widgets.profile._log_view import LogView
from nsdl_jupyter.widgets.profile._profile_view import ProfileView
from nsdl_jupyter.widgets.profile._trt_settings_form import TrtSettingsForm
from nsdl_jupyter.widgets.targets._fleet_view import FleetView
from nsdl_jupyter.widgets.targets._target_picker import TargetPicker

if TYPE_CHECKING:
    from typing_extensions import Unpack  # typing.Unpack from Python 3.11

    from nsdl_jupyter.widgets.profile._sweep_panel import SweepPanel

_PROVIDER_LABELS = {"Tensorrt": "TensorRT", "Dml": "DirectML", "OpenVINO": "OpenVINO"}
# Providers whose kernels CUPTI traces and whose GPU NVML samples and clocks apply to.
GPU_PROVIDERS = frozenset({"CUDAExecutionProvider", "TensorrtExecutionProvider"})
_GPU_OFF = "GPU timing, metrics, clocks and counters apply to the CUDA and TensorRT providers"
TRT_SETTINGS_KEY = "trt_settings"  # the companion file's entry for the TensorRT form
_AUTO_ORDER = ("tensorrt", "tensorrt_rtx", "trtexec")  # TrtSettings backend='auto'


def parse_dim_sizes(text: str) -> dict[str, int]:
    """'batch=8, seq=128' -> {'batch': 8, 'seq': 128}; ValueError says what is wrong."""
    sizes: dict[str, int] = {}
    for part in filter(None, (p.strip() for p in text.replace(";", ",").split(","))):
        name, sep, value = part.partition("=")
        if not sep or not name.strip() or not value.strip().isdigit():
            raise ProfileSettingsError(
                f"dimension sizes: {part!r} is not name=integer (e.g. batch=8)"
            )
        sizes[name.strip()] = int(value)
    return sizes


def _where(target: Target | None) -> str:
    """The target as the panel names it: never this machine's host name, which a saved
    notebook would carry."""
    return "this machine" if target is None or target.name == "local" else target.name


def gpu_notes_html(report: ProfileReport) -> str:
    """Warnings of a run on the GPU, as HTML lines: GPU timing unavailable (and why: CUPTI
    missing, ...; the layer times shown are host times) and clocks that could not be locked."""
    gpu = report.metadata.get("gpu") or {}
    notes = []
    timing = gpu.get("timing") or {}
    if timing and not timing.get("available"):
        message = timing.get("message") or "GPU timing unavailable"
        notes.append(f"No GPU kernel times: {message}. The layer times shown are host times.")
    clocks = gpu.get("clocks") or {}
    if clocks.get("warning"):
        notes.append(f"Clocks: {clocks['warning']}")
    return "".join(
        f"<br><span class='nsdl-activity-gpu-warning'>&#9888; {html_text(n)}</span>" for n in notes
    )


class ActivityPanel(StaticPictureMixin, MainShellBox, widgets.VBox):  # type: ignore[misc]
    """Profile `model` (path, ModelProto, onnx_ir.Model or ModelDocument) with onnxruntime."""

    status = traitlets.Unicode("idle", help="idle, running, done, failed or cancelled")
    provider = traitlets.Unicode("CPUExecutionProvider")
    framework = traitlets.Enum(("ort", "tensorrt"), "ort", help="ONNX Runtime or TensorRT")

    def __init__(
        self,
        model: Any,
        *,
        target: Target | None = None,
        graph_view: Any = None,
        settings: OrtProfileSettings | None = None,
        framework: str = "ort",
        trt_settings: TrtSettings | None = None,
        **box: Unpack[BoxOptions],
    ) -> None:
        check_options(
            "ActivityPanel",
            box,
            BoxOptions,
            ("target", "graph_view", "settings", "framework", "trt_settings"),
        )
        self.model = model
        self.target = target
        self.graph_view = graph_view
        self.report: ProfileReport | None = None
        self.view: ProfileView | None = None
        self.job: ProfileJob | None = None
        self.error: BaseException | None = None
        self.engine: EngineExport | None = None
        self.backends: dict[str, dict[str, str]] | None = None  # the target's TensorRT, probed
        self._thread: threading.Thread | None = None
        source = model_source(model)
        self._source_name = source.name
        base = settings or OrtProfileSettings()
        self.target_picker = TargetPicker(target, on_target=self._on_target)

        self._iterations = widgets.BoundedIntText(base.iterations, min=1, max=10_000_000,
                                                  description="Iterations")  # fmt: skip
        self._warmup = widgets.BoundedIntText(base.warmup, min=0, max=1_000_000,
                                              description="Warm-up")  # fmt: skip
        self._optimize = widgets.Checkbox(
            base.graph_optimization,
            description="graph optimization (ORT_ENABLE_ALL)",
            style={"description_width": "initial"},  # the default width cuts the label
        )
        free = sorted(source.free_dims)
        self._input_mode = widgets.ToggleButtons(
            options=[("random inputs", "random"), ("input folder", "folder")],
            value="folder" if base.input_folder else "random",
        )
        self._dims = widgets.Text(
            ", ".join(f"{k}={v}" for k, v in base.dim_sizes.items()),
            description="Dim sizes",
            placeholder=", ".join(f"{d}=1" for d in free) or "no free dimensions",
        )
        self._folder = widgets.Text(
            str(base.input_folder or ""),
            description="Folder",
            placeholder="one <input name>.pb TensorProto per input",
        )
        default_trace = base.trace_path or base.default_trace_path(source.name)
        # relative or ~/...: the notebook's saved widget state holds no home path
        self._trace = widgets.Text(shown_path(default_trace), description="Trace file",
                                   layout=widgets.Layout(width="70%"))  # fmt: skip
        gpu_row = self._gpu_controls(base)
        self._title = widgets.HTML("")
        self._provider_box = widgets.VBox([])
        self._show_runtime(target, base.provider)

        self._run = widgets.Button(description="Profile", button_style="primary", icon="play")
        self._run.add_class("nsdl-activity-run")
        self._cancel = widgets.Button(description="Cancel", icon="stop", disabled=True)
        self._cancel.add_class("nsdl-activity-cancel")
        self._progress = widgets.FloatProgress(0.0, min=0.0, max=1.0, description="")
        self._phase = widgets.Label("")
        self._message = widgets.HTML("")
        self._message.add_class("nsdl-activity-message")
        self._log = LogView()
        self._result = widgets.VBox([])
        self._build_trt(trt_settings, source.name)
        self._run.on_click(lambda _b: self.run())
        self._cancel.on_click(lambda _b: self.cancel())
        self._input_mode.observe(self._on_input_mode, names="value")
        self._on_input_mode({"new": self._input_mode.value})

        self._ort_box = self._ort_controls(gpu_row)
        super().__init__(
            children=[
                self._tabs(
                    [
                        self.target_picker,
                        self._framework,
                        self._ort_box,
                        self._trt_box,
                        widgets.HBox(
                            [
                                self._run,
                                self._export,
                                self._trt_profile,
                                self._cancel,
                                self._progress,
                                self._phase,
                            ]
                        ),
                        self._message,
                        self._log,
                        self._result,
                    ]
                )
            ],
            **box,
        )
        self.add_class("nsdl-activity-panel")
        self._on_provider({"new": self.provider})
        traitlets.link((self._framework, "value"), (self, "framework"))
        self.framework = framework
        self._on_framework({"new": self.framework})

    def _tabs(self, profile: list[widgets.Widget]) -> widgets.Tab:
        """The Profile tab (the profile and export controls) and the Sweep tab (empty until
        first shown)."""
        self._sweep: SweepPanel | None = None
        self._sweep_tab = widgets.VBox([])
        self.fleet_view = FleetView()  # checks the fleet only when Refresh is pressed
        self.tabs = widgets.Tab([widgets.VBox(profile), self._sweep_tab, self.fleet_view])
        self.tabs.set_title(0, "Profile")
        self.tabs.set_title(1, "Sweep")
        self.tabs.set_title(2, "Fleet")
        self.tabs.observe(self._on_tab, names="selected_index")
        return self.tabs

    @property
    def sweep_panel(self) -> SweepPanel:
        """The Sweep tab: a grid of profiles of this model over axes and saved targets (built
        when first shown, so a panel that never sweeps never loads Dask)."""
        if self._sweep is None:
            from nsdl_jupyter.widgets.profile._sweep_panel import SweepPanel

            self._sweep = SweepPanel(self.model)
            self._sweep_tab.children = [self._sweep]
        return self._sweep

    def _on_tab(self, change: dict[str, Any]) -> None:
        if change["new"] == 1:
            self.sweep_panel  # noqa: B018 - built on first show

    def _ort_controls(self, gpu_row: widgets.HBox) -> widgets.VBox:
        """The ONNX Runtime settings (shown with framework ORT)."""
        return widgets.VBox(
            [
                self._title,
                widgets.HBox([self._iterations, self._warmup]),
                widgets.HTML("Execution provider:"),
                self._provider_box,
                gpu_row,
                self._optimize,
                self._hide_non_compute,
                self._input_mode,
                self._dims,
                self._folder,
                self._trace,
            ]
        )

    def _show_runtime(self, target: Target | None, wanted: str) -> None:
        """The title and provider buttons for `target`'s onnxruntime (probed once per target)."""
        runtime = probe_runtime(target)
        self.providers = runtime.providers
        self._provider_buttons: dict[str, widgets.Button] = {}
        rows = []
        for status in runtime.providers:
            label = _PROVIDER_LABELS.get(status.short_name, status.short_name)
            button = widgets.Button(description=label, disabled=not status.available,
                                    tooltip=status.reason or status.name)  # fmt: skip
            button.add_class(f"nsdl-provider-{status.short_name.lower()}")
            button.on_click(lambda _b, name=status.name: setattr(self, "provider", name))
            self._provider_buttons[status.name] = button
            reason = widgets.HTML(f"<small>{html_text(status.reason)}</small>")
            rows.append(widgets.HBox([button, reason]))
        self._provider_box.children = rows
        self._title.value = (
            f"<b>Profile {html_text(self._source_name)} with ONNX Runtime "
            f"{html_text(runtime.ort_version)}</b> on {html_text(_where(target))}"
        )
        available = [s.name for s in runtime.providers if s.available]
        self.provider = wanted if wanted in available else "CPUExecutionProvider"
        self._on_provider({"new": self.provider})

    def _on_target(self, target: Target) -> None:
        """The picker connected another target (never during a run: `set_busy`): its
        providers, and runs go there."""
        self.target = target
        self.backends = None
        try:
            self._show_runtime(target, self.provider)
            if self.framework == "tensorrt":
                self._probe_trt()
        except Exception as exc:  # the target has no usable Python/onnxruntime: say why
            self._fail(exc)

    def _gpu_controls(self, base: OrtProfileSettings) -> widgets.HBox:
        """GPU timing on/off, NVML sampling rate, clock locking, I/O binding, ncu counters;
        and the view's hide option."""
        self._gpu_timing = widgets.Checkbox(
            base.gpu_timing, description="GPU kernel timing (CUPTI)", indent=False
        )
        self._metrics_interval = widgets.BoundedFloatText(
            base.metrics_interval_ms, min=0.0, max=60_000.0, step=1.0,
            description="NVML every", tooltip="ms between NVML samples (0: no metrics)",
        )  # fmt: skip
        self._lock_clocks = widgets.Checkbox(
            base.lock_clocks, description="lock GPU clocks to base", indent=False
        )
        self._io_binding = widgets.Checkbox(
            base.io_binding, description="I/O binding", indent=False,
            tooltip="inputs and outputs stay on the device (onnxruntime IOBinding): no host "
            "copies in the timings",
        )  # fmt: skip
        self._counters = widgets.Checkbox(
            base.counters, description="GPU counters (ncu)", indent=False,
            tooltip="one more run under Nsight Compute for per-layer hardware counters (slow: "
            "kernel replay)",
        )  # fmt: skip
        self._ncu_base = base  # the caps of an ncu run have no control: the given ones stay
        self._hide_non_compute = widgets.Checkbox(
            False, description="hide non-compute ops (copies, reorders, shape ops)", indent=False
        )
        self._hide_non_compute.observe(self._on_hide_non_compute, names="value")
        self._gpu_note = widgets.HTML("")
        gpu_row = widgets.HBox(
            [self._gpu_timing, self._metrics_interval, widgets.HTML("ms"), self._lock_clocks,
             self._io_binding, self._counters, self._gpu_note]
        )  # fmt: skip
        gpu_row.add_class("nsdl-activity-gpu")
        return gpu_row

    # ---- settings -------------------------------------------------------------------------

    @traitlets.validate("provider")
    def _validate_provider(self, proposal: dict[str, Any]) -> str:
        name = str(proposal["value"])
        for status in getattr(self, "providers", []):
            if status.name == name and not status.available:
                raise traitlets.TraitError(f"{name} is not available: {status.reason}")
        return name

    @traitlets.observe("provider")
    def _on_provider(self, change: dict[str, Any]) -> None:
        for name, button in getattr(self, "_provider_buttons", {}).items():
            button.button_style = "info" if name == change["new"] else ""
        if hasattr(self, "_gpu_note"):
            off = change["new"] not in GPU_PROVIDERS
            gpu_only = (self._gpu_timing, self._metrics_interval, self._lock_clocks,
                        self._counters)  # fmt: skip
            for control in gpu_only:
                control.disabled = off
            self._gpu_note.value = f"<small>{html_text(_GPU_OFF)}</small>" if off else ""
            if self.framework == "tensorrt":  # TensorRT always runs on the GPU
                self._lock_clocks.disabled = False

    def _on_hide_non_compute(self, change: dict[str, Any]) -> None:
        if self.view is not None:
            self.view.hide_non_compute = bool(change["new"])

    def _on_input_mode(self, change: dict[str, Any]) -> None:
        random = change["new"] == "random"
        self._dims.layout.display = None if random else "none"
        self._folder.layout.display = "none" if random else None

    def settings(self) -> OrtProfileSettings:
        """The settings the controls show (errors say which control is wrong)."""
        random = self._input_mode.value == "random"
        folder = self._folder.value.strip()
        if not random and not folder:
            raise InputFolderError(
                "input folder: give the folder that holds one .pb file per input"
            )
        return OrtProfileSettings(
            iterations=int(self._iterations.value),
            warmup=int(self._warmup.value),
            provider=self.provider,
            graph_optimization=bool(self._optimize.value),
            dim_sizes=parse_dim_sizes(self._dims.value) if random else {},
            input_folder=None if random else Path(folder).expanduser(),
            trace_path=Path(self._trace.value.strip()).expanduser() if self._trace.value.strip()
            else None,
            gpu_timing=bool(self._gpu_timing.value),
            metrics_interval_ms=float(self._metrics_interval.value),
            lock_clocks=bool(self._lock_clocks.value),
            io_binding=bool(self._io_binding.value),
            counters=bool(self._counters.value),
            counters_max_kernels=self._ncu_base.counters_max_kernels,
            counters_kernel_name=self._ncu_base.counters_kernel_name,
            counters_ncu_path=self._ncu_base.counters_ncu_path,
        )  # fmt: skip

    # ---- TensorRT -------------------------------------------------------------------------

    def _build_trt(self, settings: TrtSettings | None, name: str) -> None:
        """The framework choice; the TensorRT form, engine path, Export and Profile buttons."""
        self._framework = widgets.ToggleButtons(
            options=[("ONNX Runtime", "ort"), ("TensorRT", "tensorrt")], value="ort"
        )
        self._framework.add_class("nsdl-activity-framework")
        stored = None
        if settings is None and isinstance(self.model, ModelDocument):
            stored = self.model.companion.get(TRT_SETTINGS_KEY)
        note = ""
        if stored is not None:
            try:
                settings = TrtSettings.from_json(stored)
            except TrtSettingsError as error:  # a newer version's file: start from defaults
                note = f"the model's saved TensorRT settings were not used: {error}"
        self.trt_form = TrtSettingsForm(settings)
        self._trt_title = widgets.HTML("")
        self._trt_title.add_class("nsdl-trt-title")
        engine = output_folder(name) / f"{safe_file_name(name)}.engine"
        self._engine_path = widgets.Text(
            shown_path(engine), description="Engine file", layout=widgets.Layout(width="70%")
        )
        self._model_note = widgets.HTML(f"<small>{html_text(note)}</small>" if note else "")
        self._passes = widgets.BoundedIntText(
            10, min=1, max=1_000_000, description="Passes",
            tooltip="profiled runs; the per-layer times are their average",
        )  # fmt: skip
        self._prebuilt = widgets.Text(
            "", description="Prebuilt engine", style={"description_width": "initial"},
            placeholder="empty: build from the model; or a .engine / .plan file",
            layout=widgets.Layout(width="70%"),
        )  # fmt: skip
        self._prebuilt.add_class("nsdl-trt-prebuilt")
        wrap = widgets.Layout(flex_flow="row wrap")
        trt_run = widgets.VBox(
            [
                widgets.HTML("<b>Profile</b> (TensorRT per-layer times)"),
                widgets.HBox([self._passes, self._iterations, self._warmup], layout=wrap),
                self._prebuilt,
                widgets.HBox([self._lock_clocks, self._hide_non_compute], layout=wrap),
            ]
        )
        trt_run.add_class("nsdl-trt-run")
        self._export = widgets.Button(description="Export", button_style="primary", icon="cogs")
        self._export.add_class("nsdl-activity-export")
        self._export.on_click(lambda _b: self.export())
        self._trt_profile = widgets.Button(description="Profile", icon="play")
        self._trt_profile.add_class("nsdl-activity-trt-profile")
        self._trt_profile.on_click(lambda _b: self.profile_trt())
        self._trt_profile.tooltip = "build and profile the engine per layer (nj.profile_trt)"
        self.trt_form.controls["backend"].observe(lambda _c: self._gate_trt(), names="value")
        self._trt_box = widgets.VBox(
            [self._trt_title, self._model_note, self.trt_form, self._engine_path, trt_run]
        )

    @traitlets.observe("framework")
    def _on_framework(self, change: dict[str, Any]) -> None:
        if not hasattr(self, "_trt_box"):
            return
        trt = change["new"] == "tensorrt"
        self._ort_box.layout.display = "none" if trt else None
        self._trt_box.layout.display = None if trt else "none"
        self._run.layout.display = "none" if trt else None
        self._export.layout.display = None if trt else "none"
        self._trt_profile.layout.display = None if trt else "none"
        self._on_provider({"new": self.provider})
        if trt and self.backends is None:
            self._probe_trt()

    def _probe_trt(self) -> None:
        """Which TensorRT the target has (a child process, once per target), then the gate."""
        try:
            self.backends = trt_backends(target=self.target)
        except Exception as exc:  # no usable Python on the target: say why, keep the form
            self.backends = {}
            self._fail(exc)
        self._gate_trt()

    def trt_backend(self) -> tuple[str, str | None]:
        """The backend the form's choice resolves to on the target, and its version (None:
        not installed there)."""
        backends = self.backends or {}
        chosen = self.trt_form.controls["backend"].value
        for name in _AUTO_ORDER if chosen == "auto" else (chosen,):
            version = backends.get(name, {}).get("version")
            if version:
                return name, version
        return ("tensorrt_rtx" if chosen == "auto" else chosen), None

    def _gate_trt(self) -> None:
        backend, version = self.trt_backend()
        found = ", ".join(
            f"{name} {info.get('version') or '(not installed)'}"
            for name, info in sorted((self.backends or {}).items())
        )
        where = html_text(_where(self.target))
        if version is None:
            self._trt_title.value = (
                f"<b>Export a TensorRT engine of {html_text(self._source_name)}</b> on {where}: "
                f"{html_text(backend)} is not installed there ({html_text(found or 'none')})"
            )
            return
        self.trt_form.gate(backend, version)
        self._trt_title.value = (
            f"<b>Export a TensorRT engine of {html_text(self._source_name)}</b> with "
            f"{html_text(backend)} {html_text(version)} on {where}"
        )

    def trt_settings(self) -> TrtSettings:
        """The TensorRT form's settings (the model's profiles and precisions join at export)."""
        return self.trt_form.settings()

    def export(self) -> None:
        """Build the engine with the form's settings (returns at once; see `wait`)."""
        if self.status == "running":
            return
        self.error, self.engine = None, None
        self._message.value = ""
        try:
            settings = self.trt_settings()
            text = self._engine_path.value.strip()
            output = Path(text).expanduser() if text else output_folder() / "model.engine"
            job = start_export_engine(self.model, output, settings, target=self.target,
                                      progress=self._on_progress)  # fmt: skip
        except Exception as exc:  # a settings error: nothing started
            self._fail(exc)
            return
        if isinstance(self.model, ModelDocument):  # kept per model, saved with it
            self.model.update_companion(TRT_SETTINGS_KEY, settings.to_json())
        self._start_job(job, self._wait_export)

    def _wait_export(self, job: EngineJob) -> None:
        try:
            engine = job.wait()
        except ProfileCancelledError as exc:
            self._finish("cancelled", "warning", html_text(f"Cancelled: {exc}"))
            return
        except Exception as exc:  # shown in the panel: this thread has no caller to raise to
            self._fail(exc)
            return
        self.engine = engine
        ignored = (
            f"; not held by the builder: {', '.join(engine.ignored)}" if engine.ignored else ""
        )
        self._finish(
            "done",
            "success",
            f"Engine written: {html_text(shown_path(engine.engine))} ({engine.engine_bytes:,} "
            f"bytes, built in {engine.build_s:.1f} s with {html_text(engine.backend)} "
            f"{html_text(engine.version)}{html_text(ignored)}) (<code>panel.engine</code>)",
        )

    def profile_trt(self) -> None:
        """Profile the engine per layer with TensorRT through `nj.profile_trt`."""
        if self.status == "running":
            return
        self.error, self.report = None, None
        self._message.value = ""
        engine = self._prebuilt.value.strip()
        try:
            if engine and not engine.lower().endswith(ENGINE_SUFFIXES):
                raise ProfileSettingsError(
                    f"prebuilt engine: {engine!r} is not a {' / '.join(ENGINE_SUFFIXES)} file "
                    "(leave it empty to build the engine from the model)"
                )
            job = start_profile_trt(
                engine or self.model, self.trt_settings(), model=self.model if engine else None,
                target=self.target, progress=self._on_progress,
                passes=int(self._passes.value), iterations=int(self._iterations.value),
                warmup=int(self._warmup.value), lock_clocks=bool(self._lock_clocks.value),
                hide_non_compute=bool(self._hide_non_compute.value),
            )  # fmt: skip
        except Exception as exc:
            self._fail(exc)
            return
        self._start_job(job, self._wait_job)

    # ---- running --------------------------------------------------------------------------

    def run(self) -> None:
        """Start a profile with the current settings (returns at once; see `wait`)."""
        if self.status == "running":
            return
        self.error = None
        self.report = None
        self._message.value = ""
        try:
            job = start_profile_ort(self.model, self.settings(), target=self.target,
                                    progress=self._on_progress)  # fmt: skip
        except Exception as exc:  # a settings or input error: nothing started
            self._fail(exc)
            return
        self._start_job(job, self._wait_job)

    def _start_job(self, job: Any, wait: Any) -> None:
        """Follow a started job (profile or export): log, progress, cancel; `wait` runs in a
        thread and shows its end."""
        self.job = job
        self._log.follow(job)
        self.target_picker.set_busy(True)
        self.status = "running"
        for start in (self._run, self._export, self._trt_profile):
            start.disabled = True
        self._cancel.disabled = False
        self._progress.value = 0.0
        self._progress.bar_style = ""
        self._phase.value = "starting"
        self._thread = threading.Thread(target=wait, args=(job,), daemon=True,
                                        name="nsdl-activity")  # fmt: skip
        self._thread.start()

    def _on_progress(self, progress: Progress) -> None:
        self._progress.value = progress.fraction
        self._phase.value = (
            f"{progress.phase} {progress.done}/{progress.total}"
            if progress.total
            else progress.phase
        )

    def _wait_job(self, job: ProfileJob) -> None:
        try:
            report = job.wait()
            self.show_report(report)
        except ProfileCancelledError as exc:
            self._finish("cancelled", "warning", html_text(f"Cancelled: {exc}"))
        except TargetLostError as exc:
            self.error = exc
            self._finish("failed", "danger", "<b>Lost the connection to "
                         f"{html_text(_where(self.target))}</b>: {html_text(exc)}. Press Connect "
                         "above to reconnect, then Profile again.")  # fmt: skip
        except Exception as exc:  # shown in the panel: this thread has no caller to raise to
            self._fail(exc)

    def show_report(self, report: ProfileReport) -> None:
        """Show a finished run's report: a ProfileView of it (host times when the run had no
        GPU timing) and a message that says why GPU times or locked clocks are missing."""
        view = ProfileView(report, graph_view=self.graph_view, model=self.model,
                           hide_non_compute=self._hide_non_compute.value)  # fmt: skip
        self.report = report
        self.view = view
        self._result.children = [view]
        lat = report.latency
        self._finish(
            "done",
            "success",
            f"Done: {len(report.layers)} layers, end-to-end p50 {lat['p50']:.3f} ms over "
            f"{int(lat['count'])} iterations (<code>panel.report</code>). Trace: "
            f"{html_text(shown_path(report.metadata.get('trace_path') or ''))}"
            + gpu_notes_html(report),
        )

    def _fail(self, exc: BaseException) -> None:
        self.error = exc
        if isinstance(exc, OnnxParseError) and self.graph_view is not None:
            self.graph_view.set_marks(exc.marks())  # the nodes TensorRT's parser rejected
        self._finish("failed", "danger", failure_html(exc))

    def _finish(self, status: str, style: str, message: str) -> None:
        self._log.redraw()
        self.target_picker.set_busy(False)
        self._run.disabled = False
        self._export.disabled = False
        self._trt_profile.disabled = False
        self._cancel.disabled = True
        self._progress.bar_style = style
        if status == "done":
            self._progress.value = 1.0
        self._phase.value = status
        self._message.value = message
        self.status = status

    def cancel(self) -> None:
        """End the running profile's (or engine build's) child process."""
        if self.job is not None and self.status == "running":
            self.job.cancel()

    def wait(self, timeout: float | None = None) -> ProfileReport | None:
        """Block until the current run (or export: see `engine`) ends; the report, or None if
        it failed, was cancelled or was an export."""
        if self._thread is not None:
            self._thread.join(timeout)
        return self.report if self.status == "done" else None
