"""Why it is slow on real H200 figures: the roofline, `bound` and the findings from the
reports in tests/fixtures/gpu_why (made there by make.py: measured peaks, free-running
`gpu_ms`, ncu counters on the fp16 and single-op models).

The fixture keeps the reports, not the models. The models here are the same graphs:
- the two single-op models, built as make.py builds them (the weight typed, its data left out:
  work needs shapes and dtypes only);
- ResNet-50, ViT-B/16 and BERT-base from the weightless TorchScript corpus
  (tests/fixtures/exports: the same torchvision/transformers modules, opset 17, TorchScript
  exporter, as export_models.py). ResNet-50's node names are the fixture's; ViT-B/16 was
  exported at batch 1, and its one batch-sized shape constant (the patch Reshape) is set to 8
  as the batch-8 export has it; BERT's corpus export wraps BertModel as `model`, the fixture's
  as `bert`, so its node names are renamed `/model/` -> `/bert/` (the pooler, which the
  fixture's export leaves out, stays and is simply not profiled).
"""

from __future__ import annotations

import math
import tarfile
from pathlib import Path

import numpy as np
import onnx
import pandas as pd
import pytest
from onnx import TensorProto, helper, numpy_helper

import nsdl_jupyter.figures  # noqa: F401 - registers report.roofline()
from nsdl_jupyter.profiling import INPUT_COPY, OUTPUT_COPY, ProfileReport
from tests import real_exports

WHY = Path(__file__).parent / "fixtures" / "gpu_why"
pytestmark = pytest.mark.skipif(
    not (WHY / "reports.tar.gz").is_file(), reason="the H200 reports (tests/fixtures/gpu_why)"
)


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("gpu_why")
    with tarfile.open(WHY / "reports.tar.gz") as tar:
        tar.extractall(folder, filter="data")
    return folder


def _report(folder: Path, name: str) -> ProfileReport:
    return ProfileReport.load(folder / f"{name}_report.json")


def _single_op(op: str) -> onnx.ModelProto:
    """make.py's single-op models: a float16 MatMul 8x4096x4096 @ 4096x4096, a float32 Add of
    64 M elements (the weight typed and sized, its bytes left out)."""
    if op == "MatMul":
        weight = TensorProto(name="W", data_type=TensorProto.FLOAT16, dims=[4096, 4096])
        graph = helper.make_graph(
            [helper.make_node("MatMul", ["x", "W"], ["y"], name="/big/MatMul")], "gemm",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT16, [8, 4096, 4096])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT16, [8, 4096, 4096])], [weight],
        )  # fmt: skip
    else:
        graph = helper.make_graph(
            [helper.make_node("Add", ["a", "b"], ["y"], name="/big/Add")], "add",
            [helper.make_tensor_value_info(n, TensorProto.FLOAT, [64, 1024, 1024]) for n in "ab"],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [64, 1024, 1024])],
        )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 10
    return model


def _corpus_model(name: str) -> onnx.ModelProto:
    """The corpus export equivalent to the fixture's model `name` (see the module docstring)."""
    if name.startswith("resnet50"):
        return onnx.load(real_exports.FOLDER / "resnet50_torchscript.onnx")
    if name.startswith("vit_b_16"):
        model = onnx.load(real_exports.FOLDER / "vit_b_16_torchscript.onnx")
        for node in model.graph.node:
            if node.name == "/Constant_2":  # the patch Reshape's [batch, 768, 196]
                shape = numpy_helper.to_array(node.attribute[0].t).copy()
                assert list(shape) == [1, 768, 196]
                shape[0] = 8
                node.attribute[0].t.CopyFrom(numpy_helper.from_array(shape))
        return model
    model = onnx.load(real_exports.FOLDER / "bert_base_torchscript.onnx")
    for node in model.graph.node:
        if node.name.startswith("/model/"):
            node.name = "/bert/" + node.name[len("/model/") :]
    return model


def _layer(table: pd.DataFrame, name: str) -> pd.Series:
    return table.set_index("name").loc[name]


def test_a_large_fp16_gemm_is_compute_bound_by_its_counters(reports: Path) -> None:
    report = _report(reports, "gemm_fp16")
    table = report.roofline_table(_single_op("MatMul"))
    row = _layer(table, "/big/MatMul")
    assert row["tensor_active_pct"] > 50 and row["sm_throughput_pct"] > 60
    assert row["bound"] == "compute" and row["bound_source"] == "ncu"
    # the roofline agrees: 2·8·4096³ FLOPs in 1.48 ms, at 97 % of the measured fp16 peak
    assert row["flops"] == 2 * 8 * 4096**3 and row["roof_dtype"] == "float16"
    assert row["peak_flops_per_s"] == report.metadata["peaks"]["flops_per_s"]["float16"]
    assert 80 < row["compute_pct"] <= 100 and row["pct_of_roof"] == pytest.approx(
        row["compute_pct"])  # fmt: skip


