"""TrtSettingsForm: the seed's "Export TensorRT Engine" dialog as ipywidgets, one control per
TrtSettings field, starting from TrtSettings' defaults (the seed's).

`gate(backend, version)` disables the controls the chosen TensorRT lacks and shows why, with
the same table the engine runner applies (`refusals` of `_trt_runner.py`). Optimization
profiles and layer precisions are the model's (`doc.tensorrt`), not fields of this form.
"""

from __future__ import annotations

import dataclasses
from typing import Any, get_args

import ipywidgets as widgets

from nsdl_jupyter._display import html_text
from nsdl_jupyter.profiling import Backend, EngineMetadata, Refit, TrtSettings, runner_module
from nsdl_jupyter.widgets._errors import WidgetError
from nsdl_jupyter.widgets._main_shell import MainShellBox

_LABELS = {
    "backend": "TensorRT",
    "trtexec_path": "trtexec path",
    "device_index": "device index",
    "plugins": "plugins",
    "typing": "typing mode",
    "tf32": "TF32",
    "fp16": "FP16",
    "bf16": "BF16",
    "int8": "INT8",
    "fp8": "FP8",
    "sparsity": "sparsity",
    "cudnn_tactics": "cuDNN tactics",
    "cublas_tactics": "cuBLAS tactics",
    "native_instance_norm": "native instance norm",
    "optimization_level": "builder optimization level",
    "max_aux_streams": "max worker streams",
    "inferred_batch_size": "inferred batch size",
    "hardware_compatible": "hardware compatible (Ampere+)",
    "version_compatible": "version compatible",
    "exclude_lean_runtime": "exclude lean runtime",
    "workspace_mib": "workspace limit (MiB)",
    "int8_calibration_cache": "INT8 calibration cache",
    "refit": "weights refit",
    "engine_metadata": "engine metadata",
    "timing_cache": "timing cache",
    "cache_dir": "cache folder",
}
_TYPING = (
    ("TensorRT defaults", "default"),
    ("strongly typed", "strong"),
    ("obey precision constraints", "obey"),
    ("prefer precision constraints", "prefer"),
)
# Free text for optional settings: empty means None (TensorRT's heuristic or default).
_OPTIONAL_INT = ("max_aux_streams", "workspace_mib")
_OPTIONAL_TEXT = ("trtexec_path", "int8_calibration_cache", "cache_dir")
_MODEL_FIELDS = ("optimization_profiles", "layer_precisions")  # from doc.tensorrt
# A value per gated field that the version gate may refuse: what `gate` asks the runner about.
_PROBES: dict[str, Any] = {
    "fp16": True,
    "bf16": True,
    "int8": True,
    "fp8": True,
    "int8_calibration_cache": "calibration.cache",
    "cudnn_tactics": True,
    "cublas_tactics": True,
}


