"""sanitize: folding, thresholds, passes, unfoldable operators, no-op removal, dead nodes,
shape inference, identical outputs, errors."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnx_ir as ir
import onnxruntime as ort
import pytest

import nsdl_jupyter as nj
from nsdl_jupyter._isolated import IsolatedWorker
from nsdl_jupyter.examples import bert_base, small_transformer
from nsdl_jupyter.transforms import TransformError, TransformStatus, sanitize
from nsdl_jupyter.transforms._evaluate import close_folding_process
from tests._text_models import LOCAL_FUNCTION_CONSTANT, save_text


def _run(path: Path, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 3
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    return list(session.run(None, feeds))


def _ops(path: Path) -> Counter[str]:
    return Counter(node.op_type for node in onnx.load(str(path)).graph.node)


CHAIN = """<ir_version: 8, opset_import: ["": 18]>
g (float[2, 3] x) => (float[2, 3] y) {
    a = Constant<value: tensor = float[2, 3] {1, 2, 3, 4, 5, 6}>()
    b = Constant<value_float: float = 2.0>()
    c = Mul(a, b)
    d = Add(c, b)
    unused = Neg(x)
    y = Add(x, d)
}"""


def test_folds_a_constant_chain_and_removes_dead_nodes(tmp_path: Path) -> None:
    source = save_text(tmp_path, CHAIN)
    out = tmp_path / "out.onnx"
    status = sanitize(source, out)
    assert status.ok
    assert _ops(out) == Counter({"Add": 1})
    assert status.counts["nodes_folded"] == 2
    assert status.counts["constants_lifted"] == 2
    assert status.counts["nodes_removed"] == 1
    assert any("folded 2 node(s): Mul 1, Add 1" in line for line in status.log)
    assert any("removed 1 dead node(s)" in line for line in status.log)
    x = np.ones((2, 3), np.float32)
    np.testing.assert_array_equal(_run(source, {"x": x})[0], _run(out, {"x": x})[0])


def test_a_shape_of_a_folded_result_folds_with_it(tmp_path: Path) -> None:
    """torchvision's Swin (TorchScript): PatchMerging's pad amounts are a Concat of constants
    whose Shape the export reads too. Both fold in one pass; removing them one by one, the
    Concat went first while the Shape still read it (onnx_ir's ValueError)."""
    source = save_text(
        tmp_path,
        """<ir_version: 8, opset_import: ["": 17]>
        g (float[3] x) => (float[6] y) <int64[2] pads> {
            c0 = Constant<value: tensor = int64[1] {1}>()
            c1 = Constant<value: tensor = int64[1] {2}>()
            pads = Concat<axis: int = 0>(c0, c1)
            n = Shape(pads)
            y = Tile(x, n)
        }""",
    )
    out = tmp_path / "out.onnx"
    status = sanitize(source, out)
    assert status.ok and _ops(out) == Counter({"Tile": 1})
    x = np.arange(3, dtype=np.float32)
    np.testing.assert_array_equal(_run(source, {"x": x})[0], _run(out, {"x": x})[0])


def test_fold_size_threshold_keeps_large_results(tmp_path: Path) -> None:
    source = save_text(
        tmp_path,
        """<ir_version: 8, opset_import: ["": 18]>
        g (float[256] x) => (float[256] y) {
            s = Constant<value: tensor = int64[1] {256}>()
            big = ConstantOfShape<value: tensor = float[1] {1.5}>(s)
            y = Add(x, big)
        }""",
    )
    out = tmp_path / "out.onnx"
    status = sanitize(source, out, fold_size_threshold=512)
    assert _ops(out)["ConstantOfShape"] == 1  # 1024 bytes > 512
    assert any("exceeds 512 bytes" in line for line in status.log)
    sanitize(source, out, fold_size_threshold=4096, overwrite=True)
    assert _ops(out)["ConstantOfShape"] == 0


def test_passes_limit_and_repeat_until_stable(tmp_path: Path) -> None:
    source = save_text(tmp_path, CHAIN)
    one = sanitize(source, tmp_path / "one.onnx", passes=1)
    assert one.counts["passes"] == 1
    until_stable = sanitize(source, tmp_path / "all.onnx")
    assert until_stable.counts["passes"] >= 2  # the last pass finds nothing to do


def _folds_shape_in_pass_2(source: Path, tmp_path: Path) -> TransformStatus:
    """Sanitize a model whose Shape(r) only a second pass can fold (r's dims known then):
    one Reshape to [3, 4] is left and it still computes x.reshape(3, 4)."""
    out = tmp_path / "out.onnx"
    status = sanitize(source, out)
    assert _ops(out) == Counter({"Reshape": 1})
    assert any(line.startswith("pass 2: folded 1 node(s): Shape 1") for line in status.log)
    x = np.arange(12, dtype=np.float32).reshape(2, 6)
    np.testing.assert_array_equal(_run(out, {"x": x})[0], x.reshape(3, 4))
    return status


def test_a_pass_after_folding_infers_shapes_again(tmp_path: Path) -> None:
    """Shape inference cannot see through Abs, so `r` has no dims until pass 1 folds it;
    pass 2 must infer again to fold Shape(r) (a pass that skipped it would stop at 3 nodes)."""
    source = save_text(
        tmp_path,
        """<ir_version: 8, opset_import: ["": 18]>
        g (float[2, 6] x) => (float[a, b] y) {
            c = Constant<value: tensor = int64[2] {-3, -4}>()
            s = Abs(c)
            r = Reshape(x, s)
            t = Shape(r)
            y = Reshape(x, t)
        }""",
    )
    status = _folds_shape_in_pass_2(source, tmp_path)
    assert status.counts["passes"] == 3


def test_no_second_pass_after_lifting_and_forwarding_with_static_shapes(tmp_path: Path) -> None:
    """A pass that only lifted Constants and forwarded Identities of constants, on a model
    whose shapes are all known, leaves a next pass nothing to do: it is not run."""
    source = save_text(
        tmp_path,
        """<ir_version: 8, opset_import: ["": 18]>
        g (float[2, 3] x) => (float[2, 3] y) {
            w = Constant<value: tensor = float[2, 3] {1, 2, 3, 4, 5, 6}>()
            i = Identity(w)
            y = Add(x, i)
        }""",
    )
    out = tmp_path / "out.onnx"
    status = sanitize(source, out)
    assert status.counts["passes"] == 1
    assert _ops(out) == Counter({"Add": 1})
    x = np.ones((2, 3), np.float32)
    np.testing.assert_array_equal(_run(source, {"x": x})[0], _run(out, {"x": x})[0])


# onnx's data propagation stops at Identity: once `i` is forwarded, inference learns r's
# shape, and only a second pass folds Shape(r).
IDENTITY_HIDES_A_SHAPE = """<ir_version: 8, opset_import: ["": 18]>
    g (float[2, 6] x) => (float[a, b] y) {
        c = Constant<value: tensor = int64[2] {3, 4}>()
        i = Identity(c)
        r = Reshape(x, i)
        t = Shape(r)
        y = Reshape(x, t)
    }"""


def test_a_forwarded_identity_that_hid_a_shape_gets_a_second_pass(tmp_path: Path) -> None:
    _folds_shape_in_pass_2(save_text(tmp_path, IDENTITY_HIDES_A_SHAPE), tmp_path)


def test_identity_of_a_weight_is_forwarded_not_computed(tmp_path: Path) -> None:
    """TorchScript's Identity before a shared weight: its users read the weight itself (its
    name kept); an Identity that is a graph output is folded into a named initializer."""
    weight = onnx.numpy_helper.from_array(
        np.arange(12, dtype=np.float32).reshape(3, 4), "encoder.weight"
    )
    graph = onnx.helper.make_graph(
        [
            onnx.helper.make_node("Identity", ["encoder.weight"], ["onnx::MatMul_7"]),
            onnx.helper.make_node("Identity", ["encoder.weight"], ["onnx::MatMul_8"]),
            onnx.helper.make_node("MatMul", ["x", "onnx::MatMul_7"], ["a"]),
            onnx.helper.make_node("MatMul", ["x", "onnx::MatMul_8"], ["b"]),
            onnx.helper.make_node("Add", ["a", "b"], ["y"]),
            onnx.helper.make_node("Identity", ["encoder.weight"], ["w"]),
        ],
        "g",
        [onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2, 3])],
        [
            onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [2, 4]),
            onnx.helper.make_tensor_value_info("w", onnx.TensorProto.FLOAT, [3, 4]),
        ],
        [weight],
    )
    source = tmp_path / "model.onnx"
    onnx.save(
        onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", 18)]), source
    )
    out = tmp_path / "out.onnx"
    status = sanitize(source, out)
    model = onnx.load(str(out))
    assert [(n.op_type, list(n.input)) for n in model.graph.node] == [
        ("MatMul", ["x", "encoder.weight"]),
        ("Add", ["a", "a"]),  # the two MatMuls were one computation
    ]
    assert {t.name for t in model.graph.initializer} == {"encoder.weight", "w"}
    assert any("2 Identity node(s) of constants removed" in line for line in status.log)
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    for before, after in zip(_run(source, {"x": x}), _run(out, {"x": x}), strict=True):
        np.testing.assert_array_equal(before, after)


