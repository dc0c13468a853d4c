"""A model whose every name is hostile markup or a bidi trick, for the escaping tests."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

IMG = "<img src=x onerror=alert(1)>"
SCRIPT = "</script><script>alert(2)</script>"
QUOTE = "\"' onmouseover=alert(3) x='"
RLO = "evil\u202egnp.onnx"  # shows as "evilxnnp.gne" reversed: a right-to-left override
ZERO_WIDTH = "a\u200bb\u2066c\ufeff"
HOSTILE = (IMG, SCRIPT, QUOTE, RLO, ZERO_WIDTH)
# what must never appear raw in any HTML or SVG we write
RAW_MARKERS = (
    "<img src=x",
    "<script>alert",
    "onmouseover=alert(3) x='",
    "\u202e",
    "\u200b",
    "\u2066",
)


def hostile_model() -> onnx.ModelProto:
    """x -> MatMul(w) -> Relu -> Softmax -> y, every node, tensor, initializer, input, output
    and the graph named from HOSTILE."""
    w = numpy_helper.from_array(np.ones((4, 4), np.float32), f"w{IMG}")
    nodes = [
        helper.make_node("MatMul", [f"in{SCRIPT}", w.name], [f"t{QUOTE}"], name=IMG),
        helper.make_node("Relu", [f"t{QUOTE}"], [f"r{RLO}"], name=SCRIPT),
        helper.make_node("Softmax", [f"r{RLO}"], [f"out{ZERO_WIDTH}"], name=RLO, axis=-1),
    ]
    graph = helper.make_graph(
        nodes,
        f"graph{IMG}",
        [helper.make_tensor_value_info(f"in{SCRIPT}", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info(f"out{ZERO_WIDTH}", TensorProto.FLOAT, [1, 4])],
        initializer=[w],
    )
    graph.doc_string = SCRIPT
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    model.producer_name = IMG
    return model


def raw_markers(text: str) -> list[str]:
    """The hostile fragments that appear unescaped in `text`."""
    return [marker for marker in RAW_MARKERS if marker in text]
