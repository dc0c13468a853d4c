"""Fused and inserted onnxruntime nodes map back to the model's nodes (real torch exports).

onnxruntime's CPU provider fuses too (NCHWc convolutions named after tensors, MatMul+Add into
Gemm, BiasGelu, SkipLayerNormalization), so the mapping is checked here on real exports from
tests/fixtures/exports, profiled for real. It also inlines function ops it has no kernel for
(HardSwish: HardSigmoid + Mul, unnamed, profiled as `HardSigmoid_<index>`).
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import onnx
import pytest

import nsdl_jupyter as nj
from nsdl_jupyter.profiling import ProfileReport
from nsdl_jupyter.profiling.ort._fusion_map import by_profiled_name, map_layers
from tests import real_exports

FAST = [
    "resnet50_torchscript",
    "resnet50_dynamo",
    "efficientnet_b0_dynamo",
    "efficientnet_b0_torchscript",
    "mobilenet_v3_large_torchscript",
    "mobilenet_v3_large_dynamo",
    "vit_tiny_hf_dynamo",
    "vit_tiny_hf_torchscript",
]
SLOW = ["vit_b_16_torchscript", "bert_base_dynamo"]


def _profile(name: str, folder: Path) -> ProfileReport:
    """ViT-B/16, BERT and ResNet-50 in their short form (the first two of each run of
    identical blocks, every op type of the whole: tests/test_real_exports.py): onnxruntime
    fuses each block the same way."""
    path = real_exports.save(name, folder, short=name in real_exports.SHORT)
    return nj.profile_ort(
        path, iterations=3, warmup=1, intra_op_threads=2, trace_path=folder / "trace.json"
    )


@pytest.mark.parametrize("name", [*FAST, *(pytest.param(n, marks=pytest.mark.slow) for n in SLOW)])
def test_at_least_95_percent_of_cpu_time_lands_on_onnx_nodes(name: str, tmp_path: Path) -> None:
    report = _profile(name, tmp_path)
    fused = report.layers[report.layers["mapped_as"] == "fused"]
    assert len(fused) > 0  # onnxruntime did fuse: the mapping is what is tested
    # by each layer's median call: one call slowed down by a busy machine (three calls per
    # layer) once gave two tiny unmapped layers 8% of the mean time, against 0.35% unloaded
    layers = report.layers
    unmapped = layers["onnx_nodes"].map(len) == 0
    median_share = 1 - layers.loc[unmapped, "median_ms"].sum() / layers["median_ms"].sum()
    assert median_share >= 0.95, layers[unmapped]
    model_nodes = {n.name for n in onnx.load(str(tmp_path / f"{name}.onnx")).graph.node}
    assert set(report.node_times()) <= model_nodes
    total = float(report.layers["mean_ms"].sum())
    assert sum(report.node_times().values()) == pytest.approx(total * report.mapped_share())


def test_nchwc_conv_relu_gives_its_time_mostly_to_the_conv(tmp_path: Path) -> None:
    report = _profile("resnet50_torchscript", tmp_path)
    row = report.layers.set_index("name").loc["/relu/Relu_output_0_nchwc"]
    assert row["mapped_as"] == "fused"
    shares = dict(zip(row["onnx_nodes"], row["onnx_weights"], strict=True))
    assert set(shares) == {"/conv1/Conv", "/relu/Relu"}
    assert shares["/conv1/Conv"] > 0.9 and sum(shares.values()) == pytest.approx(1.0)


def test_mapping_survives_save_and_load(tmp_path: Path) -> None:
    report = _profile("vit_tiny_hf_torchscript", tmp_path)
    again = ProfileReport.load(report.save(tmp_path / "r.json"))
    assert again.node_times() == pytest.approx(report.node_times())
    assert list(again.layers["mapped_as"]) == list(report.layers["mapped_as"])


def test_matmul_add_fusion_covers_both_nodes() -> None:
    """A hand-made optimized graph, as onnxruntime writes it for MatMul+Add -> Gemm."""
    h = onnx.helper
    original = h.make_model(
        h.make_graph(
            [
                h.make_node("MatMul", ["x", "w"], ["mm"], name="/fc/MatMul"),
                h.make_node("Add", ["mm", "b"], ["y"], name="/fc/Add"),
                h.make_node("Relu", ["y"], ["z"], name="/act/Relu"),
            ],
            "g",
            [h.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2, 8, 4])],
            [h.make_tensor_value_info("z", onnx.TensorProto.FLOAT, [2, 8, 3])],
            [
                h.make_tensor("w", onnx.TensorProto.FLOAT, [4, 3], [0.0] * 12),
                h.make_tensor("b", onnx.TensorProto.FLOAT, [3], [0.0] * 3),
            ],
        )
    )
    optimized = h.make_model(
        h.make_graph(
            [
                h.make_node("Reshape", ["x", "s"], ["r_in"], name="gemm_input_reshape"),
                h.make_node(
                    "Gemm", ["r_in", "w", "b"], ["r_out"], name="/fc/MatMul/MatMulAddFusion"
                ),
                h.make_node("Reshape", ["r_out", "s2"], ["y"], name="gemm_output_reshape"),
                h.make_node("Relu", ["y"], ["z"], name="/act/Relu"),
            ],
            "g",
            [],
            [],
        )
    )
    mapping = map_layers(original, optimized)
    gemm = mapping["/fc/MatMul/MatMulAddFusion"]
    assert gemm.kind == "fused" and set(gemm.nodes) == {"/fc/MatMul", "/fc/Add"}
    assert dict(zip(gemm.nodes, gemm.weights, strict=True))["/fc/MatMul"] > 0.5
    assert mapping["/act/Relu"].nodes == ("/act/Relu",)
    assert mapping["gemm_input_reshape"].kind == "inserted"
    assert mapping["gemm_output_reshape"].nodes == ("/act/Relu",)


@pytest.mark.parametrize("name", ["mobilenet_v3_large_torchscript", "mobilenet_v3_large_dynamo"])
def test_inlined_hardswish_rows_land_on_the_hardswish_node(name: str, tmp_path: Path) -> None:
    """The classifier's HardSwish (after a Gemm: no Conv to fuse it into) runs as the
    unnamed HardSigmoid + Mul of its function body; both rows are that node's time."""
    report = _profile(name, tmp_path)
    model = onnx.load(str(tmp_path / f"{name}.onnx"))
    hardswish = {n.name for n in model.graph.node if n.op_type == "HardSwish"}
    layers = report.layers
    inlined = layers[
        [re.fullmatch(r"(HardSigmoid|Mul)_\d+", n) is not None for n in layers["name"]]
    ]
    assert sorted(inlined["op_type"]) == ["HardSigmoid", "Mul"]
    assert set(inlined["mapped_as"]) == {"inlined"}
    covered = {tuple(nodes) for nodes in inlined["onnx_nodes"]}
    assert len(covered) == 1
    (node,) = covered.pop()
    assert node in hardswish
    (reads,) = (n.input[0] for n in model.graph.node if n.name == node)
    assert any(n.op_type == "Gemm" and reads in n.output for n in model.graph.node)
    assert report.node_times()[node] == pytest.approx(float(inlined["mean_ms"].sum()))


