"""LocalTarget jobs with real processes (issue 9, runaway work): a runner that leaves a
background child holding its pipes still finishes at once and the child is ended; cancel ends
the runner's whole session, SIGKILL for what ignores SIGTERM; a broken listener or a child
that left the session never makes the kernel wait."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from nsdl_jupyter.targets import LocalJob, LocalTarget
from nsdl_jupyter.targets._base import EventListener
from nsdl_jupyter.targets._local import TERMINATE_GRACE_S
from tests._processes import alive, wait_gone

# A runner like profiling/_ort_runner.py: reads the request, speaks `@@nsdl {json}` lines.
RUNNER = r"""
import json, signal, subprocess, sys, time

def emit(event, **fields):
    print("@@nsdl " + json.dumps({"event": event, **fields}), flush=True)

with open(sys.argv[1], encoding="utf-8") as f:
    request = json.load(f)
mode = request["mode"]
if mode == "background":  # `sleep 1000 &`: the sleeper inherits stdout and stderr
    sleeper = subprocess.Popen(["sleep", "1000"])
    print("the sleeper holds this pipe", file=sys.stderr, flush=True)
    emit("result", sleeper=sleeper.pid)
elif mode == "escape":  # a child in a session of its own, still holding the pipes
    escaped = subprocess.Popen(["sleep", "1000"], start_new_session=True)
    emit("result", escaped=escaped.pid)
elif mode == "long":  # a child that ignores SIGTERM, then work that never ends
    ignore = lambda: signal.signal(signal.SIGTERM, signal.SIG_IGN)  # noqa: E731
    stubborn = subprocess.Popen(["sleep", "1000"], preexec_fn=ignore)
    emit("progress", phase="latency", done=0, total=1, stubborn=stubborn.pid)
    time.sleep(1000)
elif mode == "noisy":  # more events than a pipe buffer holds
    for i in range(5000):
        emit("progress", phase="latency", done=i, total=5000)
    emit("result", events=5000)
"""


Start = Callable[..., LocalJob]


@pytest.fixture
def start(tmp_path: Path) -> Iterator[Start]:
    """`start(mode, listener=None)`: a job of RUNNER through the real LocalTarget; its workdir
    is removed and a job still running is cancelled after the test."""
    runner = tmp_path / "runner.py"
    runner.write_text(RUNNER, encoding="utf-8")
    target = LocalTarget()
    started: list[tuple[LocalJob, str]] = []

    def start_job(mode: str, listener: EventListener | None = None) -> LocalJob:
        workdir = target.make_workdir()
        job = target.start(runner, {"mode": mode}, workdir, listener)
        started.append((job, workdir))
        return job

    yield start_job
    for job, workdir in started:
        job.cancel()
        target.remove_workdir(workdir)


def test_a_background_child_holding_the_pipes_does_not_keep_the_job_going(
    start: Start,
) -> None:
    begin = time.monotonic()
    result = start("background").wait(20)
    took = time.monotonic() - begin
    assert result.returncode == 0 and not result.cancelled and result.result is not None
    assert took < 5, f"the job waited {took:.1f} s on pipes its background child holds"
    assert "the sleeper holds this pipe" in result.stderr
    assert wait_gone(int(result.result["sleeper"]), 3), "the background child outlived the job"


def test_cancel_ends_the_runner_and_its_children_also_those_ignoring_sigterm(
    start: Start,
) -> None:
    reports: list[dict[str, Any]] = []
    ready = threading.Event()

    def listener(message: dict[str, Any]) -> None:
        reports.append(message)
        ready.set()

    job = start("long", listener)
    assert ready.wait(30), "the runner never reported"
    stubborn = int(reports[0]["stubborn"])
    assert alive(job.pid) and alive(stubborn)
    with pytest.raises(TimeoutError):
        job.wait(0.2)  # still running: the caller gets control back
    begin = time.monotonic()
    job.cancel()
    result = job.wait(10)
    took = time.monotonic() - begin
    assert result.cancelled and job.done and result.returncode == -signal.SIGTERM
    assert took < TERMINATE_GRACE_S + 3, f"cancel took {took:.1f} s"
    assert wait_gone(job.pid, 1), "the runner survived the cancel"
    assert wait_gone(stubborn, 1), "the child that ignores SIGTERM survived the cancel"


def test_cancel_after_the_end_changes_nothing(start: Start) -> None:
    job = start("background")
    result = job.wait(20)
    job.cancel()
    assert job.wait(0) == result and not result.cancelled


def test_a_child_that_left_the_session_cannot_make_the_kernel_wait(start: Start) -> None:
    """Out of the session it is out of reach of cancel, but its pipes are let go."""
    begin = time.monotonic()
    result = start("escape").wait(20)
    took = time.monotonic() - begin
    assert result.result is not None
    escaped = int(result.result["escaped"])
    os.kill(escaped, signal.SIGKILL)
    assert wait_gone(escaped, 5)
    assert result.returncode == 0
    assert took < 5, f"the job waited {took:.1f} s on pipes a child out of reach holds"


def test_a_failing_listener_neither_stops_reading_nor_hangs_the_job(start: Start) -> None:
    calls = 0

    def broken(_message: dict[str, Any]) -> None:
        nonlocal calls
        calls += 1
        raise ValueError("display gone")

    result = start("noisy", broken).wait(30)
    assert result.returncode == 0 and result.result == {"event": "result", "events": 5000}
    assert calls == 5001
    assert "event listener failed: ValueError('display gone')" in result.stderr