def test_unsupported_operator_folds_what_it_can_and_says_what_it_skipped(tmp_path: Path) -> None:
    source = save_text(
        tmp_path,
        """<ir_version: 8, opset_import: ["": 18, "custom.ops": 1]>
        g (float[3] x) => (float[3] y) {
            a = Constant<value: tensor = float[3] {1, 2, 3}>()
            b = Mul(a, a)
            c = custom.ops.Mystery(b)
            d = Add(c, a)
            y = Add(x, d)
        }""",
    )
    out = tmp_path / "out.onnx"
    status = sanitize(source, out)
    ops = _ops(out)
    assert ops["Mul"] == 0  # folded
    assert ops["Mystery"] == 1  # cannot be evaluated: kept
    assert ops["Add"] == 2  # depends on Mystery
    skipped = [w for w in status.warnings if "not folded" in w and "Mystery" in w]
    assert skipped, status
    assert status.counts["nodes_not_evaluated"] == 1


def test_no_op_nodes_are_removed_and_output_names_kept(tmp_path: Path) -> None:
    source = save_text(
        tmp_path,
        """<ir_version: 8, opset_import: ["": 18]>
        g (float[2, 3] x, bool c) => (float[2, 3] y, float[2, 3] z) {
            one = Constant<value_float: float = 1.0>()
            zero = Constant<value: tensor = float[3] {0, 0, 0}>()
            i = Identity(x)
            k = Cast<to = 1>(i)
            m = Mul(k, one)
            a = Add(m, zero)
            t1 = Transpose<perm = [1, 0]>(a)
            t2 = Transpose<perm = [1, 0]>(t1)
            y = Relu(t2)
            z = Identity(y)
        }""",
    )
    out = tmp_path / "out.onnx"
    status = sanitize(source, out)
    model = onnx.load(str(out))
    assert Counter(n.op_type for n in model.graph.node) == Counter({"Relu": 1, "Identity": 1})
    assert [o.name for o in model.graph.output] == ["y", "z"]
    assert status.counts["nodes_simplified"] >= 6
    x = np.arange(6, dtype=np.float32).reshape(2, 3) - 2
    feeds = {"x": x, "c": np.array(True)}
    for before, after in zip(_run(source, feeds), _run(out, feeds), strict=True):
        np.testing.assert_array_equal(before, after)


