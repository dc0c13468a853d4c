"""Issue 27 on the H200 (tests/fixtures/gpu_deploy): onnxruntime-gpu and cupti-python were
deployed from the host's wheel cache (seeded from carried wheels, no network) into a fresh venv
through a real sshd on 127.0.0.1 there, and a GPU-timed profile ran in it. Checks the facts the
run printed (`FACT key = json`) and the report it saved."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from nsdl_jupyter.profiling import ProfileReport
from nsdl_jupyter.targets._target_probe import cuda_of_driver

HERE = Path(__file__).parent / "fixtures" / "gpu_deploy"


@pytest.fixture(scope="module")
def facts() -> dict[str, object]:
    found = {}
    for line in (HERE / "deploy.log").read_text().splitlines():
        if line.startswith("FACT "):
            key, _, value = line[5:].partition(" = ")
            found[key] = json.loads(value)
    return found


def test_the_runtime_set_was_deployed_once_into_a_fresh_venv(facts: dict[str, object]) -> None:
    assert str(facts["target_python_onnxruntime"]).startswith("1.30.0")  # CPU only, no -gpu
    rows = {item: detail for item, _status, detail in facts["check_rows"]}  # type: ignore[attr-defined]
    assert facts["check_ok"] is True and "will be deployed" in rows["onnxruntime"]
    wheels = facts["wheels_on_target"]
    assert isinstance(wheels, list) and len(wheels) == 6
    assert any(w.startswith("onnxruntime_gpu-1.31.1-") for w in wheels)
    assert any(w.startswith("cupti_python-13.0.1-") for w in wheels)
    first, second, wheel_bytes = (
        facts["first_bytes_uploaded"], facts["second_bytes_uploaded"], facts["wheel_bytes"],
    )  # fmt: skip
    assert isinstance(first, int) and isinstance(wheel_bytes, int) and isinstance(second, int)
    assert first > wheel_bytes > 250 << 20  # the wheels (and the model) went up once
    assert second < 4096  # the second connection: the requests alone
    assert facts["venv_ready"] is True and facts["target_runtimes"] == [
        Path(str(facts["venv"])).name
    ]
    stored = facts["target_wheels_by_hash"]
    assert isinstance(stored, list) and len({p.split("/")[1] for p in stored}) == 6  # one per hash
    assert "ready" in str(facts["second_check_runtime_set"])


def test_the_driver_check_passed_on_the_real_driver(facts: dict[str, object]) -> None:
    """The probe read driver 580 and its CUDA 13.0 from nvidia-smi; onnxruntime-gpu 1.31.1
    needs CUDA 13 (its cudnn-cu13 extra), so the set was allowed before any upload."""
    assert str(facts["target_driver"]).startswith("580.") and facts["target_cuda"] == "13.0"
    assert cuda_of_driver(str(facts["target_driver"])) == facts["target_cuda"]  # the fallback table
    majors = facts["wheel_cuda_majors"]
    assert isinstance(majors, dict) and len(majors) == 6
    ort = next(v for k, v in majors.items() if k.startswith("onnxruntime_gpu-1.31.1-"))
    assert ort == 13 and all(m is None or m <= 13 for m in majors.values())
    rows = {item: detail for item, _status, detail in facts["check_rows"]}  # type: ignore[attr-defined]
    assert rows["GPUs"].endswith("the driver runs CUDA \u2264 13.0")


def test_the_profile_in_that_venv_was_gpu_timed(facts: dict[str, object]) -> None:
    assert facts["runtime_version"] == "1.31.1"
    assert facts["providers"] == ["CUDAExecutionProvider", "CPUExecutionProvider"]
    assert "CUDAExecutionProvider" in str(facts["venv_onnxruntime"])
    assert facts["kernel_rows"] == facts["second_kernel_rows"] and facts["kernel_rows"] > 200  # type: ignore[operator]
    with gzip.open(HERE / "deploy_report.json.gz", "rt") as handle:
        report = ProfileReport.from_json(json.load(handle), where="deploy_report.json.gz")
    assert report.metadata["runtime_version"] == "1.31.1"
    kernels = report.kernels
    assert len(kernels) == facts["kernel_rows"]
    conv = kernels[kernels["layer"].str.endswith("/Conv")]
    assert conv["kernel"].str.contains("implicit_gemm|conv", case=False).any()
    timing = report.metadata["gpu"]["timing"]
    assert report.layers["gpu_ms"].sum() == pytest.approx(timing["busy_ms_mean"], rel=1e-3)
    assert facts["gpu_ms_sum"] == pytest.approx(timing["busy_ms_mean"], rel=1e-3)
