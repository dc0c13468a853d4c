"""A big file draws from its protobuf (GraphSkeleton) before onnx_ir builds its model: the
drawing must be the one onnx_ir's model gives (same items, edges, tensors, labels, inferred
types), the document builds the model on first use and binds the view to it before any edit,
and what the skeleton does not model falls back to building."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnx_ir as ir
import pytest
from onnx import TensorProto, helper, numpy_helper

import nsdl_jupyter as nj
from nsdl_jupyter.document import ModelLoadError, _document
from nsdl_jupyter.examples import synthetic_dag
from nsdl_jupyter.graph import GraphScene, GraphSkeleton, build_table
from nsdl_jupyter.graph._labels import item_texts, scopes_with_children
from tests import real_exports


def _unbuildable() -> ir.Graph:
    raise AssertionError("the skeleton was asked to build the model")


def _drawn(graph: ir.Graph | GraphSkeleton, proto: onnx.ModelProto) -> dict[str, object]:
    """Everything the drawing is made of, without the node objects."""
    functions = [(f.domain, f.name, f.overload) for f in proto.functions]
    table = build_table(graph, functions).table
    opsets = graph.opset_imports
    texts = item_texts(table, range(len(table.items)), opsets, scopes_with_children(table.items))
    return {
        "items": [(i.name, i.op, i.flags, i.scope, i.key) for i in table.items],
        "edges": table.edges,
        "tensors": table.tensors,
        "initializer_inputs": table.initializer_inputs,
        "texts": texts,
    }


def _same_drawing(proto: onnx.ModelProto) -> None:
    skeleton = GraphSkeleton.of(proto, _unbuildable)
    assert skeleton is not None
    built = ir.serde.deserialize_model(proto).graph
    assert _drawn(skeleton, proto) == _drawn(built, proto)


PLAIN_EXPORTS = [n for n in real_exports.names() if not n.startswith("control_flow")]


@pytest.mark.parametrize("name", PLAIN_EXPORTS)
def test_a_real_export_draws_the_same_from_its_skeleton(name: str) -> None:
    _same_drawing(real_exports.stored(name))


def test_a_synthetic_network_draws_the_same_from_its_skeleton() -> None:
    _same_drawing(synthetic_dag(3000, seed=1))


def _odd_model() -> onnx.ModelProto:
    """What exporters and hand edits leave in files: an initializer that is also a graph
    input, nodes out of order, a tensor read but never produced, a graph output that is a
    graph input, one nobody produces, an ``ai.onnx`` domain, a weight alias, value_info that
    retypes an initializer, dynamo's scope metadata and a local function call."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])
    bias = helper.make_tensor_value_info("bias", TensorProto.FLOAT, [4])
    outputs = [
        helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4]),
        helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4]),
        helper.make_tensor_value_info("ghost", TensorProto.FLOAT, None),
    ]
    weight = numpy_helper.from_array(np.ones((4, 4), np.float32), "layer.weight")
    bias_init = numpy_helper.from_array(np.zeros(4, np.float32), "bias")
    scale = numpy_helper.from_array(np.ones(4, np.float32), "scale")
    nodes = [
        helper.make_node("Add", ["mm", "bias"], ["added"], name="node_add_1", domain="ai.onnx"),
        helper.make_node("Identity", ["layer.weight"], ["alias"], name="Identity_3"),
        helper.make_node("MatMul", ["x", "alias"], ["mm"], name="/layer/MatMul"),
        helper.make_node("Mul", ["added", "scale"], ["scaled"], name="/Mul"),
        helper.make_node("Sub", ["scaled", "nobody_makes_this"], ["sub"], name="/Sub"),
        helper.make_node("MyBlock", ["sub"], ["y"], name="/block/MyBlock", domain="local"),
    ]
    helper.set_metadata_props(
        nodes[0], {"pkg.torch.onnx.name_scopes": "['', 'layer', 'layer.act']"}
    )
    function = helper.make_function(
        "local",
        "MyBlock",
        ["a"],
        ["b"],
        [helper.make_node("Relu", ["a"], ["b"])],
        [helper.make_opsetid("", 18)],
    )
    graph = helper.make_graph(
        nodes,
        "odd",
        [x, bias],
        outputs,
        initializer=[weight, bias_init, scale],
        value_info=[helper.make_tensor_value_info("scale", TensorProto.FLOAT16, [4])],
    )
    return helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", 18), helper.make_opsetid("local", 1)],
        functions=[function],
    )


def test_what_files_really_hold_draws_the_same_from_the_skeleton() -> None:
    _same_drawing(_odd_model())


def test_an_opset_imported_as_ai_onnx_draws_the_same_from_the_skeleton() -> None:
    model = _odd_model()
    model.opset_import[0].domain = "ai.onnx"
    _same_drawing(model)


