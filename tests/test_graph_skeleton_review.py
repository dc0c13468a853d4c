"""A review of big files drawn before their onnx_ir model is built (GraphSkeleton, ModelDocument's
build on first use): every edit family ends on a document drawn from its protobuf where it ends on
a document built at open; nothing on the draw path builds the model; files the skeleton reads
draw as onnx_ir's model would, and those it cannot read fail as a built open fails.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import onnx
import onnx_ir as ir
import pytest
from onnx import TensorProto, helper, numpy_helper

import nsdl_jupyter as nj
from nsdl_jupyter import transforms
from nsdl_jupyter._static_export._live import refresh_static_picture
from nsdl_jupyter.document import ModelDocument, ModelLoadError, _document
from nsdl_jupyter.graph import GraphScene, GraphSkeleton, decode_columns
from tests import real_exports
from tests._hostile_models import hostile_model
from tests.test_graph_skeleton import _drawn, _odd_model, _saved, _unbuildable

Steps = list[Callable[[ModelDocument], object]]


def _model() -> onnx.ModelProto:
    """x -> MatMul(w) -> Relu -> Softmax -> Sigmoid -> y, in two dynamo-style modules."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    weight = numpy_helper.from_array(np.ones((4, 4), np.float32), "w")
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["a"], name="mm"),
        helper.make_node("Relu", ["a"], ["b"], name="relu"),
        helper.make_node("Softmax", ["b"], ["c"], name="sm", axis=1),
        helper.make_node("Sigmoid", ["c"], ["y"], name="sig"),
    ]
    for node, module in zip(nodes, ["block", "block", "head", "head"], strict=True):
        helper.set_metadata_props(node, {"pkg.torch.onnx.name_scopes": f"['', '{module}']"})
    graph = helper.make_graph(nodes, "g", [x], [y], initializer=[weight])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _open(path: Path, monkeypatch: pytest.MonkeyPatch, *, unbuilt: bool) -> ModelDocument:
    """`path` opened as a big file (its model built on first use) or as a small one."""
    monkeypatch.setattr(_document, "BUILD_ON_USE_ABOVE", 0 if unbuilt else 1_000_000_000)
    doc = nj.open_model(path)
    assert (doc.unbuilt_model() is not None) == unbuilt
    return doc


def _shown(view: nj.GraphView) -> dict[str, object]:
    """What a view shows and sends, without the node objects."""
    scene = view._scene
    table = scene.table
    return {
        "items": [(i.name, i.op, i.flags, i.scope, i.key, i.alive) for i in table.items],
        "edges": sorted(table.edges),
        "tensors": table.tensors,
        "initializer_inputs": sorted(table.initializer_inputs),
        "texts": scene.texts,
        "patches": view._edits,
        "topology": view._topology,
        "selected": view.selected,
    }


def _run(
    path: Path, monkeypatch: pytest.MonkeyPatch, steps: Steps, *, unbuilt: bool, view_first: bool
) -> tuple[list[object], ModelDocument, nj.GraphView]:
    """What the view shows after each step (an error's text where the step raised)."""
    doc = _open(path, monkeypatch, unbuilt=unbuilt)
    view = nj.GraphView(doc) if view_first else None
    seen: list[object] = []
    for step in steps:
        try:
            step(doc)
        except Exception as error:  # the same refusal is expected of both
            seen.append(f"{type(error).__name__}: {error}")
        view = view or nj.GraphView(doc)
        seen.append(_shown(view))
    assert view is not None
    return seen, doc, view


def _batch_with_renames(doc: ModelDocument) -> None:
    with doc.batch("several"):
        doc.rename_node("relu", "r1")
        doc.rename_node("r1", "r2")
        doc.add_node("Relu", inputs=["b"], name="extra")
        doc.remove_nodes(["sm"])


def _failing_batch(doc: ModelDocument) -> None:
    with doc.batch("fails half way"):
        doc.rename_node("relu", "r1")
        doc.rename_node("no_such_node", "r2")


