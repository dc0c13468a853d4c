"""Type checking on read-only snapshots (what the TypeCheckPanel runs in a worker), of the
main graph, of open bodies (outer-scope reads) and of local functions and their calls."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import numpy as np
import onnx
import onnx_ir as ir
import pytest
from onnx import TensorProto, helper, numpy_helper

from nsdl_jupyter.document import DocumentError, ModelDocument, check_proto
from nsdl_jupyter.document._bodies import OpenBody
from nsdl_jupyter.ops import is_custom_domain
from tests import real_exports
from tests._document_models import chain_model
from tests.test_document_bodies import function_model
from tests.test_real_exports import _by_size


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


# --------------------------------------------------------------- bodies and local functions
def _outer_reads_model(then_reads: str = "h") -> onnx.ModelProto:
    """Shaped like torch's control-flow exports: h = Relu(x) (no value_info, as exporters
    leave intermediates), If(sum(h) > 0) then = MatMul(h, w) + b, else = Neg(h); Loop(n) adds
    Sigmoid(MatMul(acc, w)) and an If nested in its body reads h two scopes up. Every body
    reads tensors of enclosing scopes by name, as ONNX allows."""
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array(rng.standard_normal((64, 64)).astype(np.float32), "w")  # big
    b = numpy_helper.from_array(np.zeros(64, np.float32), "b")  # small: stays a constant
    zero = numpy_helper.from_array(np.array(0.0, np.float32), "zero")
    out = helper.make_tensor_value_info
    then_branch = helper.make_graph(
        [
            helper.make_node("MatMul", [then_reads, "w"], ["proj"], name="then_proj"),
            helper.make_node("Add", ["proj", "b"], ["biased"], name="then_bias"),
        ],
        "then_branch",
        [],
        [out("biased", TensorProto.FLOAT, [2, 64])],
    )
    else_branch = helper.make_graph(
        [helper.make_node("Neg", ["h"], ["negated"], name="else_neg")],
        "else_branch",
        [],
        [out("negated", TensorProto.FLOAT, [2, 64])],
    )
    nested = helper.make_graph(
        [helper.make_node("Add", ["acc_in", "h"], ["plus_h"], name="nested_add")],
        "nested",
        [],
        [out("plus_h", TensorProto.FLOAT, [2, 64])],
    )
    loop_body = helper.make_graph(
        [
            helper.make_node("Identity", ["cond_in"], ["cond_out"], name="keep_going"),
            helper.make_node("MatMul", ["acc_in", "w"], ["step"], name="loop_proj"),
            helper.make_node("Sigmoid", ["step"], ["gate"], name="loop_gate"),
            helper.make_node(
                "If",
                ["cond_in"],
                ["chosen"],
                name="loop_choice",
                then_branch=nested,
                else_branch=else_branch,
            ),
            helper.make_node("Add", ["chosen", "gate"], ["acc_out"], name="loop_add"),
        ],
        "loop_body",
        [
            out("i", TensorProto.INT64, []),
            out("cond_in", TensorProto.BOOL, []),
            out("acc_in", TensorProto.FLOAT, [2, 64]),
        ],
        [out("cond_out", TensorProto.BOOL, []), out("acc_out", TensorProto.FLOAT, [2, 64])],
    )
    graph = helper.make_graph(
        [
            helper.make_node("Relu", ["x"], ["h"], name="act"),
            helper.make_node("ReduceSum", ["h"], ["total"], name="total", keepdims=0),
            helper.make_node("Greater", ["total", "zero"], ["positive"], name="positive"),
            helper.make_node(
                "If",
                ["positive"],
                ["gated"],
                name="branch",
                then_branch=then_branch,
                else_branch=else_branch,
            ),
            helper.make_node("Loop", ["n", "", "gated"], ["y"], name="loop", body=loop_body),
        ],
        "main",
        [out("x", TensorProto.FLOAT, [2, 64]), out("n", TensorProto.INT64, [])],
        [out("y", TensorProto.FLOAT, [2, 64])],
        initializer=[w, b, zero],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def _open_bodies(doc: ModelDocument) -> Iterator[tuple[str, ModelDocument]]:
    """(label, document) for every body at any depth (each discarded after its bodies) and
    every local function, opened as the Designer's tabs open them."""
    for node in list(doc.graph):
        for attr in node.attributes.values():
            if attr.type == ir.AttributeType.GRAPH:
                body = doc.open_subgraph(node, attr.name)
                yield f"{node.name}.{attr.name}", body
                yield from _open_bodies(body)
                body.discard()
    if isinstance(doc, OpenBody):
        return  # functions open from the model's document
    for domain, name, _overload in list(doc.functions):
        function = doc.open_function(name, domain)
        yield f"{domain}::{name}", function
        function.discard()


