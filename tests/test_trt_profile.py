"""nj.profile_trt: what runs without a GPU.

Real here: the runner child, the request/answer protocol, TensorRT-RTX builds and its refusal
to profile without a GPU, the engine/target match, cancel. The trtexec backend is driven by a
stand-in that replays the real trtexec exports of ../shared/fixtures/trtexec: it checks the
argv and the parsing only and proves nothing about profiling on a GPU (nothing here does: the
Python-API pass is written for GPUs this machine lacks).
"""

from __future__ import annotations

import ast
import json
import os
import time
from pathlib import Path

import numpy as np
import pytest
from _trtexec_standin import PREFIX, calls, write_standin
from onnx import numpy_helper
from test_profiling_helpers import shared_fixture
from test_trt_export import small_cnn

import nsdl_jupyter as nj
from nsdl_jupyter.graph import open_engine_graph
from nsdl_jupyter.profiling import (
    EngineMismatchError,
    ProfileCancelledError,
    ProfileSettingsError,
    TrtSettings,
    TrtUnavailableError,
    start_profile_trt,
)
from nsdl_jupyter.profiling.tensorrt._settings import runner_module

CONV = "features.0.0.weight + QuantizeLinear_8 + Conv_12 + PWN(Clip_16)"


@pytest.fixture
def standin(tmp_path: Path) -> tuple[TrtSettings, Path]:
    """Settings that run the stand-in trtexec, and the file its argv lands in."""
    script, log = write_standin(tmp_path)
    settings = TrtSettings(
        backend="trtexec", trtexec_path=str(script), cache_dir=str(tmp_path / "cache")
    )
    return settings, log


def _engine(tmp_path: Path, metadata: dict[str, object] | None = None) -> Path:
    engine = tmp_path / "model.engine"
    engine.write_bytes(b"not a real engine")
    if metadata is not None:
        (tmp_path / "model.engine.build.metadata.json").write_text(json.dumps(metadata))
    return engine


@pytest.mark.may_skip  # reads ../shared/fixtures: skipped, saying so, where absent
def test_trtexec_profiles_a_prebuilt_engine_with_the_profiling_flags(
    standin: tuple[TrtSettings, Path], tmp_path: Path
) -> None:
    settings, log = standin
    report = nj.profile_trt(_engine(tmp_path), settings, passes=7, timeout=120)

    (argv,) = calls(log)
    assert argv[0].startswith("--loadEngine=") and argv[0].endswith("model.engine")
    for flag in ("--separateProfileRun", "--profilingVerbosity=detailed", "--iterations=7"):
        assert flag in argv
    for flag in ("--exportProfile=", "--exportLayerInfo=", "--exportTimes="):
        assert any(a.startswith(flag) for a in argv), flag
    assert "--duration=0" in argv

    raw = json.loads(shared_fixture("trtexec", PREFIX + "profile.json").read_text())
    assert len(report.layers) == len([r for r in raw if "name" in r]) == 73
    row = report.layers.set_index("name").loc[CONV]
    assert row["precision"] == "INT8"
    assert row["op_type"] == "CaskConvolution"
    assert row["tactic"]
    assert "Int8" in row["formats"]
    assert row["onnx_nodes"] == ["QuantizeLinear_8", "Conv_12", "Clip_16"]
    assert row["mean_ms"] == pytest.approx(0.00872257)
    meta = report.metadata
    assert (meta["source"], meta["backend"], meta["runtime_version"]) == (
        "tensorrt",
        "trtexec",
        "10.3.0",
    )
    assert meta["latency_source"].startswith("trtexec --exportTimes")
    assert meta["iterations"] == 7
    # the argv is recorded with file names only (no paths of the machines involved)
    assert meta["trtexec_argv"][:3] == ["trtexec", "--loadEngine=model.engine", argv[1]]
    assert not any("/" in arg for arg in meta["trtexec_argv"])
    timing = json.loads(shared_fixture("trtexec", PREFIX + "timing.json").read_text())
    assert report.latencies_ms.tolist() == pytest.approx([t["latencyMs"] for t in timing])


@pytest.mark.may_skip  # reads ../shared/fixtures: skipped, saying so, where absent
def test_trtexec_builds_the_model_then_profiles_the_engine(
    standin: tuple[TrtSettings, Path],
) -> None:
    settings, log = standin
    profiled = TrtSettings.from_kwargs(
        settings, optimization_profiles=[{"image": {"min": [1, 3, 16, 16], "opt": [1, 3, 16, 16],
                                                    "max": [1, 3, 16, 16]}}]
    )  # fmt: skip
    report = nj.profile_trt(small_cnn(), profiled, passes=3, timeout=120)
    build, run = calls(log)
    assert build[0].startswith("--onnx=") and "--skipInference" in build
    engine = next(a for a in build if a.startswith("--saveEngine=")).split("=", 1)[1]
    assert run[0] == f"--loadEngine={engine}"
    assert "--shapes=image:1x3x16x16" in run
    assert report.metadata["built_here"] is True
    # rows keep only the names of the model's real nodes: mobilenet's are not in small_cnn
    assert all(nodes == [] for nodes in report.layers["onnx_nodes"])