def test_if_with_constant_condition_is_inlined(tmp_path: Path) -> None:
    source = save_text(
        tmp_path,
        """<ir_version: 8, opset_import: ["": 18]>
        g (float[3] x) => (float[3] y) {
            c = Constant<value: tensor = bool {0}>()
            y = If(c) <
                then_branch = t () => (float[3] a) { a = Neg(x) },
                else_branch = e () => (float[3] b) { b = Abs(x) }
            >
        }""",
    )
    out = tmp_path / "out.onnx"
    sanitize(source, out)
    assert _ops(out) == Counter({"Abs": 1})
    x = np.array([-1, 2, -3], np.float32)
    np.testing.assert_array_equal(_run(out, {"x": x})[0], [1, 2, 3])


def test_shape_inference_annotates_intermediate_tensors(tmp_path: Path) -> None:
    source = save_text(
        tmp_path,
        """<ir_version: 8, opset_import: ["": 18]>
        g (float[2, 3] x) => (float[3, 2] y) {
            t = Transpose<perm = [1, 0]>(x)
            y = Relu(t)
        }""",
    )
    out = tmp_path / "out.onnx"
    status = sanitize(source, out)
    infos = {v.name: v for v in onnx.load(str(out)).graph.value_info}
    assert "t" in infos
    dims = [d.dim_value for d in infos["t"].type.tensor_type.shape.dim]
    assert dims == [3, 2]
    assert "shape inference: done" in status.log


def test_dynamic_batch_shape_arithmetic_is_folded(tmp_path: Path) -> None:
    """Shape -> Gather of a static dim folds; a Reshape with one free dim gets -1."""
    source = save_text(
        tmp_path,
        """<ir_version: 8, opset_import: ["": 18]>
        g (float[batch, 4, 6] x) => (float[batch, 4, 2, 3] y) {
            s = Shape(x)
            i0 = Constant<value: tensor = int64 {0}>()
            i1 = Constant<value: tensor = int64 {1}>()
            b = Gather(s, i0)
            h = Gather(s, i1)
            ax = Constant<value: tensor = int64[1] {0}>()
            bu = Unsqueeze(b, ax)
            hu = Unsqueeze(h, ax)
            rest = Constant<value: tensor = int64[2] {2, 3}>()
            shape = Concat<axis = 0>(bu, hu, rest)
            y = Reshape(x, shape)
        }""",
    )
    out = tmp_path / "out.onnx"
    status = sanitize(source, out)
    assert _ops(out) == Counter({"Reshape": 1})
    assert status.counts["reshapes_pinned"] == 1
    x = np.arange(48, dtype=np.float32).reshape(2, 4, 6)
    np.testing.assert_array_equal(_run(out, {"x": x})[0], x.reshape(2, 4, 2, 3))


def test_function_body_constants_are_untouched(tmp_path: Path) -> None:
    """Peers turn Constant(value_float) inside function bodies into DOUBLE tensors."""
    source = save_text(tmp_path, LOCAL_FUNCTION_CONSTANT)
    out = tmp_path / "out.onnx"
    sanitize(source, out)
    (function,) = onnx.load(str(out)).functions
    constant = next(n for n in function.node if n.op_type == "Constant")
    assert constant.attribute[0].name == "value_float"
    x = np.array([1, 2, 3], np.float32)
    np.testing.assert_array_equal(_run(out, {"x": x})[0], [3, 6, 9])


def test_document_source_and_transformer_outputs_identical(tmp_path: Path) -> None:
    source = tmp_path / "small.onnx"
    onnx.save(small_transformer(), str(source))
    doc = nj.open_model(source)
    out = tmp_path / "out.onnx"
    status = sanitize(doc, out)
    before = len(onnx.load(str(source)).graph.node)
    after = len(onnx.load(str(out)).graph.node)
    assert after < before * 0.6, status
    rng = np.random.default_rng(0)
    feeds = {
        "input_ids": rng.integers(0, 100, (1, 16)).astype(np.int64),
        "attention_mask": np.ones((1, 16), np.int64),
        "token_type_ids": np.zeros((1, 16), np.int64),
    }
    names = {i.name for i in onnx.load(str(source)).graph.input}
    feeds = {k: v for k, v in feeds.items() if k in names}
    for x, y in zip(_run(source, feeds), _run(out, feeds), strict=True):
        np.testing.assert_array_equal(x, y)


