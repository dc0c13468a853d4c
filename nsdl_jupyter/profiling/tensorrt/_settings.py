"""TrtSettings: the seed's "Export TensorRT Engine" dialog, one field per control, checked once.

Field checks (types, ranges, exclusive options) run on construction; the version gate
(`check(backend, version)`) says which settings a given TensorRT lacks and what to do instead,
with the same table the engine runner applies to the TensorRT it finds. `to_json` /
`from_json` are the form the companion file keeps per model.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypedDict, get_args

from nsdl_jupyter._runner_files import TRT_RUNNER
from nsdl_jupyter._trt_shapes import check_min_opt_max, size_list
from nsdl_jupyter.document import LayerPrecision, TensorRtProperties
from nsdl_jupyter.profiling._errors import TrtSettingsError
from nsdl_jupyter.profiling.ort._settings import replace_known

if TYPE_CHECKING:
    from typing_extensions import Unpack  # typing.Unpack from Python 3.11

Backend = Literal["auto", "tensorrt", "tensorrt_rtx", "trtexec"]
Typing = Literal["default", "strong", "obey", "prefer"]
Refit = Literal["none", "refittable", "stripped"]
EngineMetadata = Literal["detailed", "none"]
RUNNER = TRT_RUNNER
SCHEMA = "nsdl.trt_settings/1"
_RUNNER_MODULE: list[Any] = []


def runner_module() -> Any:
    """`_trt_runner.py` as a module, for its pure parts (version gate, trtexec argv).

    Loaded by path, as the runner loads its sibling; it imports no TensorRT at import time,
    so this stays cheap in the kernel.
    """
    if not _RUNNER_MODULE:
        spec = importlib.util.spec_from_file_location("_nsdl_trt_runner", RUNNER)
        assert spec is not None
        assert spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        _RUNNER_MODULE.append(module)
    return _RUNNER_MODULE[0]


def _choice(name: str, value: Any, kind: Any) -> None:
    options = get_args(kind)
    if value not in options:
        raise TrtSettingsError(f"{name}={value!r}: use one of {', '.join(map(repr, options))}")


def _profile(index: int, profile: Any) -> dict[str, dict[str, list[int]]]:
    if not isinstance(profile, dict) or not profile:
        raise TrtSettingsError(
            f"optimization_profiles[{index}]: give {{input name: {{'min': dims, 'opt': dims, "
            "'max': dims}}"
        )
    one: dict[str, dict[str, list[int]]] = {}
    for name, shapes in profile.items():
        where = f"optimization_profiles[{index}][{name!r}]"
        if not isinstance(shapes, dict) or set(shapes) != {"min", "opt", "max"}:
            raise TrtSettingsError(f"{where}: give exactly the keys 'min', 'opt', 'max'")
        dims = {
            k: size_list(f"{where}[{k!r}]", shapes[k], TrtSettingsError)
            for k in ("min", "opt", "max")
        }
        check_min_opt_max(where, dims, TrtSettingsError)
        one[str(name)] = dims
    return one


_FLAGS = (
    "tf32",
    "fp16",
    "bf16",
    "int8",
    "fp8",
    "sparsity",
    "cudnn_tactics",
    "cublas_tactics",
    "native_instance_norm",
    "hardware_compatible",
    "version_compatible",
    "exclude_lean_runtime",
    "timing_cache",
)


_PathText = str | os.PathLike[str]


class TrtSettingsKwargs(TypedDict, total=False):
    """TrtSettings' fields as keyword arguments of `export_engine` and friends, typed for the
    caller (tests/test_trt_settings.py keeps the two equal)."""

    backend: Backend
    trtexec_path: _PathText | None
    device_index: int
    plugins: Sequence[_PathText]
    typing: Typing
    tf32: bool
    fp16: bool
    bf16: bool
    int8: bool
    fp8: bool
    sparsity: bool
    cudnn_tactics: bool
    cublas_tactics: bool
    native_instance_norm: bool
    optimization_level: int
    max_aux_streams: int | None
    inferred_batch_size: int
    hardware_compatible: bool
    version_compatible: bool
    exclude_lean_runtime: bool
    workspace_mib: int | None
    int8_calibration_cache: _PathText | None
    refit: Refit
    engine_metadata: EngineMetadata
    optimization_profiles: Sequence[Mapping[str, Mapping[str, Sequence[int]]]]
    layer_precisions: Mapping[str, LayerPrecision]
    timing_cache: bool
    cache_dir: _PathText | None


@dataclass(frozen=True)
class TrtSettings:
    """One TensorRT engine build, as the export dialog sets it.

    - `backend`: 'auto' (the `tensorrt` module, else `tensorrt_rtx`, else `trtexec`),
      'tensorrt', 'tensorrt_rtx' or 'trtexec' (with `trtexec_path`, else the one on PATH);
      `device_index`: the GPU; `plugins`: plugin libraries to load;
    - `typing`: 'default' (TensorRT's), 'strong' (strongly typed network), 'obey' / 'prefer'
      (precision constraints, TensorRT <= 10); `tf32`, `fp16`, `bf16`, `int8` (placeholder
      dynamic ranges unless `int8_calibration_cache`), `fp8` (not with int8): precision flags,
      TensorRT <= 10; `sparsity`; `cudnn_tactics`, `cublas_tactics` (TensorRT 10);
      `native_instance_norm` (the parser's native InstanceNormalization, else the plugin);
    - `optimization_level` 0..5; `max_aux_streams` (None: TensorRT's heuristic, 0: off);
      `inferred_batch_size`: the free first dimension of inputs no optimization profile covers;
      `hardware_compatible` (Ampere and later); `version_compatible` and
      `exclude_lean_runtime`; `workspace_mib` (None: TensorRT's default);
    - `refit`: 'none', 'refittable' or 'stripped' (weights stripped, refit from the ONNX model);
      `engine_metadata`: 'detailed' (layer info for the inspector and profiler) or 'none';
    - `optimization_profiles`: `[{input: {"min": dims, "opt": dims, "max": dims}}]`;
      `layer_precisions`: `{layer (ONNX node) name: "fp16", ...}` (TensorRT <= 10);
    - `timing_cache`: reuse and update the timing cache in the cache folder (`cache_dir`, else
      `$NSDL_CACHE_DIR/tensorrt`, else `~/.cache/nsdl_jupyter/tensorrt`, on the target).
    """

    backend: Backend = "auto"
    trtexec_path: str | None = None
    device_index: int = 0
    plugins: tuple[str, ...] = ()
    typing: Typing = "default"
    tf32: bool = True
    fp16: bool = False
    bf16: bool = False
    int8: bool = False
    fp8: bool = False
    sparsity: bool = False
    cudnn_tactics: bool = False
    cublas_tactics: bool = False
    native_instance_norm: bool = True
    optimization_level: int = 3
    max_aux_streams: int | None = None
    inferred_batch_size: int = 1
    hardware_compatible: bool = False
    version_compatible: bool = False
    exclude_lean_runtime: bool = False
    workspace_mib: int | None = None
    int8_calibration_cache: str | None = None
    refit: Refit = "none"
    engine_metadata: EngineMetadata = "detailed"
    optimization_profiles: tuple[dict[str, dict[str, list[int]]], ...] = ()
    layer_precisions: dict[str, LayerPrecision] = field(default_factory=dict)
    timing_cache: bool = True
    cache_dir: str | None = None

    def __post_init__(self) -> None:
        if isinstance(self.optimization_profiles, dict):
            raise TrtSettingsError(
                "optimization_profiles is a list of profiles: wrap the dict in a list, "
                "[{input: {'min': ..., 'opt': ..., 'max': ...}}]"
            )
        profiles = tuple(_profile(i, p) for i, p in enumerate(self.optimization_profiles))
        object.__setattr__(self, "optimization_profiles", profiles)
        if isinstance(self.plugins, (str, Path)):
            object.__setattr__(self, "plugins", (self.plugins,))
        object.__setattr__(self, "plugins", tuple(str(p) for p in self.plugins))
        for name in ("trtexec_path", "int8_calibration_cache", "cache_dir"):
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, str(value))
        self.validate()

    @classmethod
    def field_names(cls) -> list[str]:
        return [f.name for f in dataclasses.fields(cls)]

    @classmethod
    def from_kwargs(
        cls, base: TrtSettings | None = None, **kwargs: Unpack[TrtSettingsKwargs]
    ) -> TrtSettings:
        """Settings from keyword arguments; unknown names raise TypeError naming valid ones."""
        return replace_known(base or cls(), kwargs)

    def validate(self) -> None:
        """Field checks that hold for every TensorRT (the version gate is `check`)."""
        _choice("backend", self.backend, Backend)
        _choice("typing", self.typing, Typing)
        _choice("refit", self.refit, Refit)
        _choice("engine_metadata", self.engine_metadata, EngineMetadata)
        for name in _FLAGS:
            if not isinstance(getattr(self, name), bool):
                raise TrtSettingsError(f"{name}={getattr(self, name)!r}: use True or False")
        self._check_ints()
        if self.int8 and self.fp8:
            raise TrtSettingsError("int8 and fp8 are exclusive (as in the export dialog): pick one")
        if self.int8_calibration_cache is not None and not self.int8:
            raise TrtSettingsError("int8_calibration_cache needs int8=True")
        if self.exclude_lean_runtime and not self.version_compatible:
            raise TrtSettingsError("exclude_lean_runtime needs version_compatible=True")
        if self.typing == "strong" and (self.fp16 or self.bf16 or self.int8 or self.fp8):
            raise TrtSettingsError(
                "a strongly typed network takes its precision from the model's types: turn "
                "fp16/bf16/int8/fp8 off, or pick typing='default'"
            )
        if self.layer_precisions and self.typing not in ("obey", "prefer"):
            raise TrtSettingsError(
                "layer_precisions need typing='obey' or 'prefer' (precision constraints)"
            )
        for layer, precision in self.layer_precisions.items():
            _choice(f"layer_precisions[{layer!r}]", precision, LayerPrecision)
        if self.backend != "trtexec" and self.trtexec_path is not None:
            raise TrtSettingsError("trtexec_path is for backend='trtexec': set both, or neither")

    def _check_ints(self) -> None:
        def whole(name: str, low: int, high: int | None = None) -> None:
            value = getattr(self, name)
            if (
                isinstance(value, bool)
                or not isinstance(value, int)
                or value < low
                or (high is not None and value > high)
            ):
                span = f"{low}..{high}" if high is not None else f">= {low}"
                raise TrtSettingsError(f"{name}={value!r}: use an integer {span}")

        whole("device_index", 0)
        whole("optimization_level", 0, 5)
        whole("inferred_batch_size", 1)
        if self.max_aux_streams is not None:
            whole("max_aux_streams", 0)
        if self.workspace_mib is not None:
            whole("workspace_mib", 1)

    def check(self, backend: str, version: str) -> None:
        """Refuse settings that `backend` ('tensorrt', 'tensorrt_rtx', 'trtexec') at `version`
        lacks, saying what to do instead (TensorRT 11 + fp16: convert_to_fp16 first)."""
        _choice("backend", backend, Backend)
        refused = runner_module().refusals(self.to_request(), backend, version)
        if refused:
            raise TrtSettingsError("; ".join(refused))

    def with_model_properties(self, properties: TensorRtProperties) -> TrtSettings:
        """These settings plus a model's TensorRT properties (`doc.tensorrt`): its optimization
        profiles where these give none, its layer precisions under these ones; with precisions,
        typing 'default' becomes 'obey' (a constraint TensorRT may ignore constrains nothing)."""
        changes: dict[str, Any] = {}
        if not self.optimization_profiles and properties.profiles:
            changes["optimization_profiles"] = tuple(properties.profiles)
        precisions = {**properties.layer_precisions, **self.layer_precisions}
        if precisions != self.layer_precisions:
            changes["layer_precisions"] = precisions
            if self.typing == "default":
                changes["typing"] = "obey"
            elif self.typing == "strong":
                raise TrtSettingsError(
                    f"the model has layer precision constraints ({len(precisions)} nodes) but "
                    "typing='strong' ignores them: pick typing='obey' or 'prefer', or clear them "
                    "with doc.tensorrt.clear_layer_precisions()"
                )
        return dataclasses.replace(self, **changes) if changes else self

    def trtexec_argv(
        self,
        model: str,
        engine: str,
        *,
        version: str,
        trtexec: str | None = None,
        timing_cache: str | None = None,
        layer_info: str | None = None,
    ) -> list[str]:
        """The trtexec command line these settings build with (the runner runs this argv)."""
        self.check("trtexec", version)
        argv = runner_module().trtexec_argv(
            self.to_request(),
            trtexec=trtexec or self.trtexec_path or "trtexec",
            model=model,
            engine=engine,
            version=version,
            timing_cache=timing_cache,
            layer_info=layer_info,
        )
        return [str(a) for a in argv]

    def to_request(self) -> dict[str, Any]:
        """The settings as the runner reads them (plain JSON types)."""
        data = dataclasses.asdict(self)
        data["plugins"] = list(self.plugins)
        data["optimization_profiles"] = [dict(p) for p in self.optimization_profiles]
        return data

    def to_json(self) -> dict[str, Any]:
        """The companion file's form: a schema tag and what differs from the defaults."""
        default = TrtSettings().to_request()
        data = {k: v for k, v in self.to_request().items() if v != default[k]}
        return {"schema": SCHEMA, **data}

    @classmethod
    def from_json(cls, data: Any) -> TrtSettings:
        """Settings from `to_json`'s form; another schema or unknown keys are refused."""
        if not isinstance(data, dict) or data.get("schema") != SCHEMA:
            got = data.get("schema") if isinstance(data, dict) else type(data).__name__
            raise TrtSettingsError(
                f"not TensorRT settings of schema {SCHEMA!r} (got {got!r}): give what "
                "TrtSettings.to_json wrote"
            )
        fields = {k: v for k, v in data.items() if k != "schema"}
        unknown = sorted(set(fields) - set(cls.field_names()))
        if unknown:
            raise TrtSettingsError(
                f"unknown TensorRT setting(s) {unknown} (written by a newer nsdl_jupyter?): "
                "remove them, or upgrade nsdl_jupyter"
            )
        if "plugins" in fields:
            fields["plugins"] = tuple(fields["plugins"])
        if "optimization_profiles" in fields:
            fields["optimization_profiles"] = tuple(fields["optimization_profiles"])
        return cls(**fields)
