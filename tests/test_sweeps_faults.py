"""A sweep under faults, on real Dask clusters: the embedded LocalCluster is real Dask, kept
for the session and reused; a killed worker's task runs again (and its row says so); cancel ends
every running profile and leaves no process behind."""

from __future__ import annotations

import logging
import os
import signal
import time
from pathlib import Path

import onnx
import psutil
import pytest
from _processes import wait_gone
from _sweep_models import RUNNER_MARK, tiny_export

from nsdl_jupyter.sweeps import close_sweep_cluster, start_sweep, sweep_cluster

distributed = pytest.importorskip("distributed")
dask = pytest.importorskip("dask")

pytestmark = pytest.mark.slow  # each starts a Dask cluster and several onnxruntime runs


@pytest.fixture
def model_path(tmp_path: Path) -> Path:
    path = tmp_path / "bert.onnx"
    onnx.save(tiny_export(), path)
    return path


def _runners_below(pid: int) -> list[int]:
    """onnxruntime runner processes started (at any depth) by `pid`."""
    found = []
    for child in psutil.Process(pid).children(recursive=True):
        try:
            if any(RUNNER_MARK in part for part in child.cmdline()):
                found.append(child.pid)
        except psutil.Error:
            continue
    return found


def _until(condition: object, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return True
        time.sleep(0.05)
    return False


def test_the_default_sweep_runs_on_an_embedded_dask_cluster_kept_for_the_session(
    tmp_path: Path, model_path: Path
) -> None:
    close_sweep_cluster()
    assert sweep_cluster() is None
    job = start_sweep(model_path, {"batch": [1, 2], "iterations": [2]}, cache_dir=tmp_path,
                      workers=2, progress=False)  # fmt: skip
    client = job.client
    assert isinstance(client, distributed.Client)
    assert isinstance(client.cluster, distributed.LocalCluster)
    # in-process workers: the profiles run in their own child processes anyway
    assert set(client.run(os.getpid).values()) == {os.getpid()}
    assert len(client.nthreads()) == 2
    result = job.wait(300)
    assert (result.frame["status"] == "ok").all() and result.ran == 2
    assert job.client is None and sweep_cluster() is client  # kept, still running
    again = start_sweep(model_path, {"batch": [3], "iterations": [2]}, cache_dir=tmp_path,
                        workers=2, progress=False)  # fmt: skip
    assert again.client is client  # the second sweep reuses it: no start, no close
    assert again.wait(300).ran == 1
    close_sweep_cluster()
    assert sweep_cluster() is None and client.status == "closed"
    assert not _runners_below(os.getpid())


def test_a_killed_worker_s_task_runs_again_and_its_row_counts_the_attempts(
    tmp_path: Path, model_path: Path
) -> None:
    with dask.config.set({"distributed.scheduler.allowed-failures": 2}):
        cluster = distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, dashboard_address=":0",
            silence_logs=logging.CRITICAL,
        )  # fmt: skip
    try:
        with distributed.Client(cluster) as client:
            pids = client.run(os.getpid)
            job = start_sweep(model_path, {"batch": [1, 2], "iterations": [200]}, client=client,
                              cache_dir=tmp_path, progress=False)  # fmt: skip
            # the first worker seen running one of the sweep's profiles dies (SIGKILL)
            victim: list[str] = []

            def running() -> bool:
                for worker, keys in client.processing().items():
                    if any(str(k).startswith("nsdl-sweep") for k in keys) and _runners_below(
                        pids[worker]
                    ):
                        victim.append(worker)
                        return True
                return False

            assert _until(running, 120), "no profile started"
            os.kill(pids[victim[0]], signal.SIGKILL)
            result = job.wait(300)
    finally:
        cluster.close()
    frame = result.frame
    assert list(frame["status"]) == ["ok", "ok"], frame["error"].tolist()
    assert frame["attempts"].max() >= 2  # the killed one ran again
    assert frame["attempts"].min() == 1


def test_cancel_ends_the_running_profiles_and_leaves_no_process_behind(
    tmp_path: Path, model_path: Path
) -> None:
    grid = {"batch": [1, 2, 3, 4], "iterations": [100_000]}  # minutes each: only cancel ends them
    job = start_sweep(model_path, grid, cache_dir=tmp_path, workers=2, progress=False)
    me = os.getpid()
    assert _until(lambda: len(_runners_below(me)) >= 2, 120), "the profiles did not start"
    runners = _runners_below(me)
    started = time.monotonic()
    job.cancel()
    result = job.wait(120)
    assert time.monotonic() - started < 60
    assert all(wait_gone(pid, 10) for pid in runners), "a runner process was left running"
    assert not _runners_below(me)
    assert set(result.frame["status"]) == {"cancelled"}
    assert not list((tmp_path / "runs").glob("*.json"))  # nothing cached for cancelled runs