def test_a_large_elementwise_add_is_memory_bound_by_its_counters(reports: Path) -> None:
    report = _report(reports, "elementwise")
    table = report.roofline_table(_single_op("Add"))
    row = _layer(table, "/big/Add")
    assert row["dram_throughput_pct"] > 50 and row["bound"] == "memory"
    assert row["bound_source"] == "ncu" and row["roof_dtype"] == "float32"
    assert row["bytes"] == 3 * 64 * 1024 * 1024 * 4 and row["intensity"] == pytest.approx(1 / 12)
    # under the measured bandwidth peak (the Add chain's 4.51 TB/s; 4.31 TB/s reached here)
    assert row["peak_bytes_per_s"] == report.metadata["peaks"]["bytes_per_s"]
    assert 80 < row["memory_pct"] <= 100 and row["pct_of_roof"] == pytest.approx(
        row["memory_pct"])  # fmt: skip
    # host copies: bytes, no roof, no counters
    copy = _layer(table, INPUT_COPY)
    assert copy["bound"] == "host copy" and copy["bound_source"] == ""
    assert math.isnan(copy["pct_of_roof"]) and math.isnan(copy["memory_pct"])


def test_without_counters_the_roofline_decides(reports: Path) -> None:
    measured = _report(reports, "elementwise")
    layers = measured.layers.drop(columns=["sm_throughput_pct", "dram_throughput_pct",
                                           "tensor_active_pct"])  # fmt: skip
    report = ProfileReport(layers, metadata=measured.metadata)
    row = _layer(report.roofline_table(_single_op("Add")), "/big/Add")
    assert row["bound"] == "memory" and row["bound_source"] == "roofline"
    assert math.isnan(row["dram_throughput_pct"])


@pytest.mark.parametrize("name", ["resnet50_b8_fp32", "vit_b_16_b8_fp32", "bert_b8_fp32"])
def test_the_roofline_figure_of_real_models_draws_the_big_layers_under_the_roofs(
    reports: Path, name: str
) -> None:
    report = _report(reports, name)
    fig = report.roofline(_corpus_model(name))
    peaks = report.metadata["peaks"]
    roofs = {t.name for t in fig.data if t.name.endswith(" roof")}
    assert roofs == {f"{d} roof" for d in peaks["flops_per_s"]}
    drawn = {str(row[0]) for t in fig.data if not t.name.endswith(" roof") for row in t.customdata}
    layers = report.layers[~report.layers["name"].isin([INPUT_COPY, OUTPUT_COPY])]
    biggest = layers.nlargest(10, "gpu_ms")["name"]
    assert set(biggest) <= drawn, set(biggest) - drawn
    assert "H200" in fig.layout.title.text


def test_findings_on_resnet50_fp32_name_host_copies_and_fp32_tensor_cores(
    reports: Path,
) -> None:
    report = _report(reports, "resnet50_b8_fp32")
    model = _corpus_model("resnet50")
    found = report.findings(model, keep=50)
    assert all(isinstance(e, dict) and e for e in found["evidence"])
    copies = found[found["rule_id"] == "host_copies"].iloc[0]
    layers = report.layers
    share = layers[layers["op_type"] == "Memcpy"]["gpu_ms"].sum() / layers["gpu_ms"].sum()
    assert share == pytest.approx(0.184, abs=0.005)  # the README's 18.4 %
    assert copies["evidence"]["gpu_time_share"] == pytest.approx(share)
    assert "io_binding=True" in copies["message"] and "io_binding=True" in copies["mitigation"]
    assert copies["severity"] == "high" and copies["nodes"]
    fp32 = found[found["rule_id"] == "fp32_tensor_cores"]
    table = report.roofline_table(model).set_index("name")
    convs = table[table["kind"] == "conv"]
    assert len(fp32) > 0.5 * len(convs)
    for _, row in fp32.iterrows():
        evidence = row["evidence"]
        assert evidence["roof_dtype"] == "tf32"  # onnxruntime CUDA: use_tf32=1 by default
        assert evidence["time_ms"] > 0 and evidence["flops"] > 0
        assert {"float16_peak", "bfloat16_peak"} & set(evidence)
        assert "convert_to_fp16" in row["mitigation"] and row["local_speedup_pct"] > 0
    # with I/O binding the copies are gone, and so is their finding
    bound = _report(reports, "resnet50_b8_fp32_iobinding").findings(model)
    assert "host_copies" not in set(bound["rule_id"])


def test_failed_peaks_leave_roofs_empty_and_say_why(reports: Path) -> None:
    report = _report(reports, "resnet50_b8_fp32")
    report.metadata["peaks"] = {"available": False, "message": "CUPTI is not installed"}
    model = _corpus_model("resnet50")
    table = report.roofline_table(model)
    for column in ("peak_flops_per_s", "roof_flops_per_s", "compute_pct", "pct_of_roof"):
        assert table[column].isna().all(), column
    assert set(table["bound"]) == {"", "host copy"}
    assert "CUPTI is not installed" in table.attrs["note"]
    found = report.findings(model)
    assert list(found["rule_id"]) == ["host_copies"]  # needs no peaks
    assert "CUPTI is not installed" in found.attrs["note"]
    fig = report.roofline(model)
    assert "CUPTI is not installed" in fig.layout.title.text
    assert not [t for t in fig.data if t.name.endswith(" roof")]


def test_failed_peaks_still_take_bound_from_the_counters(reports: Path) -> None:
    report = _report(reports, "gemm_fp16")
    report.metadata["peaks"] = {"available": False, "message": "no GPU time left"}
    row = _layer(report.roofline_table(_single_op("MatMul")), "/big/MatMul")
    assert row["bound"] == "compute" and row["bound_source"] == "ncu"
    assert np.isnan(row["pct_of_roof"])