@pytest.mark.may_skip  # reads ../shared/fixtures: skipped, saying so, where absent
def test_hide_non_compute_leaves_out_reformats_and_no_ops(
    standin: tuple[TrtSettings, Path], tmp_path: Path
) -> None:
    settings, _log = standin
    full = nj.profile_trt(_engine(tmp_path), settings, timeout=120)
    shown = nj.profile_trt(_engine(tmp_path), settings, hide_non_compute=True, timeout=120)
    hidden = full.layers[full.layers["op_type"].isin(["Reformat", "NoOp"])]
    assert len(hidden) > 0
    assert len(shown.layers) == len(full.layers) - len(hidden)
    assert not shown.layers["op_type"].isin(["Reformat", "NoOp"]).any()
    assert shown.metadata["hidden_non_compute"]["layers"] == len(hidden)
    assert shown.metadata["hidden_non_compute"]["mean_ms"] == pytest.approx(hidden["mean_ms"].sum())


@pytest.mark.may_skip  # reads ../shared/fixtures: skipped, saying so, where absent
def test_report_rows_lay_over_the_engine_graph(
    standin: tuple[TrtSettings, Path], tmp_path: Path
) -> None:
    settings, _log = standin
    report = nj.profile_trt(_engine(tmp_path), settings, timeout=120)
    engine = open_engine_graph(shared_fixture("trtexec", PREFIX + "graph.json"))
    assert set(report.layers["name"]) == set(engine.layer_names)
    for name, nodes in zip(report.layers["name"], report.layers["onnx_nodes"], strict=True):
        assert engine.onnx_nodes[name] == nodes


@pytest.mark.may_skip  # reads ../shared/fixtures: skipped, saying so, where absent
def test_cancel_ends_the_run_and_its_trtexec(tmp_path: Path) -> None:
    script, log = write_standin(tmp_path, sleep=60)
    settings = TrtSettings(backend="trtexec", trtexec_path=str(script))
    job = start_profile_trt(_engine(tmp_path), settings)
    deadline = time.monotonic() + 60
    while not log.exists() and time.monotonic() < deadline:  # trtexec has started
        time.sleep(0.05)
    assert log.exists()
    job.cancel()
    with pytest.raises(ProfileCancelledError):
        job.wait(60)
    time.sleep(0.5)
    assert not Path(str(log) + ".finished").exists()  # the stand-in was ended, not finished


@pytest.mark.may_skip  # reads ../shared/fixtures: skipped, saying so, where absent
def test_a_prebuilt_engine_from_another_tensorrt_is_refused_before_it_runs(
    standin: tuple[TrtSettings, Path], tmp_path: Path
) -> None:
    settings, log = standin
    metadata = {"backend": "trtexec", "version": "8.6.1", "gpus": ["NVIDIA TITAN RTX"]}
    with pytest.raises(EngineMismatchError, match=r"8\.6\.1 and the target has 10\.3\.0"):
        nj.profile_trt(_engine(tmp_path, metadata), settings, timeout=120)
    assert not log.exists()


def test_engine_mismatch_names_version_backend_and_gpu() -> None:
    mismatch = runner_module()._sibling("_trt_profile_runner.py").engine_mismatch
    built = {"backend": "tensorrt", "version": "10.3.0", "gpu": "NVIDIA H200"}
    assert mismatch(built, "tensorrt", "10.3.0.26", "NVIDIA H200") is None
    assert "rebuild it on the target" in mismatch(built, "tensorrt", "10.8.0", "NVIDIA H200")
    assert "NVIDIA L4" in mismatch(built, "tensorrt", "10.3.0", "NVIDIA L4")
    assert (
        mismatch({**built, "hardware_compatible": True}, "tensorrt", "10.3.0", "NVIDIA L4") is None
    )
    assert "tensorrt_rtx" in mismatch(built, "tensorrt_rtx", "1.7.1", "NVIDIA RTX 5090")


def test_trtexec_profile_argv_carries_shapes_inputs_and_plugins() -> None:
    argv = (
        runner_module()
        ._sibling("_trt_profile_runner.py")
        .trtexec_profile_argv(
            trtexec="trtexec",
            engine="m.engine",
            workdir="w",
            passes=4,
            warmup_ms=100,
            device=1,
            shapes={"x": [2, 3], "mask": [2, 7]},
            input_files={"x": "w/input_0.bin"},
            plugins=["libp.so"],
        )
    )
    assert argv[:3] == ["trtexec", "--loadEngine=m.engine", "--separateProfileRun"]
    assert "--shapes=x:2x3,mask:2x7" in argv
    assert "--loadInputs=x:w/input_0.bin" in argv
    assert "--dynamicPlugins=libp.so" in argv
    assert "--device=1" in argv and "--warmUp=100" in argv


