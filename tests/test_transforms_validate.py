"""FP16 validation (issue 9 item 11): source and result run by onnxruntime in a child
process, per-output errors in the status, and the bisection that keeps nodes float32 until
the result runs within tolerance. Small models built in code; the real exports are in
test_transforms_real_exports.py."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest

import nsdl_jupyter as nj
from nsdl_jupyter.transforms import TransformError, convert_to_fp16
from nsdl_jupyter.transforms._bisect import bisect_nodes, node_role
from nsdl_jupyter.transforms._validate import ValidationResult
from tests._text_models import save_text

# 1e5 is beyond float16's range (65504): converted, the constant is clamped and y comes out
# x * 0.655. onnxruntime's CPU computes elementwise float16 chains in float32 (it inserts
# Casts around kernels it lacks), so only a stored value shows the overflow: a weight.
OVERFLOW = """<ir_version: 8, opset_import: ["": 18]>
g (float[8, 8] x) => (float[8, 8] y) {
    big = Constant<value_float: float = 100000.0>()
    small = Constant<value_float: float = 0.00001>()
    a = Mul(x, big)
    b = Relu(a)
    y = Mul(b, small)
}"""


def _run(path: Path, x: np.ndarray) -> np.ndarray:
    options = ort.SessionOptions()
    options.log_severity_level = 3
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    wanted = session.get_inputs()[0]
    feed = x.astype(np.float16) if wanted.type == "tensor(float16)" else x
    return np.asarray(session.run(None, {wanted.name: feed})[0])


def _node_of(path: Path, output: str) -> str:
    """The name the status uses: the document's (generated for an unnamed node)."""
    doc = nj.open_model(path)
    return next(
        name for name, node in doc.nodes.items() if output in [v.name for v in node.outputs]
    )


def test_overflowing_nodes_are_found_and_kept_float32(tmp_path: Path) -> None:
    source = save_text(tmp_path, OVERFLOW)
    x = np.random.default_rng(1).standard_normal((8, 8)).astype(np.float32)
    expected = np.maximum(x, 0)
    unchecked = tmp_path / "unchecked.onnx"
    convert_to_fp16(source, unchecked, validate=False)
    assert np.abs(_run(unchecked, x) - expected).max() > 0.2  # what validation must catch

    out = tmp_path / "out.onnx"
    status = convert_to_fp16(source, out)
    assert status.ok, status
    # a = x * 1e5 overflows float16 wherever it is stored: its producer and its user stay
    # float32; the last Mul (whose input is back in range) runs float16.
    scale, relu = _node_of(source, "a"), _node_of(source, "b")
    assert status.counts["nodes_kept_by_validation"] == 2, status
    assert any("kept 2 node(s) float32" in w and relu in w for w in status.warnings), status
    reasons = {
        name: line for line in status.log for name in (scale, relu) if f"kept {name} " in line
    }
    assert "max abs error 0.6" in reasons[scale]  # the clamped constant
    assert "max abs error inf" in reasons[relu]  # a cast to float16 before the Relu
    assert 3 <= status.counts["validation_rounds"] <= 8, status
    model = onnx.shape_inference.infer_shapes(onnx.load(str(out)))
    types = {v.name: v.type.tensor_type.elem_type for v in model.graph.value_info}
    assert types["a"] == types["b"] == onnx.TensorProto.FLOAT
    assert status.counts["nodes_converted"] == 1  # the last Mul
    np.testing.assert_allclose(_run(out, x).astype(np.float32), expected, atol=1e-2)
    assert any(line.startswith("validation: output 'y'") and "(ok)" in line for line in status.log)


def test_a_passing_result_takes_one_round_and_reports_each_output(tmp_path: Path) -> None:
    source = save_text(
        tmp_path,
        """<ir_version: 8, opset_import: ["": 18]>
        g (float[2, 8] x) => (float[2, 8] y, int64[2] i) {
            y = Tanh(x)
            i = ArgMax<axis = 1, keepdims = 0>(x)
        }""",
    )
    status = convert_to_fp16(source, tmp_path / "out.onnx")
    assert status.ok and status.counts["validation_rounds"] == 1, status
    lines = [line for line in status.log if line.startswith("validation: output")]
    assert len(lines) == 2 and all("max abs error" in line for line in lines), lines
    plain = convert_to_fp16(source, tmp_path / "plain.onnx", validate=False)
    assert "validation_rounds" not in plain.counts


