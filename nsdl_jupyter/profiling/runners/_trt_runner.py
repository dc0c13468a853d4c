"""The TensorRT engine runner: one JSON request in, `@@nsdl {json}` lines out, in a child process.

The TensorRT sibling of `_ort_runner.py`, with the same protocol (it loads that file by path for
`emit` and `RunnerError`, so deploy both side by side) and the same rule: standard library only
at import time, so the kernel may import it for the pure parts (the version gate and the trtexec
command line) without loading TensorRT.

Backends:
- "tensorrt": the `tensorrt` Python module, 10.x (every builder setting of the export dialog)
  or 11.x (strongly typed only: the precision flags, precision constraints, calibrators and
  dynamic ranges are gone);
- "tensorrt_rtx": TensorRT for RTX (`tensorrt_rtx`), the same API family, strongly typed, no
  timing cache (its builder says timing cache operations are no-ops); it builds on a machine
  without a GPU;
- "trtexec": the `trtexec` binary, run with an argv built from the settings (never a shell).

Requests (`kind`):
- "trt_probe": which backends are importable or on PATH, with their versions;
- "trt_build": ONNX parse (parser errors carry the ONNX node index, name and operator),
  builder config from the settings (read back afterwards), plugins, timing cache in a cache
  folder, IProgressMonitor progress, cancel on SIGTERM (the build stops at the next progress
  step), then engine + build log + metadata JSON (+ inspector JSON where an engine can be
  deserialized, which needs a GPU) written beside the engine;
- "trt_capability": the ONNX parser alone: which nodes it rejects, with its messages;
- "trt_profile": per-layer profile of an engine (`_trt_profile_runner.py`, deployed beside).

Keep it runnable on Python 3.8+, like `_ort_runner.py`.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # tensorrt-stubs (scripts/tensorrt_stubs.py): TensorRT 10's API, whose names
    # used here tensorrt_rtx shares; the module itself is passed around as `trt: Any`
    from collections.abc import Callable

    from tensorrt_bindings import tensorrt as api

PROTOCOL_VERSION = 1
BACKENDS = ("tensorrt", "tensorrt_rtx", "trtexec")
_MODULES = {"tensorrt": "tensorrt", "tensorrt_rtx": "tensorrt_rtx"}
_STEP_INTERVAL_S = 0.1  # progress steps inside a phase: at most one message per 0.1 s


def _sibling(name: str) -> Any:
    """A sibling runner file, loaded by path (this file also runs as a plain script)."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), name)
    spec = importlib.util.spec_from_file_location("_nsdl_" + name[:-3].lstrip("_"), path)
    if spec is None or spec.loader is None:
        raise ImportError(f"{path} is missing: deploy it beside {os.path.basename(__file__)}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_common = _sibling("_ort_runner.py")
emit = _common.emit
RunnerError: type[Exception] = _common.RunnerError


class TypedRunnerError(RunnerError):  # type: ignore[valid-type,misc]
    """A RunnerError the parent raises as its own type (`kind`), with extra fields."""

    def __init__(self, kind: str, message: str, **fields: Any) -> None:
        super().__init__(message)
        self.kind = kind
        self.fields = fields
        self.exit_code = 3 if kind == "Cancelled" else 2


# ---- the version gate (pure: the kernel uses it too) --------------------------------------


def family(backend: str, version: str) -> str:
    """'rtx' for TensorRT-RTX, 'trt11' for TensorRT 11 and later, else 'trt10' (10.x and older,
    which have every setting of the export dialog)."""
    if backend == "tensorrt_rtx":
        return "rtx"
    try:
        major = int(str(version).split(".")[0])
    except ValueError:
        return "trt10"
    return "trt11" if major >= 11 else "trt10"


_STRONG_ONLY = {
    "fp16": "convert the model with convert_to_fp16 first (its FP16 types then build as FP16)",
    "bf16": "convert the model's float tensors with convert_tensors(..., 'bfloat16') first",
    "int8": "quantize the model with explicit QuantizeLinear/DequantizeLinear nodes first "
    "(for example with NVIDIA TensorRT Model Optimizer)",
    "fp8": "quantize the model to FP8 with explicit QuantizeLinear/DequantizeLinear nodes first",
    "int8_calibration_cache": "quantize the model with explicit QuantizeLinear/DequantizeLinear "
    "nodes instead of calibrating",
    "layer_precisions": "set the precision through the model's types instead (convert_tensors, "
    "convert_to_fp16) and clear the constraints (doc.tensorrt.clear_layer_precisions()), or "
    "build with TensorRT 10",
}
_TYPING_REFUSED = (
    "set typing='strong' (or 'default'): precision constraints need precision flags, and "
    "precision then comes from the model's types"
)
_TACTICS_REFUSED = "leave cudnn_tactics and cublas_tactics off"


def refusals(settings: dict[str, Any], backend: str, version: str) -> list[str]:
    """Why `settings` cannot build with `backend` `version`, one sentence (with the fix) each."""
    fam = family(backend, version)
    found = []
    if backend == "trtexec" and len(settings.get("optimization_profiles") or []) > 1:
        found.append(
            "optimization_profiles: trtexec builds one profile (--minShapes/--optShapes/"
            "--maxShapes); give one, or build with backend='tensorrt' for several"
        )
    if fam == "trt10":
        return found
    name = f"TensorRT-RTX {version}" if fam == "rtx" else f"TensorRT {version}".replace(" ?", "")
    why = f"{name} builds strongly typed networks only (no precision flags)"
    found += [
        f"{key}: {why}; {fix}"
        for key, fix in _STRONG_ONLY.items()
        if settings.get(key) and settings.get(key) not in ({}, [])
    ]
    if settings.get("typing") in ("obey", "prefer"):
        found.append(f"typing={settings['typing']!r}: {why}; {_TYPING_REFUSED}")
    if settings.get("cudnn_tactics") or settings.get("cublas_tactics"):
        found.append(
            f"cudnn_tactics/cublas_tactics: {name} has no cuDNN or cuBLAS tactics; "
            f"{_TACTICS_REFUSED}"
        )
    return found


# ---- trtexec's command line (pure) ---------------------------------------------------------


def _shape(dims: list[int]) -> str:
    return "x".join(str(int(d)) for d in dims)


def _precision_argv(settings: dict[str, Any]) -> list[str]:
    """TensorRT <= 10 only: precision flags, constraints, calibration, tactic sources."""
    argv = [f"--{p}" for p in ("fp16", "bf16", "int8", "fp8") if settings.get(p)]
    typing = settings.get("typing", "default")
    if typing == "strong":
        argv.append("--stronglyTyped")
    elif typing in ("obey", "prefer"):
        argv.append(f"--precisionConstraints={typing}")
    if settings.get("int8_calibration_cache"):
        argv.append(f"--calib={settings['int8_calibration_cache']}")
    if settings.get("layer_precisions"):
        spec = ",".join(f"{k}:{v}" for k, v in settings["layer_precisions"].items())
        argv.append(f"--layerPrecisions={spec}")
    if settings.get("cudnn_tactics") or settings.get("cublas_tactics"):
        # TensorRT 10 leaves both off by default: name them only when one is asked for
        tactics = [
            ("+" if settings.get(key) else "-") + source
            for key, source in (("cudnn_tactics", "CUDNN"), ("cublas_tactics", "CUBLAS"))
        ]
        argv.append("--tacticSources=" + ",".join(tactics))
    return argv


def trtexec_argv(
    settings: dict[str, Any],
    *,
    trtexec: str,
    model: str,
    engine: str,
    version: str,
    timing_cache: str | None = None,
    layer_info: str | None = None,
) -> list[str]:
    """The trtexec command that builds `engine` from `model` with `settings` (no shell)."""
    argv = [trtexec, f"--onnx={model}", f"--saveEngine={engine}", "--skipInference"]
    if family("trtexec", version) == "trt10":
        argv += _precision_argv(settings)
    if not settings.get("tf32", True):
        argv.append("--noTF32")
    if settings.get("sparsity"):
        argv.append("--sparsity=enable")
    if not settings.get("native_instance_norm", True):
        argv.append("--pluginInstanceNorm")
    argv.append(f"--builderOptimizationLevel={int(settings.get('optimization_level', 3))}")
    if settings.get("max_aux_streams") is not None:
        argv.append(f"--maxAuxStreams={int(settings['max_aux_streams'])}")
    if settings.get("workspace_mib") is not None:
        argv.append(f"--memPoolSize=workspace:{int(settings['workspace_mib'])}M")
    if settings.get("hardware_compatible"):
        argv.append("--hardwareCompatibilityLevel=ampere+")
    if settings.get("version_compatible"):
        argv.append("--versionCompatible")
        if settings.get("exclude_lean_runtime"):
            argv.append("--excludeLeanRuntime")
    refit = settings.get("refit", "none")
    if refit == "refittable":
        argv.append("--refit")
    elif refit == "stripped":
        argv.append("--stripWeights")
    argv.append(f"--profilingVerbosity={settings.get('engine_metadata', 'detailed')}")
    argv += [f"--dynamicPlugins={p}" for p in settings.get("plugins") or ()]
    argv.append(f"--device={int(settings.get('device_index', 0))}")
    for profile in (settings.get("optimization_profiles") or [])[:1]:  # refusals: one at most
        for key, flag in (("min", "--minShapes"), ("opt", "--optShapes"), ("max", "--maxShapes")):
            spec = ",".join(f"{name}:{_shape(dims[key])}" for name, dims in profile.items())
            argv.append(f"{flag}={spec}")
    if timing_cache is not None:
        argv.append(f"--timingCacheFile={timing_cache}")
    if layer_info is not None:
        argv += [f"--exportLayerInfo={layer_info}"]
    return argv


_TRTEXEC_VERSION = re.compile(r"\[TensorRT v(\d+)\]")


def trtexec_version(text: str) -> str | None:
    """'10.3.0' from trtexec's banner `[TensorRT v100300]` (8.x: v8601 -> 8.6.1)."""
    found = _TRTEXEC_VERSION.search(text)
    if not found:
        return None
    code = int(found.group(1))
    if code >= 100000:
        return f"{code // 10000}.{code // 100 % 100}.{code % 100}"
    return f"{code // 1000}.{code // 100 % 10}.{code % 100}"


_PARSE_NODE = re.compile(r"While parsing node number (\d+) \[([^\s\]]+)")
_PARSE_NAME = re.compile(r"Node name: (\S*)")
_PARSE_DESC = re.compile(r"^\[(\d+)\] (.+)$")


def parser_errors_from_log(lines: list[str]) -> list[dict[str, Any]]:
    """Parser errors from TensorRT's log text (what trtexec prints): node index, operator,
    name and the parser's message, in the order the log gives them."""
    errors: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    for raw in lines:
        line = raw.rstrip()
        node = _PARSE_NODE.search(line)
        if node:
            current = {
                "node": int(node.group(1)),
                "operator": node.group(2),
                "name": "",
                "message": "",
            }
            errors.append(current)
            continue
        if current is None:
            continue
        name = _PARSE_NAME.search(line)
        if name and not current["name"]:
            current["name"] = name.group(1)
            continue
        tail = line.split("] ", 1)[-1] if line.startswith("[") and "[TRT]" in line else line
        desc = _PARSE_DESC.match(tail.strip())
        if desc and not current["message"]:
            current["message"] = desc.group(2)
            current["code"] = int(desc.group(1))
    return errors


# ---- the Python backends ------------------------------------------------------------------


def _import(backend: str) -> Any:
    module = _MODULES[backend]
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        how = (
            "pip install 'nsdl_jupyter[trt-rtx]'"
            if backend == "tensorrt_rtx"
            else "TensorRT 10 or 11 with its Python bindings, e.g. pip install tensorrt-cu12"
        )
        raise RunnerError(
            f"the {module} module is not importable by {sys.executable} ({exc}); install it "
            f"there ({how}), or pick another backend"
        ) from exc


def _trtexec_path(settings: dict[str, Any]) -> str | None:
    given = settings.get("trtexec_path")
    if given:
        return str(given) if os.path.isfile(str(given)) else None
    return shutil.which("trtexec")


def probe(request: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for backend in ("tensorrt", "tensorrt_rtx"):
        try:
            found[backend] = {"version": str(_import(backend).__version__)}
        except Exception as exc:
            found[backend] = {"error": str(exc)}
    path = _trtexec_path(request.get("settings") or {})
    if path is None:
        found["trtexec"] = {"error": "no trtexec on PATH; give settings trtexec_path"}
    else:
        found["trtexec"] = {"version": _run_trtexec_version(path), "path": path}
    return {"backends": found, "python": sys.version.split()[0], "host": platform.node()}


def _run_trtexec_version(path: str) -> str | None:
    try:
        done = subprocess.run(
            [path, "--help"], capture_output=True, text=True, timeout=60, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return trtexec_version(done.stdout + done.stderr)


def resolve_backend(settings: dict[str, Any]) -> tuple[str, str]:
    """The backend to use and its version ('auto': tensorrt, else tensorrt_rtx, else trtexec)."""
    wanted = settings.get("backend", "auto")
    order = BACKENDS if wanted == "auto" else (wanted,)
    reasons = []
    for backend in order:
        if backend == "trtexec":
            path = _trtexec_path(settings)
            if path is None:
                reasons.append("trtexec: not found (on PATH or at trtexec_path)")
                continue
            return backend, _run_trtexec_version(path) or "?"
        try:
            return backend, str(_import(backend).__version__)
        except RunnerError as exc:
            reasons.append(str(exc))
    raise RunnerError("no TensorRT backend is available: " + "; ".join(reasons))


class _Cancel:
    """SIGTERM (the parent's cancel) sets `requested`; the progress monitor then stops the
    build at its next step, so the runner still reports where it was cancelled."""

    requested = False

    @classmethod
    def install(cls) -> None:
        def handler(_signum: int, _frame: Any) -> None:
            cls.requested = True

        signal.signal(signal.SIGTERM, handler)


def _logger(trt: Any, log: Any) -> Any:
    class Logger(trt.ILogger):  # type: ignore[misc,name-defined]
        def __init__(self) -> None:
            trt.ILogger.__init__(self)
            self.errors: list[str] = []

        def log(self, severity: Any, msg: str) -> None:
            level = str(severity).rsplit(".", 1)[-1][:1]
            log.write(f"[{level}] {msg}\n")
            if severity in (trt.ILogger.ERROR, trt.ILogger.INTERNAL_ERROR):
                self.errors.append(msg)

    return Logger()


def _monitor(trt: Any) -> Any:
    class Monitor(trt.IProgressMonitor):  # type: ignore[misc,name-defined]
        """Phases as a stack; the fraction of the outermost phase done, refined by the inner
        ones; every phase start and end is sent, steps at most every 0.1 s."""

        def __init__(self) -> None:
            trt.IProgressMonitor.__init__(self)
            self.stack: list[list[Any]] = []  # [name, done, total]
            self.events = 0
            self._last = 0.0

        def _fraction(self) -> float:
            fraction, scale = 0.0, 1.0
            for _name, done, steps in self.stack:
                total = max(int(steps), 1)
                fraction += scale * min(done, total) / total
                scale /= total
            return min(fraction, 1.0)

        def _send(self, step: str) -> None:
            self.events += 1
            top: list[Any] = self.stack[0] if self.stack else ["build", 1, 1]
            emit(
                "progress",
                phase="build",
                step=step,
                depth=len(self.stack),
                done=int(top[1]),
                total=int(top[2]),
                fraction=self._fraction(),
            )

        def phase_start(self, phase_name: str, parent_phase: str | None, num_steps: int) -> None:
            self.stack.append([phase_name, 0, num_steps])
            self._send(phase_name)

        def step_complete(self, phase_name: str, step: int) -> bool:
            for entry in self.stack:
                if entry[0] == phase_name:
                    entry[1] = step + 1
            now = time.monotonic()
            if now - self._last >= _STEP_INTERVAL_S:
                self._last = now
                self._send(phase_name)
            return not _Cancel.requested

        def phase_finish(self, phase_name: str) -> None:
            while self.stack:
                name = self.stack.pop()[0]
                if name == phase_name:
                    break
            self._send(phase_name + " done")

    return Monitor()


def _flag(trt: Any, name: str) -> Any:
    flag = getattr(trt.BuilderFlag, name, None)
    if flag is None:
        raise RunnerError(f"this TensorRT has no BuilderFlag.{name}; leave that setting off")
    return flag


_PRECISION_FLAGS = {"fp16": "FP16", "bf16": "BF16", "int8": "INT8", "fp8": "FP8"}
_DTYPES = {
    "fp32": "float32",
    "fp16": "float16",
    "bf16": "bfloat16",
    "fp8": "fp8",
    "int64": "int64",
    "int32": "int32",
    "int8": "int8",
    "int4": "int4",
    "uint8": "uint8",
    "bool": "bool",
}


def _network(
    trt: Any, builder: api.Builder, settings: dict[str, Any], fam: str
) -> api.INetworkDefinition:
    flags = 0
    strong = getattr(trt.NetworkDefinitionCreationFlag, "STRONGLY_TYPED", None)
    if settings.get("typing") == "strong" and strong is not None and fam == "trt10":
        flags |= 1 << int(strong)
    return builder.create_network(flags)


def _parse(
    trt: Any, network: api.INetworkDefinition, logger: Any, model: str, settings: dict[str, Any]
) -> tuple[api.OnnxParser, bool, list[dict[str, Any]]]:
    parser: api.OnnxParser = trt.OnnxParser(network, logger)
    native = getattr(trt.OnnxParserFlag, "NATIVE_INSTANCENORM", None)
    if native is not None:
        if settings.get("native_instance_norm", True):
            parser.set_flag(native)
        else:
            parser.clear_flag(native)
    ok = parser.parse_from_file(model)
    errors = [
        {
            "node": int(e.node()),
            # node_name / node_operator came with TensorRT 10; before, the index says which
            "name": str(getattr(e, "node_name", str)()),
            "operator": str(getattr(e, "node_operator", str)()),
            "message": str(e.desc()),
            "code": str(e.code()).rsplit(".", 1)[-1],
        }
        for e in (parser.get_error(i) for i in range(parser.num_errors))
    ]
    return parser, bool(ok), errors


def _parse_failed(errors: list[dict[str, Any]], logged: list[str]) -> TypedRunnerError:
    lines = (
        [
            f"node {e['name'] or '#' + str(e['node'])} ({e['operator']}): {e['message']}"
            for e in errors
        ]
        or logged[-5:]
        or ["the parser gave no reason"]
    )
    return TypedRunnerError(
        "OnnxParseError",
        "the TensorRT ONNX parser rejected the model:\n  " + "\n  ".join(lines),
        nodes=errors,
    )


def _apply_precisions(trt: Any, network: api.INetworkDefinition, settings: dict[str, Any]) -> None:
    wanted = dict(settings.get("layer_precisions") or {})
    layers = {network.get_layer(i).name: network.get_layer(i) for i in range(network.num_layers)}
    missing = sorted(set(wanted) - set(layers))
    if missing:
        raise TypedRunnerError(
            "TrtSettingsError",
            f"layer_precisions names layers the network does not have: {missing}; use ONNX "
            "node names (TensorRT names a layer after the node it came from)",
        )
    for name, precision in wanted.items():
        layers[name].precision = getattr(trt, _DTYPES[precision])


def _placeholder_ranges(network: api.INetworkDefinition) -> None:
    """INT8 without a calibration cache: the Designer's placeholder dynamic ranges, enough to
    build and time an INT8 engine (its accuracy is meaningless)."""
    for i in range(network.num_layers):
        layer = network.get_layer(i)
        for j in range(layer.num_outputs):
            layer.get_output(j).set_dynamic_range(-4.0, 4.0)
    for i in range(network.num_inputs):
        network.get_input(i).set_dynamic_range(-4.0, 4.0)


def _calibrator(trt: Any, path: str) -> Any:
    with open(path, "rb") as f:
        cache = f.read()

    class CacheCalibrator(trt.IInt8EntropyCalibrator2):  # type: ignore[misc,name-defined]
        def __init__(self) -> None:
            trt.IInt8EntropyCalibrator2.__init__(self)

        def get_batch_size(self) -> int:
            return 1

        def get_batch(self, names: list[str]) -> None:
            return None

        def read_calibration_cache(self) -> bytes:
            return cache

        def write_calibration_cache(self, data: bytes) -> None:
            return None

    return CacheCalibrator()


def _profiles(
    trt: Any,
    builder: api.Builder,
    network: api.INetworkDefinition,
    config: api.IBuilderConfig,
    settings: dict[str, Any],
) -> list[dict[str, Any]]:
    """Optimization profiles from the settings, added to `config`, as the builder's profile
    objects hold them (read back); a dynamic input they do not cover gets the inferred batch
    size for its first dimension (other free dimensions need a profile)."""
    given = list(settings.get("optimization_profiles") or [])
    batch = int(settings.get("inferred_batch_size", 1))
    inputs = [network.get_input(i) for i in range(network.num_inputs)]
    dynamic = {t.name: _dims(t.shape) for t in inputs if any(d < 0 for d in _dims(t.shape))}
    if not dynamic:
        return []
    if not given:
        given = [{}]
    held: list[dict[str, Any]] = []
    for profile in given:
        for name, shape in dynamic.items():
            if name in profile:
                continue
            free = [i for i, d in enumerate(shape) if d < 0]
            if free != [0]:
                raise TypedRunnerError(
                    "TrtSettingsError",
                    f"input {name!r} has free dimensions {free} of shape {shape}; give "
                    "optimization_profiles=[{" + repr(name) + ": {'min': [...], 'opt': [...], "
                    "'max': [...]}}] (the inferred batch size covers a free first dimension "
                    "only)",
                )
            dims = [batch, *shape[1:]]
            profile[name] = {"min": dims, "opt": dims, "max": dims}
        unknown = sorted(set(profile) - {t.name for t in inputs})
        if unknown:
            raise TypedRunnerError(
                "TrtSettingsError",
                f"an optimization profile names {unknown}, which are not network inputs; "
                f"inputs: {[t.name for t in inputs]}",
            )
        trt_profile = builder.create_optimization_profile()
        for name, dims in profile.items():
            trt_profile.set_shape(name, dims["min"], dims["opt"], dims["max"])
        config.add_optimization_profile(trt_profile)
        held.append(
            {
                name: dict(
                    zip(("min", "opt", "max"), map(_dims, trt_profile.get_shape(name)), strict=True)
                )
                for name in profile
            }
        )
    return held


def _configure(
    trt: Any,
    builder: api.Builder,
    network: api.INetworkDefinition,
    settings: dict[str, Any],
    fam: str,
) -> api.IBuilderConfig:
    config = builder.create_builder_config()
    if fam == "trt10":
        for key, name in _PRECISION_FLAGS.items():
            if settings.get(key):
                config.set_flag(_flag(trt, name))
        typing = settings.get("typing")
        if typing in ("obey", "prefer"):
            config.set_flag(_flag(trt, f"{typing.upper()}_PRECISION_CONSTRAINTS"))
        if settings.get("int8"):
            if settings.get("int8_calibration_cache"):
                config.int8_calibrator = _calibrator(trt, settings["int8_calibration_cache"])
            else:
                _placeholder_ranges(network)
        if settings.get("layer_precisions"):
            _apply_precisions(trt, network, settings)
        sources = config.get_tactic_sources()
        for key, name in (("cudnn_tactics", "CUDNN"), ("cublas_tactics", "CUBLAS")):
            source = getattr(trt.TacticSource, name, None)
            if source is None:
                continue
            bit = 1 << int(source)
            sources = (sources | bit) if settings.get(key) else (sources & ~bit)
        config.set_tactic_sources(sources)
    tf32 = _flag(trt, "TF32")
    if settings.get("tf32", True):
        config.set_flag(tf32)
    else:
        config.clear_flag(tf32)
    if settings.get("sparsity"):
        config.set_flag(_flag(trt, "SPARSE_WEIGHTS"))
    config.builder_optimization_level = int(settings.get("optimization_level", 3))
    if settings.get("max_aux_streams") is not None:
        config.max_aux_streams = int(settings["max_aux_streams"])
    if settings.get("workspace_mib") is not None:
        config.set_memory_pool_limit(
            trt.MemoryPoolType.WORKSPACE, int(settings["workspace_mib"]) << 20
        )
    if settings.get("hardware_compatible"):
        config.hardware_compatibility_level = trt.HardwareCompatibilityLevel.AMPERE_PLUS
    if settings.get("version_compatible"):
        config.set_flag(_flag(trt, "VERSION_COMPATIBLE"))
        if settings.get("exclude_lean_runtime"):
            config.set_flag(_flag(trt, "EXCLUDE_LEAN_RUNTIME"))
    refit = settings.get("refit", "none")
    if refit == "refittable":
        config.set_flag(_flag(trt, "REFIT"))
    elif refit == "stripped":
        config.set_flag(_flag(trt, "STRIP_PLAN"))
        config.set_flag(_flag(trt, "REFIT_IDENTICAL"))
    config.profiling_verbosity = (
        trt.ProfilingVerbosity.DETAILED
        if settings.get("engine_metadata", "detailed") == "detailed"
        else trt.ProfilingVerbosity.NONE
    )
    return config


def read_back(
    trt: Any, config: api.IBuilderConfig, network: api.INetworkDefinition
) -> dict[str, Any]:
    """What the builder config and network actually hold (not what was asked)."""
    flags = sorted(
        name for name, flag in trt.BuilderFlag.__members__.items() if config.get_flag(flag)
    )
    sources = config.get_tactic_sources()
    strong = getattr(trt.NetworkDefinitionCreationFlag, "STRONGLY_TYPED", None)
    return {
        "flags": flags,
        "builder_optimization_level": int(config.builder_optimization_level),
        "max_aux_streams": int(config.max_aux_streams),
        "workspace_bytes": int(config.get_memory_pool_limit(trt.MemoryPoolType.WORKSPACE)),
        "hardware_compatibility_level": str(config.hardware_compatibility_level).rsplit(".")[-1],
        "profiling_verbosity": str(config.profiling_verbosity).rsplit(".")[-1],
        "tactic_sources": sorted(
            name
            for name, source in trt.TacticSource.__members__.items()
            if sources & (1 << int(source))
        ),
        "optimization_profiles": int(config.num_optimization_profiles),
        "strongly_typed": bool(network.get_flag(strong)) if strong is not None else None,
    }


def ignored_settings(settings: dict[str, Any], applied: dict[str, Any]) -> list[str]:
    """Settings the builder config does not hold after they were set (a TensorRT may accept a
    value and keep its own, as TensorRT-RTX 1.7 does with the hardware compatibility level)."""
    flags = set(applied["flags"])
    expected = {
        "tf32": ("TF32" in flags) == bool(settings.get("tf32", True)),
        "sparsity": ("SPARSE_WEIGHTS" in flags) == bool(settings.get("sparsity")),
        "version_compatible": ("VERSION_COMPATIBLE" in flags)
        == bool(settings.get("version_compatible")),
        "exclude_lean_runtime": ("EXCLUDE_LEAN_RUNTIME" in flags)
        == bool(settings.get("exclude_lean_runtime")),
        "hardware_compatible": (applied["hardware_compatibility_level"] == "AMPERE_PLUS")
        == bool(settings.get("hardware_compatible")),
        "optimization_level": applied["builder_optimization_level"]
        == int(settings.get("optimization_level", 3)),
        "engine_metadata": (applied["profiling_verbosity"] == "DETAILED")
        == (settings.get("engine_metadata", "detailed") == "detailed"),
        "refit": {
            "none": not flags & {"REFIT", "STRIP_PLAN"},
            "refittable": "REFIT" in flags,
            "stripped": "STRIP_PLAN" in flags,
        }[settings.get("refit", "none")],
    }
    if settings.get("max_aux_streams") is not None:
        expected["max_aux_streams"] = applied["max_aux_streams"] == settings["max_aux_streams"]
    if settings.get("workspace_mib") is not None:
        expected["workspace_mib"] = applied["workspace_bytes"] == settings["workspace_mib"] << 20
    return sorted(name for name, held in expected.items() if not held)


def _dims(dims: api.Dims) -> list[int]:
    """A shape as a list (TensorRT's Dims is indexed, not iterable, in the stubs)."""
    return [int(dims[i]) for i in range(len(dims))]


def _tensors(count: int, get: Callable[[int], api.ITensor]) -> list[dict[str, Any]]:
    return [
        {"name": t.name, "shape": _dims(t.shape), "dtype": str(t.dtype).rsplit(".")[-1]}
        for t in (get(i) for i in range(count))
    ]


def _cache_dir(request: dict[str, Any]) -> str:
    folder = request.get("cache_dir") or os.path.join(
        os.environ.get("NSDL_CACHE_DIR")
        or os.path.join(os.path.expanduser("~"), ".cache", "nsdl_jupyter"),
        "tensorrt",
    )
    os.makedirs(folder, exist_ok=True)
    return str(folder)


def _timing_cache_path(request: dict[str, Any], backend: str, version: str) -> str:
    gpus = _common._gpu_names()
    device = int((request.get("settings") or {}).get("device_index", 0))
    gpu = gpus[device] if device < len(gpus) else "nogpu"
    tag = re.sub(r"[^A-Za-z0-9.]+", "-", f"{backend}-{version}-{gpu}").strip("-")
    return os.path.join(_cache_dir(request), f"timing-{tag}.cache")


def _write_atomic(path: str, data: bytes) -> None:
    partial = path + ".partial"
    with open(partial, "wb") as f:
        f.write(data)
    os.replace(partial, path)


def _inspect(trt: Any, logger: Any, engine: bytes, path: str) -> dict[str, Any]:
    """The engine inspector's layer JSON; needs a GPU the engine can load on."""
    try:
        runtime: api.Runtime = trt.Runtime(logger)
        loaded = runtime.deserialize_cuda_engine(engine)
        if loaded is None:
            raise RuntimeError("deserialize_cuda_engine returned None (no usable GPU?)")
        inspector = loaded.create_engine_inspector()
        text = inspector.get_engine_information(trt.LayerInformationFormat.JSON)
    except Exception as exc:
        return {"available": False, "message": f"engine inspector unavailable here: {exc}"}
    _write_atomic(path, str(text).encode("utf-8"))
    return {"available": True, "file": path}


def _load_plugins(trt: Any, settings: dict[str, Any]) -> None:
    registry = trt.get_plugin_registry()
    for plugin in settings.get("plugins") or ():
        if registry.load_library(str(plugin)) is None:
            raise RunnerError(
                f"could not load the plugin library {plugin}: check the path and that it was "
                "built for this TensorRT"
            )


def _timing_cache(
    config: api.IBuilderConfig, request: dict[str, Any], backend: str, version: str
) -> tuple[api.ITimingCache | None, dict[str, Any]]:
    """The timing cache from the cache folder (empty the first time) set on `config`."""
    if family(backend, version) == "rtx":
        # TensorRT-RTX 1.x: "Timing cache operations are no-ops in TensorRT-RTX", and a cache
        # it serialized fails to deserialize: leave it out.
        return None, {"used": False, "message": "TensorRT-RTX has no timing cache"}
    if not (request.get("settings") or {}).get("timing_cache", True):
        return None, {"used": False, "message": "timing_cache=False"}
    path = _timing_cache_path(request, backend, version)
    blob = b""
    if os.path.isfile(path):
        with open(path, "rb") as f:
            blob = f.read()
    cache = config.create_timing_cache(blob)
    config.set_timing_cache(cache, False)
    return cache, {"used": True, "file": path, "loaded_bytes": len(blob)}


def _build_python(request: dict[str, Any], backend: str, version: str) -> dict[str, Any]:
    settings = dict(request.get("settings") or {})
    fam = family(backend, version)
    trt = _import(backend)
    out = request["output"]
    log_path = out + ".build.log"
    timings: dict[str, float] = {}
    with open(log_path, "w", encoding="utf-8") as log:
        logger = _logger(trt, log)
        _load_plugins(trt, settings)
        builder: api.Builder = trt.Builder(logger)
        network = _network(trt, builder, settings, fam)
        emit("progress", phase="parse", step="parse", depth=0, done=0, total=1, fraction=0.0)
        t0 = time.perf_counter()
        parser, ok, errors = _parse(trt, network, logger, request["model"], settings)
        timings["parse_s"] = time.perf_counter() - t0
        if not ok:
            raise _parse_failed(errors, logger.errors)
        config = _configure(trt, builder, network, settings, fam)
        profiles = _profiles(trt, builder, network, config, settings)
        monitor = _monitor(trt)
        config.progress_monitor = monitor
        cache, cache_info = _timing_cache(config, request, backend, version)
        applied = read_back(trt, config, network)
        ignored = ignored_settings(settings, applied)
        for name in ignored:
            log.write(f"[W] nsdl: the builder config does not hold the setting {name}\n")
        info = {
            "inputs": _tensors(network.num_inputs, network.get_input),
            "outputs": _tensors(network.num_outputs, network.get_output),
            "layers": [network.get_layer(i).name for i in range(network.num_layers)],
        }
        _common._debug_crash(request, "build")
        t0 = time.perf_counter()
        serialized = builder.build_serialized_network(network, config)
        timings["build_s"] = time.perf_counter() - t0
        if _Cancel.requested:
            raise TypedRunnerError(
                "Cancelled", "the build was cancelled", phase=list(monitor.stack)
            )
        if serialized is None:
            reason = "; ".join(logger.errors[-5:]) or "see the build log"
            raise RunnerError(f"TensorRT could not build the engine: {reason} (log: {log_path})")
        engine = bytes(serialized)
        _write_atomic(out, engine)
        if cache is not None:
            data = bytes(cache.serialize())
            _write_atomic(cache_info["file"], data)
            cache_info["saved_bytes"] = len(data)
        inspector = _inspect(trt, logger, engine, out + ".graph.json")
    del parser
    return {
        "backend": backend,
        "version": version,
        "engine": out,
        "engine_bytes": len(engine),
        "log": log_path,
        "applied": applied,
        "ignored": ignored,
        "optimization_profiles": profiles,
        "timing_cache": cache_info,
        "inspector": inspector,
        "progress_events": monitor.events,
        "network": info,
        **timings,
    }


# ---- trtexec -------------------------------------------------------------------------------


def _build_trtexec(request: dict[str, Any], version: str) -> dict[str, Any]:
    settings = dict(request.get("settings") or {})
    path = _trtexec_path(settings)
    if path is None:
        raise RunnerError("trtexec is not on PATH: give settings trtexec_path")
    out = request["output"]
    fam = family("trtexec", version)
    cache = (
        _timing_cache_path(request, "trtexec", version)
        if (settings.get("timing_cache", True) and fam != "rtx")
        else None
    )
    argv = trtexec_argv(
        settings,
        trtexec=path,
        model=request["model"],
        engine=out,
        version=version,
        timing_cache=cache,
        layer_info=out + ".graph.json",
    )
    log_path = out + ".build.log"
    emit("progress", phase="build", step="trtexec", depth=0, done=0, total=1, fraction=0.0)
    t0 = time.perf_counter()
    with open(log_path, "w", encoding="utf-8") as log:
        child = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        lines: list[str] = []
        assert child.stdout is not None
        for line in child.stdout:
            log.write(line)
            lines.append(line)
            if _Cancel.requested:
                child.terminate()
        code = child.wait()
    build_s = time.perf_counter() - t0
    if _Cancel.requested:
        raise TypedRunnerError("Cancelled", "the build was cancelled")
    if code != 0 or not os.path.isfile(out):
        errors = parser_errors_from_log(lines)
        if errors:
            raise _parse_failed(errors, lines)
        tail = "".join(lines[-8:]).strip()
        raise RunnerError(f"trtexec failed (exit code {code}):\n{tail}\n(log: {log_path})")
    layer_info = out + ".graph.json"
    return {
        "backend": "trtexec",
        "version": version,
        "engine": out,
        "engine_bytes": os.path.getsize(out),
        "log": log_path,
        "argv": argv,
        "timing_cache": {"used": cache is not None, "file": cache},
        "inspector": {"available": os.path.isfile(layer_info), "file": layer_info},
        "build_s": build_s,
    }


def select_device(backend: str, settings: dict[str, Any]) -> None:
    """Before CUDA starts, the chosen GPU becomes device 0 of this process (trtexec gets
    --device instead)."""
    if backend != "trtexec" and "CUDA_VISIBLE_DEVICES" not in os.environ:
        os.environ["CUDA_VISIBLE_DEVICES"] = str(int(settings.get("device_index", 0)))


def build(request: dict[str, Any]) -> dict[str, Any]:
    _Cancel.install()
    settings = dict(request.get("settings") or {})
    backend, version = resolve_backend(settings)  # imports TensorRT; CUDA starts later
    select_device(backend, settings)
    refused = refusals(settings, backend, version)
    if refused:
        raise TypedRunnerError(
            "TrtSettingsError", "; ".join(refused), backend=backend, version=version
        )
    t0 = time.perf_counter()
    cached = _engine_cache(request, settings, backend, version)
    if cached is not None and (found := _reuse_engine(cached, request["output"])) is not None:
        return found
    if backend == "trtexec":
        result = _build_trtexec(request, version)
    else:
        result = _build_python(request, backend, version)
    result["total_s"] = time.perf_counter() - t0
    result.update(
        host=platform.node(),
        python=sys.version.split()[0],
        gpus=_common._gpu_names(),
        cpu=_common._cpu_name(),
    )
    metadata = {k: v for k, v in result.items() if k != "network"}
    metadata["settings"] = settings
    metadata["network"] = result.get("network")
    result["metadata"] = request["output"] + ".build.metadata.json"
    _write_atomic(result["metadata"], json.dumps(metadata, indent=1).encode("utf-8"))
    if cached is not None:
        _keep_engine(cached, request["output"], result)
    return result


# ---- the engine cache of a target ---------------------------------------------------------

_ENGINE_FILES = ("", ".build.log", ".graph.json", ".build.metadata.json")


def _engine_cache(
    request: dict[str, Any], settings: dict[str, Any], backend: str, version: str
) -> str | None:
    """The folder of this build in the target's engine cache, keyed by (model, settings,
    TensorRT backend and version, GPU); None when the request asks for no cache."""
    wanted = request.get("engine_cache")
    if not isinstance(wanted, dict) or not wanted.get("folder") or not wanted.get("model"):
        return None
    gpus = _common._gpu_names()
    device = int(settings.get("device_index", 0))
    identity = {
        "model": str(wanted["model"]),
        "settings": settings,
        "backend": backend,
        "version": version,
        "gpu": gpus[device] if device < len(gpus) else "nogpu",
    }
    text = json.dumps(identity, sort_keys=True, default=str)
    key = hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]
    return os.path.join(str(wanted["folder"]), key)


def _rebase(value: Any, old: str, new: str) -> Any:
    """`value` with the paths under `old` moved under `new`."""
    if isinstance(value, str) and value.startswith(old):
        return new + value[len(old) :]
    if isinstance(value, dict):
        return {k: _rebase(v, old, new) for k, v in value.items()}
    if isinstance(value, list):
        return [_rebase(v, old, new) for v in value]
    return value


def _reuse_engine(folder: str, out: str) -> dict[str, Any] | None:
    """The stored build's answer with its files placed at `out`, or None when not stored."""
    try:
        with open(os.path.join(folder, "answer.json"), encoding="utf-8") as f:
            stored = json.load(f)
        for suffix in _ENGINE_FILES:
            source = os.path.join(folder, "engine" + suffix)
            if os.path.exists(source):
                shutil.copyfile(source, out + suffix)
    except (OSError, ValueError):
        return None
    os.utime(os.path.join(folder, "answer.json"))  # its last use, which eviction goes by
    result = _rebase(stored, os.path.join(folder, "engine"), out)
    result["engine_cache"] = {"hit": True, "folder": folder}
    emit("progress", phase="build", step="engine cache", depth=0, done=1, total=1, fraction=1.0)
    return dict(result)


def _keep_engine(folder: str, out: str, result: dict[str, Any]) -> None:
    """Store the build's files and answer in the engine cache (complete or not at all)."""
    partial = f"{folder}.partial-{os.getpid()}"
    try:
        os.makedirs(partial, exist_ok=True)
        for suffix in _ENGINE_FILES:
            if os.path.exists(out + suffix):
                shutil.copyfile(out + suffix, os.path.join(partial, "engine" + suffix))
        stored = _rebase(result, out, os.path.join(folder, "engine"))
        _write_atomic(os.path.join(partial, "answer.json"), json.dumps(stored).encode("utf-8"))
        os.replace(partial, folder)
    except OSError:
        shutil.rmtree(partial, ignore_errors=True)  # another build stored it first: fine
    result["engine_cache"] = {"hit": False, "folder": folder}


def capability(request: dict[str, Any]) -> dict[str, Any]:
    """The nodes the ONNX parser rejects (parse only, no build: runs without a GPU)."""
    settings = dict(request.get("settings") or {})
    backend, version = resolve_backend({**settings, "backend": settings.get("backend", "auto")})
    if backend == "trtexec":
        raise RunnerError(
            "the capability check needs the tensorrt or tensorrt_rtx Python module (trtexec "
            "cannot parse without building); install nsdl_jupyter[trt-rtx]: its parser runs "
            "on a CPU-only machine"
        )
    trt = _import(backend)
    log_path = os.path.join(request["workdir"], "capability.log")
    with open(log_path, "w", encoding="utf-8") as log:
        logger = _logger(trt, log)
        builder = trt.Builder(logger)
        network = _network(trt, builder, settings, family(backend, version))
        _parser, ok, errors = _parse(trt, network, logger, request["model"], settings)
        layers = network.num_layers
    return {
        "backend": backend,
        "version": version,
        "supported": ok,
        "errors": errors,
        "layers": layers,
        "log": log_path,
    }


def profile(request: dict[str, Any]) -> dict[str, Any]:
    """Per-layer profile of an engine (built first from the model when none is given): the
    plug-in `_trt_profile_runner.py`, handed this module for TensorRT and the protocol."""
    return dict(_sibling("_trt_profile_runner.py").profile(request, sys.modules[__name__]))


HANDLERS = {
    "trt_probe": probe,
    "trt_build": build,
    "trt_capability": capability,
    "trt_profile": profile,
}


def main(argv: list[str]) -> int:
    return int(_common.main(argv, HANDLERS))


if __name__ == "__main__":
    sys.exit(main(sys.argv))
