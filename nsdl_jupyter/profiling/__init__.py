"""Profiling: ONNX Runtime profile runs in a child process, trtexec imports, ProfileReport.

- `profile_ort(model, ...)` / `start_profile_ort(...)`: the "Profile Model" activity;
- `load_ort_profile(trace)`: a trace from onnxruntime's own profiler, from any machine;
- `load_trtexec(profile=..., layer_info=..., times=...)`: trtexec's JSON exports;
- `check_target(target)`: the dependency table of a target (local or SSH);
- `fleet(refresh=...)`: every saved target's GPUs, driver, runtimes and cache size;
- `export_engine(model, output, settings=TrtSettings(...))` / `start_export_engine(...)`: a
  TensorRT engine built in a child process; `check_trt_capability(model)`: the nodes the
  TensorRT ONNX parser rejects;
- `profile_trt(model_or_engine, ...)` / `start_profile_trt(...)`: per-layer TensorRT profile of
  a model (built first) or a prebuilt engine, in a child process;
- `ProfileReport`: per-layer DataFrame, end-to-end latency, timeline, save/load, compare;
  `roofline_table()` / `roofline()` / `findings()`: why a layer is slow, against measured peaks;
- `node_work(model, inputs)`: FLOPs and bytes moved per ONNX node, from shapes.
"""

from __future__ import annotations

from nsdl_jupyter.graph import trt_layer_nodes
from nsdl_jupyter.profiling._errors import (
    EngineBuildError,
    EngineMismatchError,
    InputFolderError,
    OnnxParseError,
    ProfileCancelledError,
    ProfileError,
    ProfileFileError,
    ProfileSettingsError,
    ReportFormatError,
    RunnerCrashError,
    RunnerProtocolError,
    TargetLostError,
    TraceFormatError,
    TrtexecFormatError,
    TrtSettingsError,
    TrtUnavailableError,
)
from nsdl_jupyter.profiling._fleet import Fleet, fleet
from nsdl_jupyter.profiling._inputs import input_file_name
from nsdl_jupyter.profiling._job import Progress
from nsdl_jupyter.profiling._model_source import model_source
from nsdl_jupyter.profiling._report import ProfileReport, register_report_figure
from nsdl_jupyter.profiling._target_check import CheckRow, TargetCheck, check_target
from nsdl_jupyter.profiling.analysis._node_work import node_work
from nsdl_jupyter.profiling.gpu._kernels import INPUT_COPY, OUTPUT_COPY
from nsdl_jupyter.profiling.ort._activity import (
    NODE_TIME_NOTE,
    ProfileJob,
    load_ort_profile,
    profile_ort,
    start_profile_ort,
)
from nsdl_jupyter.profiling.ort._providers import (
    ProviderStatus,
    RuntimeInfo,
    available_providers,
    probe_runtime,
)
from nsdl_jupyter.profiling.ort._settings import (
    OrtProfileSettings,
    OrtSettingsKwargs,
    provider_name,
)
from nsdl_jupyter.profiling.ort._trace import parse_ort_trace
from nsdl_jupyter.profiling.tensorrt._engine import (
    EngineExport,
    EngineJob,
    RejectedNode,
    TrtCapability,
    check_trt_capability,
    export_engine,
    start_export_engine,
    trt_backends,
)
from nsdl_jupyter.profiling.tensorrt._profile import (
    ENGINE_SUFFIXES,
    TrtProfileJob,
    profile_trt,
    start_profile_trt,
)
from nsdl_jupyter.profiling.tensorrt._settings import (
    Backend,
    EngineMetadata,
    Refit,
    TrtSettings,
    TrtSettingsKwargs,
    runner_module,
)
from nsdl_jupyter.profiling.tensorrt._trtexec import load_trtexec

__all__ = [
    "ENGINE_SUFFIXES",
    "INPUT_COPY",
    "NODE_TIME_NOTE",
    "OUTPUT_COPY",
    "Backend",
    "CheckRow",
    "EngineBuildError",
    "EngineExport",
    "EngineJob",
    "EngineMetadata",
    "EngineMismatchError",
    "Fleet",
    "InputFolderError",
    "OnnxParseError",
    "OrtProfileSettings",
    "OrtSettingsKwargs",
    "ProfileCancelledError",
    "ProfileError",
    "ProfileFileError",
    "ProfileJob",
    "ProfileReport",
    "ProfileSettingsError",
    "Progress",
    "ProviderStatus",
    "Refit",
    "RejectedNode",
    "ReportFormatError",
    "RunnerCrashError",
    "RunnerProtocolError",
    "RuntimeInfo",
    "TargetCheck",
    "TargetLostError",
    "TraceFormatError",
    "TrtCapability",
    "TrtProfileJob",
    "TrtSettings",
    "TrtSettingsError",
    "TrtSettingsKwargs",
    "TrtUnavailableError",
    "TrtexecFormatError",
    "available_providers",
    "check_target",
    "check_trt_capability",
    "export_engine",
    "fleet",
    "input_file_name",
    "load_ort_profile",
    "load_trtexec",
    "model_source",
    "node_work",
    "parse_ort_trace",
    "probe_runtime",
    "profile_ort",
    "profile_trt",
    "provider_name",
    "register_report_figure",
    "runner_module",
    "start_export_engine",
    "start_profile_ort",
    "start_profile_trt",
    "trt_backends",
    "trt_layer_nodes",
]
