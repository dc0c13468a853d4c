"""Edit requests of the GraphView canvas (widgets/_canvas_edit.py), through the real protocol:
each edit is one undoable command and the view's layout follows the document."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import nsdl_jupyter as nj
from nsdl_jupyter.graph import decode_columns
from nsdl_jupyter.widgets import GraphView
from nsdl_jupyter.widgets.graph._canvas_edit import extract_nodes, reserved_name


def _model() -> onnx.ModelProto:
    x = helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("Y", TensorProto.FLOAT, [1, 8])
    w = numpy_helper.from_array(np.ones((1, 8), np.float32), "W")
    nodes = [
        helper.make_node("Relu", ["X"], ["r"], name="relu1"),
        helper.make_node("Sigmoid", ["X"], ["s"], name="sig1"),
        helper.make_node("Clip", ["s"], ["c"], name="clip1"),
        helper.make_node("Concat", ["r", "c"], ["cat"], name="cat1", axis=1),
        helper.make_node("Add", ["cat", "W"], ["Y"], name="add1"),
    ]
    graph = helper.make_graph(nodes, "g", [x], [y], [w])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.fixture
def path(tmp_path: Path) -> Path:
    target = tmp_path / "m.onnx"
    onnx.save(_model(), target)
    return target


@pytest.fixture
def view(path: Path) -> GraphView:
    return GraphView(nj.open_model(path))


def ask(view: GraphView, kind: str, /, **payload: Any) -> dict[str, Any]:
    """Send a request as a browser view does; the kernel's answer."""
    sent: list[dict[str, Any]] = []
    view.send = lambda content, buffers=None: sent.append(content)  # type: ignore[method-assign]
    message = {"kind": "nsdl.request", "id": f"t:{kind}", "name": kind, "payload": payload}
    view._channel.receive(view, message, [])
    answer = sent[-1]
    assert answer["id"] == f"t:{kind}"
    return answer


def ok(view: GraphView, kind: str, /, **payload: Any) -> Any:
    answer = ask(view, kind, **payload)
    assert answer["ok"], answer
    return answer["value"]


def rect(view: GraphView, node: str) -> tuple[float, float]:
    _meta, columns = decode_columns(view._layout)
    item = view._scene.table.by_key[node]
    slot = int(np.flatnonzero(columns["ref"] == item)[0])
    return float(columns["x"][slot]), float(columns["y"][slot])


def test_terminals_say_free_linked_initializer_optional_and_variadic(view: GraphView) -> None:
    answer = ok(view, "terminals", nodes=["clip1", "cat1", "add1", "nope"])
    assert answer["nodes"] == ["clip1", "cat1", "add1"]
    (clip, cat, add) = range(3)
    assert answer["states"][clip] == ["linked", "free", "free"]
    assert answer["optional"][clip] == [False, True, True]
    assert answer["outputs"][clip] == ["c"]
    assert answer["variadic"] == [False, True, False]
    assert answer["tensors"][cat] == ["r", "c"]
    assert answer["states"][add] == ["linked", "initializer"]


def test_link_and_unlink_are_one_undo_step_each(view: GraphView) -> None:
    doc = view._canvas.doc
    assert doc is not None and view._editable
    ok(view, "link", tensor="r", node="clip1", input=1, from_node="", from_input=0)
    assert doc.nodes["clip1"].inputs[1].name == "r"
    new = {"from_node": "", "from_input": 0}
    ok(view, "link", tensor="X", node="cat1", input=2, **new)  # the "+" slot of a variadic input
    assert [v.name for v in doc.nodes["cat1"].inputs] == ["r", "c", "X"]
    doc.undo()
    assert len(doc.nodes["cat1"].inputs) == 2
    ok(view, "unlink", nodes=["cat1", "clip1"], inputs=[0, 1])
    assert doc.nodes["cat1"].inputs[0] is None
    assert len(doc.nodes["clip1"].inputs) == 1
    doc.undo()
    assert doc.nodes["cat1"].inputs[0].name == "r"
    assert doc.nodes["clip1"].inputs[1].name == "r"
    answer = ask(view, "link", tensor="cat", node="relu1", input=0, **new)
    assert not answer["ok"] and "cycle" in answer["error"]["message"]
    # a link end dragged from cat1[0] to clip1[2]: one undo step
    ok(view, "link", tensor="r", node="clip1", input=2, from_node="cat1", from_input=0)
    assert doc.nodes["clip1"].inputs[2].name == "r" and doc.nodes["cat1"].inputs[0] is None
    doc.undo()
    assert [v.name for v in doc.nodes["cat1"].inputs] == ["r", "c"]
    assert len(doc.nodes["clip1"].inputs) == 2


