"""Saves write large weights piece by piece; the file must still be exactly what protobuf
writes for the whole model (so every reader, and a second save, sees the same bytes)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import onnx
import onnx_ir as ir
import pytest
from onnx import TensorProto, helper, numpy_helper

import nsdl_jupyter as nj
from nsdl_jupyter._weightless import model_proto
from nsdl_jupyter.document._inline_weights import WeightCopies
from nsdl_jupyter.document._model_bytes import FileRange, encode_model

BIG = (256, 128)  # 128 KiB of float32: streamed


def _model() -> onnx.ModelProto:
    """Big and small weights, a tensor doc string, an If with its own initializer, a local
    function and metadata: every place the encoder must leave as protobuf has it."""
    rng = np.random.default_rng(0)
    loaded = numpy_helper.from_array(rng.standard_normal(BIG).astype(np.float32), "loaded")
    loaded.doc_string = "kept"
    small = numpy_helper.from_array(np.float32([1.5]), "small")
    branch_weight = numpy_helper.from_array(np.float32([2.0]), "branch_weight")
    then_branch = helper.make_graph(
        [helper.make_node("Mul", ["y", "branch_weight"], ["t"])],
        "then",
        [],
        [helper.make_tensor_value_info("t", TensorProto.FLOAT, [2, BIG[1]])],
        [branch_weight],
    )
    else_branch = helper.make_graph(
        [helper.make_node("Identity", ["y"], ["e"])],
        "else",
        [],
        [helper.make_tensor_value_info("e", TensorProto.FLOAT, [2, BIG[1]])],
    )
    nodes = [
        helper.make_node("MatMul", ["x", "loaded"], ["h"]),
        helper.make_node("Mul", ["h", "small"], ["y0"]),
        helper.make_node("scale", ["y0"], ["y"], domain="local"),
        helper.make_node("ReduceSum", ["y"], ["s"], keepdims=0),
        helper.make_node("Greater", ["s", "small"], ["c"]),
        helper.make_node("If", ["c"], ["z"], then_branch=then_branch, else_branch=else_branch),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, BIG[0]])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, [2, BIG[1]])],
        [loaded, small],
    )
    function = helper.make_function(
        "local",
        "scale",
        ["a"],
        ["b"],
        [helper.make_node("Neg", ["a"], ["b"])],
        [helper.make_opsetid("", 17)],
    )
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("local", 1)],
        functions=[function],
    )
    helper.set_model_props(model, {"author": "tests"})
    return model


def _in_memory_weight(model: ir.Model) -> np.ndarray:
    """Add a big weight that lives in numpy (as folding makes them) and use it."""
    array = np.arange(BIG[0] * BIG[1], dtype=np.float32).reshape(BIG) / 7
    value = ir.Value(
        name="computed",
        type=ir.TensorType(ir.DataType.FLOAT),
        shape=ir.Shape(BIG),
        const_value=ir.Tensor(array, name="computed", doc_string="folded"),
    )
    model.graph.register_initializer(value)
    add = ir.Node("", "Add", [model.graph.initializers["loaded"], value], name="uses_computed")
    model.graph.append(add)
    model.graph.outputs.append(add.outputs[0])
    add.outputs[0].name = "w"
    add.outputs[0].type, add.outputs[0].shape = value.type, value.shape
    return array


def test_pieces_are_protobufs_own_serialization(tmp_path: Path) -> None:
    model = ir.serde.deserialize_model(_model())
    assert isinstance(model.graph.initializers["loaded"].const_value, ir.serde.TensorProtoTensor)
    computed = _in_memory_weight(model)
    encoded = encode_model(model)
    assert len(encoded.pieces) > 1  # both big weights were streamed
    data = encoded.join()
    assert len(data) == encoded.size
    parsed = onnx.ModelProto.FromString(data)
    assert parsed.SerializeToString() == data  # canonical: field order as protobuf writes it
    assert [t.name for t in parsed.graph.initializer] == ["loaded", "small", "computed"]
    tensors = {t.name: t for t in parsed.graph.initializer}
    np.testing.assert_array_equal(numpy_helper.to_array(tensors["computed"]), computed)
    assert tensors["loaded"].doc_string == "kept" and tensors["computed"].doc_string == "folded"
    assert not {info.name for info in parsed.graph.value_info} & set(tensors)

    document = nj.ModelDocument(model)
    path = document.save(tmp_path / "m.onnx")
    assert path.read_bytes() == data
    onnx.checker.check_model(str(path), full_check=True)
    reopened = onnx.load(path)
    assert reopened.functions[0].name == "scale" and reopened.metadata_props[0].value == "tests"
    (branch,) = [a.g for a in reopened.graph.node[-2].attribute if a.name == "then_branch"]
    assert [t.name for t in branch.initializer] == ["branch_weight"]


@pytest.mark.parametrize("nodes", [0, 1])
def test_graph_of_initializers_only(nodes: int) -> None:
    """The graph field may hold nothing but the streamed weight."""
    weight = numpy_helper.from_array(np.ones(BIG, np.float32), "w")
    node = [helper.make_node("Identity", ["w"], ["y"])][:nodes]
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, BIG)][:nodes]
    graph = helper.make_graph(node, "", [], outputs, [weight])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    data = encode_model(ir.serde.deserialize_model(proto)).join()
    parsed = onnx.ModelProto.FromString(data)
    assert parsed.SerializeToString() == data
    np.testing.assert_array_equal(numpy_helper.to_array(parsed.graph.initializer[0]), 1.0)


def test_the_weightless_model_keeps_types_not_weights() -> None:
    """The checker sees every type without a weight's bytes, and still finds type errors."""
    model = ir.serde.deserialize_model(_model())
    proto = model_proto(model)
    assert proto.ByteSize() < BIG[0] * BIG[1]  # the big weight's bytes are not in it
    assert "loaded" in {i.name for i in proto.graph.input}
    onnx.checker.check_model(proto, full_check=True)
    assert list(model.graph.initializers) == ["loaded", "small"]  # the model is as it was
    assert [v.name for v in model.graph.inputs] == ["x"]

    model.graph.initializers["loaded"].const_value = ir.Tensor(
        np.ones(BIG, np.float64), name="loaded"
    )
    model.graph.initializers["loaded"].type = ir.TensorType(ir.DataType.DOUBLE)
    with pytest.raises(onnx.shape_inference.InferenceError, match="inconsistent type"):
        onnx.checker.check_model(model_proto(model), full_check=True)


