"""Small models built in code for the document tests."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from nsdl_jupyter.document import ModelDocument, open_model


def conv_relu_model() -> onnx.ModelProto:
    """x -> Conv(w, b) -> Relu -> Add(skip) -> y, with an unnamed node and an optional input."""
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "w")
    b = numpy_helper.from_array(np.zeros(4, np.float32), "b")
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"]),  # unnamed on purpose
        helper.make_node("Add", ["r", "c"], ["y"], name="add"),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])],
        initializer=[w, b],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    return model


def save_with_external(model: onnx.ModelProto, path: Path, location: str) -> None:
    onnx.save(
        model,
        str(path),
        save_as_external_data=True,
        all_tensors_to_one_file=True,
        location=location,
        size_threshold=0,
    )


def chain_model() -> onnx.ModelProto:
    """x -> Relu -> Sigmoid -> Neg -> y."""
    nodes = [
        helper.make_node("Relu", ["x"], ["a"], name="relu"),
        helper.make_node("Sigmoid", ["a"], ["b"], name="sigmoid"),
        helper.make_node("Neg", ["b"], ["y"], name="neg"),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def dynamic_conv_model() -> onnx.ModelProto:
    """x[N, 3, H, 8] -> Conv -> Relu -> y: a free batch and height, for TensorRT profiles."""
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32), "w")
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["y"], name="relu"),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, "H", 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4, "H", 8])],
        initializer=[w],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    return model


def dynamic_conv_document(
    folder: Path, profile: dict[str, list[int]] | None = None
) -> ModelDocument:
    """`dynamic_conv_model` saved in `folder` and opened, with `profile` (min/opt/max of its
    input x) set as its first optimization profile when given."""
    path = folder / "dyn.onnx"
    onnx.save(dynamic_conv_model(), path)
    document = open_model(path)
    if profile is not None:
        document.tensorrt.set_profile("x", **profile)
    return document