def test_delete_removes_the_nodes_and_one_undo_brings_them_back(view: GraphView) -> None:
    doc = view._canvas.doc
    assert doc is not None
    patches = len(view._edits)
    ok(view, "delete", nodes=["relu1", "sig1"])
    assert "relu1" not in doc.nodes and "sig1" not in doc.nodes
    assert len(view._edits) > patches  # the view redrew from the document's event
    doc.undo()
    assert {"relu1", "sig1"} <= set(doc.nodes)


def test_a_moved_node_stays_there_after_reopening_and_arrange_resets_it(
    view: GraphView, path: Path
) -> None:
    doc = view._canvas.doc
    assert doc is not None
    before = rect(view, "sig1")
    ok(view, "move", nodes=["sig1"], x=[900.0], y=[-40.0])
    assert rect(view, "sig1") == (900.0, -40.0)
    doc.undo()
    assert rect(view, "sig1") == before
    doc.redo()
    assert rect(view, "sig1") == (900.0, -40.0)
    doc.save()
    reopened = GraphView(nj.open_model(path))
    assert rect(reopened, "sig1") == (900.0, -40.0)
    reopened.arrange()
    assert rect(reopened, "sig1") == before
    assert reopened._canvas.doc is not None
    reopened._canvas.doc.undo()  # arrange was one undo step too
    assert rect(reopened, "sig1") == (900.0, -40.0)


def test_rename_keeps_the_moved_position_and_undoes_in_one_step(view: GraphView) -> None:
    doc = view._canvas.doc
    assert doc is not None
    ok(view, "move", nodes=["relu1"], x=[10.0], y=[500.0])
    ok(view, "rename", node="relu1", name="first_relu")
    assert "first_relu" in doc.nodes
    assert rect(view, "first_relu") == (10.0, 500.0)
    doc.undo()
    assert "relu1" in doc.nodes and rect(view, "relu1") == (10.0, 500.0)
    answer = ask(view, "rename", node="relu1", name="not-an-identifier")
    assert not answer["ok"] and "relu1" in doc.nodes
    doc.rename_node("relu1", "from_python")  # renamed from Python: the box follows too
    assert rect(view, "from_python") == (10.0, 500.0)
    doc.remove_node("from_python")
    assert "from_python" not in doc.companion["moved"]
    doc.undo()
    assert rect(view, "from_python") == (10.0, 500.0)


def test_precision_and_quick_add_at_the_pointer(view: GraphView) -> None:
    doc = view._canvas.doc
    assert doc is not None
    ok(view, "precision", nodes=["relu1", "add1"], precision="fp16")
    assert doc.tensorrt.layer_precision("add1") == "fp16"
    ok(view, "precision", nodes=["add1"], precision="none")
    assert doc.tensorrt.layer_precision("add1") is None
    doc.undo()
    assert doc.tensorrt.layer_precision("add1") == "fp16"

    view.selected = ["sig1"]
    name = ok(view, "add_at", text="Tanh", x=300.0, y=250.0, link=True)["message"]
    added = doc.nodes[name]
    assert added.op_type == "Tanh" and added.inputs[0].name == "s"  # fed from the selection
    assert rect(view, name) == (300.0, 250.0)
    doc.undo()
    assert name not in doc.nodes
    answer = ask(view, "add_at", text="NoSuchOp", x=0.0, y=0.0, link=True)
    assert not answer["ok"] and "NoSuchOp" in answer["error"]["message"]