@pytest.mark.may_skip  # reads ../shared/fixtures: skipped, saying so, where absent
def test_input_folder_goes_to_trtexec_as_raw_files(
    standin: tuple[TrtSettings, Path], tmp_path: Path
) -> None:
    settings, log = standin
    folder = tmp_path / "inputs"
    folder.mkdir()
    image = np.full((1, 3, 16, 16), 0.5, dtype=np.float32)
    (folder / "image.pb").write_bytes(numpy_helper.from_array(image, "image").SerializeToString())
    nj.profile_trt(_engine(tmp_path), settings, model=small_cnn(), input_folder=folder, timeout=120)
    (argv,) = calls(log)
    spec = next(a for a in argv if a.startswith("--loadInputs="))
    name, path = spec.removeprefix("--loadInputs=").split(":", 1)
    assert name == "image" and path.endswith(".bin")


def test_a_weight_stripped_engine_needs_its_model(tmp_path: Path) -> None:
    metadata = {"backend": "tensorrt", "version": "10.3.0", "settings": {"refit": "stripped"}}
    with pytest.raises(ProfileSettingsError, match="weight-stripped"):
        nj.profile_trt(_engine(tmp_path, metadata), backend="trtexec")


def test_input_folder_without_the_model_says_what_to_pass(tmp_path: Path) -> None:
    with pytest.raises(ProfileSettingsError, match="model=onnx_model"):
        nj.profile_trt(_engine(tmp_path), backend="trtexec", input_folder=tmp_path)


def test_bad_pass_count_is_refused() -> None:
    with pytest.raises(ProfileSettingsError, match="passes=0"):
        nj.profile_trt(small_cnn(), passes=0)


# ---- TensorRT-RTX, real: it builds here and refuses to profile without a GPU -------------------


@pytest.mark.may_skip  # on a GPU machine the no-GPU error cannot happen
def test_without_a_gpu_the_python_api_says_where_to_profile(tmp_path: Path) -> None:
    pytest.importorskip("tensorrt_rtx", reason="needs TensorRT-RTX: pip install -e '.[trt-rtx]'")
    if os.path.exists("/dev/nvidia0"):
        pytest.skip("this machine has a GPU: the no-GPU error cannot happen here")
    with pytest.raises(TrtUnavailableError, match="needs an NVIDIA GPU on the target"):
        nj.profile_trt(small_cnn(), backend="tensorrt_rtx", timeout=120)


def test_an_engine_built_here_is_checked_against_the_target_first(tmp_path: Path) -> None:
    pytest.importorskip("tensorrt_rtx", reason="needs TensorRT-RTX: pip install -e '.[trt-rtx]'")
    built = nj.export_engine(
        small_cnn(), tmp_path / "cnn.engine", backend="tensorrt_rtx", timeout=300
    )
    metadata = json.loads(built.metadata.read_text())
    assert metadata["backend"] == "tensorrt_rtx"
    metadata["version"] = "1.6.0.0"  # as if built by an older TensorRT-RTX
    built.metadata.write_text(json.dumps(metadata))
    with pytest.raises(EngineMismatchError, match=r"built with TensorRT 1\.6\.0\.0"):
        nj.profile_trt(built, backend="tensorrt_rtx", timeout=120)


def _attribute_chains(tree: ast.AST, roots: set[str]) -> set[tuple[str, ...]]:
    """Every `root.a.b` chain in `tree` whose root is one of `roots`."""
    chains = set()
    for found in ast.walk(tree):
        node, names = found, []
        while isinstance(node, ast.Attribute):
            names.append(node.attr)
            node = node.value
        if isinstance(node, ast.Name) and node.id in roots and names:
            chains.add((node.id, *reversed(names)))
    return chains


def test_the_python_api_pass_uses_only_names_that_exist() -> None:
    """The Python-API pass cannot run without a GPU: every TensorRT name it uses is looked up
    in the installed TensorRT-RTX (the API family of TensorRT 10/11), and every name it takes
    from its host runner in the real runner modules, so a misspelt name cannot hide."""
    trt = pytest.importorskip(
        "tensorrt_rtx", reason="needs TensorRT-RTX: pip install -e '.[trt-rtx]'"
    )
    host = runner_module()
    owners = {
        "trt": trt,
        "engine": trt.ICudaEngine,
        "context": trt.IExecutionContext,
        "inspector": trt.EngineInspector,
        "refitter": trt.Refitter,
        "parser_refitter": trt.OnnxParserRefitter,
        "runtime": trt.Runtime,
        "host": host,
        "common": host._common,
    }
    path = Path(host.__file__).with_name("_trt_profile_runner.py")
    chains = _attribute_chains(ast.parse(path.read_text()), set(owners))
    missing = []
    for root, *names in sorted(chains):
        value = owners[root]
        for depth, name in enumerate(names):
            if not hasattr(value, name):
                missing.append(".".join([root, *names[: depth + 1]]))
                break
            value = getattr(value, name)
    assert {c[0] for c in chains} == set(owners)  # every kind of object is looked at
    assert not missing, missing
