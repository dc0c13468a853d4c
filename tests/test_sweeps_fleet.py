"""The fleet in a sweep's result: each row says which machine ran it (target, GPU, driver,
runtime versions from check_target), and the table, the plot's legend, `best()` and the row
labels carry it, so rows of two machines are never confused."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from nsdl_jupyter.sweeps import SweepResult
from nsdl_jupyter.sweeps._cache import SweepCache
from nsdl_jupyter.sweeps._identity import identity_from_check
from nsdl_jupyter.sweeps._result import tidy


def _check(gpu: str, driver: str) -> dict[str, Any]:
    """A target check's raw answer, as the runner gives it on a machine with one GPU."""
    return {
        "nvidia_smi": {"available": True, "gpus": [[gpu, driver, "81559 MiB"]]},
        "onnxruntime": {"ort_version": "1.22.0", "cpu": "x86_64"},
        "os": "Linux", "python": "3.12.3", "tensorrt": "10.9.0",
    }  # fmt: skip


@pytest.fixture
def fleet_result(tmp_path: Path) -> SweepResult:
    """Two machines of one fleet (same target name pattern, different GPUs), batch 1 and 8."""
    machines = [
        identity_from_check("box0", _check("NVIDIA H200", "570.86")),
        identity_from_check("box1", _check("NVIDIA A100-SXM4-80GB", "550.54")),
    ]
    rows = []
    for index, machine in enumerate(machines):
        for batch in (1, 8):
            p50 = (1.0 + index) * batch / 4
            rows.append({
                "batch": batch, "precision": "fp32", "backend": "ort-cuda", **machine.columns(),
                "p50_ms": p50, "p99_ms": p50 * 1.2, "mean_ms": p50, "status": "ok",
                "error": "", "key": f"{machine.key()}-{batch}",
            })  # fmt: skip
    return SweepResult(tidy(rows), SweepCache(tmp_path), ["batch"], ran=4)


def test_the_frame_has_each_row_s_machine(fleet_result: SweepResult) -> None:
    frame = fleet_result.frame
    assert list(frame["gpu_name"]) == ["NVIDIA H200"] * 2 + ["NVIDIA A100-SXM4-80GB"] * 2
    assert list(frame["driver"]) == ["570.86"] * 2 + ["550.54"] * 2
    assert set(frame["onnxruntime_version"]) == {"1.22.0"}
    assert set(frame["tensorrt_version"]) == {"10.9.0"}


def test_the_plot_legend_names_each_machine_with_its_gpu_and_driver(
    fleet_result: SweepResult,
) -> None:
    figure = fleet_result.plot("p50_ms", x="batch")
    names = sorted(trace.name for trace in figure.data)
    assert names == [
        "target=box0 (NVIDIA H200, driver 570.86, ORT 1.22.0)",
        "target=box1 (NVIDIA A100-SXM4-80GB, driver 550.54, ORT 1.22.0)",
    ]


def test_best_and_the_row_labels_say_which_machine(fleet_result: SweepResult) -> None:
    best = fleet_result.best("p50_ms", {"batch": 8})
    assert best["target"] == "box0" and best["gpu_name"] == "NVIDIA H200"
    assert best["driver"] == "570.86" and best["onnxruntime_version"] == "1.22.0"
    assert fleet_result.label(3) == (
        "batch=8 @box1 (NVIDIA A100-SXM4-80GB, driver 550.54, ORT 1.22.0)"
    )
