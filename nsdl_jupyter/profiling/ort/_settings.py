"""OrtProfileSettings: what the seed's "Profile Model" dialog asks, as one checked object."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict, TypeVar

from nsdl_jupyter._errors import ArgumentError
from nsdl_jupyter._paths import output_folder, safe_file_name
from nsdl_jupyter.profiling._errors import ProfileSettingsError
from nsdl_jupyter.profiling._report import recorded_path

if TYPE_CHECKING:
    from typing_extensions import Unpack  # typing.Unpack from Python 3.11

# The most inferences (timed or warm-up) one run takes: more is a typo, not a measurement
# (long runs that are cancelled, as the tests' 10_000_000, stay possible).
MAX_RUNS = 100_000_000

# Short names users type -> onnxruntime provider names.
PROVIDER_ALIASES = {
    "cpu": "CPUExecutionProvider",
    "cuda": "CUDAExecutionProvider",
    "tensorrt": "TensorrtExecutionProvider",
    "trt": "TensorrtExecutionProvider",
    "dml": "DmlExecutionProvider",
    "directml": "DmlExecutionProvider",
    "openvino": "OpenVINOExecutionProvider",
    "coreml": "CoreMLExecutionProvider",
    "xnnpack": "XnnpackExecutionProvider",
}


def provider_name(name: str) -> str:
    """'cuda' -> 'CUDAExecutionProvider'; full names pass through."""
    return PROVIDER_ALIASES.get(name.strip().lower(), name.strip())


_Settings = TypeVar("_Settings")


def replace_known(base: _Settings, kwargs: Mapping[str, Any]) -> _Settings:
    """`base` (a settings dataclass) with `kwargs` replaced; unknown names raise TypeError
    naming the valid ones."""
    valid = [f.name for f in dataclasses.fields(base)]  # type: ignore[arg-type]
    unknown = sorted(set(kwargs) - set(valid))
    if unknown:
        raise ArgumentError(f"unknown setting(s) {unknown}; valid settings: {', '.join(valid)}")
    return dataclasses.replace(base, **kwargs)  # type: ignore[type-var]


class OrtSettingsKwargs(TypedDict, total=False):
    """OrtProfileSettings' fields as keyword arguments of `profile_ort` and `ActivityPanel`'s
    runs, typed for the caller (tests/test_profiling_activity.py keeps the two equal)."""

    iterations: int
    warmup: int
    provider: str
    provider_options: dict[str, Any]
    graph_optimization: bool
    dim_sizes: dict[str, int]
    input_folder: str | os.PathLike[str] | None
    trace_path: str | os.PathLike[str] | None
    seed: int
    intra_op_threads: int | None
    spin_wait: bool
    full_paths: bool
    gpu_timing: bool
    metrics_interval_ms: float
    lock_clocks: bool
    io_binding: bool
    peaks: bool
    counters: bool
    counters_max_kernels: int
    counters_kernel_name: str | None
    counters_ncu_path: str | None


@dataclass(frozen=True)
class OrtProfileSettings:
    """Settings of one onnxruntime profile run.

    - `iterations` profiled (and timed) inferences, after `warmup` untimed ones;
    - `provider`: an execution provider name or alias ('cpu', 'cuda', 'tensorrt', 'dml'),
      `provider_options` passed to it;
    - `graph_optimization`: True = ORT_ENABLE_ALL, False = ORT_DISABLE_ALL (node names
      then match the ONNX graph one to one);
    - `dim_sizes`: sizes of named free dimensions for random inputs (others = 1), or
      `input_folder`: one TensorProto `<input name>.pb` per input;
    - `trace_path`: where the raw onnxruntime trace is kept (default from the model name);
    - `intra_op_threads`: onnxruntime's intra-op threads (None: one per core); `spin_wait`:
      idle threads spin for work (onnxruntime's default, the lowest latency) or, False, sleep,
      which runs sharing one machine's cores want (a sweep's side-by-side CPU runs set it);
    - `full_paths`: record absolute paths and the host name in the report's metadata (off: file
      names, or paths relative to the working folder, and no host name, so a shared report or
      notebook does not carry the user's home folder or machine name);
    - on a GPU provider: `gpu_timing` traces every kernel with CUPTI for per-layer GPU times
      (`gpu_ms`, `report.kernels`); `metrics_interval_ms` samples NVML during the measured
      pass (0: off); `lock_clocks` locks GPU and memory clocks to their default application
      clocks for the run (reset afterwards; without permission the run goes on unlocked and
      the report says so). They need the `gpu` extra (cupti-python, nvidia-ml-py) there.
      With `gpu_timing`, a free-running pass (CUPTI only, no onnxruntime profiler) gives
      `gpu_ms`, each kernel aligned to its node in the profiled pass;
    - `io_binding`: inputs copied to the device once and outputs left there (onnxruntime
      IOBinding), so the runs have no host copies;
    - `peaks`: measure the GPU's attainable FLOP/s per dtype and bytes/s (a few seconds, cached
      per GPU and clock) into `report.metadata["peaks"]`;
    - `counters`: run the model once more under Nsight Compute (`ncu`, on the target's PATH,
      in /usr/local/cuda/bin, or `counters_ncu_path`) for per-layer hardware counters, at most
      `counters_max_kernels` kernels of one inference, only those matching the regular
      expression `counters_kernel_name` if given.
    """

    iterations: int = 20
    warmup: int = 3
    provider: str = "CPUExecutionProvider"
    provider_options: dict[str, Any] = field(default_factory=dict)
    graph_optimization: bool = True
    dim_sizes: dict[str, int] = field(default_factory=dict)
    input_folder: Path | None = None
    trace_path: Path | None = None
    seed: int = 0
    intra_op_threads: int | None = None
    spin_wait: bool = True
    full_paths: bool = False
    gpu_timing: bool = True
    metrics_interval_ms: float = 10.0
    lock_clocks: bool = True
    io_binding: bool = False
    peaks: bool = True
    counters: bool = False
    counters_max_kernels: int = 2000
    counters_kernel_name: str | None = None
    counters_ncu_path: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "provider", provider_name(self.provider))
        if self.input_folder is not None:
            object.__setattr__(self, "input_folder", Path(self.input_folder))
        if self.trace_path is not None:
            object.__setattr__(self, "trace_path", Path(self.trace_path))
        self.validate()

    @classmethod
    def field_names(cls) -> list[str]:
        return [f.name for f in dataclasses.fields(cls)]

    @classmethod
    def from_kwargs(
        cls, base: OrtProfileSettings | None = None, **kwargs: Unpack[OrtSettingsKwargs]
    ) -> OrtProfileSettings:
        """Settings from keyword arguments; unknown names raise TypeError naming valid ones."""
        return replace_known(base or cls(), kwargs)

    def validate(self) -> None:
        if not isinstance(self.iterations, int) or not 1 <= self.iterations <= MAX_RUNS:
            raise ProfileSettingsError(
                f"iterations={self.iterations!r}: use an integer from 1 to {MAX_RUNS:_}"
            )
        if not isinstance(self.warmup, int) or not 0 <= self.warmup <= MAX_RUNS:
            raise ProfileSettingsError(
                f"warmup={self.warmup!r}: use an integer from 0 to {MAX_RUNS:_}"
            )
        for dim, size in self.dim_sizes.items():
            if not isinstance(size, int) or size < 1:
                raise ProfileSettingsError(
                    f"dim_sizes[{dim!r}]={size!r}: a dimension size is an integer >= 1"
                )
        if self.input_folder is not None and self.dim_sizes:
            raise ProfileSettingsError(
                "give either input_folder (inputs from files) or dim_sizes (random inputs), "
                "not both"
            )
        if (
            isinstance(self.metrics_interval_ms, bool)
            or not isinstance(self.metrics_interval_ms, (int, float))
            or not 0 <= self.metrics_interval_ms <= 60_000
        ):
            raise ProfileSettingsError(
                f"metrics_interval_ms={self.metrics_interval_ms!r}: use milliseconds between "
                "NVML samples (1 to 60000), or 0 for none"
            )
        if (
            isinstance(self.counters_max_kernels, bool)
            or not isinstance(self.counters_max_kernels, int)
            or self.counters_max_kernels < 1
        ):
            raise ProfileSettingsError(
                f"counters_max_kernels={self.counters_max_kernels!r}: use an integer >= 1 "
                "(kernels of one inference that ncu profiles)"
            )
        if self.intra_op_threads is not None and self.intra_op_threads < 0:
            raise ProfileSettingsError("intra_op_threads: use None (onnxruntime's default) or >= 1")

    def default_trace_path(self, model_name: str) -> Path:
        """`<model>_<provider>_profile.json` in the model's output folder (`output_folder`)."""
        short = self.provider.removesuffix("ExecutionProvider").lower()
        return output_folder(model_name) / f"{safe_file_name(model_name)}_{short}_profile.json"

    def to_json(self) -> dict[str, Any]:
        """The settings as a report's metadata records them (paths as `full_paths` says)."""
        data = dataclasses.asdict(self)
        for key in ("input_folder", "trace_path"):
            data[key] = recorded_path(data[key], full_paths=self.full_paths)
        return data