def test_extract_from_here_writes_a_model_that_runs(view: GraphView, path: Path) -> None:
    message = ok(view, "extract", nodes=["cat1"], downstream=True)["message"]
    target = path.with_name("m.cat1.onnx")
    assert target.name in message
    model = onnx.load(target)
    assert [n.name for n in model.graph.node] == ["cat1", "add1"]
    (result,) = _run(target, np.ones((1, 4), np.float32))
    assert result.shape == (1, 8) and float(result[0, 0]) == 2.0


def _run(model: Path, value: np.ndarray) -> list[np.ndarray]:
    """The model's outputs from onnxruntime with `value` for every input."""
    session = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    return session.run(None, {i.name: value for i in session.get_inputs()})


def test_extract_never_replaces_an_existing_file(view: GraphView, path: Path) -> None:
    """A user's own `m.cat1.onnx` stays as it was: the extraction takes `-2`, then `-3`."""
    theirs = path.with_name("m.cat1.onnx")
    theirs.write_bytes(b"the user's own file")
    for number in (2, 3):
        message = ok(view, "extract", nodes=["cat1"], downstream=True)["message"]
        target = path.with_name(f"m.cat1-{number}.onnx")
        assert message == f"extracted 2 nodes to {target.name}"
        assert [n.name for n in onnx.load(target).graph.node] == ["cat1", "add1"]
    assert theirs.read_bytes() == b"the user's own file"


def test_extracted_weights_never_land_in_an_existing_file(tmp_path: Path) -> None:
    """External data goes to `<extracted>.data`: a name whose data file exists is skipped."""
    x = helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, 512])
    y = helper.make_tensor_value_info("Y", TensorProto.FLOAT, [1, 512])
    w = numpy_helper.from_array(np.arange(512, dtype=np.float32).reshape(1, 512), "W")
    nodes = [helper.make_node("Add", ["X", "W"], ["a"], name="add1"),
             helper.make_node("Relu", ["a"], ["Y"], name="relu1")]  # fmt: skip
    model = helper.make_model(helper.make_graph(nodes, "g", [x], [y], [w]))
    onnx.save(model, tmp_path / "big.onnx", save_as_external_data=True, size_threshold=0)
    theirs = tmp_path / "big.add1.onnx.data"
    theirs.write_bytes(b"another model's weights")
    view = GraphView(nj.open_model(tmp_path / "big.onnx"))
    message = ok(view, "extract", nodes=["add1"], downstream=True)["message"]
    assert message.endswith(" big.add1-2.onnx")
    assert theirs.read_bytes() == b"another model's weights"
    assert not (tmp_path / "big.add1.onnx").exists()
    assert (tmp_path / "big.add1-2.onnx.data").stat().st_size >= w.raw_data.__len__()
    (result,) = _run(tmp_path / "big.add1-2.onnx", np.ones((1, 512), np.float32))
    assert result[0, 3] == 4.0


def test_a_name_in_use_by_another_extraction_is_skipped(view: GraphView, path: Path) -> None:
    """A name is taken the moment an extraction starts (an empty file), so a second one at
    the same time writes elsewhere; a failing one takes its empty file back."""
    with reserved_name(path.parent, "m.cat1") as held:
        assert held.name == "m.cat1.onnx" and held.read_bytes() == b""
        message = ok(view, "extract", nodes=["cat1"], downstream=True)["message"]
        assert message.endswith(" m.cat1-2.onnx")
    assert held.read_bytes() == b""  # the holder writes it: nobody else did
    held.unlink()
    with pytest.raises(KeyboardInterrupt), reserved_name(path.parent, "m.cat1") as held:
        raise KeyboardInterrupt
    assert not held.exists()