def _with(model: onnx.ModelProto, change: str) -> onnx.ModelProto:
    changed = onnx.ModelProto()
    changed.CopyFrom(model)
    nodes = changed.graph.node
    if change == "unnamed node":
        nodes[3].name = ""
    elif change == "names twice":
        nodes[3].name = nodes[2].name
    elif change == "produced twice":
        nodes[3].output[0] = "mm"
    elif change == "output over an input":
        nodes[3].output[0] = "x"
    elif change == "a body":
        nodes[3].attribute.append(helper.make_attribute("body", helper.make_graph([], "b", [], [])))
    return changed


@pytest.mark.parametrize(
    "change", ["unnamed node", "names twice", "produced twice", "output over an input", "a body"]
)
def test_what_the_skeleton_does_not_model_is_left_to_onnx_ir(change: str) -> None:
    assert GraphSkeleton.of(_with(_odd_model(), change), _unbuildable) is None


def test_types_inferred_from_the_skeleton_are_those_of_the_built_model() -> None:
    proto = real_exports.stored("resnet50_torchscript", short=True)  # declares no value_info
    skeleton = GraphSkeleton.of(proto, _unbuildable)
    assert skeleton is not None
    shown = []
    for graph in (skeleton, ir.serde.deserialize_model(proto).graph):
        scene = GraphScene(graph)
        scene.infer()
        shown.append([scene.tensor_text(i) for i in range(len(scene.table.tensors))])
    assert shown[0] == shown[1]
    assert sum(1 for _, shape in shown[0] if shape) > 50


# ------------------------------------------------------------------ the document and its view
@pytest.fixture
def builds_on_use(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every file opens without its onnx_ir model, as files over BUILD_ON_USE_ABOVE nodes do."""
    monkeypatch.setattr(_document, "BUILD_ON_USE_ABOVE", 0)


def _saved(model: onnx.ModelProto, folder: Path) -> Path:
    path = folder / "model.onnx"
    onnx.save(model, path)
    return path


def test_a_big_file_opens_and_draws_without_building_its_model(tmp_path: Path) -> None:
    path = _saved(synthetic_dag(_document.BUILD_ON_USE_ABOVE + 10, seed=3), tmp_path)
    doc = nj.open_model(path)
    view = nj.GraphView(doc)
    assert doc.unbuilt_model() is not None, "opening and drawing built the onnx_ir model"
    assert f"{_document.BUILD_ON_USE_ABOVE + 10} nodes" in repr(doc)
    assert doc.unbuilt_model() is not None
    assert len(doc.nodes) == _document.BUILD_ON_USE_ABOVE + 10  # first use builds it
    assert doc.unbuilt_model() is None
    assert view._scene.graph is doc.graph


@pytest.mark.usefixtures("builds_on_use")
def test_an_edit_builds_the_model_and_the_view_follows_it(tmp_path: Path) -> None:
    proto = real_exports.stored("resnet50_torchscript", short=True)
    doc = nj.open_model(_saved(proto, tmp_path))
    view = nj.GraphView(doc)
    scene = view._scene
    assert isinstance(scene._graph, GraphSkeleton)
    conv = next(n.name for n in proto.graph.node if n.op_type == "Conv")
    doc.rename_node(conv, "first_conv")  # builds the model, then edits it
    assert scene._graph is doc.graph
    item = scene.table.items[scene.table.by_key["first_conv"]]
    assert item.node is doc.nodes["first_conv"]
    assert all(i.node is None or i.node.graph is doc.graph for i in scene.table.items)
    doc.undo()
    assert scene.table.items[scene.table.by_key[conv]].node is doc.nodes[conv]
    properties = view._properties.node(scene.table.by_key[conv])
    assert properties["op_type"] == "Conv"


@pytest.mark.usefixtures("builds_on_use")
def test_the_properties_pane_builds_the_model_it_reads(tmp_path: Path) -> None:
    proto = real_exports.stored("bert_base_dynamo", short=True)
    doc = nj.open_model(_saved(proto, tmp_path))
    view = nj.GraphView(doc)
    matmul = next(n.name for n in proto.graph.node if n.op_type == "MatMul")
    properties = view._properties.node(view._scene.table.by_key[matmul])
    assert doc.unbuilt_model() is None
    assert properties["name"] == matmul


@pytest.mark.usefixtures("builds_on_use")
def test_a_malformed_big_file_fails_clearly_and_stays_as_it_was(tmp_path: Path) -> None:
    path = _saved(_with(_odd_model(), "produced twice"), tmp_path)
    before = path.read_bytes()
    doc = nj.open_model(path)  # opened: its graph is read when something needs it
    with pytest.raises(ModelLoadError, match="could not be read as an ONNX model"):
        nj.GraphView(doc)
    with pytest.raises(ModelLoadError, match="'mm' is redeclared"):
        doc.rename_node("/Mul", "m")
    assert path.read_bytes() == before


@pytest.mark.usefixtures("builds_on_use")
def test_a_file_with_external_data_builds_its_model_at_open(tmp_path: Path) -> None:
    model = real_exports.stored("resnet50_torchscript", short=True)
    path = tmp_path / "model.onnx"
    onnx.save(model, path, save_as_external_data=True, size_threshold=0)
    assert nj.open_model(path).unbuilt_model() is None