def test_source_that_onnxruntime_cannot_run_is_not_validated_nor_bisected(tmp_path: Path) -> None:
    source = save_text(
        tmp_path,
        """<ir_version: 8, opset_import: ["": 18, "com.example": 1]>
        g (float[4] x) => (float[4] y) {
            t = Tanh(x)
            y = com.example.Mystery(t)
        }""",
    )
    status = convert_to_fp16(source, tmp_path / "out.onnx")
    assert status.ok
    assert status.counts["validation_rounds"] == 1
    assert any(
        w.startswith("not validated: onnxruntime cannot run the source") for w in status.warnings
    )


def test_unavailable_provider_is_reported_not_validated(tmp_path: Path) -> None:
    source = save_text(tmp_path, OVERFLOW)
    status = convert_to_fp16(source, tmp_path / "out.onnx", provider="NoSuchExecutionProvider")
    assert any("NoSuchExecutionProvider is not available" in w for w in status.warnings)


def test_output_beyond_float16_range_cannot_be_fixed_by_keeping_nodes(tmp_path: Path) -> None:
    source = save_text(
        tmp_path,
        """<ir_version: 8, opset_import: ["": 18]>
        g (float[4] x) => (float[4] y) {
            k = Constant<value_float: float = 100000.0>()
            y = Add(x, k)
        }""",
    )
    status = convert_to_fp16(source, tmp_path / "out.onnx")
    assert not status.ok
    assert "keep_io_types" in status.log[-1] and "every converted node kept" in status.log[-1]
    assert any("beyond float16's range" in line for line in status.log)
    kept_io = convert_to_fp16(source, tmp_path / "io.onnx", keep_io_types=True)
    assert kept_io.ok, kept_io


def test_max_rounds_caps_the_search_and_says_so(tmp_path: Path) -> None:
    source = save_text(tmp_path, OVERFLOW)
    status = convert_to_fp16(source, tmp_path / "out.onnx", max_rounds=1)
    assert not status.ok and "raise max_rounds" in status.log[-1]
    two = convert_to_fp16(source, tmp_path / "two.onnx", max_rounds=2)
    assert two.ok, two  # everything kept: runs, and the status says more rounds keep fewer
    assert any("stopped at max_rounds=2" in w for w in two.warnings)


def test_bad_validation_arguments_raise_before_writing(tmp_path: Path) -> None:
    source = save_text(tmp_path, OVERFLOW)
    out = tmp_path / "out.onnx"
    for bad in (
        {"tolerance": -1.0},
        {"tolerance": float("nan")},
        {"tolerance": "1e-2"},
        {"provider": "CPU"},
        {"max_rounds": 0},
    ):
        with pytest.raises(TransformError):
            convert_to_fp16(source, out, **bad)  # type: ignore[arg-type]
    assert not out.exists()


# ------------------------------------------------------------- the search alone
def _result(passed: bool, why: str = "") -> ValidationResult:
    return ValidationResult("ok" if passed else "crashed", message=why)


def test_bisection_finds_every_culprit_and_holds_a_passing_set() -> None:
    candidates = [f"n{i}" for i in range(40)]
    culprits = {"n7", "n31"}
    tried: list[frozenset[str]] = []

    def attempt(kept: frozenset[str]) -> ValidationResult:
        tried.append(kept)
        return _result(culprits <= kept, f"crash with {sorted(culprits - kept)} converted")

    found = bisect_nodes(candidates, attempt, 40)
    assert found.kept == culprits
    assert found.passing is not None and found.passing.passed
    assert "crash with" in found.culprits["n7"]
    assert found.rounds == len(tried) <= 16


def test_bisection_round_cap_keeps_everything_not_yet_cleared() -> None:
    candidates = [f"n{i}" for i in range(64)]

    def attempt(kept: frozenset[str]) -> ValidationResult:
        return _result("n50" in kept)

    found = bisect_nodes(candidates, attempt, 3)
    assert found.capped and found.kept is not None and "n50" in found.kept
    assert attempt(found.kept).passed
    assert bisect_nodes(candidates, lambda kept: _result(False), 10).kept is None


def test_same_role_in_other_layers_is_kept_in_one_round() -> None:
    names = [f"/layer.{i}/mlp/{op}" for i in range(6) for op in ("MatMul", "Mul", "Add")]
    roles = {name: node_role(name.rsplit("/", 1)[1], name, None) for name in names}
    faulty = {name for name in names if name.endswith("/Mul") and "layer.0" not in name}

    def attempt(kept: frozenset[str]) -> ValidationResult:
        return _result(faulty <= kept)

    found = bisect_nodes(names, attempt, 20, roles)
    assert found.kept is not None and faulty <= found.kept
    assert found.rounds <= 8  # one search and one grouped round, not five searches
    assert node_role("Mul", "node_mul_3", None) == ""  # a flat name gives no role
