"""On a machine with an NVIDIA GPU and onnxruntime-gpu: the activity with CUDAExecutionProvider.

Deselected elsewhere (tests/conftest.py). The same calls made tests/fixtures/
ort_cuda_resnet50_b8_*_report.json on an H200 (tests/fixtures/make_gpu_reports.sh).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import pytest

from nsdl_jupyter.examples import resnet50
from nsdl_jupyter.profiling import available_providers, profile_ort
from nsdl_jupyter.profiling.gpu._kernels import INPUT_COPY, OUTPUT_COPY

pytestmark = pytest.mark.gpu


def test_resnet50_on_cuda(tmp_path: Path) -> None:
    statuses = {s.name: s for s in available_providers()}
    cuda = statuses["CUDAExecutionProvider"]
    assert cuda.available, f"a GPU machine needs onnxruntime-gpu with CUDA: {cuda.reason}"
    path = tmp_path / "resnet50_b8.onnx"
    onnx.save(resnet50(batch=8), path)
    report = profile_ort(path, provider="cuda", iterations=50, warmup=10,
                         trace_path=tmp_path / "trace.json")  # fmt: skip
    assert set(report.layers["provider"]) == {"CUDAExecutionProvider"}
    nodes = report.layers[~report.layers["name"].isin([INPUT_COPY, OUTPUT_COPY])]
    assert len(nodes) == 122 and nodes["in_graph"].all()
    assert report.metadata["device"].startswith("GPU 0: ")
    # the bare pass is faster than the profiled runs: the profiler syncs after each node
    assert report.latency["p50"] < np.median(report.metadata["profiled_run_ms"])


def test_gpu_truth_on_torchvision_resnet50(tmp_path: Path) -> None:
    """CUPTI kernel times, fused rows mapped, NVML samples, clocks locked (tests/gpu_truth.py)."""
    from tests.gpu_truth import bare_loop_p50, export_torchvision, problems

    path = export_torchvision("resnet50", tmp_path / "resnet50_b8.onnx")
    # 300 inferences each: the p50s of 100 differ by up to ~4 % from run to run on the H200
    report = profile_ort(path, provider="cuda", iterations=300, warmup=30,
                         trace_path=tmp_path / "trace.json")  # fmt: skip
    found = problems(report, bare_loop_p50(path, iterations=300))
    assert found == [], found
