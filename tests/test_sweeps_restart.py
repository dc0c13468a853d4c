"""Partial results survive the kernel: a sweep whose process is killed (SIGKILL, as a kernel
restart does) mid-way keeps every row it finished in the cache, and the same sweep run again
profiles only the rest."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import onnx
import psutil
import pytest
from _processes import wait_gone
from _sweep_models import RUNNER_MARK, tiny_export

from nsdl_jupyter.sweeps import sweep
from nsdl_jupyter.sweeps._cache import SweepCache

pytest.importorskip("distributed")
pytestmark = pytest.mark.slow  # a second interpreter and a dozen onnxruntime runs

GRID = {"batch": [1, 2, 3, 4, 5, 6], "iterations": [300]}
KERNEL = """
import sys
from nsdl_jupyter.sweeps import sweep
sweep(sys.argv[1], {grid!r}, cache_dir=sys.argv[2], workers=1, progress=False)
"""


def _finished_rows(cache: Path) -> list[Path]:
    runs = cache / "runs"
    return [p for p in runs.glob("*.json") if not p.name.endswith(".report.json")]


def test_a_killed_sweep_keeps_its_finished_rows_and_a_rerun_profiles_only_the_rest(
    tmp_path: Path,
) -> None:
    model = tmp_path / "bert.onnx"
    onnx.save(tiny_export(), model)
    cache = tmp_path / "cache"
    kernel = subprocess.Popen(  # the "kernel": a separate interpreter running the sweep
        [sys.executable, "-c", KERNEL.format(grid=GRID), str(model), str(cache)],
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    try:
        deadline = time.monotonic() + 240
        while len(_finished_rows(cache)) < 2 and time.monotonic() < deadline:
            assert kernel.poll() is None, "the sweep ended before it was killed"
            time.sleep(0.05)
        assert len(_finished_rows(cache)) >= 2, "no row finished"
        runners = [
            p.pid
            for p in psutil.Process(kernel.pid).children(recursive=True)
            if any(RUNNER_MARK in part for part in p.cmdline())
        ]
        kernel.send_signal(signal.SIGKILL)
        kernel.wait(30)
    finally:
        if kernel.poll() is None:
            kernel.kill()
    assert all(wait_gone(pid, 120) for pid in runners)
    kept = {p.stem for p in _finished_rows(cache)}
    assert 2 <= len(kept) < len(GRID["batch"]), "the sweep was not killed mid-way"
    assert all(SweepCache(cache).get(key) is not None for key in kept)

    result = sweep(model, GRID, cache_dir=cache, workers=1, progress=False)
    frame = result.frame
    assert (frame["status"] == "ok").all(), frame["error"].tolist()
    assert result.from_cache == len(kept) and result.ran == len(GRID["batch"]) - len(kept)
    assert set(frame.loc[frame["cached"], "key"]) == kept
    assert list(frame["batch"]) == GRID["batch"]