def _inlining_model() -> onnx.ModelProto:
    """HardSwish after MatMuls of distinct widths (a row's input shape tells which one it
    is), and a model-local function called twice (a body node with a name, one without)."""
    h = onnx.helper
    nodes, weights = [], []
    for i in range(6):
        width = 5 + i
        values = np.random.default_rng(i).standard_normal(64 * width, dtype=np.float32)
        weights.append(h.make_tensor(f"w{i}", onnx.TensorProto.FLOAT, [64, width], values))
        nodes.append(h.make_node("MatMul", ["x", f"w{i}"], [f"m{i}"], name=f"mm{i}"))
        nodes.append(h.make_node("HardSwish", [f"m{i}"], [f"h{i}"], name=f"hs{i}"))
    nodes.append(h.make_node("Gate", ["h0"], ["g0"], domain="local", name="gate0"))
    nodes.append(h.make_node("Gate", ["g0"], ["g1"], domain="local", name="gate1"))
    gate = h.make_function(
        "local",
        "Gate",
        ["a"],
        ["y"],
        [
            h.make_node("Sigmoid", ["a"], ["s"], name="sig"),
            h.make_node("Mul", ["a", "s"], ["t"]),
            h.make_node("Add", ["t", "a"], ["y"], name="add"),
        ],
        [h.make_opsetid("", 17)],
    )
    outputs = ["g1", *(f"h{i}" for i in range(1, 6))]
    graph = h.make_graph(
        nodes,
        "inlining",
        [h.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 64])],
        [h.make_tensor_value_info(n, onnx.TensorProto.FLOAT, None) for n in outputs],
        weights,
    )
    opsets = [h.make_opsetid("", 17), h.make_opsetid("local", 1)]
    return h.make_model(graph, opset_imports=opsets, functions=[gate])


