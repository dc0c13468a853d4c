"""The one weightless model: a constant is a typed graph input when it is external or over
1 KB, for every reader that builds one (sanitize's shape inference, the type-check snapshot,
the views' shape labels, the checker after a save)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnx
import onnx_ir as ir
import pytest
from onnx import TensorProto, helper, numpy_helper

import nsdl_jupyter as nj
from nsdl_jupyter._weightless import WEIGHT_BYTES, is_weight
from nsdl_jupyter.graph._shapes import infer_tensor_types
from nsdl_jupyter.transforms._shapes import infer_shapes

Split = tuple[list[str], dict[str, list[int]]]  # initializers kept, inputs with their dims


def _encoder() -> onnx.ModelProto:
    """A TorchScript-shaped block whose constants sit on both sides of the rule: a bias of
    exactly 1 KB and a shape tensor (kept), a weight of 1,032 bytes and a vocabulary of
    1,200 bytes of strings (typed inputs). No value_info, as TorchScript writes it."""
    bias = numpy_helper.from_array(np.ones(256, np.float32), "encoder.layer.0.dense.bias")
    weight = numpy_helper.from_array(np.ones((2, 129), np.float32), "encoder.layer.0.weight")
    shape = numpy_helper.from_array(
        np.array([2, 128], np.int64), "/encoder/layer.0/Constant_output_0"
    )
    vocab = numpy_helper.from_array(np.array([b"word"] * 300, dtype=object), "vocab")
    layer = "/encoder/layer.0"
    nodes = [
        helper.make_node("Add", ["x", bias.name], [f"{layer}/Add_output_0"], f"{layer}/Add"),
        helper.make_node(
            "Reshape", [f"{layer}/Add_output_0", shape.name], ["hidden"], f"{layer}/Reshape"
        ),
        helper.make_node("ReduceSum", [weight.name], ["total"], f"{layer}/ReduceSum"),
        helper.make_node("Identity", ["vocab"], ["words"], "/encoder/Identity"),
    ]
    graph = helper.make_graph(
        nodes,
        "main_graph",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 256])],
        [
            helper.make_tensor_value_info("hidden", TensorProto.FLOAT, None),
            helper.make_tensor_value_info("total", TensorProto.FLOAT, None),
            helper.make_tensor_value_info("words", TensorProto.STRING, None),
        ],
        [bias, weight, shape, vocab],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _split(proto: onnx.ModelProto) -> Split:
    kept = sorted(tensor.name for tensor in proto.graph.initializer)
    inputs = {
        info.name: [dim.dim_value for dim in info.type.tensor_type.shape.dim]
        for info in proto.graph.input
    }
    return kept, inputs


def _model() -> ir.Model:
    return ir.serde.deserialize_model(_encoder())


@pytest.fixture
def inferred(monkeypatch: pytest.MonkeyPatch) -> list[onnx.ModelProto]:
    """The protos onnx's shape inference is given, in order."""
    seen: list[onnx.ModelProto] = []
    infer = onnx.shape_inference.infer_shapes

    def recording(proto: onnx.ModelProto, *args: object, **kwargs: object) -> onnx.ModelProto:
        seen.append(proto)
        return infer(proto, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(onnx.shape_inference, "infer_shapes", recording)
    return seen


def test_every_reader_sees_the_same_weightless_model(
    tmp_path: Path, inferred: list[onnx.ModelProto]
) -> None:
    """Before there was one rule, the type-check snapshot kept the 1,032-byte weight (4 KB
    limit), the views kept it too (1,024 elements), and the save's structure kept every
    initializer under 64 KB, strings included."""
    expected: Split = (
        ["/encoder/layer.0/Constant_output_0", "encoder.layer.0.dense.bias"],
        {"x": [1, 256], "encoder.layer.0.weight": [2, 129], "vocab": [300]},
    )
    readers: dict[str, Callable[[], onnx.ModelProto]] = {}

    def sanitize_inference() -> onnx.ModelProto:
        assert infer_shapes(_model())  # it learned the shapes of the intermediate values
        return inferred[-1]

    def views() -> onnx.ModelProto:
        types = infer_tensor_types(_model().graph)
        assert types["/encoder/layer.0/Add_output_0"] == ("float", "1\u00d7256")
        return inferred[-1]

    def saved() -> onnx.ModelProto:
        written: list[onnx.ModelProto] = []
        nj.ModelDocument(_model()).save(tmp_path / "m.onnx", while_syncing=written.append)
        return written[0]

    readers["sanitize"] = sanitize_inference
    readers["type check"] = lambda: nj.ModelDocument(_model()).check_snapshot()
    readers["views"] = views
    readers["save"] = saved
    for name, build in readers.items():
        assert _split(build()) == expected, name


def test_the_rule_at_its_edges(tmp_path: Path) -> None:
    at_limit = ir.Tensor(np.zeros(WEIGHT_BYTES // 4, np.float32))
    over = ir.Tensor(np.zeros(WEIGHT_BYTES // 4 + 1, np.float32))
    assert not is_weight(at_limit)
    assert is_weight(over)
    read = ir.serde.TensorProtoTensor(numpy_helper.from_array(np.zeros(257, np.float32), "w"))
    assert is_weight(read)
    # external weights of any size: onnx cannot follow their file from a proto in memory
    (tmp_path / "w.bin").write_bytes(b"\0" * 4)
    external = ir.ExternalTensor(
        "w.bin", 0, 4, ir.DataType.FLOAT, shape=ir.Shape([1]), name="w", base_dir=tmp_path
    )
    assert is_weight(external)
    stored = numpy_helper.from_array(np.ones(1, np.float32), "w")
    assert not is_weight(stored)
    stored.data_location = TensorProto.EXTERNAL
    assert is_weight(stored)
    # strings count their bytes (onnx_ir gives a string tensor no size)
    assert not is_weight(ir.Tensor(np.array([b"word"] * 256, dtype=object)))
    assert is_weight(ir.Tensor(np.array([b"word"] * 257, dtype=object)))
