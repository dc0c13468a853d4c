"""What a box and an edge say on real torch exports (issue "First sight", item 4): op type plus
the meaningful name part, never the op type twice; weight shapes from the initializers; tensor
shapes on edges from shape inference run on a weightless copy, leaving the model untouched."""

from __future__ import annotations

import onnx
import onnx_ir as ir
import pytest

from nsdl_jupyter.graph import GraphScene
from nsdl_jupyter.graph._drawing import fit_shape
from nsdl_jupyter.graph._extract import CONSTANT, PSEUDO
from nsdl_jupyter.graph._shapes import TIMES, display_shape, infer_tensor_types, shape_text
from tests import real_exports

X = TIMES


def scene_of(name: str) -> GraphScene:
    """The export with its weights left stripped: labels and shapes never read them."""
    return GraphScene(ir.from_proto(onnx.load(real_exports.FOLDER / f"{name}.onnx")).graph)


def captions(scene: GraphScene) -> dict[str, tuple[str, tuple[str, ...]]]:
    """Node name -> (caption, weight lines) of every node a first view can show."""
    items = scene.table.items
    return {
        items[i].name: text
        for i, text in scene.texts.items()
        if not items[i].flags & (PSEUDO | CONSTANT)
    }


@pytest.mark.parametrize("export", sorted(real_exports.names()))
def test_no_caption_repeats_its_op_type_or_shows_exporter_noise(export: str) -> None:
    shown = captions(scene_of(export))
    assert shown
    for name, (caption, _) in shown.items():
        op, _, part = caption.partition(" ")
        assert part.lower() != op.rpartition("::")[2].lower(), (name, caption)
        assert not part.startswith(("node_", "aten", "onnx::")), (name, caption)
        assert not part.rpartition("_")[2].isdigit(), (name, caption)


def test_resnet_torchscript_boxes_name_their_module_and_weights() -> None:
    shown = captions(scene_of("resnet50_torchscript"))
    assert shown["/layer1/layer1.0/conv1/Conv"] == ("Conv conv1", (f"W⟨64{X}64{X}1{X}1⟩", "B⟨64⟩"))
    assert shown["/fc/Gemm"] == ("Gemm fc", (f"B⟨1000{X}2048⟩", "C⟨1000⟩"))
    assert shown["/layer1/layer1.0/relu/Relu"][0] == "Relu"  # not "Relu relu"
    assert shown["/layer1/layer1.0/Add"][0] == "Add"  # the block holds modules: not a leaf


@pytest.mark.parametrize("exporter", ["torchscript", "dynamo"])
def test_bert_query_is_matmul_query_with_its_weight(exporter: str) -> None:
    shown = captions(scene_of(f"bert_base_{exporter}"))
    query = [text for text in shown.values() if text[0] == "MatMul query"]
    assert len(query) == 12  # one per layer, weight read through torch's Identity alias or not
    assert all(weights == (f"B⟨768{X}768⟩",) for _, weights in query)
    softmax = [caption for caption, _ in shown.values() if caption.startswith("Softmax")]
    assert softmax and set(softmax) == {"Softmax"}


def test_shape_inference_fills_the_edges_a_torchscript_export_leaves_untyped() -> None:
    scene = scene_of("bert_base_torchscript")
    before = [scene.tensor_text(i) for i in range(len(scene.table.tensors))]
    values = {id(v): (v.shape, v.dtype) for n in scene.graph for v in n.outputs}
    assert sum(1 for d, s in before if not s) > 1000  # the exporter wrote no value_info
    scene.infer()
    after = [scene.tensor_text(i) for i in range(len(scene.table.tensors))]
    assert sum(1 for d, s in after if not s) < 50
    # onnx's inference loses batch and sequence after the position ids' Slice (`?x?x768`);
    # onnxruntime's symbolic inference names them as the model's inputs do
    assert after.count(("float", f"batch{X}sequence{X}768")) > 100
    assert not [s for d, s in after if d == "float" and "?" in s]
    assert ("int64", f"batch{X}sequence") in after  # a graph input, as the model declares it
    # the document's values are untouched: inference ran on a weightless copy
    assert values == {id(v): (v.shape, v.dtype) for n in scene.graph for v in n.outputs}


def test_dynamo_exports_need_no_inference_and_keep_symbolic_dims() -> None:
    scene = scene_of("bert_base_dynamo")
    assert infer_tensor_types(scene.graph) == {}  # every value typed by the exporter
    shapes = {scene.tensor_text(i)[1] for i in range(len(scene.table.tensors))}
    assert f"batch{X}sequence{X}768" in shapes


def test_shape_texts() -> None:
    assert shape_text(ir.Shape([1, "batch", None, "unk__3"])) == f"1{X}batch{X}?{X}?"
    assert shape_text(ir.Shape([])) == "scalar" and shape_text(None) == ""
    assert display_shape("[1,batch,None]") == f"1{X}batch{X}?"
    assert display_shape("[]") == "scalar" and display_shape("") == ""


# (shape with * for the multiplication sign, characters of room, drawn): vocabulary.test.ts
# checks fitShape on the same cases
FIT_SHAPE_CASES = [
    ("batch_size*16*64", 16, "batch_size*16*64"),
    ("batch_size*16*64", 14, "batch_s…*16*64"),
    ("batch*sequence*768", 14, "batch*seq…*768"),
    ("batch*sequence*768", 11, "bat…*s…*768"),
    ("?*16*64", 5, "?*16…"),
    ("batch*sequence*768", 8, "batch*s…"),  # the names cut, still too long: cut at the end
    ("1024*1024*1024", 8, "1024*10…"),
]


@pytest.mark.parametrize(("shape", "room", "drawn"), FIT_SHAPE_CASES)
def test_a_shape_too_long_for_its_room_cuts_its_dim_names_before_its_numbers(
    shape: str, room: int, drawn: str
) -> None:
    assert fit_shape(shape.replace("*", TIMES), room * 6.5, 6.5) == drawn.replace("*", TIMES)