def test_each_inlined_row_lands_on_the_node_it_was_inlined_from(tmp_path: Path) -> None:
    path = tmp_path / "inlining.onnx"
    onnx.save(_inlining_model(), path)
    report = nj.profile_ort(path, iterations=2, warmup=1, trace_path=tmp_path / "trace.json")
    layers = report.layers.set_index("name")
    hardsigmoid = layers[layers["op_type"] == "HardSigmoid"]
    assert len(hardsigmoid) == 6
    for nodes, kind, shapes in zip(
        hardsigmoid["onnx_nodes"], hardsigmoid["mapped_as"], hardsigmoid["input_shapes"],
        strict=True,
    ):  # fmt: skip
        assert kind == "inlined"
        width = int(shapes.split(",")[-1].rstrip("]"))  # float[1,<width>]: hs<width - 5>
        assert nodes == [f"hs{width - 5}"]
    gates = layers[[nodes[:1] in (["gate0"], ["gate1"]) for nodes in layers["onnx_nodes"]]]
    assert set(gates["mapped_as"]) == {"inlined"}
    assert {n[0] for n in gates["onnx_nodes"]} == {"gate0", "gate1"}
    assert report.mapped_share() == pytest.approx(1.0)


def _module_functions_model(kind: str) -> onnx.ModelProto:
    """A model as TorchScript's `export_modules_as_functions` writes it: each block a call of
    a model-local function (domain `__main__`) taking its weights as inputs, three calls in a
    row. "conv": Conv, Relu, residual Add (onnxruntime runs them as NCHWc Convs whose tensors
    are its own reorders, named after the body's tensors); "linear": two Linears on a 3-D input
    and a residual (each MatMul + Add a Gemm between Reshapes it makes)."""
    h = onnx.helper
    rng = np.random.default_rng(0)
    weights: list[onnx.TensorProto] = []

    def weight(name: str, *shape: int) -> str:
        values = rng.standard_normal(shape).astype(np.float32) * 0.1
        weights.append(onnx.numpy_helper.from_array(values, name))
        return name

    nodes: list[onnx.NodeProto] = []
    if kind == "conv":
        shape, params = [1, 3, 16, 16], ["input", "w", "b"]
        body = [
            h.make_node("Conv", params, ["onnx::Relu_28"], name="Conv_0", pads=[1, 1, 1, 1]),
            h.make_node("Relu", ["onnx::Relu_28"], ["onnx::Add_20"], name="Relu_1"),
            h.make_node("Add", ["onnx::Add_20", "input"], ["input.8"], name="Add_2"),
        ]
        nodes.append(
            h.make_node("Conv", ["x", weight("stem.w", 8, 3, 3, 3)], ["s"], name="/stem/Conv")
        )
        nodes[-1].attribute.extend([h.make_attribute("pads", [1, 1, 1, 1])])
        last = "s"
    else:
        shape, params = [2, 8, 32], ["input", "w1", "b1", "w2", "b2"]
        body = [
            h.make_node("MatMul", ["input", "w1"], ["onnx::Add_54"], name="MatMul_4"),
            h.make_node("Add", ["b1", "onnx::Add_54"], ["onnx::Relu_55"], name="Add_5"),
            h.make_node("Relu", ["onnx::Relu_55"], ["onnx::MatMul_63"], name="Relu_6"),
            h.make_node("MatMul", ["onnx::MatMul_63", "w2"], ["onnx::Add_65"], name="MatMul_14"),
            h.make_node("Add", ["b2", "onnx::Add_65"], ["onnx::Add_66"], name="Add_15"),
            h.make_node("Add", ["input", "onnx::Add_66"], ["input.7"], name="Add_16"),
        ]
        last = "x"
    for i in range(3):
        if kind == "conv":
            inputs = [last, weight(f"blocks.{i}.w", 8, 8, 3, 3), weight(f"blocks.{i}.b", 8)]
        else:
            inputs = [last, weight(f"w1_{i}", 32, 64), weight(f"b1_{i}", 64)]
            inputs += [weight(f"w2_{i}", 64, 32), weight(f"b2_{i}", 32)]
        out = f"/blocks/blocks.{i}/Block_output_0"
        nodes.append(
            h.make_node("Block", inputs, [out], domain="__main__", name=f"/blocks/blocks.{i}/Block")
        )
        last = out
    if kind == "conv":
        nodes.append(
            h.make_node("GlobalAveragePool", [last], ["y"], name="/pool/GlobalAveragePool")
        )
    else:
        nodes.append(h.make_node("Relu", [last], ["y"], name="/act/Relu"))
    block = h.make_function(
        "__main__", "Block", params, [body[-1].output[0]], body, [h.make_opsetid("", 17)]
    )
    graph = h.make_graph(
        nodes,
        "main_graph",
        [h.make_tensor_value_info("x", onnx.TensorProto.FLOAT, shape)],
        [h.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)],
        weights,
    )
    opsets = [h.make_opsetid("", 17), h.make_opsetid("__main__", 1)]
    return h.make_model(graph, opset_imports=opsets, functions=[block])


