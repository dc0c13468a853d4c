"""Opening and saving: bad input gives clear errors and writes nothing; saves are atomic."""

from __future__ import annotations

import contextlib
import gc
import mmap
import os
import random
from pathlib import Path

import numpy as np
import onnx
import onnx_ir as ir
import onnxruntime as ort
import pytest

import nsdl_jupyter as nj
from nsdl_jupyter.document import (
    COMPANION_SUFFIX,
    CompanionWarning,
    DocumentError,
    InitializerError,
    ModelLoadError,
    ModelSaveError,
)
from tests._document_models import conv_relu_model, save_with_external


def test_random_bytes_and_truncated_files(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    for i in range(20):
        junk = tmp_path / f"junk{i}.onnx"
        junk.write_bytes(rng.bytes(int(rng.integers(1, 4096))))
        with pytest.raises(ModelLoadError, match="not"):
            nj.open_model(junk)
    data = conv_relu_model().SerializeToString()
    for cut in (1, 10, len(data) // 2, len(data) - 3):
        truncated = tmp_path / f"cut{cut}.onnx"
        truncated.write_bytes(data[:cut])
        with pytest.raises(ModelLoadError):
            nj.open_model(truncated)
    with pytest.raises(FileNotFoundError):
        nj.open_model(tmp_path / "missing.onnx")


def test_external_data_escaping_folder_is_refused(tmp_path: Path) -> None:
    model_dir = tmp_path / "a" / "b"
    model_dir.mkdir(parents=True)
    (tmp_path / "x").write_bytes(b"\0" * 10_000)
    model = conv_relu_model()
    save_with_external(model, model_dir / "m.onnx", "m.data")
    proto = onnx.load(str(model_dir / "m.onnx"), load_external_data=False)
    for tensor in proto.graph.initializer:
        for entry in tensor.external_data:
            if entry.key == "location":
                entry.value = "../../x"
    onnx.save(proto, str(model_dir / "evil.onnx"))
    with pytest.raises(ModelLoadError, match="escapes the model's folder"):
        nj.open_model(model_dir / "evil.onnx")


def test_external_data_is_read_lazily(tmp_path: Path) -> None:
    save_with_external(conv_relu_model(), tmp_path / "m.onnx", "m.onnx.data")
    doc = nj.open_model(tmp_path / "m.onnx")
    weight = doc.graph.initializers["w"].const_value
    assert isinstance(weight, ir.ExternalTensor)
    # mapped, not read: the mapping pins the file's inode and copies no bytes
    assert isinstance(weight.raw, mmap.mmap)
    assert not np.asarray(weight).flags.owndata
    doc.set_attribute("conv", "dilations", [1, 1])
    data_file = tmp_path / "m.onnx.data"
    before = data_file.stat().st_mtime_ns
    doc.save()
    assert data_file.stat().st_mtime_ns == before  # weights untouched by an attribute edit
    x = np.ones((1, 3, 8, 8), np.float32)
    expected = ort.InferenceSession(
        conv_relu_model().SerializeToString(), providers=["CPUExecutionProvider"]
    ).run(None, {"x": x})[0]
    got = ort.InferenceSession(str(tmp_path / "m.onnx"), providers=["CPUExecutionProvider"]).run(
        None, {"x": x}
    )[0]
    np.testing.assert_array_equal(got, expected)


def test_save_as_moves_external_data(tmp_path: Path) -> None:
    save_with_external(conv_relu_model(), tmp_path / "m.onnx", "m.onnx.data")
    doc = nj.open_model(tmp_path / "m.onnx")
    other = tmp_path / "other"
    other.mkdir()
    doc.save(other / "copy.onnx")
    assert (other / "copy.onnx.data").is_file()
    doc.save(other / "inline.onnx", external_data=False)
    assert not (other / "inline.onnx.data").exists()
    loaded = onnx.load(str(other / "inline.onnx"))
    assert all(t.data_location == onnx.TensorProto.DEFAULT for t in loaded.graph.initializer)


def test_unwritable_target_keeps_original(tmp_path: Path) -> None:
    path = tmp_path / "m.onnx"
    onnx.save(conv_relu_model(), str(path))
    original = path.read_bytes()
    doc = nj.open_model(path)
    doc.set_attribute("conv", "group", 1)
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    for target in (blocker / "m.onnx", tmp_path / "missing" / "m.onnx", tmp_path):
        with pytest.raises(ModelSaveError):
            doc.save(target)
    readonly = Path("/proc/nsdl_test.onnx")
    with pytest.raises(ModelSaveError):
        doc.save(readonly)
    assert path.read_bytes() == original
    assert doc.dirty
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file", "m.onnx"]


def test_save_without_edits_keeps_names_and_bytes(tmp_path: Path) -> None:
    path = tmp_path / "m.onnx"
    onnx.save(conv_relu_model(), str(path))
    doc = nj.open_model(path)
    assert "Relu_1" in doc.nodes
    out = tmp_path / "same.onnx"
    doc.save(out)
    saved = onnx.load(str(out))
    assert [n.name for n in saved.graph.node] == ["conv", "", "add"]
    assert saved.graph == onnx.load(str(path)).graph
    doc.save(tmp_path / "named.onnx", keep_generated_names=True)
    assert onnx.load(str(tmp_path / "named.onnx")).graph.node[1].name == "Relu_1"


def _branch(name: str, node_names: list[str], source: str) -> onnx.GraphProto:
    """A subgraph of Identity nodes named `node_names` ("" = unnamed) reading `source`."""
    nodes, last = [], source
    for k, node_name in enumerate(node_names):
        out = f"{name}_{k}"
        nodes.append(onnx.helper.make_node("Identity", [last], [out], name=node_name))
        last = out
    value = onnx.helper.make_tensor_value_info(last, onnx.TensorProto.FLOAT, [1])
    return onnx.helper.make_graph(nodes, name, [], [value])


def test_open_names_nodes_of_nested_subgraphs_and_leaves_gc_on(tmp_path: Path) -> None:
    """Unnamed and duplicate nodes two subgraph levels down get generated names (the open
    walks every graph), a save gives the original names back, and the collector, paused
    while the model is built, is on again afterwards, also after a failed open."""
    inner = onnx.helper.make_node(
        "If",
        ["cond"],
        ["inner_out"],
        name="inner_if",
        then_branch=_branch("deep_then", ["", "dup", "dup"], "x"),
        else_branch=_branch("deep_else", ["", ""], "x"),
    )
    then_graph = onnx.helper.make_graph(
        [inner],
        "then",
        [],
        [onnx.helper.make_tensor_value_info("inner_out", onnx.TensorProto.FLOAT, [1])],
    )
    outer = onnx.helper.make_node(
        "If",
        ["cond"],
        ["y"],
        name="outer_if",
        then_branch=then_graph,
        else_branch=_branch("shallow_else", ["kept"], "x"),
    )
    graph = onnx.helper.make_graph(
        [outer],
        "nested",
        [
            onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1]),
            onnx.helper.make_tensor_value_info("cond", onnx.TensorProto.BOOL, []),
        ],
        [onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1])],
    )
    path = tmp_path / "nested.onnx"
    onnx.save(onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", 17)]), path)
    doc = nj.open_model(path)
    assert gc.isenabled()
    names = {g.name: [n.name for n in g] for g in doc.model.graphs()}
    assert names["deep_then"] == ["Identity_0", "dup", "Identity_2"]
    assert names["deep_else"] == ["Identity_0", "Identity_1"]
    assert names["shallow_else"] == ["kept"]
    doc.save(tmp_path / "same.onnx")
    saved = onnx.load(str(tmp_path / "same.onnx"))
    assert saved.graph == onnx.load(str(path)).graph
    path.write_bytes(path.read_bytes()[:40])
    with pytest.raises(ModelLoadError):
        nj.open_model(path)
    assert gc.isenabled()


def test_companion_file_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "m.onnx"
    onnx.save(conv_relu_model(), str(path))
    doc = nj.open_model(path)
    doc.update_companion("positions", {"conv": [0.0, 1.5]})
    doc.save()
    companion = tmp_path / ("m.onnx" + COMPANION_SUFFIX)
    assert companion.is_file()
    assert nj.open_model(path).companion["positions"] == {"conv": [0.0, 1.5]}
    companion.write_text("{ not json")
    with pytest.warns(CompanionWarning, match="not valid JSON"):
        assert nj.open_model(path).companion == {}  # never required to open the model
    companion.write_text("[" * 100_000 + "]" * 100_000)  # deeper than json can parse
    with pytest.warns(CompanionWarning, match="RecursionError"):
        assert nj.open_model(path).companion == {}
    companion.write_text('{"positions": {"conv": [1, "x"], "relu": [2, 3]}, "collapsed": 5}')
    assert nj.open_model(path).companion == {"positions": {"relu": [2.0, 3.0]}}


def test_mark_external_with_location_offset(tmp_path: Path) -> None:
    path = tmp_path / "m.onnx"
    onnx.save(conv_relu_model(), str(path))
    doc = nj.open_model(path)
    unsaved = nj.new_model()
    unsaved.create_initializer("k", [1.0, 2.0])
    with pytest.raises(InitializerError, match="never been saved"):
        unsaved.set_external("k", "k.bin")
    with pytest.raises(Exception, match="escapes"):
        doc.set_external("w", "../w.bin")
    with pytest.raises(InitializerError, match="bytes"):
        doc.set_external("w", "weights/w.bin", length=3)
    doc.set_external("w", "weights/w.bin", offset=128)
    doc.set_external("b", "weights/w.bin", offset=0)
    doc.save()
    proto = onnx.load(str(path), load_external_data=False)
    info = {
        t.name: {e.key: e.value for e in t.external_data}
        for t in proto.graph.initializer
        if t.data_location == onnx.TensorProto.EXTERNAL
    }
    assert info["w"]["location"] == "weights/w.bin" and info["w"]["offset"] == "128"
    assert info["b"]["offset"] == "0"
    assert os.path.getsize(tmp_path / "weights" / "w.bin") == 128 + 4 * 3 * 3 * 3 * 4
    x = np.ones((1, 3, 8, 8), np.float32)
    reopened = nj.open_model(path)
    assert isinstance(reopened.graph.initializers["w"].const_value, ir.ExternalTensor)
    got = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, {"x": x})
    want = ort.InferenceSession(
        conv_relu_model().SerializeToString(), providers=["CPUExecutionProvider"]
    ).run(None, {"x": x})
    np.testing.assert_array_equal(got[0], want[0])
    doc.set_external("b", "weights/w.bin", offset=130)
    with pytest.raises(ModelSaveError, match="overlap"):
        doc.save()