def test_extractions_at_the_same_time_write_different_files(path: Path) -> None:
    docs = [nj.open_model(path) for _ in range(4)]
    start = threading.Barrier(len(docs))

    def extract(doc: nj.ModelDocument) -> Path:
        start.wait()
        return extract_nodes(doc, ["cat1"], downstream=True)[0]

    with ThreadPoolExecutor(len(docs)) as pool:
        written = list(pool.map(extract, docs))
    names = {"m.cat1.onnx", *(f"m.cat1-{n}.onnx" for n in range(2, 5))}
    assert {p.name for p in written} == names
    for target in written:
        (result,) = _run(target, np.ones((1, 4), np.float32))
        assert float(result[0, 0]) == 2.0


def _unknown_type_model(folder: Path) -> Path:
    """`relu1` reads the output of a custom operator: extracting from it fails (no type)."""
    x = helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("Y", TensorProto.FLOAT, [1, 4])
    nodes = [helper.make_node("Mystery", ["X"], ["u"], name="mystery", domain="custom.x"),
             helper.make_node("Relu", ["u"], ["Y"], name="relu1")]  # fmt: skip
    imports = [helper.make_opsetid("", 17), helper.make_opsetid("custom.x", 1)]
    target = folder / "c.onnx"
    onnx.save(helper.make_model(helper.make_graph(nodes, "g", [x], [y]), opset_imports=imports),
              target)  # fmt: skip
    return target


def test_a_failed_extraction_leaves_no_file(tmp_path: Path) -> None:
    view = GraphView(nj.open_model(_unknown_type_model(tmp_path)))
    answer = ask(view, "extract", nodes=["relu1"], downstream=True)
    assert not answer["ok"] and "type of tensor 'u' is unknown" in answer["error"]["message"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.onnx"]


def test_a_folder_that_cannot_take_the_file_is_said_before_anything_is_written(
    tmp_path: Path,
) -> None:
    source = tmp_path / "gone"
    source.mkdir()
    onnx.save(_model(), source / "m.onnx")
    view = GraphView(nj.open_model(source / "m.onnx"))
    source.rename(tmp_path / "moved")  # the model's folder is no longer there
    answer = ask(view, "extract", nodes=["cat1"], downstream=True)
    assert not answer["ok"] and answer["error"]["type"] == "ExtractPathError"
    assert "doc.save(path)" in answer["error"]["message"]
    assert [p.name for p in (tmp_path / "moved").iterdir()] == ["m.onnx"]


def test_profile_from_here_calls_the_registered_hook(view: GraphView) -> None:
    answer = ask(view, "profile", nodes=["relu1"])
    assert not answer["ok"] and "on_profile" in answer["error"]["message"]
    calls: list[list[str]] = []
    remove = view.on_profile(calls.append)
    ok(view, "profile", nodes=["relu1"])
    assert calls == [["relu1"]]
    remove()


def test_a_view_of_a_file_is_read_only(path: Path) -> None:
    view = GraphView(path)
    assert not view._editable
    answer = ask(view, "delete", nodes=["relu1"])
    assert not answer["ok"] and "read-only" in answer["error"]["message"]


def test_deleting_several_nodes_that_feed_graph_outputs(tmp_path: Path) -> None:
    x = helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, 4])
    outs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, 4]) for n in "ab"]
    nodes = [helper.make_node(op, ["X"], [n], name=n + "_node") for op, n in [("Relu", "a"),
             ("Tanh", "b")]]  # fmt: skip
    model = helper.make_model(helper.make_graph(nodes, "g", [x], outs))
    onnx.save(model, tmp_path / "two.onnx")
    view = GraphView(nj.open_model(tmp_path / "two.onnx"))
    ok(view, "delete", nodes=["a_node", "b_node"])  # the earlier output first
    doc = view._canvas.doc
    assert doc is not None and not doc.graph.outputs
    doc.undo()
    assert [v.name for v in doc.graph.outputs] == ["a", "b"]