@pytest.mark.parametrize("kind", ["conv", "linear"])
def test_rows_of_inlined_module_calls_land_on_their_call(kind: str, tmp_path: Path) -> None:
    """TorchScript's `export_modules_as_functions` (ResNet-18's BasicBlocks): onnxruntime's
    rewrites inside an inlined body make tensors of their own, which cut each body apart and
    hid which call a row belongs to (ResNet-18: 1.6 % of the time mapped, 19 rows named
    `_inlfunc_BasicBlock_token_2_onnx::Conv_175_nchwc`; the blocks' Linears: 44 %). The
    names onnxruntime gives a call's copies tell it."""
    path = tmp_path / f"{kind}.onnx"
    onnx.save(_module_functions_model(kind), path)
    report = nj.profile_ort(path, iterations=2, warmup=1, trace_path=tmp_path / "trace.json")
    layers = report.layers
    assert report.mapped_share() == pytest.approx(1.0)
    inlined = layers[layers["name"].str.startswith("_inlfunc_")]
    assert len(inlined) >= 3 and set(inlined["mapped_as"]) == {"inlined"}
    calls = [f"/blocks/blocks.{i}/Block" for i in range(3)]

    def tag(name: str) -> str:  # "" for the first call's copies, "_token_<k>" for the others'
        match = re.match(r"_inlfunc_Block(_token_\d+)?_", name)
        assert match is not None, name
        return match.group(1) or ""

    order = sorted({tag(n) for n in inlined["name"]}, key=lambda t: int(t[7:]) if t else -1)
    assert len(order) == 3  # every call has rows
    for name, nodes in zip(inlined["name"], inlined["onnx_nodes"], strict=True):
        assert [n for n in nodes if n in calls] == [calls[order.index(tag(name))]], name
    assert set(report.node_times()) >= set(calls)


def test_unnamed_nodes_pair_with_profiled_rows_by_rank() -> None:
    """Unnamed nodes take the profiler's `<op>_<index>` names in run order; an op type whose
    rows do not count as many as its unnamed nodes is left unmatched."""
    h = onnx.helper
    original = h.make_model(
        h.make_graph(
            [
                h.make_node("HardSwish", ["x"], ["a"], name="first"),
                h.make_node("HardSwish", ["a"], ["b"], name="second"),
            ],
            "g",
            [h.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [4])],
            [h.make_tensor_value_info("b", onnx.TensorProto.FLOAT, [4])],
        )
    )
    optimized = h.make_model(
        h.make_graph(
            [
                h.make_node("HardSigmoid", ["x"], ["_inlfunc_HardSwish_HS_X"]),
                h.make_node("Mul", ["x", "_inlfunc_HardSwish_HS_X"], ["a"]),
                h.make_node("HardSigmoid", ["a"], ["_inlfunc_HardSwish_token_3_HS_X"]),
                h.make_node("Mul", ["a", "_inlfunc_HardSwish_token_3_HS_X"], ["b"]),
            ],
            "g",
            [],
            [],
        )
    )
    mapping = map_layers(original, optimized)
    rows = [("HardSigmoid_7", "HardSigmoid"), ("Mul_8", "Mul"), ("HardSigmoid_4", "HardSigmoid")]
    rows.append(("Mul_5", "Mul"))
    named = by_profiled_name(mapping, rows)
    assert [named[n].nodes for n, _ in rows] == [("first",), ("first",), ("second",), ("second",)]
    assert {named[n].kind for n, _ in rows} == {"inlined"}
    assert "Mul_8" not in by_profiled_name(mapping, rows[:3])
    assert by_profiled_name(mapping, rows[:3])["HardSigmoid_4"].nodes == ("second",)
