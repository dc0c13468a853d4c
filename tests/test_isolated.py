"""run_isolated and IsolatedWorker: a crash, a hang or a runaway allocation in the child
spares this process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from nsdl_jupyter._isolated import (
    ChildRaisedError,
    IsolatedRunError,
    IsolatedWorker,
    run_isolated,
)


def _add(a: int, b: int) -> int:
    return a + b


def _segfault() -> None:
    os.kill(os.getpid(), signal.SIGSEGV)


def _raise() -> None:
    raise KeyError("missing thing")


def _allocate(nbytes: int) -> int:
    return int(np.ones(nbytes, dtype=np.uint8).sum())


def _sleep(seconds: float) -> None:
    time.sleep(seconds)


def test_returns_the_value() -> None:
    assert run_isolated(_add, 2, 3) == 5


def test_a_crash_is_an_error_not_a_dead_kernel() -> None:
    with pytest.raises(IsolatedRunError, match="SIGSEGV") as caught:
        run_isolated(_segfault)
    assert caught.value.crashed and not caught.value.timed_out


def test_an_exception_comes_back_with_its_type() -> None:
    with pytest.raises(ChildRaisedError, match="KeyError: 'missing thing'") as caught:
        run_isolated(_raise)
    assert caught.value.kind == "KeyError"
    assert "_raise" in caught.value.child_traceback


def test_memory_cap_stops_a_runaway_allocation() -> None:
    with pytest.raises(ChildRaisedError, match="MemoryError"):
        run_isolated(_allocate, 4 * 2**30, memory_limit=1 * 2**30)


def test_timeout_kills_the_child() -> None:
    start = time.perf_counter()
    with pytest.raises(IsolatedRunError, match="limit") as caught:
        run_isolated(_sleep, 60, timeout=3)
    assert caught.value.timed_out
    assert time.perf_counter() - start < 15


def test_worker_runs_many_calls_in_one_child() -> None:
    with IsolatedWorker() as worker:
        assert [worker.call(_add, i, 1) for i in range(5)] == [1, 2, 3, 4, 5]
        assert worker.call(os.getpid) == worker.call(os.getpid) != os.getpid()
        assert worker.starts == 1


def test_worker_survives_a_raise_and_restarts_after_a_crash() -> None:
    with IsolatedWorker(memory_limit=1 * 2**30) as worker:
        first = worker.call(os.getpid)
        with pytest.raises(ChildRaisedError, match="MemoryError"):
            worker.call(_allocate, 4 * 2**30)
        assert worker.call(os.getpid) == first  # an exception does not end the child
        with pytest.raises(IsolatedRunError, match="SIGSEGV"):
            worker.call(_segfault)
        assert worker.call(_add, 1, 1) == 2  # a fresh child
        assert worker.call(os.getpid) != first
        assert worker.starts == 2


def _reserve(nbytes: int) -> int:
    return np.empty(nbytes, dtype=np.uint8).nbytes  # address space, no page touched


def test_worker_raises_its_cap_without_a_new_child() -> None:
    with IsolatedWorker(memory_limit=1 * 2**30) as worker:
        with pytest.raises(ChildRaisedError, match="MemoryError"):
            worker.call(_reserve, 2**30)
        pid = worker.call(os.getpid)
        worker.raise_memory_limit(4 * 2**30)
        worker.raise_memory_limit(2 * 2**30)  # lower: ignored
        assert worker.memory_limit == 4 * 2**30
        assert worker.call(_reserve, 2**30) == 2**30
        assert worker.call(os.getpid) == pid and worker.starts == 1


def test_worker_close_ends_the_child() -> None:
    worker = IsolatedWorker()
    pid = worker.call(os.getpid)
    worker.close()
    time.sleep(0.2)
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_a_script_without_a_main_guard_is_not_run_again_in_the_child(tmp_path: Path) -> None:
    """spawn would import the parent's script again in the child; ours hides it."""
    script = tmp_path / "no_guard.py"
    script.write_text(
        "import operator\n"
        "from nsdl_jupyter._isolated import run_isolated\n"
        "print('script body ran')\n"
        "print('result', run_isolated(operator.add, 2, 3))\n"
    )
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["script body ran", "result 5"]
