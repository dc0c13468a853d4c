"""Type checking on read-only snapshots (what the TypeCheckPanel runs in a worker)."""

from __future__ import annotations

import numpy as np
import onnx_ir as ir
from onnx import TensorProto, helper, numpy_helper

from nsdl_jupyter.document import ModelDocument, check_proto
from tests._document_models import chain_model


def test_snapshot_check_sorts_nodes_that_edits_left_out_of_order() -> None:
    proto = chain_model()
    reordered = list(proto.graph.node)[::-1]
    del proto.graph.node[:]
    proto.graph.node.extend(reordered)
    assert check_proto(proto) == []
    assert [n.name for n in proto.graph.node] == ["relu", "sigmoid", "neg"]


def test_snapshot_reads_the_model_without_changing_it() -> None:
    weights = numpy_helper.from_array(np.ones((64, 64), np.float32), "big")
    shape = numpy_helper.from_array(np.array([2, 2048], np.int64), "shape")
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["x", "big"], ["m"], name="matmul"),
            helper.make_node("Reshape", ["m", "shape"], ["y"], name="reshape"),
        ],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [64, 64])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 2048])],
        initializer=[weights, shape],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    doc = ModelDocument(ir.from_proto(model))
    before = ir.to_proto(doc.model).SerializeToString(deterministic=True)
    tensors = {name: value.const_value for name, value in doc.graph.initializers.items()}
    proto = doc.check_snapshot()
    assert [t.name for t in proto.graph.initializer] == ["shape"]  # small ones stay
    assert [i.name for i in proto.graph.input] == ["x", "big"]  # big ones become typed inputs
    assert proto.graph.input[1].type.tensor_type.elem_type == TensorProto.FLOAT
    assert check_proto(proto) == []
    assert ir.to_proto(doc.model).SerializeToString(deterministic=True) == before
    assert all(doc.graph.initializers[n].const_value is t for n, t in tensors.items())


def test_a_gap_in_variadic_inputs_is_an_error() -> None:
    """The ONNX checker passes `Concat(a, '', b)`; onnxruntime refuses it: check() names it."""
    graph = helper.make_graph(
        [helper.make_node("Concat", ["a", "", "b"], ["y"], name="cat", axis=0)],
        "g",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, [2]) for n in ("a", "b")],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])],
    )
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    found = check_proto(proto)
    assert [(d.severity, d.node) for d in found] == [("error", "cat")]
    assert "empty variadic input(s) [1]" in found[0].message
