"""The example builders: valid ONNX (full check), runnable in onnxruntime, export-shaped."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from nsdl_jupyter.examples import (
    EXAMPLES,
    bert_base,
    resnet18,
    resnet50,
    save_example,
    small_transformer,
    synthetic_dag,
)


def _feeds(model: onnx.ModelProto, batch: int = 2) -> dict[str, np.ndarray]:
    """Random inputs for the declared input shapes (symbolic dims = `batch`)."""
    rng = np.random.default_rng(1)
    feeds: dict[str, np.ndarray] = {}
    for value in model.graph.input:
        dims = [
            d.dim_value if d.HasField("dim_value") else batch
            for d in value.type.tensor_type.shape.dim
        ]
        if value.type.tensor_type.elem_type == onnx.TensorProto.INT64:
            feeds[value.name] = np.zeros(dims, dtype=np.int64)
        else:
            feeds[value.name] = rng.standard_normal(dims, dtype=np.float32)
    if "input_ids" in feeds:
        feeds["input_ids"] = rng.integers(0, 1000, feeds["input_ids"].shape)
        mask = np.ones_like(feeds["attention_mask"])
        mask[-1, mask.shape[1] // 2 :] = 0  # a padded sequence exercises the additive mask
        feeds["attention_mask"] = mask
    return feeds


def _check_and_run(model: onnx.ModelProto) -> list[np.ndarray]:
    onnx.checker.check_model(model, full_check=True)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    outputs = session.run(None, _feeds(model))
    for declared, value in zip(model.graph.output, outputs, strict=True):
        dims = declared.type.tensor_type.shape.dim
        expected = [
            d.dim_value if d.HasField("dim_value") else value.shape[i] for i, d in enumerate(dims)
        ]
        assert list(value.shape) == expected, declared.name
        assert np.isfinite(value).all(), f"{declared.name} has inf/nan"
    return outputs


def _assert_export_names(model: onnx.ModelProto) -> None:
    names = [node.name for node in model.graph.node]
    assert all(names), "every node is named"
    assert len(set(names)) == len(names), "node names are unique"


BUILDERS: dict[str, Callable[[], onnx.ModelProto]] = {
    "resnet18": resnet18,
    "resnet18-unfolded-opset13": lambda: resnet18(opset=13, fold_batchnorm=False, image_size=64),
    "resnet50-symbolic-batch": lambda: resnet50(batch="N"),
    "small_transformer": small_transformer,
    "small_transformer-opset14": lambda: small_transformer(opset=14),
    "small_transformer-latest": lambda: small_transformer(opset=onnx.defs.onnx_opset_version()),
    "synthetic_dag-1": lambda: synthetic_dag(1),
    "synthetic_dag-flat": lambda: synthetic_dag(500, scoped=False),
    "synthetic_dag-opset21": lambda: synthetic_dag(500, seed=3, opset=21),
    "synthetic_dag-20k": lambda: synthetic_dag(20_000),
}


@pytest.mark.parametrize("name", BUILDERS)
def test_builder_passes_full_check_and_runs(name: str) -> None:
    model = BUILDERS[name]()
    _check_and_run(model)
    _assert_export_names(model)


def test_resnet50_has_torchvision_topology() -> None:
    model = resnet50()
    counts = Counter(node.op_type for node in model.graph.node)
    assert counts == {
        "Conv": 53,
        "Relu": 49,
        "Add": 16,
        "MaxPool": 1,
        "GlobalAveragePool": 1,
        "Flatten": 1,
        "Gemm": 1,
    }
    names = {node.name for node in model.graph.node}
    assert {"/conv1/Conv", "/layer1/layer1.0/conv1/Conv", "/layer4/layer4.2/relu_2/Relu"} <= names
    assert "/layer2/layer2.0/downsample/downsample.0/Conv" in names
    params = sum(int(np.prod(t.dims)) for t in model.graph.initializer)
    assert 25_000_000 < params < 26_000_000  # torchvision: 25.56 M


def test_resnet18_unfolded_keeps_batchnorm_with_torch_parameter_names() -> None:
    model = resnet18(fold_batchnorm=False)
    counts = Counter(node.op_type for node in model.graph.node)
    assert counts["BatchNormalization"] == counts["Conv"] == 20
    initializers = {t.name for t in model.graph.initializer}
    assert {"layer1.0.bn1.weight", "layer2.0.downsample.1.running_var", "bn1.bias"} <= initializers


def test_small_transformer_is_a_scoped_bert() -> None:
    model = small_transformer()
    names = {node.name for node in model.graph.node}
    assert "/encoder/layer.1/attention/self/MatMul" in names
    assert "/encoder/layer.0/intermediate/intermediate_act_fn/Erf" in names
    assert "/pooler/activation/Tanh" in names
    assert [o.name for o in model.graph.output] == ["last_hidden_state", "pooler_output"]


def test_attention_mask_changes_the_output() -> None:
    model = small_transformer()
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    feeds = _feeds(model)
    masked = session.run(None, feeds)[0]
    feeds["attention_mask"] = np.ones_like(feeds["attention_mask"])
    unmasked = session.run(None, feeds)[0]
    np.testing.assert_allclose(masked[0], unmasked[0], rtol=1e-5, atol=1e-5)
    assert not np.allclose(masked[-1], unmasked[-1])


@pytest.mark.slow
def test_bert_base_is_export_sized_and_runs() -> None:
    model = bert_base()
    counts = Counter(node.op_type for node in model.graph.node)
    assert len(model.graph.node) >= 1000
    assert counts["LayerNormalization"] == 25
    assert counts["Softmax"] == counts["Erf"] == 12
    params = sum(int(np.prod(t.dims)) for t in model.graph.initializer if t.data_type == 1)
    assert 109_000_000 < params < 110_500_000  # bert-base-uncased: 109.5 M
    _check_and_run(model)


def _edges(model: onnx.ModelProto) -> tuple[int, set[str]]:
    produced = {o for node in model.graph.node for o in node.output}
    consumed = [i for node in model.graph.node for i in node.input if i in produced]
    graph_outputs = {o.name for o in model.graph.output}
    return len(consumed), produced - set(consumed) - graph_outputs


@pytest.mark.parametrize("num_nodes", [1, 2, 3, 7, 48, 1000])
def test_synthetic_dag_has_exact_size_and_no_dead_outputs(num_nodes: int) -> None:
    model = synthetic_dag(num_nodes, seed=num_nodes)
    assert len(model.graph.node) == num_nodes
    _, dead = _edges(model)
    assert not dead


def test_synthetic_dag_is_network_shaped() -> None:
    model = synthetic_dag(5000)
    edges, _ = _edges(model)
    assert 1.2 <= edges / 5000 <= 1.5
    counts = Counter(node.op_type for node in model.graph.node)
    assert counts["Split"] > 0
    assert counts["Concat"] == counts["Split"]
    assert all(
        re.fullmatch(r"/(block\d+/layer\d+|head)/[A-Za-z]+(_\d+)?", n.name)
        for n in model.graph.node
    )
    flat = synthetic_dag(200, scoped=False)
    assert all(re.fullmatch(r"[A-Za-z]+(_\d+)?", n.name) for n in flat.graph.node)


def test_builders_are_deterministic_per_seed() -> None:
    assert synthetic_dag(300).SerializeToString() == synthetic_dag(300).SerializeToString()
    assert synthetic_dag(300).SerializeToString() != synthetic_dag(300, seed=1).SerializeToString()
    assert small_transformer().SerializeToString() == small_transformer().SerializeToString()
    assert resnet18(seed=2).graph.initializer[0] != resnet18(seed=3).graph.initializer[0]


def test_save_example_writes_the_model_atomically(tmp_path: Path) -> None:
    target = save_example("synthetic_dag", tmp_path / "dag.onnx", num_nodes=50)
    assert onnx.load(target) == synthetic_dag(50)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["dag.onnx"]
    assert set(EXAMPLES) == {
        "resnet50",
        "resnet18",
        "bert_base",
        "small_transformer",
        "synthetic_dag",
    }


def test_save_example_refuses_bad_requests(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="choose one of"):
        save_example("vgg16", tmp_path / "x.onnx")
    with pytest.raises(FileNotFoundError, match="create it first"):
        save_example("small_transformer", tmp_path / "missing" / "x.onnx")
    with pytest.raises(ValueError, match="use an opset from 13"):
        small_transformer(opset=11)
    with pytest.raises(ValueError, match="multiple of heads"):
        bert_base(layers=1, hidden=100, heads=12)
    with pytest.raises(ValueError, match="at least 1 node"):
        synthetic_dag(0)
    assert list(tmp_path.iterdir()) == []