def _all_checks(doc: ModelDocument) -> dict[str, list[tuple[str, str | None]]]:
    found = {"main": [(d.severity, d.node) for d in doc.check()]}
    for label, body in _open_bodies(doc):
        found[label] = [(d.severity, d.node) for d in body.check()]
    return found


def test_bodies_reading_outer_tensors_check_clean_from_the_model_and_as_bodies() -> None:
    doc = ModelDocument(ir.from_proto(_outer_reads_model()))
    assert doc.tensors["h"].type is None  # its type comes from inference on the parent
    assert _all_checks(doc) == {
        "main": [],
        "branch.then_branch": [],
        "branch.else_branch": [],
        "loop.body": [],
        "loop_choice.then_branch": [],
        "loop_choice.else_branch": [],
    }
    # the outer reads join the body's snapshot typed as in the enclosing scopes, w as an input
    # (big), b as a constant (small): inference sees the same types as in the whole model
    then = doc.open_subgraph("branch", "then_branch")
    proto = then.check_snapshot()
    inputs = {i.name: i.type.tensor_type for i in proto.graph.input}
    assert inputs["h"].elem_type == TensorProto.FLOAT
    assert [d.dim_value for d in inputs["h"].shape.dim] == [2, 64]
    assert "w" in inputs and [t.name for t in proto.graph.initializer] == ["b"]
    # a real error inside the body is still found, on the body's node
    then.connect(
        "b", "then_proj", 1, replace=True
    )  # MatMul([2, 64], [64]) then Add([2], [64]): mismatch
    assert ("error", "then_bias") in [(d.severity, d.node) for d in then.check()]
    then.discard()


@pytest.mark.parametrize("model", ["dynamo", "torchscript"])
def test_torch_control_flow_exports_check_clean_in_every_body(model: str) -> None:
    doc = ModelDocument(ir.from_proto(real_exports.load(f"control_flow_{model}")))
    found = _all_checks(doc)
    assert any(label.endswith("then_branch") for label in found)
    assert found == {label: [] for label in found}


def test_a_body_reading_a_name_no_scope_defines_is_an_error() -> None:
    logging.disable(logging.WARNING)  # onnx_ir warns while loading the dangling reference
    try:
        doc = ModelDocument(ir.from_proto(_outer_reads_model(then_reads="ghost")))
    finally:
        logging.disable(logging.NOTSET)
    found = doc.check()
    assert [(d.severity, d.node) for d in found] == [("error", "branch")]
    assert "then_proj (in branch.then_branch) reads 'ghost'" in found[0].message
    then = doc.open_subgraph("branch", "then_branch")
    found = then.check()
    assert [(d.severity, d.node) for d in found] == [("error", "then_proj")]
    assert "reads 'ghost', which no earlier node produces" in found[0].message
    then.discard()
    assert doc.open_subgraph("branch", "else_branch").check() == []


def test_an_error_elsewhere_does_not_blame_a_branch_that_reads_outer_tensors() -> None:
    """When the checker fails, nodes are checked one by one: an If reading outer tensors must
    not be reported for it (the checker's lexical scope cannot be filled from Python)."""
    proto = _outer_reads_model()
    proto.graph.node.append(helper.make_node("Concat", ["y", "y"], ["cat"], name="no_axis"))
    assert [(d.severity, d.node) for d in check_proto(proto)] == [("error", "no_axis")]


