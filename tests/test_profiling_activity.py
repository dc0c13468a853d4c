"""profile_ort end to end: a real onnxruntime child process, real traces, real reports."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import onnx
import pytest
from test_profiling_helpers import LOOP_TRIPS, control_flow_model, mlp_model

import nsdl_jupyter as nj
from nsdl_jupyter.profiling import (
    OrtProfileSettings,
    ProfileError,
    ProfileSettingsError,
    available_providers,
    profile_ort,
)


@pytest.fixture
def mlp_path(tmp_path: Path) -> Path:
    path = tmp_path / "mlp.onnx"
    onnx.save(mlp_model(), path)
    return path


def test_rows_are_the_nodes_that_ran(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    model = control_flow_model()
    path = tmp_path / "cf.onnx"
    onnx.save(model, path)
    report = profile_ort(path, iterations=6, warmup=2, graph_optimization=False)

    main_nodes = {n.name for n in model.graph.node}
    # the runner's random input (seed 0) decides which If branch runs
    x = np.random.default_rng(0).standard_normal((1, 64)).astype(np.float32)
    branch = {"then_add", "then_relu"} if x.sum() > 0 else {"else_mul"}
    loop_body = {"body_add", "body_tanh", "body_cond"}
    assert set(report.layers["name"]) == main_nodes | branch | loop_body
    layers = report.layers.set_index("name")
    assert layers.loc["sum", "in_graph"]
    assert not layers.loc["body_add", "in_graph"]
    assert layers.loc["body_add", "parent"] == "loop"
    assert {layers.loc[n, "parent"] for n in branch} == {"branch"}
    assert layers.loc["body_tanh", "calls"] == LOOP_TRIPS
    assert layers.loc["final", "calls"] == 1
    assert layers.loc["loop", "op_type"] == "Loop"
    assert layers.loc["sum", "provider"] == "CPUExecutionProvider"
    assert layers.loc["sum", "input_shapes"] == "float[1,64]"  # free dim 'batch' -> 1
    assert layers.loc["final", "output_shapes"] == "float[1,64]"
    # statistics are consistent
    for column in ("mean_ms", "median_ms", "min_ms", "max_ms"):
        assert (layers[column] >= 0).all()
    assert (layers["min_ms"] <= layers["median_ms"]).all()
    assert (layers["median_ms"] <= layers["max_ms"]).all()
    assert math.isclose(layers["share"].sum(), 1.0, rel_tol=1e-9)

    md = report.metadata
    assert md["iterations"] == 6 and md["warmup"] == 2
    assert md["provider"] == "CPUExecutionProvider"
    assert md["runtime_version"] and md["device"]
    assert md["graph_optimization"] is False
    assert len(report.latencies_ms) == 6
    assert len(md["profiled_run_ms"]) == 6  # warm-up runs were skipped in the trace
    # the default trace path comes from the model name, in the model's output folder under
    # the notebook's (cwd); the report records it relative to cwd, without the home folder
    assert md["trace_path"] == "nsdl_output/cf/cf_cpu_profile.json"
    assert (tmp_path / "nsdl_output" / "cf" / "cf_cpu_profile.json").is_file()
    lat = report.latency
    assert lat["count"] == 6
    assert math.isclose(lat["p50"], float(np.median(report.latencies_ms)))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_branch_taken_matches_the_input(tmp_path: Path, seed: int) -> None:
    """Only the executed If branch has rows: the seed of the random inputs decides it."""
    path = tmp_path / "cf.onnx"
    onnx.save(control_flow_model(), path)
    report = profile_ort(path, iterations=2, warmup=0, graph_optimization=False,
                         trace_path=tmp_path / "t.json", seed=seed)  # fmt: skip
    x = np.random.default_rng(seed).standard_normal((1, 64)).astype(np.float32)
    taken = {"then_add", "then_relu"} if x.sum() > 0 else {"else_mul"}
    not_taken = {"then_add", "then_relu", "else_mul"} - taken
    names = set(report.layers["name"])
    assert taken <= names
    assert not (not_taken & names)


def test_optimized_graph_and_named_dimension(mlp_path: Path, tmp_path: Path) -> None:
    report = profile_ort(
        mlp_path,
        iterations=3,
        warmup=1,
        dim_sizes={"batch": 7},
        trace_path=tmp_path / "out" / "mlp.json",
    )
    assert report.metadata["inputs"]["x"]["shape"] == [7, 256]
    assert report.metadata["trace_path"] == "mlp.json"  # outside the working folder: name only
    assert (tmp_path / "out" / "mlp.json").is_file()
    assert any("[7,256]" in s for s in report.layers["input_shapes"])
    assert report.metadata["graph_optimization"] is True


def test_every_node_of_an_unoptimized_model_has_a_row(mlp_path: Path, tmp_path: Path) -> None:
    report = profile_ort(mlp_path, iterations=2, warmup=0, graph_optimization=False,
                         trace_path=tmp_path / "t.json")  # fmt: skip
    expected = [n.name for n in onnx.load(mlp_path).graph.node]
    assert list(report.layers["name"]) == expected  # rows in execution order
    assert report.layers["in_graph"].all()
    assert list(report.layers["onnx_nodes"]) == [[n] for n in expected]
    assert set(report.node_times()) == set(expected)


def test_model_proto_and_document_with_unsaved_edits(tmp_path: Path) -> None:
    proto = mlp_model(layers=2)
    report = profile_ort(proto, iterations=2, warmup=0, graph_optimization=False,
                         trace_path=tmp_path / "p.json")  # fmt: skip
    assert "fc0_matmul" in set(report.layers["name"])
    assert report.metadata["model_name"] == "mlp"

    path = tmp_path / "m.onnx"
    onnx.save(proto, path)
    doc = nj.open_model(path)
    doc.rename_node("fc1_relu", "last_relu")
    assert doc.dirty
    report = profile_ort(doc, iterations=2, warmup=0, graph_optimization=False,
                         trace_path=tmp_path / "d.json")  # fmt: skip
    names = set(report.layers["name"])
    assert "last_relu" in names and "fc1_relu" not in names
    assert report.metadata["model_name"] == "m"
    assert onnx.load(path).graph.node[-1].name == "fc1_relu"  # the file was not touched


def test_settings_errors_come_before_any_run(mlp_path: Path, tmp_path: Path) -> None:
    trace = tmp_path / "never.json"
    with pytest.raises(ProfileSettingsError, match=r"'seq'.*free dimensions: batch"):
        profile_ort(mlp_path, dim_sizes={"seq": 4}, trace_path=trace)
    with pytest.raises(ProfileSettingsError, match="iterations"):
        profile_ort(mlp_path, iterations=0, trace_path=trace)
    with pytest.raises(TypeError, match="valid settings: iterations"):
        profile_ort(mlp_path, iteration=3)  # type: ignore[call-arg]
    with pytest.raises(FileNotFoundError):
        profile_ort(tmp_path / "missing.onnx")
    with pytest.raises(TypeError, match="cannot profile a int"):
        profile_ort(42)
    assert not trace.exists()


def test_settings_object_and_provider_aliases() -> None:
    settings = OrtProfileSettings(provider="cuda", iterations=5)
    assert settings.provider == "CUDAExecutionProvider"
    assert OrtProfileSettings(provider="TensorRT").provider == "TensorrtExecutionProvider"
    assert settings.default_trace_path("resnet50").name == "resnet50_cuda_profile.json"
    assert OrtProfileSettings.from_kwargs(settings, warmup=0).iterations == 5


def test_providers_list_says_why_one_is_missing() -> None:
    statuses = {s.name: s for s in available_providers()}
    assert statuses["CPUExecutionProvider"].available
    for name in ("CUDAExecutionProvider", "TensorrtExecutionProvider", "DmlExecutionProvider"):
        assert name in statuses
        status = statuses[name]
        if not status.available:
            assert status.reason  # e.g. "not in this onnxruntime build (...); get it with ..."


@pytest.mark.may_skip  # a build with every provider has nothing to refuse
def test_unavailable_provider_is_an_error_not_a_silent_cpu_run(
    mlp_path: Path, tmp_path: Path
) -> None:
    statuses = {s.name: s for s in available_providers()}
    if statuses["CUDAExecutionProvider"].available:
        pytest.skip("this onnxruntime has CUDA: nothing to fall back from")
    with pytest.raises(ProfileError, match=r"CUDAExecutionProvider did not load.*fell back"):
        profile_ort(mlp_path, provider="cuda", iterations=1, warmup=0,
                    trace_path=tmp_path / "t.json")  # fmt: skip


def test_runtime_errors_carry_the_runners_stderr(tmp_path: Path) -> None:
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"this is not a protobuf")
    doc_like = tmp_path / "bad2.onnx"
    # a structurally valid model that onnxruntime rejects: an unknown operator
    model = mlp_model(layers=1)
    model.graph.node[0].op_type = "NoSuchOp"
    onnx.save(model, doc_like)
    with pytest.raises(ProfileError) as info:
        profile_ort(doc_like, iterations=1, warmup=0, trace_path=tmp_path / "t.json")
    assert "NoSuchOp" in str(info.value)


def test_keyword_settings_are_typed_as_the_settings_fields() -> None:
    """OrtSettingsKwargs (profile_ort's **kwargs) names exactly the OrtProfileSettings fields."""
    import dataclasses
    from typing import get_type_hints

    from nsdl_jupyter.profiling import OrtSettingsKwargs

    hints = get_type_hints(OrtSettingsKwargs)
    fields = {f.name: f.type for f in dataclasses.fields(OrtProfileSettings)}
    assert list(hints) == list(fields)
    for name, annotation in fields.items():
        if "Path" not in str(annotation):  # paths are also given as str
            assert hints[name] == get_type_hints(OrtProfileSettings)[name], name