def test_check_reports_node_errors() -> None:
    doc = nj.new_model(opset=17)
    doc.add_graph_input("a", "float32", [2, 3])
    doc.add_graph_input("b", "int64", [2, 3])
    add = doc.add_node("Add", name="mixed", inputs=["a", "b"])
    doc.add_graph_output(add.outputs[0].name)
    diagnostics = doc.check()
    assert diagnostics and diagnostics[0].severity == "error"
    assert diagnostics[0].node == "mixed"
    doc.remove_graph_input("b")
    doc.connect("a", "mixed", 1)
    assert doc.check() == []
    conv = doc.add_node("Conv", name="conv_missing_weight", inputs=["a"])
    doc.add_graph_output(conv.outputs[0].name)
    found = doc.check()
    assert [d.node for d in found if d.severity == "error"] == ["conv_missing_weight"]


def test_check_names_generated_nodes_and_changes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "m.onnx"
    onnx.save(conv_relu_model(), str(path))
    doc = nj.open_model(path)
    pre = doc.add_node("Relu", name="pre", inputs=["x"])  # appended after its consumer below
    doc.connect(pre.outputs[0], "conv", 0, replace=True)
    doc.add_node("Softmax", name="late", inputs=["y"], attributes={"axis": 9})
    before = ir.to_proto(doc.model).SerializeToString()
    found = doc.check()
    assert [(d.node, d.severity) for d in found] == [("late", "error")]
    assert ir.to_proto(doc.model).SerializeToString() == before  # not even re-sorted
    doc.undo()
    doc.disconnect("Relu_1", 0)
    assert [d.node for d in doc.check() if d.severity == "error"] == ["Relu_1"]


def test_mutated_bytes_give_document_errors_only(tmp_path: Path) -> None:
    """Random byte flips, cuts and insertions in a real model: open and save either work
    or raise a DocumentError, never a raw exception from protobuf, onnx or onnx_ir."""
    rng = random.Random(0)
    seed = conv_relu_model().SerializeToString()
    path = tmp_path / "m.onnx"
    for _ in range(400):
        data = bytearray(seed)
        for _ in range(rng.randint(1, 6)):
            at = rng.randrange(len(data))
            roll = rng.random()
            if roll < 0.6:
                data[at] = rng.randrange(256)
            elif roll < 0.8:
                del data[at : at + rng.randint(1, 32)]
            else:
                data[at:at] = rng.randbytes(rng.randint(1, 8))
        path.write_bytes(bytes(data))
        with contextlib.suppress(DocumentError):
            nj.open_model(path).save(tmp_path / "out.onnx", overwrite=True)
