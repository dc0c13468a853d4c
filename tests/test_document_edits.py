"""ModelDocument edits: nodes, connections, attributes, graph IO, initializers, events."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnx_ir as ir
import onnxruntime as ort
import pytest

import nsdl_jupyter as nj
from nsdl_jupyter.document import (
    ChangeEvent,
    DocumentError,
    GraphEditError,
    InitializerError,
    InvalidNameError,
)
from tests._document_models import conv_relu_model


@pytest.fixture
def doc(tmp_path: Path) -> nj.ModelDocument:
    path = tmp_path / "m.onnx"
    onnx.save(conv_relu_model(), str(path))
    return nj.open_model(path)


def run(path: Path, x: np.ndarray) -> np.ndarray:
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return session.run(None, {"x": x})[0]


def test_open_exposes_nodes_with_generated_names(doc: nj.ModelDocument) -> None:
    assert list(doc.nodes) == ["conv", "Relu_1", "add"]
    conv = doc.nodes["conv"]
    assert (conv.op_type, conv.domain) == ("Conv", "")
    assert [v.name for v in conv.inputs] == ["x", "w", "b"]
    assert [v.name for v in conv.outputs] == ["c"]
    assert list(conv.attributes["pads"].value) == [1, 1, 1, 1]
    assert not doc.dirty


def test_set_attribute_checks_type_and_undoes(doc: nj.ModelDocument) -> None:
    events: list[ChangeEvent] = []
    doc.subscribe(events.append)
    doc.set_attribute("conv", "strides", "[2, 2]")
    assert list(doc.nodes["conv"].attributes["strides"].value) == [2, 2]
    assert doc.dirty
    assert events[-1].changed == {"conv"} and not events[-1].structural
    with pytest.raises(DocumentError, match="strides"):
        doc.set_attribute("conv", "strides", "'text'")
    with pytest.raises(DocumentError, match="no attribute 'stride'"):
        doc.set_attribute("conv", "stride", [1, 1])
    assert list(doc.nodes["conv"].attributes["strides"].value) == [2, 2]
    assert doc.undo()
    assert "strides" not in doc.nodes["conv"].attributes
    assert not doc.dirty
    assert events[-1].source == "undo"
    assert doc.redo()
    assert list(doc.nodes["conv"].attributes["strides"].value) == [2, 2]


def test_literal_error_points_at_column(doc: nj.ModelDocument) -> None:
    with pytest.raises(ValueError, match="column 5"):
        doc.set_attribute("conv", "pads", "[1, , 1, 1]")
    assert list(doc.nodes["conv"].attributes["pads"].value) == [1, 1, 1, 1]
    assert not doc.dirty


def test_reset_attribute_and_listing(doc: nj.ModelDocument) -> None:
    listing = doc.attributes_of("conv")
    assert listing.set_values == {"pads": [1, 1, 1, 1]}
    assert listing.defaults["group"] == 1
    assert "pads" not in listing.defaults
    doc.reset_attribute("conv", "pads")
    assert "pads" not in doc.nodes["conv"].attributes
    assert "pads" not in doc.attributes_of("conv").set_values
    doc.undo()
    assert list(doc.nodes["conv"].attributes) == ["pads"]


def test_multi_select_edit_is_one_undo_step(doc: nj.ModelDocument) -> None:
    first = doc.add_node("Relu", inputs=["y"])
    second = doc.add_node("Relu", inputs=["y"])
    doc.add_node("LeakyRelu", name="leaky", inputs=["y"])
    doc.set_attributes(["leaky"], "alpha", 0.2)
    with doc.batch("rename two"):
        doc.rename_node(first, "first")
        doc.rename_node(second, "second")
    assert {"first", "second"} <= set(doc.nodes)
    doc.undo()
    assert "first" not in doc.nodes and "second" not in doc.nodes
    doc.redo()
    assert {"first", "second"} <= set(doc.nodes)


def test_failed_batch_changes_nothing(doc: nj.ModelDocument) -> None:
    before = onnx.ModelProto.SerializeToString(ir.to_proto(doc.model))

    def rename_both() -> None:
        with doc.batch("bad"):
            doc.rename_node("conv", "conv2")
            doc.rename_node("add", "conv2")

    with pytest.raises(InvalidNameError):
        rename_both()
    assert ir.to_proto(doc.model).SerializeToString() == before
    assert not doc.can_undo


def test_add_connect_remove_node_runs(doc: nj.ModelDocument, tmp_path: Path) -> None:
    node = doc.add_node("Sigmoid", name="gate", inputs=["y"])
    doc.add_graph_output(node.outputs[0].name)
    out = tmp_path / "edited.onnx"
    doc.save(out)
    x = np.random.default_rng(1).standard_normal((1, 3, 8, 8)).astype(np.float32)
    session = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"])
    y, gated = session.run(None, {"x": x})
    np.testing.assert_allclose(gated, 1 / (1 + np.exp(-y)), rtol=1e-4, atol=1e-6)
    doc.remove_node("gate")
    assert "gate" not in doc.nodes
    assert [v.name for v in doc.graph.outputs] == ["y"]
    doc.undo()
    assert doc.nodes["gate"].inputs[0] is doc.tensors["y"]
    assert len(doc.graph.outputs) == 2


def test_node_names_are_checked(doc: nj.ModelDocument) -> None:
    with pytest.raises(InvalidNameError, match="not a C identifier"):
        doc.rename_node("conv", "conv-1")
    with pytest.raises(InvalidNameError, match="already exists"):
        doc.rename_node("conv", "add")
    with pytest.raises(InvalidNameError, match="C keyword"):
        doc.add_node("Relu", name="int")
    with pytest.raises(InvalidNameError, match=r"character 1"):
        doc.rename_node("conv", "1conv")
    assert "conv" in doc.nodes and not doc.dirty


def test_connect_rules(doc: nj.ModelDocument) -> None:
    with pytest.raises(GraphEditError, match="already linked"):
        doc.connect("x", "add", 0)
    with pytest.raises(GraphEditError, match="cycle"):
        doc.connect("y", "conv", 0, replace=True)
    with pytest.raises(GraphEditError, match="no input 2"):
        doc.connect("x", "add", 2)
    concat = doc.add_node("Concat", name="cat", attributes={"axis": 1})
    for index in range(3):  # variadic input grows
        doc.connect("y", concat, index)
    assert [v.name for v in concat.inputs] == ["y", "y", "y"]
    assert len(doc.tensors["y"].uses()) == 3  # one output, many consumers
    doc.disconnect(concat, 2)
    assert len(concat.inputs) == 2
    doc.undo()
    assert len(concat.inputs) == 3


def test_connect_past_the_end_never_leaves_a_gap(doc: nj.ModelDocument) -> None:
    concat = doc.add_node("Concat", name="cat", attributes={"axis": 1}, inputs=["y", "y", "y"])
    with pytest.raises(GraphEditError, match=r"input\(s\) 3\.\.4 empty.*connect input 3"):
        doc.connect("x", concat, 5)
    assert [v.name for v in concat.inputs] == ["y", "y", "y"]
    doc.connect("y", concat, 3)  # the next free input
    assert len(concat.inputs) == 4
    resize = doc.add_node("Resize", name="resize", inputs=["y"])
    doc.create_initializer("scales", "[1.0, 1.0, 2.0, 2.0]", dtype="float32")
    doc.connect("scales", resize, 2)  # roi (input 1) is optional: leaving it empty is valid
    assert [v.name if v else None for v in resize.inputs] == ["y", None, "scales"]


def test_the_number_of_outputs_of_a_split_changes_and_undoes(
    doc: nj.ModelDocument, tmp_path: Path
) -> None:
    split = doc.add_node("Split", name="split", inputs=["y"], attributes={"axis": 1})
    assert len(split.outputs) == 1
    doc.set_output_count(split, 4)
    assert [v.name for v in split.outputs] == [f"split_outputs_{i}" for i in range(4)]
    doc.add_graph_output("split_outputs_3")
    with pytest.raises(GraphEditError, match=r"\['split_outputs_3'\].*still used"):
        doc.set_output_count(split, 2)
    doc.undo()  # the graph output
    doc.set_output_count(split, 2)
    doc.add_graph_output("split_outputs_1")
    out = tmp_path / "split.onnx"
    doc.save(out)
    x = np.ones((1, 3, 8, 8), np.float32)
    halves = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    assert [a.shape for a in halves] == [(1, 4, 8, 8), (1, 2, 8, 8)]
    doc.undo()
    doc.undo()  # back to four outputs: the same value objects, names kept
    assert [v.name for v in split.outputs] == [f"split_outputs_{i}" for i in range(4)]
    assert all(v.producer() is split and v.index() == i for i, v in enumerate(split.outputs))
    with pytest.raises(GraphEditError, match="outputs, not 0"):
        doc.set_output_count(split, 0)


def test_custom_operator_of_an_imported_domain(doc: nj.ModelDocument, tmp_path: Path) -> None:
    """A TensorRT plugin / vendor op: no schema, so slots and attribute types come from the call."""
    with pytest.raises(GraphEditError, match=r"import_domain\('trt.plugins'\)"):
        doc.add_node("ScatterPlugin", "trt.plugins", inputs=["y"])
    doc.import_domain("trt.plugins", 1)
    node = doc.add_node(
        "ScatterPlugin",
        "trt.plugins",
        inputs=["y"],
        num_inputs=2,
        num_outputs=2,
        attributes={"alpha": 0.5, "mode": "fast", "dims": [1, 2]},
    )
    assert len(node.inputs) == 2 and node.inputs[1] is None and len(node.outputs) == 2
    assert {a.name: a.type for a in node.attributes.values()} == {
        "alpha": ir.AttributeType.FLOAT,
        "mode": ir.AttributeType.STRING,
        "dims": ir.AttributeType.INTS,
    }
    doc.connect("x", node, 1)
    doc.add_graph_output(node.outputs[1].name)
    found = doc.check()  # warnings only: a custom operator, an output type nothing can infer
    assert [(d.severity, d.node) for d in found] == [("warning", node.name)] * 2
    assert "custom operator" in found[0].message and "set_tensor_type" in found[1].message
    out = tmp_path / "plugin.onnx"
    doc.save(out)
    saved = onnx.load(out)
    assert {o.domain: o.version for o in saved.opset_import}["trt.plugins"] == 1
    assert [n.op_type for n in saved.graph.node if n.domain == "trt.plugins"] == ["ScatterPlugin"]
    for _ in range(4):
        doc.undo()
    assert "trt.plugins" not in doc.opset_imports and node.name not in doc.nodes
    with pytest.raises(GraphEditError, match="not a valid name"):
        doc.import_domain("bad domain")
    doc.import_domain("vendor", 2)
    with pytest.raises(GraphEditError, match="already imports 'vendor' at version 2"):
        doc.import_domain("vendor", 3)
    with pytest.raises(GraphEditError, match="leave num_inputs out"):
        doc.add_node("Relu", inputs=["y"], num_inputs=1)


def test_unknown_operator_and_domain(doc: nj.ModelDocument) -> None:
    with pytest.raises(GraphEditError, match="Conv"):
        doc.add_node("Convv")
    with pytest.raises(GraphEditError, match="does not import domain"):
        doc.add_node("FusedConv", domain="com.microsoft")
    contrib = nj.new_model(opset=17, contrib_ops=True)
    node = contrib.add_node("FusedConv", domain="com.microsoft")
    assert node.domain == "com.microsoft"


def test_graph_io_edits(doc: nj.ModelDocument, tmp_path: Path) -> None:
    doc.set_tensor_type("x", shape=["batch", 3, 8, 8])
    doc.set_tensor_type("y", shape=["batch", 4, 8, 8])
    doc.rename_tensor("x", "image")
    out = tmp_path / "dyn.onnx"
    doc.save(out)
    loaded = onnx.load(str(out))
    dims = loaded.graph.input[0].type.tensor_type.shape.dim
    assert loaded.graph.input[0].name == "image" and dims[0].dim_param == "batch"
    x = np.ones((2, 3, 8, 8), np.float32)
    session = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"])
    assert session.run(None, {"image": x})[0].shape == (2, 4, 8, 8)
    extra = doc.add_graph_input("extra", "float32", [1])
    assert extra in doc.graph.inputs
    doc.remove_graph_input("extra")
    with pytest.raises(InvalidNameError):
        doc.add_graph_input("w", "float32", [1])
    for _ in range(5):
        doc.undo()
    assert doc.graph.inputs[0].name == "x"
    assert doc.graph.inputs[0].shape == ir.Shape([1, 3, 8, 8])


def test_initializers_create_generate_delete(doc: nj.ModelDocument, tmp_path: Path) -> None:
    doc.create_initializer("lit", "[[1, 2], [3, 4]]", dtype="float32")
    assert doc.graph.initializers["lit"].const_value.numpy().tolist() == [[1, 2], [3, 4]]
    zeros = doc.create_initializer("z", generate="zeros", dtype="int8", shape=[2, 3])
    assert zeros.const_value.numpy().dtype == np.int8
    normal = doc.create_initializer("n", generate="normal", dtype="float16", shape=[100])
    assert 0.5 < float(np.std(normal.const_value.numpy())) < 1.5
    uniform = doc.create_initializer("u", generate="uniform", dtype="int32", shape=[1000])
    values = uniform.const_value.numpy()
    assert values.min() < 0 < values.max()
    with pytest.raises(InitializerError, match="not available for BOOL"):
        doc.create_initializer("bad", generate="normal", dtype="bool", shape=[2])
    npy = tmp_path / "a.npy"
    np.save(npy, np.arange(4, dtype=np.int64))
    doc.create_initializer("from_npy", str(npy), dtype="int64")
    with pytest.raises(InitializerError, match="int64 values"):
        doc.create_initializer("wrong", str(npy), dtype="float32")
    # delete disconnects users; undo reconnects them
    doc.delete_initializer("b")
    assert doc.nodes["conv"].inputs[2] is None
    doc.undo()
    assert doc.nodes["conv"].inputs[2] is doc.graph.initializers["b"]
    # connect an initializer to a free input
    doc.disconnect("conv", 2)
    doc.connect_initializer("b", "conv", 2)
    assert doc.nodes["conv"].inputs[2].name == "b"


def test_events_describe_structure(doc: nj.ModelDocument) -> None:
    events: list[ChangeEvent] = []
    unsubscribe = doc.subscribe(events.append)
    node = doc.add_node("Relu", inputs=["y"])
    assert events[-1].added == {node.name} and events[-1].structural
    assert node.name == "Relu"
    doc.rename_node(node, "r2")
    assert events[-1].renamed == (("Relu", "r2"),)
    doc.undo()
    assert events[-1].source == "undo"
    assert events[-1].renamed == (("r2", "Relu"),)
    doc.undo()
    assert events[-1].removed == {"Relu"}
    count = len(events)
    unsubscribe()
    doc.redo()
    assert len(events) == count


def test_new_model_opsets() -> None:
    latest = onnx.defs.onnx_opset_version()
    for opset in (1, 7, 13, latest):
        doc = nj.new_model(opset=opset)
        assert doc.opset_imports[""] == opset
    with pytest.raises(DocumentError, match="opset"):
        nj.new_model(opset=latest + 1)
    doc = nj.new_model(opset=13)
    doc.add_graph_input("a", "float32", [2])
    node = doc.add_node("Relu", inputs=["a"])
    doc.add_graph_output(node.outputs[0].name)
    assert doc.check() == []


def test_batch_edits_see_names_made_earlier_in_the_batch(doc: nj.ModelDocument) -> None:
    with doc.batch("build"):
        doc.add_node("Relu", name="extra")
        doc.rename_node("extra", "extra2")
        doc.set_attribute("conv", "group", 1)
        doc.create_initializer("k", [1.0, 2.0])
        doc.rename_tensor("k", "k2")
        doc.connect("c", "extra2", 0)
        doc.remove_node("extra2")
    assert "extra2" not in doc.nodes and "k2" in doc.tensors
    doc.undo()
    assert "k" not in doc.tensors and "k2" not in doc.tensors and "extra" not in doc.nodes

    def half_way() -> None:
        with doc.batch("fails half-way"):
            doc.add_node("Relu", name="gone")
            doc.connect("c", "gone", 0)
            doc.connect("c", "no_such_node", 0)

    with pytest.raises(GraphEditError):
        half_way()
    assert "gone" not in doc.nodes  # reverted, and the index knows it


def test_one_condition_one_error_type(doc: nj.ModelDocument) -> None:
    """An unknown attribute is refused alike by set and reset; an unknown node is a KeyError too."""
    from nsdl_jupyter.document import AttributeEditError, UnknownNodeError

    for edit in (
        lambda: doc.set_attribute("conv", "padz", [0, 0, 0, 0]),
        lambda: doc.reset_attribute("conv", "padz"),
    ):
        with pytest.raises(AttributeEditError, match="Conv has no attribute 'padz'"):
            edit()
    doc.add_node("Cast", name="cast", inputs=["y"], attributes={"to": 10})
    with pytest.raises(AttributeEditError, match="'to' of Cast is required"):
        doc.reset_attribute("cast", "to")
    with pytest.raises(UnknownNodeError, match="no node named 'conf'") as lookup:
        doc.node("conf")
    assert isinstance(lookup.value, KeyError) and isinstance(lookup.value, GraphEditError)
    assert str(lookup.value).startswith("no node")  # not quoted as KeyError would