EDITS: dict[str, Steps] = {
    "rename": [lambda d: d.rename_node("relu", "relu2"), lambda d: d.undo(), lambda d: d.redo()],
    "remove": [lambda d: d.remove_nodes(["relu"]), lambda d: d.undo(), lambda d: d.redo()],
    "add": [
        lambda d: d.add_node("Relu", inputs=["b"], name="extra"),
        lambda d: d.undo(),
        lambda d: d.redo(),
    ],
    "links": [
        lambda d: d.disconnect("sig", 0),
        lambda d: d.connect("a", "sig", 0),
        lambda d: d.undo(),
        lambda d: d.undo(),
    ],
    "attribute": [lambda d: d.set_attribute("sm", "axis", 0), lambda d: d.undo()],
    "graph inputs": [
        lambda d: d.add_graph_input("z", "float", [1, 4]),
        lambda d: d.connect("z", "sig", 0, replace=True),
        lambda d: d.undo(),
        lambda d: d.undo(),
    ],
    "graph outputs": [
        lambda d: d.add_graph_output("b"),
        lambda d: d.remove_graph_output("y"),
        lambda d: d.undo(),
    ],
    "initializers": [
        lambda d: d.create_initializer("w2", np.zeros((4, 4), np.float32)),
        lambda d: d.connect("w2", "mm", 1, replace=True),
        lambda d: d.set_initializer_value("w", np.zeros((4, 4), np.float32)),
        lambda d: d.delete_initializer("w"),
        lambda d: d.undo(),
        lambda d: d.undo(),
    ],
    "tensors": [
        lambda d: d.rename_tensor("b", "bb"),
        lambda d: d.rename_tensor("w", "ww"),
        lambda d: d.set_tensor_type("bb", "float16", [1, 4]),
        lambda d: d.undo(),
    ],
    "batch": [_batch_with_renames, lambda d: d.undo(), lambda d: d.redo()],
    "failed batch": [_failing_batch, lambda d: d.rename_node("relu", "r9")],
    "refused first edit": [lambda d: d.rename_node("relu", "no/slash"), lambda d: d.undo()],
    "transforms": [
        lambda d: transforms.transform_document(transforms.Fp16Pass(), d),
        lambda d: transforms.transform_document(transforms.OpsetPass(19), d),
        lambda d: d.undo(),
    ],
}


