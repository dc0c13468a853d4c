"""Extraction from a node of a real torch export ("Profile from here", the canvas's Extract)
carries the constants, weight aliases and shape arithmetic the nodes read, so only real
activations become inputs of the new model, and that model runs in onnxruntime. BERT runs in
its short form (`real_exports.SHORT`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import nsdl_jupyter as nj
from nsdl_jupyter.widgets.graph._canvas_edit import extract_nodes
from tests import real_exports


def _first_activation_node(doc: nj.ModelDocument) -> str:
    """The first node (file order) that reads a graph input: where a user starts."""
    inputs = {v.name for v in doc.graph.inputs if not v.is_initializer()}
    return next(
        n.name or "" for n in doc.graph if any(v is not None and v.name in inputs for v in n.inputs)
    )


def _torchscript_like(tmp_path: Path) -> Path:
    """A TorchScript-shaped block: a weight alias (Identity of an initializer), Constant
    nodes, and shape arithmetic on the input (Shape, Gather, Unsqueeze, Concat) feeding a
    Reshape after the node the extraction starts from."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    weight = numpy_helper.from_array(np.full((8, 8), 0.5, np.float32), "model.dense.weight")
    nodes = [
        helper.make_node("Identity", ["model.dense.weight"], ["alias"], name="Identity_12"),
        helper.make_node("Shape", ["x"], ["/Shape_output_0"], name="/Shape"),
        helper.make_node(
            "Constant",
            [],
            ["/Constant_output_0"],
            name="/Constant",
            value=numpy_helper.from_array(np.array(0, np.int64)),
        ),
        helper.make_node(
            "Gather",
            ["/Shape_output_0", "/Constant_output_0"],
            ["/Gather_output_0"],
            name="/Gather",
        ),
        helper.make_node(
            "Constant",
            [],
            ["/Constant_1_output_0"],
            name="/Constant_1",
            value=numpy_helper.from_array(np.array([0], np.int64)),
        ),
        helper.make_node(
            "Unsqueeze",
            ["/Gather_output_0", "/Constant_1_output_0"],
            ["/Unsqueeze_output_0"],
            name="/Unsqueeze",
        ),
        helper.make_node(
            "Constant",
            [],
            ["/Constant_2_output_0"],
            name="/Constant_2",
            value=numpy_helper.from_array(np.array([2, 4], np.int64)),
        ),
        helper.make_node(
            "Concat",
            ["/Unsqueeze_output_0", "/Constant_2_output_0"],
            ["/Concat_output_0"],
            name="/Concat",
            axis=0,
        ),
        helper.make_node(
            "MatMul", ["x", "alias"], ["/dense/MatMul_output_0"], name="/dense/MatMul"
        ),
        helper.make_node(
            "Reshape", ["/dense/MatMul_output_0", "/Concat_output_0"], ["y"], name="/Reshape"
        ),
    ]
    graph = helper.make_graph(nodes, "g", [x], [y], [weight])
    path = tmp_path / "block.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def test_extraction_computes_constants_inside_and_cuts_only_activations(tmp_path: Path) -> None:
    doc = nj.open_model(_torchscript_like(tmp_path))
    target, count = extract_nodes(doc, ["/dense/MatMul"], downstream=True)
    model = onnx.load(target)
    assert [i.name for i in model.graph.input] == ["x"]
    carried = {n.name for n in model.graph.node}
    assert {"Identity_12", "/Constant", "/Shape", "/Concat", "/dense/MatMul"} <= carried
    assert count == 2  # the nodes chosen: MatMul and what it feeds
    (result,) = _run(target, np.ones((3, 8), np.float32))
    assert result.shape == (3, 2, 4) and float(result[0, 0, 0]) == 4.0