def call_model(**call_attributes: float) -> onnx.ModelProto:
    """function_model's local::Scaled called from the main graph and from an If branch."""
    model = function_model()
    call = helper.make_node("Scaled", ["x"], ["inner"], name="inner_call", domain="local")
    call.attribute.extend(helper.make_attribute(k, v) for k, v in call_attributes.items())
    out = helper.make_tensor_value_info("inner", TensorProto.FLOAT, [2, 3])
    then_branch = helper.make_graph([call], "then_branch", [], [out])
    else_branch = helper.make_graph(
        [helper.make_node("Neg", ["x"], ["inner"], name="else_neg")], "else_branch", [], [out]
    )
    model.graph.input.append(helper.make_tensor_value_info("cond", TensorProto.BOOL, []))
    model.graph.node.append(
        helper.make_node(
            "If",
            ["cond"],
            ["z"],
            name="branch",
            then_branch=then_branch,
            else_branch=else_branch,
        )
    )
    model.graph.output.append(helper.make_tensor_value_info("z", TensorProto.FLOAT, [2, 3]))
    return model


def test_local_function_calls_are_not_custom_operators_in_the_model_its_bodies_or_itself() -> None:
    doc = ModelDocument(ir.from_proto(call_model(alpha=3.0)))
    assert is_custom_domain("local")  # the function's domain has no schemas, its calls do
    assert _all_checks(doc) == {
        "main": [],
        "branch.then_branch": [],
        "branch.else_branch": [],
        "local::Scaled": [],
    }
    then = doc.open_subgraph("branch", "then_branch")
    assert list(then.functions) == [("local", "Scaled", "")]  # what its nodes may call
    with pytest.raises(DocumentError, match="local functions belong to the model"):
        then.open_function("Scaled", "local")
    then.discard()
    doc.delete_function("Scaled", "local")  # now the calls are custom operators
    found = doc.check()
    assert [(d.severity, d.node) for d in found] == [("warning", "block")]
    assert "custom operator" in found[0].message


def test_local_function_calls_are_checked_against_the_signature() -> None:
    proto = call_model(alpha=3.0)
    proto.graph.node[0].input.append("x")  # Scaled takes one input
    found = check_proto(proto)
    assert [(d.severity, d.node) for d in found] == [("error", "block")]
    assert "with 2 inputs, but it has 1 (t)" in found[0].message

    doc = ModelDocument(ir.from_proto(call_model()))  # the call in the branch omits alpha
    then = doc.open_subgraph("branch", "then_branch")
    found = [d for d in then.check() if d.source == "checker"]
    assert [(d.severity, d.node) for d in found] == [("warning", "inner_call")]
    assert "['alpha'] have no default and no value here" in found[0].message


def test_an_open_function_reports_its_true_errors_on_its_nodes() -> None:
    proto = function_model()
    proto.functions[0].node.append(
        helper.make_node("Concat", ["out", "out"], ["unused"], name="no_axis")
    )
    doc = ModelDocument(ir.from_proto(proto))
    function = doc.open_function("Scaled", "local")
    assert [(d.severity, d.node) for d in function.check()] == [("error", "no_axis")]
    function.remove_node("no_axis")
    assert function.check() == []
    function.discard()


@pytest.mark.parametrize("name", _by_size(real_exports.names()))
def test_every_real_export_checks_clean_in_every_graph(name: str) -> None:
    """The torch exports are valid models: no finding on the main graph, on any body opened
    with open_subgraph or on any local function opened with open_function. BERT, GPT-2,
    ViT-B/16 and ResNet-50 in their short form (the first two of each run of identical
    blocks, every op type of the whole: tests/test_real_exports.py), since the check reads
    each node by itself."""
    doc = ModelDocument(ir.from_proto(real_exports.load(name, short=name in real_exports.SHORT)))
    found = _all_checks(doc)
    assert found == {label: [] for label in found}