@pytest.mark.parametrize("view_first", [True, False], ids=["view before", "view after"])
@pytest.mark.parametrize("family", list(EDITS))
def test_every_edit_family_ends_as_on_a_document_built_at_open(
    family: str, view_first: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _saved(_model(), tmp_path)
    built, _, _ = _run(path, monkeypatch, EDITS[family], unbuilt=False, view_first=view_first)
    seen, doc, view = _run(path, monkeypatch, EDITS[family], unbuilt=True, view_first=view_first)
    assert seen == built
    graph = doc.graph
    assert view._scene._graph is graph
    assert all(
        i.node is None or not i.alive or i.node.graph is graph for i in view._scene.table.items
    )


def test_two_views_of_one_unbuilt_document_follow_its_edits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    doc = _open(_saved(_model(), tmp_path), monkeypatch, unbuilt=True)
    views = [nj.GraphView(doc), nj.GraphView(doc)]
    views[0].selected = ["relu", "sm"]
    doc.rename_node("relu", "first")
    doc.remove_nodes(["sm"])
    for view in views:
        items = view._scene.table.items
        assert view._scene._graph is doc.graph
        assert items[view._scene.table.by_key["first"]].node is doc.nodes["first"]
        assert "sm" not in view._scene.table.by_key
    assert views[0]._edits == views[1]._edits
    assert views[0].selected == ["first"]


def test_a_function_edited_before_the_build_reaches_the_view(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _saved(_odd_model(), tmp_path)

    def edit_function(doc: ModelDocument) -> None:
        body = doc.open_function("MyBlock", "local")
        body.add_node("Relu", inputs=["b"], name="inner")
        body.confirm()

    steps: Steps = [edit_function, lambda d: d.undo()]
    built, _, _ = _run(path, monkeypatch, steps, unbuilt=False, view_first=True)
    seen, doc, view = _run(path, monkeypatch, steps, unbuilt=True, view_first=True)
    assert seen == built
    assert view._scene._graph is doc.graph


def test_a_control_flow_body_edited_on_an_unbuilt_document_reaches_the_view(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    doc = _open(
        _saved(real_exports.stored("control_flow_dynamo"), tmp_path), monkeypatch, unbuilt=True
    )
    view = nj.GraphView(doc)  # the skeleton has no bodies: the view builds the model
    body = doc.open_subgraph("node_cond__0", "then_branch")
    first = next(iter(body.graph)).name
    body.rename_node(first, "renamed_in_body")
    body.confirm()
    assert view._scene._graph is doc.graph
    assert len(view._edits) == 1


def test_nothing_on_the_draw_path_builds_the_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _saved(_model(), tmp_path)
    doc = _open(path, monkeypatch, unbuilt=True)
    doc.update_companion("collapsed", [])
    view = nj.GraphView(doc)
    view._repr_mimebundle_()
    refresh_static_picture(view)
    view.get_state()
    view.direction = "LR"
    view.show_constants = True
    view._canvas_height = 900
    view.expand()
    view.collapse()
    view.arrange()
    view.selected = ["relu"]
    view.set_marks({"relu": "error"})
    view.set_overlay({"relu": 1.0})
    view._properties.group(0)
    view._send_shapes()
    view.export_image(tmp_path / "picture.svg").result()
    assert "4 nodes" in repr(doc)
    assert not doc.dirty and not doc.tensorrt and doc.tensorrt.profiles == []
    assert doc.unbuilt_model() is not None
    assert isinstance(view._scene._graph, GraphSkeleton)


def test_a_read_only_view_of_a_big_file_draws_unbuilt_and_answers_its_pane(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_document, "BUILD_ON_USE_ABOVE", 0)
    view = nj.GraphView(_saved(_model(), tmp_path))
    assert isinstance(view._scene._graph, GraphSkeleton)
    assert not view._editable
    scene = view._scene
    node = view._properties.node(scene.table.by_key["relu"])
    tensor = view._properties.tensor(scene.table.tensor_index["b"], scene.table.by_key["relu"])
    assert (node["op_type"], tensor["producer"], tensor["consumers"]) == ("Relu", "relu", ["sm"])
    assert view._properties.stats("w")["mean"] == 1.0
    assert not isinstance(scene._graph, GraphSkeleton)


def test_saving_before_the_build_writes_what_a_built_document_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    written = []
    for unbuilt in (False, True):
        folder = tmp_path / str(unbuilt)
        folder.mkdir()
        doc = _open(_saved(_model(), folder), monkeypatch, unbuilt=unbuilt)
        nj.GraphView(doc)
        assert doc.check() == []
        saved = doc.save(folder / "again.onnx")
        written.append((saved.read_bytes(), sorted(p.name for p in folder.iterdir())))
    assert written[0] == written[1]
    assert onnx.load_from_string(written[1][0]) == _model()


def test_a_companion_with_view_state_only_leaves_a_big_file_unbuilt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _saved(_model(), tmp_path)
    first = _open(path, monkeypatch, unbuilt=False)
    nj.GraphView(first)
    first.save()  # writes the view's positions and collapsed groups beside the model
    doc = _open(path, monkeypatch, unbuilt=True)
    nj.GraphView(doc)
    assert doc.companion and doc.unbuilt_model() is not None


def test_tensorrt_properties_in_the_companion_leave_a_big_file_unbuilt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _saved(_model(), tmp_path)
    first = _open(path, monkeypatch, unbuilt=False)
    first.tensorrt.set_layer_precision("relu", "fp16")
    first.save()
    monkeypatch.setattr(_document, "BUILD_ON_USE_ABOVE", 0)
    doc = nj.open_model(path)
    assert doc.tensorrt.layer_precisions == {"relu": "fp16"}
    assert doc.unbuilt_model() is not None, "the TensorRT companion built the model at open"


# ------------------------------------------------------------------ files the skeleton reads
def _changed(change: Callable[[onnx.ModelProto], object]) -> onnx.ModelProto:
    model = _odd_model()
    change(model)
    return model


def _retype_output_over_input(model: onnx.ModelProto) -> None:
    model.graph.output[1].type.tensor_type.elem_type = TensorProto.FLOAT16
    del model.graph.output[1].type.tensor_type.shape.dim[:]


def _quantization_annotation(model: onnx.ModelProto) -> None:
    annotation = model.graph.quantization_annotation.add(tensor_name="mm")
    annotation.quant_parameter_tensor_names.add(key="SCALE_TENSOR", value="scale")


def _sparse_initializer(model: onnx.ModelProto) -> None:
    values = numpy_helper.from_array(np.ones(2, np.float32), "sparse")
    indices = numpy_helper.from_array(np.array([0, 3], np.int64), "")
    model.graph.sparse_initializer.append(helper.make_sparse_tensor(values, indices, [4]))
    model.graph.node.append(helper.make_node("Add", ["y", "sparse"], ["z"], name="/add_sparse"))


def _optional_slots(model: onnx.ModelProto) -> None:
    model.graph.node.append(helper.make_node("Dropout", ["y"], ["dy", ""], name="/drop"))
    model.graph.node.append(helper.make_node("Clip", ["dy", "", "scale"], ["clip"], name="/clip"))


def _constant_and_alias(model: onnx.ModelProto) -> None:
    value = numpy_helper.from_array(np.ones(4, np.float32))
    model.graph.node.insert(0, helper.make_node("Constant", [], ["c"], name="/c", value=value))
    model.graph.node.append(helper.make_node("Identity", ["bias"], ["bias_alias"], name="/ba"))
    model.graph.node.append(helper.make_node("Sum", ["y", "c", "bias_alias"], ["s"], name="/s"))


def _custom_domains(model: onnx.ModelProto) -> None:
    model.graph.node.append(helper.make_node("Plugin", ["y"], ["p"], name="/p", domain="trt"))
    model.graph.node.append(
        helper.make_node("FusedMatMul", ["y", "y"], ["f"], name="/f", domain="com.microsoft")
    )
    model.graph.node.append(helper.make_node("Foo", ["y"], ["g"], name="/g", domain="unknown"))
    model.opset_import.extend(
        [helper.make_opsetid("trt", 1), helper.make_opsetid("com.microsoft", 1)]
    )


def _typed_oddly(model: onnx.ModelProto) -> None:
    info = onnx.ValueInfoProto(name="added")
    info.type.sequence_type.elem_type.tensor_type.elem_type = TensorProto.FLOAT
    model.graph.value_info.extend(
        [
            info,
            helper.make_tensor_value_info("nobody_makes_this", TensorProto.INT8, [7]),
            helper.make_tensor_value_info("x", TensorProto.INT8, [7]),  # onnx_ir ignores it
            helper.make_tensor_value_info("y", TensorProto.INT64, [3]),  # the output wins
            onnx.ValueInfoProto(name="mm"),  # no type at all
        ]
    )


ODD_FILES: dict[str, Callable[[], onnx.ModelProto]] = {
    "hostile names": hostile_model,
    "graph output retypes a graph input": lambda: _changed(_retype_output_over_input),
    "quantization annotation": lambda: _changed(_quantization_annotation),
    "sparse initializer": lambda: _changed(_sparse_initializer),
    "optional slots left empty": lambda: _changed(_optional_slots),
    "constant and weight alias": lambda: _changed(_constant_and_alias),
    "custom and unknown domains": lambda: _changed(_custom_domains),
    "odd value_info": lambda: _changed(_typed_oddly),
    "input and output listed twice": lambda: _changed(
        lambda m: (m.graph.input.append(m.graph.input[0]), m.graph.output.append(m.graph.output[0]))
    ),
    "initializer twice": lambda: _changed(
        lambda m: m.graph.initializer.append(
            numpy_helper.from_array(np.ones((2, 2), np.int32), "scale")
        )
    ),
    "unnamed initializer": lambda: _changed(
        lambda m: m.graph.initializer.append(numpy_helper.from_array(np.ones(2, np.float32), ""))
    ),
    "function overload": lambda: _changed(
        lambda m: (
            setattr(m.functions[0], "overload", "v2"),
            setattr(m.graph.node[5], "overload", "v2"),
        )
    ),
}


def _inferred(graph: ir.Graph | GraphSkeleton, proto: onnx.ModelProto) -> list[tuple[str, str]]:
    scene = GraphScene(graph, functions=[(f.domain, f.name, f.overload) for f in proto.functions])
    scene.infer()
    return [scene.tensor_text(i) for i in range(len(scene.table.tensors))]


@pytest.mark.parametrize("name", list(ODD_FILES))
def test_an_odd_file_draws_from_its_skeleton_as_from_its_model(name: str) -> None:
    proto = ODD_FILES[name]()
    skeleton = GraphSkeleton.of(proto, _unbuildable)
    assert skeleton is not None
    built = ir.serde.deserialize_model(proto).graph
    assert _drawn(skeleton, proto) == _drawn(built, proto)
    assert _inferred(skeleton, proto) == _inferred(built, proto)


def _calls_a_function_with_untyped_output() -> onnx.ModelProto:
    """x -> local::Double -> Relu -> y: nothing declares the type of the function's output."""
    body = [helper.make_node("Add", ["a", "a"], ["b"])]
    function = helper.make_function(
        "local", "Double", ["a"], ["b"], body, [helper.make_opsetid("", 18)]
    )
    nodes = [
        helper.make_node("Double", ["x"], ["doubled"], name="double", domain="local"),
        helper.make_node("Relu", ["doubled"], ["y"], name="relu"),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    imports = [helper.make_opsetid("", 18), helper.make_opsetid("local", 1)]
    return helper.make_model(graph, opset_imports=imports, functions=[function])


def _ir_version_3() -> onnx.ModelProto:
    """A model zoo era file: IR 3, its weights not listed as graph inputs, no value_info."""
    weight = numpy_helper.from_array(np.ones((8, 8), np.float32), "w")
    graph = helper.make_graph(
        [
            helper.make_node("MatMul", ["x", "w"], ["a"], name="mm"),
            helper.make_node("Relu", ["a"], ["y"], name="relu"),
        ],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        initializer=[weight],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 8)])
    model.ir_version = 3
    return model


def _shapes_sent(view: nj.GraphView) -> list[str]:
    """Every tensor's shape as the view sends it after shape inference."""
    view._send_shapes()
    meta, columns = decode_columns(view._shapes)
    return [meta["shapes"][code] for code in columns["tensor.shape"]]


@pytest.mark.parametrize(
    "make", [_calls_a_function_with_untyped_output, _ir_version_3], ids=["local function", "IR 3"]
)
def test_shapes_inferred_before_the_build_are_those_after_it(
    make: Callable[[], onnx.ModelProto], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _saved(make(), tmp_path)
    shown = [_shapes_sent(nj.GraphView(_open(path, monkeypatch, unbuilt=u))) for u in (False, True)]
    assert shown[0] == shown[1]


def _input_of_unknown_type(model: onnx.ModelProto) -> None:
    model.graph.input[0].type.tensor_type.elem_type = 99


def _map_typed_value(model: onnx.ModelProto) -> None:
    info = model.graph.value_info.add(name="mm")
    info.type.map_type.key_type = TensorProto.STRING
    info.type.map_type.value_type.tensor_type.elem_type = TensorProto.FLOAT


def _sequence_without_element(model: onnx.ModelProto) -> None:
    model.graph.value_info.add(name="mm").type.sequence_type.SetInParent()


@pytest.mark.parametrize(
    "change",
    [_input_of_unknown_type, _map_typed_value, _sequence_without_element],
    ids=["element type 99", "map type", "sequence without element"],
)
def test_a_type_onnx_ir_cannot_read_fails_the_view_as_a_model_load_error(
    change: Callable[[onnx.ModelProto], None], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _saved(_changed(change), tmp_path)
    before = path.read_bytes()
    with pytest.raises(ModelLoadError, match="could not be read as an ONNX model"):
        _open(path, monkeypatch, unbuilt=False)
    doc = _open(path, monkeypatch, unbuilt=True)
    with pytest.raises(ModelLoadError, match="could not be read as an ONNX model"):
        nj.GraphView(doc)
    assert path.read_bytes() == before


def test_a_malformed_attribute_fails_at_first_use_and_leaves_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = _model()
    model.graph.node[1].attribute.add(name="bad", type=onnx.AttributeProto.SPARSE_TENSOR)
    path = _saved(model, tmp_path)
    before = path.read_bytes()
    doc = _open(path, monkeypatch, unbuilt=True)
    view = nj.GraphView(doc)  # the skeleton reads no attributes: it draws
    for use in (lambda: doc.rename_node("relu", "r"), lambda: view._properties.node(1)):
        with pytest.raises(ModelLoadError, match="relu"):
            use()
    with pytest.raises(ModelLoadError):
        doc.save()
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["model.onnx"]


@pytest.mark.parametrize("unbuilt", [False, True], ids=["built at open", "built on use"])
def test_an_initializer_of_undefined_type_fails_as_a_model_load_error(
    unbuilt: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = _model()
    model.graph.initializer[0].data_type = TensorProto.UNDEFINED
    path = _saved(model, tmp_path)

    def open_draw_and_edit() -> None:
        doc = _open(path, monkeypatch, unbuilt=unbuilt)
        nj.GraphView(doc)
        doc.rename_node("relu", "r")

    with pytest.raises(ModelLoadError, match="could not be read"):
        open_draw_and_edit()


@contextlib.contextmanager
def _logged_errors(caplog: pytest.LogCaptureFixture) -> Iterator[list[logging.LogRecord]]:
    """The errors logged in the block (a view's change listener that failed)."""
    with caplog.at_level(logging.ERROR):
        caplog.clear()
        records: list[logging.LogRecord] = []
        yield records
        records.extend(r for r in caplog.records if r.levelno >= logging.ERROR)


def test_a_failing_build_listener_leaves_the_other_views_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    doc = _open(_saved(_model(), tmp_path), monkeypatch, unbuilt=True)

    def interrupted(_model: ir.Model) -> None:
        raise RuntimeError("a view that never finished drawing")

    doc.on_built(interrupted)
    view = nj.GraphView(doc)
    with contextlib.suppress(RuntimeError):
        doc.rename_node("relu", "first")  # builds the model
    with _logged_errors(caplog) as errors:
        doc.rename_node("sig", "second")
    assert errors == []
    assert "second" in view._scene.table.by_key
    assert view._scene._graph is doc.graph


def test_undoing_a_link_back_to_a_tensor_nobody_produces_patches_the_view(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    doc = _open(_saved(_odd_model(), tmp_path), monkeypatch, unbuilt=False)
    doc.connect("scaled", "/Sub", 1, replace=True)  # /Sub read "nobody_makes_this" there
    view = nj.GraphView(doc)
    with _logged_errors(caplog) as errors:
        doc.undo()
    assert errors == []
    scene = view._scene
    assert len(scene.hierarchy.item_group) == len(scene.table.items)
    assert "input:nobody_makes_this" in scene.table.by_key