def test_a_weight_shared_by_two_initializers_keeps_both_names() -> None:
    weights = [numpy_helper.from_array(np.ones(BIG, np.float32), n) for n in ("a", "b")]
    nodes = [helper.make_node("Add", ["a", "b"], ["y"])]
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, BIG)]
    proto = helper.make_model(
        helper.make_graph(nodes, "g", [], outputs, weights),
        opset_imports=[helper.make_opsetid("", 17)],
    )
    model = ir.serde.deserialize_model(proto)
    model.graph.initializers["b"].const_value = model.graph.initializers["a"].const_value
    parsed = onnx.ModelProto.FromString(encode_model(model).join())
    assert [t.name for t in parsed.graph.initializer] == ["a", "b"]


def test_a_file_of_many_megabytes_is_written_exactly(tmp_path: Path) -> None:
    """Past `_WRITEBACK_BYTES` the save hands what it wrote to the disk as it goes: the file
    is still byte for byte protobuf's serialization, pieces of every size included."""
    rng = np.random.default_rng(0)
    weights = [
        numpy_helper.from_array(rng.standard_normal(n).astype(np.float32), f"w{i}")
        for i, n in enumerate([700_000, 3, 300_000, 40_000, 1_500_000])
    ]
    nodes = [helper.make_node("ReduceSum", [w.name], [f"s{i}"]) for i, w in enumerate(weights)]
    nodes.append(helper.make_node("Sum", [f"s{i}" for i in range(len(weights))], ["y"]))
    graph = helper.make_graph(
        nodes, "g", [], [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])], weights
    )
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    encoded = encode_model(ir.serde.deserialize_model(proto))
    assert encoded.size > 8 * 2**20 and len(encoded.pieces) > 4
    path = nj.ModelDocument(ir.serde.deserialize_model(proto)).save(tmp_path / "m.onnx")
    assert path.read_bytes() == proto.SerializeToString() == encoded.join()


@pytest.mark.parametrize("external_data", [None, "m.onnx.data"])
def test_the_written_structure_is_given_before_the_sync(
    tmp_path: Path, external_data: str | None
) -> None:
    """`while_syncing` gets what was written, its large (or external) weights as typed
    inputs, before the model is renamed into place; the checker reads it as it reads the
    file, type errors included."""
    model = ir.serde.deserialize_model(_model())
    _in_memory_weight(model)
    target = tmp_path / "m.onnx"
    seen: list[onnx.ModelProto] = []

    def look(written: onnx.ModelProto) -> None:
        assert not target.exists()  # not committed yet
        seen.append(written)

    nj.ModelDocument(model).save(target, external_data=external_data, while_syncing=look)
    (structure,) = seen
    assert structure.ByteSize() < BIG[0] * BIG[1]
    inputs = {i.name: i.type.tensor_type for i in structure.graph.input}
    assert set(inputs) == {"x", "loaded", "computed"}
    assert [d.dim_value for d in inputs["computed"].shape.dim] == list(BIG)
    assert [t.name for t in structure.graph.initializer] == ["small"]
    onnx.checker.check_model(structure, full_check=True)
    written = onnx.load(str(target), load_external_data=False)
    assert [n.op_type for n in written.graph.node] == [n.op_type for n in structure.graph.node]

    model.graph.initializers["computed"].const_value = ir.Tensor(
        np.ones(BIG, np.float64), name="computed"
    )
    seen.clear()
    nj.ModelDocument(model).save(tmp_path / "wrong.onnx", while_syncing=seen.append)
    with pytest.raises(onnx.shape_inference.InferenceError, match="inconsistent type"):
        onnx.checker.check_model(seen[0], full_check=True)