def test_batchnorm_fusion_is_opt_in_and_close(tmp_path: Path) -> None:
    source = save_text(
        tmp_path,
        """<ir_version: 8, opset_import: ["": 18]>
        g (float[1, 2, 5, 5] x) => (float[1, 3, 5, 5] y) {
            w = Constant<value: tensor = float[3, 2, 1, 1] {1, 2, 3, 4, 5, 6}>()
            c = Conv(x, w)
            s = Constant<value: tensor = float[3] {0.5, 2, 1}>()
            b = Constant<value: tensor = float[3] {0.1, 0.2, 0.3}>()
            m = Constant<value: tensor = float[3] {1, -1, 0}>()
            v = Constant<value: tensor = float[3] {4, 1, 0.25}>()
            y = BatchNormalization<epsilon: float = 0.001>(c, s, b, m, v)
        }""",
    )
    exact = tmp_path / "exact.onnx"
    sanitize(source, exact)
    assert _ops(exact) == Counter({"Conv": 1, "BatchNormalization": 1})
    fused = tmp_path / "fused.onnx"
    status = sanitize(source, fused, fuse_batchnorm=True)
    assert _ops(fused) == Counter({"Conv": 1})
    assert status.counts["batchnorms_fused"] == 1
    x = np.random.default_rng(0).standard_normal((1, 2, 5, 5)).astype(np.float32)
    np.testing.assert_allclose(_run(fused, {"x": x})[0], _run(source, {"x": x})[0], rtol=1e-5)


def test_bad_arguments(tmp_path: Path) -> None:
    source = save_text(tmp_path, CHAIN)
    with pytest.raises(TransformError, match="fold_size_threshold"):
        sanitize(source, tmp_path / "o.onnx", fold_size_threshold=-1)
    with pytest.raises(TransformError, match="passes"):
        sanitize(source, tmp_path / "o.onnx", passes=0)
    with pytest.raises(TransformError, match="folder"):
        sanitize(source, tmp_path)
    assert not (tmp_path / "o.onnx").exists()


@pytest.mark.slow
def test_bert_base_shrinks_below_peers_and_stays_identical(tmp_path: Path) -> None:
    source = tmp_path / "bert.onnx"
    onnx.save(bert_base(), str(source))
    out = tmp_path / "out.onnx"
    status = sanitize(source, out)
    nodes = len(onnx.load(str(out), load_external_data=False).graph.node)
    print(status.summary(), f"nodes={nodes}")
    assert nodes <= 425  # onnxsim 0.8.1: 425, polygraphy 0.53.6: 613 (bench/bench_transforms.py)
    feeds = {
        "input_ids": np.random.default_rng(0).integers(0, 1000, (2, 128)).astype(np.int64),
        "attention_mask": np.ones((2, 128), np.int64),
        "token_type_ids": np.zeros((2, 128), np.int64),
    }
    for x, y in zip(_run(source, feeds), _run(out, feeds), strict=True):
        np.testing.assert_array_equal(x, y)


# A few hundred bytes of model, `rows` x 2**20 floats of folded result: each generator sized
# from its constant inputs (never from declared shapes, which the ConstantOfShape case lies
# about).
HUGE = {
    "ConstantOfShape": """
        s = Constant<value: tensor = int64[3] {{{rows}, 1024, 1024}}>()
        big = ConstantOfShape<value: tensor = float[1] {{1.5}}>(s)""",
    "Expand": """
        v = Constant<value: tensor = float[1] {{1.5}}>()
        s = Constant<value: tensor = int64[3] {{{rows}, 1024, 1024}}>()
        big = Expand(v, s)""",
    "Tile": """
        v = Constant<value: tensor = float[2] {{1.5, 2.5}}>()
        r = Constant<value: tensor = int64[1] {{{half}}}>()
        big = Tile(v, r)""",
    "Range": """
        a = Constant<value_float: float = 0.0>()
        b = Constant<value_float: float = {count}.0>()
        d = Constant<value_float: float = 1.0>()
        big = Range(a, b, d)""",
}