class TrtSettingsForm(MainShellBox, widgets.VBox):  # type: ignore[misc]
    """Controls for every TrtSettings field; `settings()` reads them back (checked)."""

    def __init__(self, settings: TrtSettings | None = None) -> None:
        base = settings or TrtSettings()
        self.controls: dict[str, widgets.Widget] = {}
        self.reasons: dict[str, str] = {}
        self._reason_html: dict[str, widgets.HTML] = {}
        rows = []
        for spec in dataclasses.fields(TrtSettings):
            if spec.name in _MODEL_FIELDS:
                continue
            control = self._control(spec.name, getattr(base, spec.name))
            control.add_class(f"nsdl-trt-{spec.name.replace('_', '-')}")
            self.controls[spec.name] = control
            reason = widgets.HTML("")
            reason.add_class("nsdl-trt-reason")
            self._reason_html[spec.name] = reason
            rows.append(widgets.HBox([control, reason]))
        self.gate_note = widgets.HTML("")
        self.controls["backend"].observe(lambda _c: self._backend_changed(), names="value")
        super().__init__([self.gate_note, *rows])
        self.add_class("nsdl-trt-form")
        self._backend_changed()

    @staticmethod
    def _control(name: str, value: Any) -> widgets.Widget:
        label = _LABELS.get(name, name)
        wide = {"description_width": "190px"}
        layout = widgets.Layout(width="420px")
        if isinstance(value, bool):
            return widgets.Checkbox(value, description=label, indent=False, layout=layout)
        choices = {
            "backend": list(get_args(Backend)),
            "typing": list(_TYPING),
            "refit": list(get_args(Refit)),
            "engine_metadata": list(get_args(EngineMetadata)),
        }.get(name)
        if choices is not None:
            return widgets.Dropdown(options=choices, value=value, description=label,
                                    style=wide, layout=layout)  # fmt: skip
        if name in ("device_index", "optimization_level", "inferred_batch_size"):
            low, high = (0, 5) if name == "optimization_level" else (int(name != "device_index"),
                                                                     1_000_000)  # fmt: skip
            return widgets.BoundedIntText(value, min=low, max=high, description=label,
                                          style=wide, layout=layout)  # fmt: skip
        text = ", ".join(value) if name == "plugins" else ("" if value is None else str(value))
        placeholder = {
            "max_aux_streams": "empty: heuristic, 0: off",
            "workspace_mib": "empty: TensorRT's default",
            "plugins": "plugin libraries, comma separated",
            "cache_dir": "empty: $NSDL_CACHE_DIR/tensorrt",
        }.get(name, "")
        return widgets.Text(text, description=label, placeholder=placeholder, style=wide,
                            layout=layout)  # fmt: skip

    def _backend_changed(self) -> None:
        trtexec = self.controls["backend"].value == "trtexec"
        self.controls["trtexec_path"].disabled = not trtexec
        self._show_reason("trtexec_path", "" if trtexec else "for the trtexec backend")

    def _show_reason(self, name: str, why: str) -> None:
        self.reasons[name] = why
        if not why:
            self.reasons.pop(name)
        self._reason_html[name].value = f"<small>{html_text(why)}</small>" if why else ""

    def gate(self, backend: str, version: str) -> None:
        """Disable what `backend` `version` lacks, turned back to its default, with the reason."""
        refusals = runner_module().refusals
        default = TrtSettings()
        for name, probe in _PROBES.items():
            found = refusals({name: probe}, backend, version)
            control = self.controls[name]
            control.disabled = bool(found)
            if found:
                self._set(name, getattr(default, name))
            self._show_reason(name, found[0] if found else "")
        typing_refused = refusals({"typing": "obey"}, backend, version)
        options = [o for o in _TYPING if not typing_refused or o[1] in ("default", "strong")]
        typing = self.controls["typing"]
        current = typing.value
        typing.options = options
        typing.value = current if current in [v for _, v in options] else "default"
        self._show_reason("typing", typing_refused[0] if typing_refused else "")
        name = "TensorRT-RTX" if backend == "tensorrt_rtx" else backend
        self.gate_note.value = (
            f"<small>Settings for {html_text(name)} {html_text(version)}: what it lacks is "
            "disabled, with the reason beside it.</small>"
        )

    def _set(self, name: str, value: Any) -> None:
        control = self.controls[name]
        control.value = "" if value is None and isinstance(control, widgets.Text) else value

    def settings(self) -> TrtSettings:
        """The settings the controls show; TrtSettingsError or ValueError names the control."""
        values: dict[str, Any] = {}
        for name, control in self.controls.items():
            value = control.value
            if name == "plugins":
                value = tuple(p.strip() for p in value.split(",") if p.strip())
            elif name in _OPTIONAL_INT:
                text = value.strip()
                if text and not text.isdigit():
                    raise WidgetError(f"{_LABELS[name]}: {text!r} is not a whole number")
                value = int(text) if text else None
            elif name in _OPTIONAL_TEXT:
                value = value.strip() or None
            values[name] = value
        if values["backend"] != "trtexec":
            values["trtexec_path"] = None  # kept in the box for when trtexec is picked again
        return TrtSettings(**values)
