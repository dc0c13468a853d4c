"""Tensors that an If/Loop body reads from the enclosing graph are drawn as edges into the node
that owns the body (ONNX's implicit inputs), on the real control-flow exports."""

from __future__ import annotations

import onnx_ir as ir
import pytest

from nsdl_jupyter.graph import EditSummary, GraphScene, GraphTable, build_table
from nsdl_jupyter.graph._extract import BODY_INPUT, body_inputs
from tests import real_exports


def _edges(t: GraphTable) -> set[tuple[str, str, str, int]]:
    return {
        (t.items[e.src].key, t.items[e.dst].key, t.tensors[e.tensor].name, e.flags) for e in t.edges
    }


@pytest.mark.parametrize(
    ("export", "owner", "loop"),
    [("control_flow_dynamo", "node_cond__0", None), ("control_flow_torchscript", "/If", "/Loop")],
)
def test_an_input_read_inside_a_body_is_an_edge_into_its_owner(
    export: str, owner: str, loop: str | None
) -> None:
    model = ir.from_proto(real_exports.load(export))
    edges = _edges(build_table(model.graph).table)
    # the If branches read the graph input x (and initializers, which are no boxes)
    assert ("input:x", owner, "x", BODY_INPUT) in edges
    body_edges = {e for e in edges if e[3] & BODY_INPUT}
    assert {(e[0], e[1]) for e in body_edges} == {("input:x", owner)}
    if loop is not None:  # its body reads /Constant_output_0 too, but that is a Loop input
        node = next(n for n in model.graph if n.name == loop)
        assert {v.name for v in body_inputs(node)} == {"step.weight", "step.bias"}


def _relu_feeds_a_body() -> ir.Model:
    """x -> Relu -> r; If(cond) whose branches read r from the outer graph."""
    x = ir.Value(name="x", type=ir.TensorType(ir.DataType.FLOAT), shape=ir.Shape([2]))
    cond = ir.Value(name="cond", type=ir.TensorType(ir.DataType.BOOL), shape=ir.Shape([]))
    relu = ir.node("Relu", [x], name="Relu")
    relu.outputs[0].name = "r"

    def branch(op: str) -> ir.Graph:
        inner = ir.node(op, [relu.outputs[0]], name=f"{op}_in")
        inner.outputs[0].name = f"{op}_out"
        return ir.Graph([], inner.outputs, nodes=[inner], name=op)

    if_node = ir.node(
        "If", [cond], attributes={"then_branch": branch("Neg"), "else_branch": branch("Abs")},
        num_outputs=1, name="If",
    )  # fmt: skip
    if_node.outputs[0].name = "y"
    graph = ir.Graph([x, cond], if_node.outputs, nodes=[relu, if_node], opset_imports={"": 21})
    return ir.Model(graph, ir_version=10)


def test_body_edges_survive_an_edit_of_their_producer() -> None:
    model = _relu_feeds_a_body()
    scene = GraphScene(model.graph)
    assert ("Relu", "If", "r", BODY_INPUT) in _edges(scene.table)
    nodes = {n.name: n for n in model.graph}
    patch = scene.apply_edit(EditSummary(changed=frozenset({"Relu"}), edges=True), nodes)
    assert ("Relu", "If", "r", BODY_INPUT) in _edges(scene.table)
    index = scene.table.by_key
    assert [index["Relu"], index["If"], scene.table.tensor_index["r"], BODY_INPUT] in patch["edges"]