# ------------------------------------------------ weights copied from the file read
def _saved_model(tmp_path: Path) -> Path:
    path = tmp_path / "source.onnx"
    onnx.save(_model(), str(path))
    return path


def _copied(doc: nj.ModelDocument) -> int:
    """How many weights a save of `doc` would copy file to file."""
    with WeightCopies() as copies:
        return sum(isinstance(p, FileRange) for p in encode_model(doc.model, copies).pieces)


def test_an_unchanged_weight_is_copied_from_the_file_it_was_read_from(tmp_path: Path) -> None:
    source = _saved_model(tmp_path)
    doc = nj.open_model(source)
    assert _copied(doc) == 1
    doc.set_attribute(doc.graph.node(3).name, "keepdims", 1)
    saved = doc.save(tmp_path / "edited.onnx")
    expected = _model()
    expected.graph.node[3].attribute[0].i = 1
    assert onnx.load(str(saved)).SerializeToString() == saved.read_bytes()
    np.testing.assert_array_equal(
        numpy_helper.to_array(onnx.load(str(saved)).graph.initializer[0]),
        numpy_helper.to_array(expected.graph.initializer[0]),
    )
    written = saved.read_bytes()
    source.unlink()  # nothing to copy from now: the same save serializes every weight
    saved.unlink()
    assert _copied(doc) == 0
    assert doc.save(tmp_path / "serialized.onnx").read_bytes() == written


def test_a_replaced_source_file_is_not_copied_from(tmp_path: Path) -> None:
    """Another model written over the source (same names, other values; or the same file
    changed in place) must not leak its bytes into the save."""
    source = _saved_model(tmp_path)
    doc = nj.open_model(source)
    expected = doc.graph.initializers["loaded"].const_value.numpy().copy()
    other = _model()
    other.graph.initializer[0].raw_data = np.full(BIG, 7, np.float32).tobytes()
    onnx.save(other, str(source))
    assert _copied(doc) == 0
    saved = doc.save(tmp_path / "after_replace.onnx")
    got = numpy_helper.to_array(onnx.load(str(saved)).graph.initializer[0])
    np.testing.assert_array_equal(got, expected)

    doc = nj.open_model(source)
    with open(source, "r+b") as handle:  # same inode, new bytes and mtime
        handle.seek(-4, os.SEEK_END)
        handle.write(b"\0\0\0\0")
        os.utime(handle.fileno(), ns=(1, 1))  # mtime may not move within one clock tick
    assert _copied(doc) == 0


def test_renamed_and_swapped_weights_keep_their_own_bytes(tmp_path: Path) -> None:
    weights = [
        numpy_helper.from_array(np.full(BIG, v, np.float32), n) for v, n in ((1, "a"), (2, "b"))
    ]
    nodes = [helper.make_node("Sub", ["a", "b"], ["y"])]
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, BIG)]
    proto = helper.make_model(
        helper.make_graph(nodes, "g", [], outputs, weights),
        opset_imports=[helper.make_opsetid("", 17)],
    )
    onnx.save(proto, str(tmp_path / "ab.onnx"))
    doc = nj.open_model(tmp_path / "ab.onnx")
    with doc.batch("swap"):
        doc.rename_tensor("a", "tmp")
        doc.rename_tensor("b", "a")
        doc.rename_tensor("tmp", "b")
    assert _copied(doc) == 0
    saved = doc.save(tmp_path / "swapped.onnx")
    tensors = {t.name: numpy_helper.to_array(t) for t in onnx.load(str(saved)).graph.initializer}
    assert tensors["a"][0, 0] == 2 and tensors["b"][0, 0] == 1


def test_saving_in_place_again_copies_from_the_file_just_written(tmp_path: Path) -> None:
    source = _saved_model(tmp_path)
    doc = nj.open_model(source)
    doc.set_attribute(doc.graph.node(3).name, "keepdims", 1)
    doc.save()
    assert _copied(doc) == 1  # the file read first is gone; the new one holds it
    doc.set_attribute(doc.graph.node(3).name, "keepdims", 0)
    doc.save()
    assert _copied(doc) == 1
    assert doc.undo() and doc.undo()
    doc.save()
    assert onnx.load(str(source)).graph.node[3].attribute[0].i == 0
    np.testing.assert_array_equal(
        numpy_helper.to_array(onnx.load(str(source)).graph.initializer[0]),
        numpy_helper.to_array(_model().graph.initializer[0]),
    )


def test_without_a_kernel_copy_the_bytes_go_through_a_buffer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where the OS has no copy_file_range (macOS) or refuses it (another file system)."""
    source = _saved_model(tmp_path)
    doc = nj.open_model(source)
    kernel = doc.save(tmp_path / "kernel.onnx").read_bytes()
    monkeypatch.delattr(os, "copy_file_range", raising=False)
    assert _copied(doc) == 1
    assert doc.save(tmp_path / "buffered.onnx").read_bytes() == kernel