def _huge_model(tmp_path: Path, op: str, rows: int = 10_000_000) -> Path:
    """A model whose `op` makes rows * 4 MiB (40 TB by default) and reduces it to one float."""
    count = rows * 2**20
    body = HUGE[op].format(rows=rows, half=count // 2, count=count)
    model = ir.from_onnx_text(
        f"""<ir_version: 8, opset_import: ["": 18]>
        g (float[1] x) => (float[1] y) {{
            {body}
            m = ReduceMax<keepdims = 0>(big)
            y = Add(x, m)
        }}"""
    )
    for node in model.graph:
        if node.op_type == op == "ConstantOfShape":
            node.outputs[0].type = ir.TensorType(ir.DataType.FLOAT)
            node.outputs[0].shape = ir.Shape([1])  # a lie: the estimate must not trust it
    path = tmp_path / f"{op}.onnx"
    ir.save(model, path)
    return path


@pytest.mark.parametrize("op", sorted(HUGE))
def test_threshold_is_checked_before_folding(tmp_path: Path, op: str) -> None:
    source = _huge_model(tmp_path, op)
    assert source.stat().st_size < 400
    out = tmp_path / "out.onnx"
    status = sanitize(source, out, fold_size_threshold=1024)
    assert status.ok, status.warnings
    assert _ops(out)[op] == 1
    assert status.counts["nodes_over_threshold"] == 1
    # the size in the log is the estimate: no machine could have computed 40 TB to measure it
    kept = next(line for line in status.log if "exceeds 1024 bytes" in line)
    assert "bytes)" in kept and not status.warnings


def test_threshold_is_checked_before_folding_inside_a_chain(tmp_path: Path) -> None:
    """The child runs a chain in one call: a node whose size depends on values computed
    earlier in the chain (a shape made by Concat) is sized there before it runs."""
    source = save_text(
        tmp_path,
        """<ir_version: 8, opset_import: ["": 18]>
        g (float[1] x) => (float[1] y) {
            rows = Constant<value: tensor = int64[1] {10000000}>()
            cols = Constant<value: tensor = int64[2] {1024, 1024}>()
            s = Concat<axis = 0>(rows, cols)
            big = ConstantOfShape<value: tensor = float[1] {1.5}>(s)
            m = ReduceMax<keepdims = 0>(big)
            y = Add(x, m)
        }""",
    )
    out = tmp_path / "out.onnx"
    status = sanitize(source, out, fold_size_threshold=1024)
    assert status.ok and not status.warnings, status.warnings
    assert status.counts["nodes_over_threshold"] == 1
    assert _ops(out) == Counter({"ConstantOfShape": 1, "ReduceMax": 1, "Add": 1})


def test_a_chain_of_constant_nodes_is_one_call_to_the_child(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each call wakes the child (milliseconds on a busy machine): a chain folds in one."""
    source = save_text(
        tmp_path,
        """<ir_version: 8, opset_import: ["": 18]>
        g (float[2, 3] x) => (float[2, 3] y) {
            a = Constant<value: tensor = float[2, 3] {1, 2, 3, 4, 5, 6}>()
            b = Neg(a)
            c = Abs(b)
            d = Sqrt(c)
            e = Add(d, a)
            y = Mul(x, e)
        }""",
    )
    sanitize(source, tmp_path / "warm.onnx")  # the child's start is not what is counted
    calls: list[str] = []
    real_call = IsolatedWorker.call

    def counted(self: IsolatedWorker, function: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append(function.__name__)
        return real_call(self, function, *args, **kwargs)

    monkeypatch.setattr(IsolatedWorker, "call", counted)
    out = tmp_path / "out.onnx"
    status = sanitize(source, out)
    assert status.counts["nodes_folded"] == 4
    assert calls == ["evaluate_chain"]
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.testing.assert_array_equal(_run(source, {"x": x})[0], _run(out, {"x": x})[0])


def test_oversized_folding_stays_out_of_memory(tmp_path: Path) -> None:
    """Nothing over the threshold is ever computed: sanitizing four models of 1.5 GiB results
    (computable here, so computing them would show) in a fresh interpreter peaks far below one
    of them (VmHWM: ru_maxrss would carry this test process's peak across fork and exec)."""
    sources = [str(_huge_model(tmp_path, op, rows=384)) for op in sorted(HUGE)]
    script = f"""
from pathlib import Path
from nsdl_jupyter.transforms import sanitize
for source in {sources!r}:
    assert sanitize(source, source + ".out.onnx", fold_size_threshold=1024).ok
status = Path("/proc/self/status").read_text().splitlines()
print(next(line.split()[1] for line in status if line.startswith("VmHWM:")))
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    peak_kib = int(done.stdout.split()[-1])
    assert peak_kib < 2**19, f"{peak_kib} KiB"  # 512 MiB


def _children() -> set[int]:
    return {
        int(pid)
        for children in Path(f"/proc/{os.getpid()}/task").glob("*/children")
        for pid in children.read_text().split()
    }


def _kill_spawned_children(
    stop: threading.Event, killed: list[int], count: int, spare: frozenset[int]
) -> None:
    """Kill the first `count` spawned children of this process started after `spare` was
    taken (the folding worker, and the fresh one its retry starts), as the OOM killer or a
    segfault in onnxruntime would. Children of other tests (a type-check pool) are spared."""
    while not stop.is_set() and len(killed) < count:
        for pid in sorted(_children() - spare):
            try:
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            if b"spawn_main" in cmdline and pid not in killed:
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
        time.sleep(0.002)


def test_a_dead_folding_process_spares_the_kernel(tmp_path: Path) -> None:
    # a Div: small exact arithmetic (the Mul of CHAIN) is folded in the kernel
    source = save_text(tmp_path, CHAIN.replace("Mul(a, b)", "Div(a, b)"))
    out = tmp_path / "out.onnx"
    close_folding_process()  # a warm child would answer before the killer sees it
    stop, killed = threading.Event(), []
    spare = frozenset(_children())
    killer = threading.Thread(target=_kill_spawned_children, args=(stop, killed, 2, spare))
    killer.start()
    try:
        status = sanitize(source, out)
    finally:
        stop.set()
        killer.join()
    assert len(killed) == 2, "sanitize evaluated nothing in a child process"
    assert status.ok
    died = [w for w in status.warnings if "not folded" in w and "SIGKILL" in w]
    assert died and "the kernel is fine" in died[0], status.warnings
    assert _ops(out)["Div"] == 1  # kept, not lost
    x = np.ones((2, 3), np.float32)
    np.testing.assert_array_equal(_run(source, {"x": x})[0], _run(out, {"x": x})[0])
    again = sanitize(source, tmp_path / "again.onnx")  # the next one starts a fresh child
    assert again.ok and not again.warnings and _ops(tmp_path / "again.onnx")["Div"] == 0


# Shaped like an HF BERT torch export, with dynamic batch and sequence: zero biases, the
# attention-mask chain, the head split through Shape/Gather/Unsqueeze/Concat, and rewrites
# that must NOT happen (broadcasts that change shape, narrowing casts, Reshape with 0).
TORCH_LIKE = """<ir_version: 8, opset_import: ["": 17]>
g (float[batch, seq, 8] x, int64[batch, seq] mask, float[batch, seq, 8] n)
    => (float[batch, 2, seq, seq] y, float[batch, seq, 8] z, int64[batch, seq] w,
        int64[batch, seq] w2,
        float[batch, seq, 8] keep, float[bs, 8] flat, float[batch, seq, 8] same) {
    W = Constant<value: tensor = float[8, 8] {
        1, 2, 0, 1, 3, 1, 0, 2, 0, 1, 1, 2, 1, 0, 1, 1, 2, 0, 1, 1, 0, 2, 1, 0, 1, 1, 0, 2,
        1, 1, 2, 0, 0, 1, 2, 1, 1, 0, 1, 2, 2, 1, 0, 0, 1, 2, 1, 1, 1, 0, 1, 2, 0, 1, 1, 2,
        0, 2, 1, 1, 2, 1, 0, 1}>()
    bias = Constant<value: tensor = float[8] {0, 0, 0, 0, 0, 0, 0, 0}>()
    zero = Constant<value_float: float = 0.0>()
    one = Constant<value: tensor = float[1] {1.0}>()
    h = MatMul(x, W)
    hb = Add(h, bias)
    h2 = Sub(hb, zero)
    h3 = Mul(one, h2)
    h4 = Div(h3, one)
    sh = Shape(h4)
    i0 = Constant<value_int: int = 0>()
    i1 = Constant<value_int: int = 1>()
    b = Gather(sh, i0)
    s = Gather(sh, i1)
    a0 = Constant<value_ints: ints = [0]>()
    ub = Unsqueeze(b, a0)
    us = Unsqueeze(s, a0)
    heads = Constant<value_ints: ints = [2, 4]>()
    split = Concat<axis = 0>(ub, us, heads)
    r = Reshape(h4, split)
    t = Transpose<perm = [0, 2, 1, 3]>(r)
    tt = Transpose<perm = [0, 1, 3, 2]>(t)
    scores = MatMul(t, tt)
    a1 = Constant<value_ints: ints = [1]>()
    a2 = Constant<value_ints: ints = [2]>()
    m1 = Unsqueeze(mask, a1)
    m2 = Unsqueeze(m1, a2)
    mb = Cast<to = 9>(m2)
    mf = Cast<to = 1>(mb)
    inv = Sub(one, mf)
    big = Constant<value_float: float = -10000.0>()
    mm = Mul(inv, big)
    y = Add(scores, mm)
    u = Unsqueeze(h4, a1)
    z = Squeeze(u, a1)
    wb = Cast<to = 9>(mask)
    wi = Cast<to = 6>(wb)
    w = Cast<to = 7>(wi)
    w32 = Cast<to = 6>(mask)
    w2 = Cast<to = 7>(w32)
    wide = Constant<value: tensor = float[1, 1, 1, 8] {0, 0, 0, 0, 0, 0, 0, 0}>()
    grown = Add(n, wide)
    keep = ReduceSum<keepdims = 0>(grown, a0)
    two = Constant<value_ints: ints = [0, -1]>()
    f1 = Flatten<axis = 2>(n)
    f2 = Reshape(f1, two)
    back = Constant<value_ints: ints = [-1, 8]>()
    flat = Reshape(f2, back)
    e = Constant<value_ints: ints = [8]>()
    split8 = Concat<axis = 0>(ub, us, e)
    rs = Reshape(n, split8)
    same = Relu(rs)
}"""


def _sanitized(tmp_path: Path, text: str) -> tuple[Path, Path, Counter[str]]:
    source = save_text(tmp_path, text)
    out = tmp_path / "out.onnx"
    status = sanitize(source, out)
    assert status.ok, status.warnings
    return source, out, _ops(out)


def _assert_same_outputs(
    source: Path, out: Path, names: list[str], feeds: dict[str, np.ndarray]
) -> None:
    """Every output equal, with its shape and dtype (-0.0 == 0.0)."""
    for name, before, after in zip(names, _run(source, feeds), _run(out, feeds), strict=True):
        assert before.shape == after.shape and before.dtype == after.dtype, name
        np.testing.assert_array_equal(before, after, err_msg=name)


def test_torch_export_patterns_simplify_with_dynamic_shapes(tmp_path: Path) -> None:
    source, out, ops = _sanitized(tmp_path, TORCH_LIKE)
    assert ops["Div"] == 0 and ops["Shape"] == 0 and ops["Gather"] == 0 and ops["Concat"] == 0
    assert ops["Unsqueeze"] == 1 and ops["Squeeze"] == 0  # mask: two merged; z: undone
    assert ops["Add"] == 2  # scores + mask; the [1, 1, 1, 8] zeros add a dim: kept
    assert ops["Sub"] == 1 and ops["Mul"] == 1  # 1 - mask, * -10000; no x-0, no 1*x
    casts = [n for n in onnx.load(str(out)).graph.node if n.op_type == "Cast"]
    # bool->int32->int64 merges; int64->bool->float and int64->int32->int64 narrow: kept
    assert len(casts) == 6
    # the head split is left; Flatten->Reshape(0, -1)->Reshape(-1, 8) is the Flatten alone;
    # Reshape(n, [0, 0, 8]) is the identity
    assert ops["Reshape"] == 1 and ops["Flatten"] == 1
    model = onnx.load(str(out))
    names = ["y", "z", "w", "w2", "keep", "flat", "same"]
    assert [o.name for o in model.graph.output] == names
    rng = np.random.default_rng(0)
    for batch, seq in [(2, 5), (1, 1), (3, 2)]:
        feeds = {
            "x": rng.standard_normal((batch, seq, 8)).astype(np.float32),
            "mask": rng.integers(-1, 3, (batch, seq)).astype(np.int64) * (2**33),
            "n": np.where(rng.random((batch, seq, 8)) < 0.2, -0.0, 1.5).astype(np.float32),
        }
        _assert_same_outputs(source, out, names, feeds)


def _weights(seed: int) -> str:
    values = np.random.default_rng(seed).standard_normal(64).astype(np.float32)
    return ", ".join(f"{v:.6f}" for v in values)


# Shaped like dynamo exports: GPT-2's GELU between [batch*seq, n] matmuls, `x and True`,
# one Unsqueeze feeding two, q/k/v projections of one input, allowzero=1 head split.
DYNAMO_LIKE = f"""<ir_version: 9, opset_import: ["": 18]>
g (float[bs, 8] x, int64[3] s, bool[batch, seq] m, float[batch, seq, 8] h)
    => (float[bs, 8] y, bool[batch, 1, 1, seq] m1, bool[batch, 1, seq, 1] m2,
        float[batch, seq, 8] q, float[batch, seq, 8] k, float[batch, seq, 8] v,
        float[batch, seq, 2, 4] heads) {{
    r1 = Reshape(x, s)
    half = Constant<value_float: float = 0.5>()
    three = Constant<value_float: float = 3.0>()
    c = Constant<value_float: float = 0.044715>()
    one = Constant<value_float: float = 1.0>()
    p = Pow(r1, three)
    cp = Mul(c, p)
    inner = Add(r1, cp)
    t = Tanh(inner)
    t1 = Add(one, t)
    hx = Mul(half, r1)
    gelu = Mul(hx, t1)
    back = Constant<value_ints: ints = [-1, 8]>()
    y = Reshape(gelu, back)
    yes = Constant<value: tensor = bool[1, 1] {{1}}>()
    mt = And(m, yes)
    a1 = Constant<value_ints: ints = [1]>()
    a2 = Constant<value_ints: ints = [2]>()
    a3 = Constant<value_ints: ints = [3]>()
    u1 = Unsqueeze(mt, a1)
    m1 = Unsqueeze(u1, a2)
    m2 = Unsqueeze(u1, a3)
    W1 = Constant<value: tensor = float[8, 8] {{{_weights(1)}}}>()
    W2 = Constant<value: tensor = float[8, 8] {{{_weights(2)}}}>()
    W3 = Constant<value: tensor = float[8, 8] {{{_weights(3)}}}>()
    hq = MatMul(h, W1)
    hk = MatMul(h, W2)
    hv = MatMul(h, W3)
    q = Relu(hq)
    k = Relu(hk)
    v = Relu(hv)
    sh = Shape(h)
    i0 = Constant<value_ints: ints = [0]>()
    i1 = Constant<value_ints: ints = [1]>()
    b = Gather(sh, i0)
    n = Gather(sh, i1)
    sizes = Constant<value_ints: ints = [2, 4]>()
    split = Concat<axis = 0>(b, n, sizes)
    heads = Reshape<allowzero = 1>(h, split)
}}"""


def test_dynamo_export_patterns_simplify_with_identical_outputs(tmp_path: Path) -> None:
    source, out, ops = _sanitized(tmp_path, DYNAMO_LIKE)
    assert ops["And"] == 0 and ops["Shape"] == 0 and ops["Concat"] == 0
    assert ops["Unsqueeze"] == 2  # Unsqueeze(Unsqueeze(x)) for each of the two users
    assert ops["MatMul"] == 1 and ops["Split"] == 1  # q, k, v from one product
    # the GELU runs on x as it is: no Reshape in and out of it; the head split is pinned
    (pinned,) = [n for n in onnx.load(str(out)).graph.node if n.op_type == "Reshape"]
    assert {a.name: a.i for a in pinned.attribute}.get("allowzero", 0) == 0
    names = ["y", "m1", "m2", "q", "k", "v", "heads"]
    assert [o.name for o in onnx.load(str(out)).graph.output] == names
    rng = np.random.default_rng(0)
    for batch, seq in [(2, 3), (1, 1), (3, 5)]:
        feeds = {
            "x": rng.standard_normal((batch * seq, 8)).astype(np.float32),
            "s": np.array([batch, seq, 8], np.int64),
            "m": rng.random((batch, seq)) < 0.5,
            "h": rng.standard_normal((batch, seq, 8)).astype(np.float32),
        }
        _assert_same_outputs(source, out, names, feeds)


def test_external_weights_of_any_size_pass_the_check(tmp_path: Path) -> None:
    """The result is checked in memory, without its weights: weights still in the source's
    data file (small ones too) are types there, never dangling file references."""
    text = """<ir_version: 8, opset_import: ["": 18]>
        g (float[2, 3] x) => (float[2, 3] y) {
            h = Add(x, bias)
            y = Mul(h, scale)
        }"""
    model = ir.to_proto(ir.from_onnx_text(text))
    model.graph.initializer.extend(
        [
            onnx.numpy_helper.from_array(np.float32([1, 2, 3]), "bias"),
            onnx.numpy_helper.from_array(np.full((2, 3), 0.5, np.float32), "scale"),
        ]
    )
    source = tmp_path / "external.onnx"
    onnx.save(model, str(source), save_as_external_data=True, size_threshold=0)
    status = sanitize(source, tmp_path / "out.onnx")
    assert status.ok and not status.warnings, status.warnings
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    bias = np.float32([1, 2, 3])
    np.testing.assert_array_equal(_run(tmp_path / "out.onnx", {"x": x})[0], (x + bias) / 2)


def test_rules_near_newly_known_shapes_apply_without_a_whole_sweep() -> None:
    """A later pass that learned only shapes runs the rules of the nodes near them: a zero
    bias whose input's shape just became known goes; an Add elsewhere, with a shape that
    was known all along but a rule that the last sweep already declined, is not visited."""
    from nsdl_jupyter.transforms._simplify import Simplifier

    model = ir.from_onnx_text(
        """<ir_version: 8, opset_import: ["": 18]>
        g (float[2, 3] x, float[2, 3] w) => (float[2, 3] y, float[2, 3] v)
            <float[1] zero = {0}> {
            h = Relu(x)
            y = Add(h, zero)
            v = Add(w, w)
        }"""
    )
    graph = model.graph
    h = next(n for n in graph if n.op_type == "Relu").outputs[0]
    y = graph.outputs[0]
    for value in (h, y):  # inference had not told their shapes yet
        value.type, value.shape = None, None
    simplifier = Simplifier()
    assert simplifier.run(graph) == 0  # without the shapes, x+0 may broadcast: kept
    for value in (h, y):
        value.type, value.shape = ir.TensorType(ir.DataType.FLOAT), ir.Shape([2, 3])
    assert simplifier.run(graph, near=[graph.inputs[1]]) == 0  # far from h: not looked at
    assert simplifier.run(graph, near=[h]) >= 1
    assert [n.op_type for n in graph] == ["Relu", "Add"]


def test_string_constants_are_compared_by_content(tmp_path: Path) -> None:
    """A string initializer has no raw bytes: sanitize compares its strings (two equal
    lookups become one), and the strings survive the save."""
    source = save_text(
        tmp_path,
        """<ir_version: 9, opset_import: ["": 19]>
        g (string[2] x) => (bool[2] y) <string[2] k1 = {"ab", "c"}, string[2] k2 = {"ab", "c"}> {
            a = Equal(x, k1)
            b = Equal(x, k2)
            y = And(a, b)
        }""",
    )
    status = sanitize(source, tmp_path / "out.onnx")
    assert status.ok and _ops(tmp_path / "out.onnx") == Counter({"Equal": 1, "And": 1})
    x = np.array(["ab", "d"], dtype=object)
    assert list(_run(tmp_path / "out.onnx", {"x": x})[0]) == [True, False]


@pytest.mark.parametrize("model", ["vit_tiny_hf_torchscript", "identity_hides_a_shape"])
def test_one_shape_inference_per_pass(
    model: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Folds that teach inference something (ViT-tiny's class token expanded to the batch,
    a forwarded Identity that hid a Reshape's shape) give the next pass more to do; every
    pass still runs onnx's shape inference at most once (the weightless model built once for
    it), and the last one's shapes are the result's."""
    if model == "vit_tiny_hf_torchscript":
        from tests import real_exports

        source = real_exports.save(model, tmp_path)
    else:
        source = save_text(tmp_path, IDENTITY_HIDES_A_SHAPE)
    inferences: list[int] = []
    infer = onnx.shape_inference.infer_shapes

    def counted(proto: onnx.ModelProto, *args: Any, **kwargs: Any) -> onnx.ModelProto:
        inferences.append(len(proto.graph.node))
        return infer(proto, *args, **kwargs)

    monkeypatch.setattr(onnx.shape_inference, "infer_shapes", counted)
    status = sanitize(source, tmp_path / "out.onnx")
    assert status.counts["passes"] >= 2  # pass 1's folds taught the next inference
    # at most one each: a pass that finds every shape known infers nothing
    assert 1 <= len(inferences) <= status.counts["passes"]
    assert inferences[-1] < inferences[0]  # each inference saw the graph as it was then
