"""TrtSettings: field checks, the version gate, the companion-file JSON form, trtexec's argv.

No TensorRT needed: the gate and the argv are the runner's pure functions.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import onnx
import pytest
from onnx import TensorProto, helper

import nsdl_jupyter as nj
from nsdl_jupyter.profiling import OnnxParseError, TrtSettings, TrtSettingsError
from nsdl_jupyter.profiling.tensorrt._settings import runner_module

# What the TensorRT-RTX 1.7.1 ONNX parser logged for a model with two unknown custom ops
# (recorded here from its ILogger; trtexec prints the same parser messages, prefixed with a
# timestamp and "[E] [TRT]").
PARSER_LOG = """\
[11/30/2026-16:19:29] [E] [TRT] ModelImporter.cpp:140: While parsing node number 1 [Foo -> "b"]:
[11/30/2026-16:19:29] [E] [TRT] ModelImporter.cpp:142: --- Begin node ---
Node name: foo_bad
[11/30/2026-16:19:29] [E] [TRT] ModelImporter.cpp:143: --- End node ---
[11/30/2026-16:19:29] [E] [TRT] ModelImporter.cpp:151: ERROR: onnxOpCheckers.cpp:998 In function checkFallbackPluginImporter:
[6] creator && "Plugin not found, are the plugin name, version, and namespace correct?"
[11/30/2026-16:19:29] [E] [TRT] ModelImporter.cpp:140: While parsing node number 2 [Bar -> "c"]:
[11/30/2026-16:19:29] [E] [TRT] ModelImporter.cpp:142: --- Begin node ---
Node name: bar_bad
[11/30/2026-16:19:29] [E] [TRT] ModelImporter.cpp:143: --- End node ---
[11/30/2026-16:19:29] [E] [TRT] ModelImporter.cpp:151: ERROR: onnxOpCheckers.cpp:998 In function checkFallbackPluginImporter:
[6] creator && "Plugin not found, are the plugin name, version, and namespace correct?"
"""  # noqa: E501 (log lines as TensorRT wrote them)


# every field away from its default, all of it valid for TensorRT 10
EVERY_SETTING = TrtSettings(
    backend="trtexec",
    trtexec_path="/opt/tensorrt/bin/trtexec",
    device_index=1,
    plugins=("libplug.so",),
    typing="obey",
    tf32=False,
    fp16=True,
    bf16=True,
    int8=True,
    int8_calibration_cache="calib.cache",
    sparsity=True,
    cudnn_tactics=True,
    cublas_tactics=False,
    native_instance_norm=False,
    optimization_level=4,
    max_aux_streams=0,
    inferred_batch_size=8,
    hardware_compatible=True,
    version_compatible=True,
    exclude_lean_runtime=True,
    workspace_mib=1024,
    refit="stripped",
    engine_metadata="none",
    optimization_profiles=(
        {
            "x": {"min": [1, 3], "opt": [4, 3], "max": [8, 3]},
            "y": {"min": [2], "opt": [2], "max": [2]},
        },
    ),
    layer_precisions={"/conv1/Conv": "fp32"},
    timing_cache=False,
    cache_dir="/tmp/cache",
)


def test_defaults_are_tensorrts_and_public() -> None:
    settings = nj.TrtSettings()
    assert settings.tf32 and settings.native_instance_norm and settings.timing_cache
    assert not (settings.fp16 or settings.int8 or settings.fp8 or settings.bf16)
    assert settings.optimization_level == 3
    assert settings.max_aux_streams is None
    assert settings.refit == "none"
    assert settings.engine_metadata == "detailed"


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"int8": True, "fp8": True}, "exclusive"),
        ({"optimization_level": 6}, "0..5"),
        ({"max_aux_streams": -1}, ">= 0"),
        ({"workspace_mib": 0}, ">= 1"),
        ({"typing": "loose"}, "'strong'"),
        ({"refit": "yes"}, "'refittable'"),
        ({"fp16": 1}, "True or False"),
        ({"exclude_lean_runtime": True}, "version_compatible=True"),
        ({"int8_calibration_cache": "calib.cache"}, "int8=True"),
        ({"typing": "strong", "fp16": True}, "model's types"),
        ({"layer_precisions": {"/conv1/Conv": "fp16"}}, "'obey' or 'prefer'"),
        ({"typing": "obey", "layer_precisions": {"/conv1/Conv": "fp12"}}, "'fp16'"),
        ({"trtexec_path": "/opt/trtexec"}, "backend='trtexec'"),
        ({"optimization_profiles": {"x": {}}}, "wrap the dict in a list"),
        (
            {"optimization_profiles": [{"x": {"min": [1, 4], "opt": [8, 4], "max": [4, 4]}}]},
            "min <= opt <= max",
        ),
        ({"optimization_profiles": [{"x": {"min": [1], "max": [2]}}]}, "'min', 'opt', 'max'"),
    ],
)
def test_field_checks_say_what_to_change(kwargs: dict[str, object], words: str) -> None:
    with pytest.raises(TrtSettingsError, match=None) as caught:
        TrtSettings(**kwargs)  # type: ignore[arg-type]
    assert words in str(caught.value)


def test_unknown_keyword_names_the_valid_ones() -> None:
    with pytest.raises(TypeError, match="valid settings: backend, trtexec_path"):
        TrtSettings.from_kwargs(fp17=True)


@pytest.mark.parametrize(
    ("backend", "version"), [("tensorrt", "11.4.0"), ("tensorrt_rtx", "1.7.1.116")]
)
def test_strongly_typed_only_tensorrt_refuses_precision_flags(backend: str, version: str) -> None:
    with pytest.raises(TrtSettingsError) as caught:
        TrtSettings(fp16=True).check(backend, version)
    assert "convert the model with convert_to_fp16 first" in str(caught.value)
    assert version in str(caught.value)
    refusals = {
        "bf16": TrtSettings(bf16=True),
        "int8": TrtSettings(int8=True),
        "fp8": TrtSettings(fp8=True),
        "typing='obey'": TrtSettings(typing="obey"),
        "layer_precisions": TrtSettings(typing="prefer", layer_precisions={"n": "fp16"}),
        "cudnn_tactics": TrtSettings(cudnn_tactics=True),
    }
    for key, settings in refusals.items():
        with pytest.raises(TrtSettingsError, match=r"strongly typed|no cuDNN") as caught:
            settings.check(backend, version)
        assert key in str(caught.value)
    # what the strongly typed TensorRTs keep: every other setting of the dialog
    trt10_only = {
        "typing": "strong",
        "fp16": False,
        "bf16": False,
        "int8": False,
        "int8_calibration_cache": None,
        "cudnn_tactics": False,
        "layer_precisions": {},
    }
    dataclasses.replace(EVERY_SETTING, **trt10_only).check(backend, version)


def test_tensorrt_10_takes_every_setting_of_the_dialog() -> None:
    TrtSettings(
        typing="obey",
        fp16=True,
        bf16=True,
        int8=True,
        int8_calibration_cache="calib.cache",
        cudnn_tactics=True,
        cublas_tactics=True,
        layer_precisions={"/fc/Gemm": "fp32"},
    ).check("tensorrt", "10.13.0.35")
    with pytest.raises(TrtSettingsError, match="use one of"):
        TrtSettings().check("onnxruntime", "1.0")


def test_json_round_trip_keeps_every_field_and_only_writes_changes() -> None:
    settings = EVERY_SETTING
    # written: every field that differs from its default (all but fp8 and cublas_tactics)
    assert set(settings.to_json()) == {"schema", *settings.field_names()} - {
        "fp8",
        "cublas_tactics",
    }
    text = json.dumps(settings.to_json())
    back = TrtSettings.from_json(json.loads(text))
    assert back == settings
    assert TrtSettings().to_json() == {"schema": "nsdl.trt_settings/1"}
    assert TrtSettings(fp16=True).to_json() == {"schema": "nsdl.trt_settings/1", "fp16": True}


def test_from_json_refuses_other_files() -> None:
    with pytest.raises(TrtSettingsError, match=r"TrtSettings\.to_json"):
        TrtSettings.from_json({"fp16": True})
    with pytest.raises(TrtSettingsError, match="newer nsdl_jupyter"):
        TrtSettings.from_json({"schema": "nsdl.trt_settings/1", "fp17": True})
    with pytest.raises(TrtSettingsError, match="optimization_level=9"):
        TrtSettings.from_json({"schema": "nsdl.trt_settings/1", "optimization_level": 9})


def test_trtexec_argv_from_settings_tensorrt_10() -> None:
    argv = EVERY_SETTING.trtexec_argv(
        "m.onnx", "m.engine", version="10.13.0", timing_cache="t.cache"
    )
    assert argv == [
        "/opt/tensorrt/bin/trtexec",
        "--onnx=m.onnx",
        "--saveEngine=m.engine",
        "--skipInference",
        "--fp16",
        "--bf16",
        "--int8",
        "--precisionConstraints=obey",
        "--calib=calib.cache",
        "--layerPrecisions=/conv1/Conv:fp32",
        "--tacticSources=+CUDNN,-CUBLAS",
        "--noTF32",
        "--sparsity=enable",
        "--pluginInstanceNorm",
        "--builderOptimizationLevel=4",
        "--maxAuxStreams=0",
        "--memPoolSize=workspace:1024M",
        "--hardwareCompatibilityLevel=ampere+",
        "--versionCompatible",
        "--excludeLeanRuntime",
        "--stripWeights",
        "--profilingVerbosity=none",
        "--dynamicPlugins=libplug.so",
        "--device=1",
        "--minShapes=x:1x3,y:2",
        "--optShapes=x:4x3,y:2",
        "--maxShapes=x:8x3,y:2",
        "--timingCacheFile=t.cache",
    ]


def test_trtexec_argv_tensorrt_11_is_strongly_typed_and_gated() -> None:
    argv = TrtSettings(backend="trtexec", refit="refittable").trtexec_argv(
        "m.onnx", "m.engine", version="11.4.0"
    )
    assert argv == [
        "trtexec",
        "--onnx=m.onnx",
        "--saveEngine=m.engine",
        "--skipInference",
        "--builderOptimizationLevel=3",
        "--refit",
        "--profilingVerbosity=detailed",
        "--device=0",
    ]
    assert not any("fp16" in a or "tacticSources" in a for a in argv)
    with pytest.raises(TrtSettingsError, match="convert_to_fp16"):
        TrtSettings(backend="trtexec", fp16=True).trtexec_argv("m.onnx", "e", version="11.4.0")


def test_trtexec_builds_one_optimization_profile() -> None:
    one = {"x": {"min": [1, 3], "opt": [4, 3], "max": [8, 3]}}
    two = dataclasses.replace(EVERY_SETTING, optimization_profiles=(one, one))
    with pytest.raises(TrtSettingsError, match="trtexec builds one profile"):
        two.trtexec_argv("m.onnx", "m.engine", version="10.13.0")
    two.check("tensorrt", "10.13.0")  # the Python API takes several


def test_trtexec_version_banner() -> None:
    version = runner_module().trtexec_version
    assert version("&&&& RUNNING TensorRT.trtexec [TensorRT v101300] [b35] # trtexec") == "10.13.0"
    assert version("&&&& RUNNING TensorRT.trtexec [TensorRT v8601] # trtexec --help") == "8.6.1"
    assert version("no banner") is None


def test_parser_errors_from_trtexec_log_name_the_nodes() -> None:
    errors = runner_module().parser_errors_from_log(PARSER_LOG.splitlines())
    assert [(e["node"], e["name"], e["operator"]) for e in errors] == [
        (1, "foo_bad", "Foo"),
        (2, "bar_bad", "Bar"),
    ]
    assert all("Plugin not found" in e["message"] for e in errors)
    assert errors[0]["code"] == 6


# ---- the trtexec backend through a stand-in binary: argv and log parsing only -----------
# (no trtexec can be installed here; the stand-in replays TensorRT's banner and, when told,
# the parser log above; what it proves is the argv the runner passes and how it reads output)

STAND_IN = """#!/bin/sh
echo "&&&& RUNNING TensorRT.trtexec [TensorRT v101300] [b35] # trtexec $*"
[ "$1" = "--help" ] && exit 0
printf '%s\\n' "$@" > "$0.argv"
if [ -n "$FAIL_WITH" ]; then cat "$FAIL_WITH"; exit 1; fi
for a in "$@"; do case "$a" in --saveEngine=*) printf 'plan' > "${a#--saveEngine=}";; esac; done
"""


def _stand_in(tmp_path: Path) -> Path:
    path = tmp_path / "trtexec"
    path.write_text(STAND_IN)
    path.chmod(0o755)
    return path


def _relu_model() -> onnx.ModelProto:
    node = helper.make_node("Relu", ["x"], ["y"], name="relu")
    graph = helper.make_graph(
        [node],
        "relu",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_trtexec_backend_passes_the_settings_argv(tmp_path: Path) -> None:
    trtexec = _stand_in(tmp_path)
    settings = TrtSettings(
        backend="trtexec",
        trtexec_path=str(trtexec),
        fp16=True,
        optimization_level=5,
        cache_dir=str(tmp_path / "cache"),
    )
    result = nj.export_engine(_relu_model(), tmp_path / "out" / "m.engine", settings)
    passed = Path(f"{trtexec}.argv").read_text().splitlines()
    argv = result.answer["argv"]
    assert [str(trtexec), *passed] == argv
    model, engine = argv[1].removeprefix("--onnx="), argv[2].removeprefix("--saveEngine=")
    cache = argv[-2].removeprefix("--timingCacheFile=")
    assert argv == settings.trtexec_argv(
        model,
        engine,
        version="10.13.0",
        timing_cache=cache,
        layer_info=engine + ".graph.json",
    )
    assert "--fp16" in argv
    assert "--builderOptimizationLevel=5" in argv
    assert cache.startswith(str(tmp_path / "cache"))
    assert result.version == "10.13.0"
    assert result.engine.read_bytes() == b"plan"
    assert "&&&& RUNNING TensorRT.trtexec" in result.log.read_text()


def test_trtexec_backend_maps_parser_errors_from_its_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "parser.log"
    log.write_text(PARSER_LOG)
    monkeypatch.setenv("FAIL_WITH", str(log))
    monkeypatch.setenv("NSDL_CACHE_DIR", str(tmp_path / "cache"))  # not the user's ~/.cache
    settings = TrtSettings(backend="trtexec", trtexec_path=str(_stand_in(tmp_path)))
    with pytest.raises(OnnxParseError) as caught:
        nj.export_engine(_relu_model(), tmp_path / "m.engine", settings)
    assert [(n["name"], n["operator"]) for n in caught.value.nodes] == [
        ("foo_bad", "Foo"),
        ("bar_bad", "Bar"),
    ]


def test_trtexec_backend_refuses_by_its_version(tmp_path: Path) -> None:
    trtexec = _stand_in(tmp_path)
    trtexec.write_text(STAND_IN.replace("v101300", "v110400"))
    settings = TrtSettings(backend="trtexec", trtexec_path=str(trtexec), int8=True)
    with pytest.raises(TrtSettingsError, match=r"TensorRT 11\.4\.0 builds strongly typed"):
        nj.export_engine(_relu_model(), tmp_path / "m.engine", settings)


def test_timing_cache_lives_in_the_cache_folder_and_is_reused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Default folder from NSDL_CACHE_DIR; one file per backend and version, passed again on
    the next build (trtexec reads and updates it; argv only, through the stand-in)."""
    monkeypatch.setenv("NSDL_CACHE_DIR", str(tmp_path / "nsdl-cache"))
    settings = TrtSettings(backend="trtexec", trtexec_path=str(_stand_in(tmp_path)))
    caches = []
    for name in ("a", "b"):
        built = nj.export_engine(_relu_model(), tmp_path / f"{name}.engine", settings)
        caches += [a for a in built.answer["argv"] if a.startswith("--timingCacheFile=")]
    assert len(caches) == 2
    assert caches[0] == caches[1]
    path = Path(caches[0].removeprefix("--timingCacheFile="))
    assert path.parent == tmp_path / "nsdl-cache" / "tensorrt"
    assert path.name.startswith("timing-trtexec-10.13.0-")
    no_cache = dataclasses.replace(settings, timing_cache=False)
    built = nj.export_engine(_relu_model(), tmp_path / "c.engine", no_cache)
    assert not any(a.startswith("--timingCacheFile=") for a in built.answer["argv"])


def test_keyword_settings_are_typed_as_the_settings_fields() -> None:
    """TrtSettingsKwargs (export_engine's **kwargs) names exactly the TrtSettings fields."""
    import dataclasses
    from typing import Literal, get_origin, get_type_hints

    from nsdl_jupyter.profiling import TrtSettingsKwargs

    hints = get_type_hints(TrtSettingsKwargs)
    fields = get_type_hints(TrtSettings)
    assert list(hints) == [f.name for f in dataclasses.fields(TrtSettings)]
    for name, annotation in fields.items():
        if annotation in (bool, int, str, int | None) or get_origin(annotation) is Literal:
            assert hints[name] == annotation, name
