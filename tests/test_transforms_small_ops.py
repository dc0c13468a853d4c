"""Small shape arithmetic folded in the kernel gives exactly onnxruntime's values, and
anything it does not know, or that is too big, is left to the folding child."""

from __future__ import annotations

import tracemalloc
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnx_ir as ir
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from nsdl_jupyter.transforms import _evaluate as evaluate_module
from nsdl_jupyter.transforms import sanitize
from nsdl_jupyter.transforms._small_ops import SMALL_BYTES, evaluate_small

I64 = np.int64


def _node(op: str, inputs: list[str], opset: int = 17, **attrs: Any) -> tuple[ir.Node, int]:
    return ir.serde.deserialize_node(helper.make_node(op, inputs, ["out"], **attrs)), opset


def _onnxruntime(node: ir.Node, opset: int, feeds: dict[str, np.ndarray]) -> np.ndarray:
    graph = helper.make_graph(
        [ir.serde.serialize_node(node)],
        "g",
        [],
        [helper.make_empty_tensor_value_info("out")],
        [numpy_helper.from_array(array, name) for name, array in feeds.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(model.SerializeToString(), options)
    return np.asarray(session.run(None, {})[0])


CASES: dict[str, tuple[tuple[ir.Node, int], dict[str, np.ndarray]]] = {
    "concat": (_node("Concat", ["a", "b"], axis=0), {"a": I64([1, 64]), "b": I64([-1])}),
    "concat_last_axis": (
        _node("Concat", ["a", "b"], axis=-1),
        {"a": np.ones((2, 1), np.float32), "b": np.zeros((2, 3), np.float32)},
    ),
    "unsqueeze_input_axes": (
        _node("Unsqueeze", ["a", "axes"]),
        {"a": I64([3, 4]), "axes": I64([0, -1])},
    ),
    "unsqueeze_attribute_axes": (_node("Unsqueeze", ["a"], opset=11, axes=[0]), {"a": I64(7)}),
    "squeeze_all": (_node("Squeeze", ["a"]), {"a": np.ones((1, 3, 1), I64)}),
    "squeeze_axes": (_node("Squeeze", ["a", "axes"]), {"a": I64([[5]]), "axes": I64([-2])}),
    "gather_negative_index": (_node("Gather", ["a", "i"]), {"a": I64([2, 3, 4]), "i": I64(-1)}),
    "gather_axis_1": (
        _node("Gather", ["a", "i"], axis=1),
        {"a": np.arange(6, dtype=np.float32).reshape(2, 3), "i": np.int32([[2, 0]])},
    ),
    "constant_of_shape_int": (
        _node("ConstantOfShape", ["s"], value=numpy_helper.from_array(I64([1]))),
        {"s": I64([3])},
    ),
    "constant_of_shape_default": (_node("ConstantOfShape", ["s"]), {"s": I64([2, 2])}),
    "constant_of_shape_scalar": (
        _node("ConstantOfShape", ["s"], value=numpy_helper.from_array(np.float32([2.5]))),
        {"s": np.zeros(0, I64)},
    ),
    "expand_cls_token": (
        _node("Expand", ["t", "s"]),
        {"t": np.float32([[[0.5, -1.25]]]), "s": I64([3, 1, 1])},
    ),
    "expand_lower_rank_shape": (
        _node("Expand", ["t", "s"]),
        {"t": np.float32([[1], [2]]), "s": I64([4])},
    ),
    "reshape_copy_and_infer": (
        _node("Reshape", ["a", "s"]),
        {"a": np.arange(24, dtype=I64).reshape(2, 3, 4), "s": I64([0, -1])},
    ),
    "reshape_allowzero": (
        _node("Reshape", ["a", "s"], allowzero=1),
        {"a": np.zeros((0, 3), np.float32), "s": I64([3, 0])},
    ),
    "cast_wraps": (
        _node("Cast", ["a"], to=TensorProto.INT32),
        {"a": I64([2**31 + 5, -(2**33) - 1, 7])},
    ),
    "cast_to_bool": (_node("Cast", ["a"], to=TensorProto.BOOL), {"a": I64([0, -3, 2])}),
    "cast_bool_to_int": (_node("Cast", ["a"], to=TensorProto.INT64), {"a": np.bool_([1, 0])}),
    "cast_int_to_float": (
        _node("Cast", ["a"], to=TensorProto.FLOAT),
        {"a": I64([2**24 + 1, -3, 2**40 + 3])},
    ),
    "where": (
        _node("Where", ["c", "x", "y"]),
        {"c": np.bool_([True, False, True]), "x": I64([3]), "y": I64([-1, -2, -3])},
    ),
    "add_wraps": (_node("Add", ["a", "b"]), {"a": I64([2**62]), "b": I64([2**62, 1])}),
    "sub_broadcasts": (_node("Sub", ["a", "b"]), {"a": I64([[5], [6]]), "b": I64([1, 2, 3])}),
    "mul_float": (
        _node("Mul", ["a", "b"]),
        {"a": np.float32([0.1, 3.3, -7e-39]), "b": np.float32([0.3])},
    ),
    "neg": (_node("Neg", ["a"]), {"a": I64([1, -(2**63)])}),
    "equal_float": (
        _node("Equal", ["a", "b"]),
        {"a": np.float32([np.nan, 1, -0.0]), "b": np.float32([np.nan, 1, 0.0])},
    ),
    "less": (_node("Less", ["a", "b"]), {"a": I64([1, 5]), "b": I64(3)}),
    "greater_or_equal": (_node("GreaterOrEqual", ["a", "b"]), {"a": I64([1, 5]), "b": I64(5)}),
    "not": (_node("Not", ["a"]), {"a": np.bool_([True, False])}),
    "and": (_node("And", ["a", "b"]), {"a": np.bool_([True, True]), "b": np.bool_([1, 0])}),
    "min": (_node("Min", ["a", "b", "c"]), {"a": I64([4]), "b": I64([2, 9]), "c": I64(3)}),
    "max": (_node("Max", ["a", "b"]), {"a": np.int32([-4, 8]), "b": np.int32([2, 1])}),
    "abs": (_node("Abs", ["a"]), {"a": I64([-3, 0, 3])}),
    "identity": (_node("Identity", ["a"]), {"a": np.float32([[1.5]])}),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_kernel_computes_what_onnxruntime_computes(case: str) -> None:
    (node, opset), feeds = CASES[case]
    computed = evaluate_small([node], feeds, None)
    assert computed is not None, "this case is meant to be computed in the kernel"
    expected = _onnxruntime(node, opset, feeds)
    got = computed["out"]
    assert got.dtype == expected.dtype and got.shape == expected.shape
    np.testing.assert_array_equal(got, expected)


LEFT_TO_THE_CHILD: dict[str, tuple[tuple[ir.Node, int], dict[str, np.ndarray]]] = {
    "division": (_node("Div", ["a", "b"]), {"a": I64([-7]), "b": I64([2])}),
    "float_to_int": (_node("Cast", ["a"], to=TensorProto.INT64), {"a": np.float32([2.7])}),
    "float_max": (_node("Max", ["a", "b"]), {"a": np.float32([np.nan]), "b": np.float32([1])}),
    "mixed_dtypes": (_node("Add", ["a", "b"]), {"a": I64([1]), "b": np.int32([1])}),
    "index_out_of_range": (_node("Gather", ["a", "i"]), {"a": I64([1, 2]), "i": I64([2])}),
    "big_input": (_node("Identity", ["a"]), {"a": np.zeros(SMALL_BYTES // 4 + 1, np.float32)}),
    "big_broadcast": (
        _node("Add", ["a", "b"]),
        {"a": np.zeros((512, 1), np.int8), "b": np.zeros((1, 512), np.int8)},
    ),
    "custom_domain": (
        (ir.serde.deserialize_node(helper.make_node("Add", ["a", "a"], ["out"], domain="x")), 1),
        {"a": I64([1])},
    ),
}


@pytest.mark.parametrize("case", sorted(LEFT_TO_THE_CHILD))
def test_what_is_not_small_and_exact_is_left_to_the_child(case: str) -> None:
    (node, _), feeds = LEFT_TO_THE_CHILD[case]
    assert evaluate_small([node], feeds, None) is None


def test_a_huge_constant_of_shape_is_never_allocated() -> None:
    """A few bytes asking for gigabytes: refused before any allocation."""
    node, _ = _node("ConstantOfShape", ["s"])
    tracemalloc.start()
    try:
        assert evaluate_small([node], {"s": I64([100_000, 100_000])}, None) is None
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20


def test_the_fold_threshold_applies_in_the_kernel_too() -> None:
    node, _ = _node("ConstantOfShape", ["s"])
    assert evaluate_small([node], {"s": I64([64])}, 1024) is not None
    assert evaluate_small([node], {"s": I64([512])}, 1024) is None  # the child reports it


def test_a_chain_reads_earlier_results() -> None:
    """HF's `cls_token.expand(batch, -1, -1)` as TorchScript exports it."""
    graph = helper.make_graph(
        [
            helper.make_node("Concat", ["batch", "minus_one"], ["c"], axis=0),
            helper.make_node("ConstantOfShape", ["three"], ["ones"], value=_int64(1)),
            helper.make_node("Mul", ["ones", "minus_one_scalar"], ["m"]),
            helper.make_node("Equal", ["pattern", "m"], ["e"]),
            helper.make_node("Where", ["e", "ones", "pattern"], ["w"]),
            helper.make_node("Expand", ["cls", "w"], ["out"]),
        ],
        "g",
        [],
        [],
    )
    nodes = list(ir.serde.deserialize_graph(graph))
    feeds = {
        "batch": I64([1, 64]),
        "minus_one": I64([-1]),
        "three": I64([3]),
        "minus_one_scalar": I64(-1),
        "pattern": I64([1, -1, -1]),
        "cls": np.float32([[[0.25, 0.5]]]),
    }
    computed = evaluate_small(nodes, feeds, None)
    assert computed is not None
    np.testing.assert_array_equal(computed["out"], np.float32([[[0.25, 0.5]]]))
    assert set(computed) == {"c", "ones", "m", "e", "w", "out"}


def _int64(value: int) -> TensorProto:
    return numpy_helper.from_array(I64([value]))


def test_sanitize_folds_a_shape_chain_without_the_child(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The chain of a TorchScript ViT's class token folds in the kernel: the result is the
    same model output, and the folding child gets no call."""
    cls = numpy_helper.from_array(np.float32([[[0.25, -0.5, 1.0]]]), "cls")
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"]),
        helper.make_node("Slice", ["shape", "zero", "one"], ["batch"]),
        helper.make_node("Concat", ["batch", "minus_one", "minus_one"], ["target"], axis=0),
        helper.make_node("ConstantOfShape", ["three"], ["ones"], value=_int64(1)),
        helper.make_node("Mul", ["ones", "minus_one_scalar"], ["m"]),
        helper.make_node("Equal", ["target", "m"], ["e"]),
        helper.make_node("Where", ["e", "ones", "target"], ["w"]),
        helper.make_node("Expand", ["cls", "w"], ["tokens"]),
        helper.make_node("Concat", ["tokens", "x"], ["y"], axis=1),
    ]
    constants = {
        "zero": I64([0]),
        "one": I64([1]),
        "minus_one": I64([-1]),
        "three": I64([3]),
        "minus_one_scalar": I64(-1),
    }
    graph = helper.make_graph(
        nodes,
        "vit_cls",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [cls, *(numpy_helper.from_array(v, k) for k, v in constants.items())],
    )
    source = tmp_path / "vit_cls.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), source)
    calls: list[int] = []
    chain = evaluate_module.Evaluator.evaluate_chain

    def counted(self: evaluate_module.Evaluator, *args: Any) -> evaluate_module.BatchResult:
        calls.append(1)
        return chain(self, *args)

    monkeypatch.setattr(evaluate_module.Evaluator, "evaluate_chain", counted)
    status = sanitize(source, tmp_path / "out.onnx")
    assert status.ok and status.counts["nodes_folded"] >= 7 and not calls
    result = onnx.load(str(tmp_path / "out.onnx"))
    assert [n.op_type for n in result.graph.node] == ["Concat"]
    x = np.random.default_rng(0).standard_normal((2, 4, 3)).astype(np.float32)
    before = ort.InferenceSession(str(source)).run(None, {"x": x})[0]
    after = ort.InferenceSession(str(tmp_path / "out.onnx")).run(None, {"x": x})[0]
    np.testing.assert_array_equal(before, after)