def _embeddings_like(tmp_path: Path) -> Path:
    """BERT's and DistilBERT's embeddings as TorchScript writes them with dynamic axes: the
    position ids are `position_ids[:, :sequence]`, a Slice to the input's length, which onnx
    inference cannot size (`unk__0`), so the Add after it loses `batch` and `sequence`."""
    rng = np.random.default_rng(0)
    e = "/model/embeddings"

    def node(op: str, inputs: list[str], name: str, **attrs: object) -> onnx.NodeProto:
        return helper.make_node(op, inputs, [f"{name}_output_0"], name=name, **attrs)

    def const(name: str, value: object) -> onnx.NodeProto:
        value = numpy_helper.from_array(np.array(value, np.int64))
        return helper.make_node("Constant", [], [f"{name}_output_0"], name=name, value=value)

    nodes = [
        node("Gather", ["word_embeddings.weight", "input_ids"], f"{e}/word_embeddings/Gather"),
        node("Shape", ["input_ids"], f"{e}/Shape"),
        const(f"{e}/Constant", 1),
        node("Gather", [f"{e}/Shape_output_0", f"{e}/Constant_output_0"], f"{e}/Gather", axis=0),
        const(f"{e}/Constant_1", [0]),
        node("Unsqueeze", [f"{e}/Gather_output_0", f"{e}/Constant_1_output_0"], f"{e}/Unsqueeze"),
        const(f"{e}/Constant_2", [0]),
        const(f"{e}/Constant_3", [1]),
        node(
            "Slice",
            [
                "position_ids",
                f"{e}/Constant_2_output_0",
                f"{e}/Unsqueeze_output_0",
                f"{e}/Constant_3_output_0",
            ],
            f"{e}/Slice",
        ),
        node(
            "Gather", ["position_embeddings.weight", f"{e}/Slice_output_0"], f"{e}/position/Gather"
        ),
        node(
            "Add",
            [f"{e}/word_embeddings/Gather_output_0", f"{e}/position/Gather_output_0"],
            f"{e}/Add",
        ),
        node("MatMul", [f"{e}/Add_output_0", "dense.weight"], "/model/dense/MatMul"),
        helper.make_node("Relu", ["/model/dense/MatMul_output_0"], ["y"], name="/model/act/Relu"),
    ]
    weights = {"word_embeddings.weight": (32, 8), "position_embeddings.weight": (16, 8)}
    weights["dense.weight"] = (8, 8)
    initializers = [
        numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), name)
        for name, shape in weights.items()
    ]
    initializers.append(
        numpy_helper.from_array(np.arange(16, dtype=np.int64)[None], "position_ids")
    )
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "sequence"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        initializers,
    )
    path = tmp_path / "embeddings.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
    return path


def test_a_cut_input_keeps_the_models_dimension_names(tmp_path: Path) -> None:
    """Profile from the middle of a TorchScript BERT, DistilBERT or Llama: the new inputs were
    sized `unk__7`, `unk__91`, ... (fields nobody can fill in, and sizes that had to agree with
    `batch` and `sequence`: given as dim_sizes, the run failed). onnxruntime's symbolic
    inference relates them to the model's own `batch` and `sequence`."""
    doc = nj.open_model(_embeddings_like(tmp_path))
    target, _ = extract_nodes(doc, ["/model/dense/MatMul"], downstream=True)
    (value,) = onnx.load(target).graph.input
    dims = [d.dim_value or d.dim_param for d in value.type.tensor_type.shape.dim]
    assert dims == ["batch", "sequence", 8]
    report = nj.profile_ort(target, iterations=1, warmup=0, dim_sizes={"batch": 2, "sequence": 5})
    assert set(report.layers["input_shapes"]) == {"float[2,5,8]"}


def _run(path: Path, value: np.ndarray) -> list[np.ndarray]:
    import onnxruntime as ort

    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return session.run(None, {i.name: value for i in session.get_inputs()})


@pytest.mark.slow
@pytest.mark.parametrize("name", ["bert_base_torchscript", "bert_base_dynamo"])
def test_profile_from_the_first_node_of_bert_runs(name: str, tmp_path: Path) -> None:
    """BERT's short form (2 of 12 identical layers, every op type of the whole:
    tests/test_real_exports.py): what the extraction carries along is the same in each layer."""
    doc = nj.open_model(real_exports.save(name, tmp_path, short=True))
    target, _ = extract_nodes(doc, [_first_activation_node(doc)], downstream=True)
    model = onnx.load(target)
    constants = {
        o
        for n in doc.graph
        if n.op_type in ("Constant", "Identity")
        for o in (v.name for v in n.outputs)
    }
    inputs = [i.name for i in model.graph.input]
    assert "input_ids" in inputs
    assert len(inputs) <= 6, inputs  # 530 before: every Constant and weight alias
    assert not constants & set(inputs)
    for value in model.graph.input:  # typed and shaped from the source
        assert value.type.tensor_type.elem_type and value.type.tensor_type.HasField("shape")
    report = nj.profile_ort(target, iterations=1, warmup=0)
    assert len(report.layers) > len(model.graph.node) / 3  # all of it ran (onnxruntime fuses)


@pytest.mark.slow
def test_the_designers_profile_from_here_runs_on_bert(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The canvas menu's "Profile from here" on BERT TorchScript's first node: the run ends
    done, its rows are named by the model's nodes and they colour the canvas. BERT's short
    form (2 of 12 identical layers): the path from menu to canvas does not depend on depth."""
    from nsdl_jupyter.widgets import Designer

    monkeypatch.chdir(tmp_path)  # where the onnxruntime trace is kept
    doc = nj.open_model(real_exports.save("bert_base_torchscript", tmp_path, short=True))
    designer = Designer(doc)
    panel = designer.profile_from([_first_activation_node(doc)])
    assert panel is not None
    report = panel.wait(timeout=300)
    assert report is not None and panel.status == "done", panel._message.value
    assert report.layers["node"].str.startswith("/model/").mean() > 0.9
    assert designer.graph._overlay  # the per-node times are on the canvas
    designer.close()
