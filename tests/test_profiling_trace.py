"""The onnxruntime trace parser: real CPU traces, the real CUDA trace, layouts, nesting."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest
from test_profiling_helpers import LOOP_TRIPS, control_flow_model, shared_fixture

import nsdl_jupyter as nj
from nsdl_jupyter.profiling import TraceFormatError, parse_ort_trace


@pytest.fixture(scope="module")
def control_flow_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real CPU trace of 4 runs of the If/Loop model (written by onnxruntime itself; tests
    may run onnxruntime in-process, the product never does)."""
    folder = tmp_path_factory.mktemp("trace")
    so = ort.SessionOptions()
    so.enable_profiling = True
    so.profile_file_prefix = str(folder / "cf")
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(control_flow_model().SerializeToString(), so,
                                providers=["CPUExecutionProvider"])  # fmt: skip
    x = np.ones((2, 64), np.float32)  # sum > 0: the then-branch runs
    for _ in range(4):
        sess.run(None, {"x": x})
    return Path(sess.end_profiling())


def _events(path: Path) -> list[dict]:  # type: ignore[type-arg]
    return list(json.loads(path.read_text()))


def test_nested_events_are_counted_once(control_flow_trace: Path) -> None:
    parsed = parse_ort_trace(control_flow_trace)
    events = _events(control_flow_trace)
    kernels = [e for e in events if e["cat"] == "Node" and e["name"].endswith("_kernel_time")]
    runs = [e for e in events if e["name"] == "model_run"]
    assert len(runs) == 4 and len(parsed.run_ms) == 4
    top = {"sum", "gt", "branch", "loop", "final"}
    top_total = sum(e["dur"] for e in kernels if e["name"][: -len("_kernel_time")] in top)
    naive_total = sum(e["dur"] for e in kernels)
    parsed_total = parsed.layers["mean_ms"].sum() * 4 * 1e3  # back to us over 4 runs
    # the parser's per-node self times add up to the top-level time, not the naive sum
    assert math.isclose(parsed_total, top_total, rel_tol=1e-9)
    # the naive sum adds every nested kernel (a Loop body or If branch node, inside its
    # parent's window) a second time: counted by events, not by a ratio of their times
    nested = [e for e in kernels if e["name"][: -len("_kernel_time")] not in top]
    assert len(nested) == 4 * (3 * LOOP_TRIPS + 2)  # 3 body nodes per trip, 2 then-branch nodes
    assert naive_total > top_total
    assert math.isclose(parsed.node_sum_ms.sum() * 1e3, top_total, rel_tol=1e-9)

    layers = parsed.layers.set_index("name")
    loop_dur = sum(e["dur"] for e in kernels if e["name"] == "loop_kernel_time") / 4 / 1e3
    body = layers.loc[["body_add", "body_tanh", "body_cond"], "mean_ms"].sum()
    assert math.isclose(layers.loc["loop", "mean_ms"] + body, loop_dur, rel_tol=1e-9)
    assert layers.loc["body_add", "calls"] == LOOP_TRIPS
    assert layers.loc["body_add", "parent"] == "loop"
    assert layers.loc["then_relu", "parent"] == "branch"
    assert layers.loc["sum", "input_shapes"] == "float[2,64]"
    # body nodes are not nodes of the main graph: no onnx_nodes without a model
    assert layers.loc["body_add", "onnx_nodes"] == []
    assert layers.loc["sum", "onnx_nodes"] == ["sum"]

    tl = parsed.timeline
    assert (tl["name"] == "body_add").sum() == LOOP_TRIPS
    assert set(tl.loc[tl["parent"] == "loop", "depth"]) == {1}
    assert (tl["start_ms"].diff().dropna() >= 0).all()


def test_skip_runs_drops_warmups(control_flow_trace: Path) -> None:
    all_runs = parse_ort_trace(control_flow_trace)
    later = parse_ort_trace(control_flow_trace, skip_runs=1)
    assert len(later.run_ms) == 3 and later.skipped_runs == 1
    assert np.allclose(later.run_ms, all_runs.run_ms[1:])
    with pytest.raises(ValueError, match="cannot skip 4"):
        parse_ort_trace(control_flow_trace, skip_runs=4)


def test_other_json_layouts_parse_the_same(control_flow_trace: Path, tmp_path: Path) -> None:
    events = _events(control_flow_trace)
    reference = parse_ort_trace(control_flow_trace).layers
    one_line = tmp_path / "one_line.json"
    one_line.write_text(json.dumps(events))
    wrapped = tmp_path / "wrapped.json"
    wrapped.write_text(json.dumps({"traceEvents": events}, indent=2))
    for path in (one_line, wrapped):
        layers = parse_ort_trace(path).layers
        assert list(layers["name"]) == list(reference["name"])
        assert np.allclose(layers["mean_ms"], reference["mean_ms"])


def test_not_a_trace(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"hello": 1}')
    with pytest.raises(TraceFormatError):
        parse_ort_trace(bad)
    empty = tmp_path / "empty.json"
    empty.write_text("[\n]\n")
    with pytest.raises(TraceFormatError, match="no node events"):
        parse_ort_trace(empty)
    truncated = tmp_path / "truncated.json"
    truncated.write_text('[{"cat": "Node", "name": "a_kernel_time", "ts": 1, "dur')
    with pytest.raises(TraceFormatError):
        parse_ort_trace(truncated)
    with pytest.raises(FileNotFoundError):
        parse_ort_trace(tmp_path / "missing.json")


@pytest.mark.may_skip
def test_real_cuda_trace_parses() -> None:
    path = shared_fixture("ort", "ort_cuda_resnet50_b8.json")
    report = nj.load_ort_profile(path, skip_runs=3)  # 3 warm-up runs, then 20 profiled
    assert len(report.layers) == 122
    assert report.metadata["iterations"] == 20
    assert set(report.layers["provider"]) == {"CUDAExecutionProvider"}
    assert report.layers["calls"].eq(1).all()
    first = report.layers.iloc[0]
    assert first["name"] == "/conv1/Conv"
    assert first["input_shapes"] == "float[8,3,224,224], float[64,3,7,7], float[64]"
    assert first["output_shapes"] == "float[8,64,112,112]"
    # profiled runs of ResNet-50 b8 on the H200 took ~3.6 ms (2.40 ms bare, per the README)
    assert 2.5 < report.latency["p50"] < 5.0
    assert "no bare pass" in report.metadata["timing_note"]
    assert len(report.timeline_events) == 122


@pytest.mark.may_skip
def test_real_cuda_trace_with_its_model_marks_graph_nodes() -> None:
    path = shared_fixture("ort", "ort_cuda_resnet50_b8.json")
    from nsdl_jupyter.examples import resnet50

    report = nj.load_ort_profile(path, resnet50(batch=8), skip_runs=3)
    assert report.layers["in_graph"].all()  # the example mirrors torchvision's export names
