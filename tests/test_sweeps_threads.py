"""The onnxruntime threads of a sweep's CPU runs: runs side by side on one machine share its
cores (`intra_op_threads = cores // runs at once`), a grid's own value wins, and the value
applied is in the row and the report, so figures of different thread counts never mix."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import onnx
import pytest
from _sweep_models import tiny_export

from nsdl_jupyter.sweeps import SweepSettingsError, expand_grid, sweep, target_identity
from nsdl_jupyter.sweeps._identity import identity_from_check
from nsdl_jupyter.sweeps._threads import with_threads

pytest.importorskip("distributed")


def _cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


@pytest.mark.slow  # a real 2-worker LocalCluster and two onnxruntime runs
def test_cpu_runs_side_by_side_share_the_cores_and_a_grid_value_wins(tmp_path: Path) -> None:
    model = tmp_path / "bert.onnx"
    onnx.save(tiny_export(), model)
    assert target_identity().cores == _cores()  # the runner's target check counts them
    grid = [{"batch": 1, "iterations": 2}, {"batch": 2, "iterations": 2, "intra_op_threads": 3}]
    result = sweep(model, grid, cache_dir=tmp_path / "cache", workers=2, progress=False)
    frame = result.frame
    assert list(frame["status"]) == ["ok", "ok"], list(frame["error"])
    share = max(1, _cores() // 2)
    assert list(frame["intra_op_threads"]) == [share, 3]
    # what the runner was asked for, as the run's report records it
    settings = [result.report(i).metadata["settings"] for i in (0, 1)]
    assert [s["intra_op_threads"] for s in settings] == [share, 3]
    # the shared run's idle threads sleep; the run with its own thread count keeps the default
    assert [s["spin_wait"] for s in settings] == [False, True]


def _check(gpus: int, cores: int) -> dict[str, Any]:
    """A target check's raw answer from a machine with `gpus` GPUs and `cores` cores."""
    return {
        "nvidia_smi": {"available": gpus > 0, "gpus": [["NVIDIA H200", "580.1"]] * gpus},
        "onnxruntime": {"ort_version": "1.22.0", "cpu": "x86_64"}, "cores": cores,
    }  # fmt: skip


def test_an_ssh_target_s_slots_share_its_cores_among_cpu_runs_only() -> None:
    (cpu, gpu, own, default) = expand_grid([
        {"backend": "ort-cpu"}, {"backend": "ort-cuda"},
        {"backend": "ort-cpu", "intra_op_threads": 5},
        {"backend": "ort-cpu", "intra_op_threads": 0},
    ])[0]  # fmt: skip
    box = identity_from_check("box", _check(gpus=4, cores=64))
    assert (box.slots, box.cores) == (4, 64)
    planned = [
        with_threads(c, cores=box.cores, concurrent=box.slots) for c in (cpu, gpu, own, default)
    ]
    assert [c["intra_op_threads"] for c in planned] == [16, None, 5, 0]
    assert [c.get("spin_wait", True) for c in planned] == [False, True, True, True]
    # alone on its machine (one slot), or cores unknown: onnxruntime's default
    alone = identity_from_check("one", _check(gpus=1, cores=64))
    assert with_threads(cpu, cores=alone.cores, concurrent=alone.slots)["intra_op_threads"] == 0
    assert with_threads(cpu, cores=0, concurrent=4)["intra_op_threads"] == 0
    assert with_threads(cpu, cores=3, concurrent=8)["intra_op_threads"] == 1


def test_a_wrong_thread_count_is_refused_with_the_fix() -> None:
    with pytest.raises(SweepSettingsError, match=r"intra_op_threads=-1: use an integer >= 1"):
        expand_grid({"intra_op_threads": [-1]})
