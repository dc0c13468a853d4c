"""What every activity job shares: progress and its listeners, a local stage folder for the
files made in the kernel, and a work folder on the target; both are removed at the end."""

from __future__ import annotations

import contextlib
import math
import shutil
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

from nsdl_jupyter.profiling._errors import (
    ProfileCancelledError,
    ProfileError,
    ProfileSettingsError,
)
from nsdl_jupyter.profiling._runners import RUNNER, reading_answer, start_runner
from nsdl_jupyter.targets import JobResult, RunnerJob, Target

_Answer_co = TypeVar("_Answer_co", covariant=True)
_Answer = TypeVar("_Answer")


@dataclass(frozen=True)
class Progress:
    """Where a job is: phase ('starting', 'warm-up', 'latency', 'profile', 'parsing', 'done';
    a TensorRT build names TensorRT's own phases), steps done of the phase, and the fraction of
    the whole job."""

    phase: str
    done: int
    total: int
    fraction: float


ProgressListener = Callable[[Progress], None]


class StagedJob(Generic[_Answer]):
    """The shared part of ProfileJob, TrtProfileJob and EngineJob. Subclasses set
    `self._workdir` from `target.make_workdir()`, call `_cleanup()` when the job fails to start,
    and make their answer from the runner's result in `_answer_from` (`_wait_once` calls it)."""

    def __init__(self, target: Target) -> None:
        self._lock = threading.Lock()
        self._answer: _Answer | None = None
        self._error: BaseException | None = None
        self._result: JobResult | None = None
        self._ended = threading.Event()  # the answer or the error is in
        self.target = target
        self.progress = Progress("starting", 0, 1, 0.0)
        self._listeners: list[ProgressListener] = []
        # Files made here (a serialized document, the inputs) are staged locally, then `put`
        # on the target (a no-op for LocalTarget, an upload for a remote one).
        self._stage = Path(tempfile.mkdtemp(prefix="nsdl-stage-"))
        self._workdir = ""
        self._job: RunnerJob  # set by the subclass from `_start`
        self._locked_device: int | None = None  # the runner said it locked this GPU's clocks

    def _start(
        self, runner: Path, request: dict[str, Any], debug_crash_at: str | None
    ) -> RunnerJob:
        """Start `runner` on the target with `request`; its messages go to `_on_event`."""
        if debug_crash_at is not None:
            request["debug_crash_at"] = debug_crash_at  # test hook: really crash there
        return start_runner(self.target, runner, request, self._workdir, self._on_event)

    def _on_event(self, message: dict[str, Any]) -> None:
        raise NotImplementedError

    def _answer_from(self, result: JobResult) -> _Answer:
        raise NotImplementedError

    def cancel(self) -> None:
        """End the child process; `wait()` then raises ProfileCancelledError."""
        self._job.cancel()

    def _wait_once(self, timeout: float | None, doing: str) -> _Answer:
        """The answer, made once from the runner's result by `_answer_from` (a malformed
        answer is RunnerProtocolError about `doing`); later calls give the same answer or raise
        the same error. TimeoutError when `timeout` passes first (still running, nothing kept).
        The work folders are removed once the answer or the error is in."""
        with self._lock:
            if self._answer is not None:
                return self._answer
            if self._error is not None:
                raise self._error
            self._result = self._job.wait(timeout)
            try:
                with reading_answer(self._result, doing):
                    self._answer = self._answer_from(self._result)
                return self._answer
            except BaseException as exc:
                self._error = exc
                raise
            finally:
                self._cleanup()
                self._ended.set()

    def _note_clocks(self, message: dict[str, Any]) -> bool:
        """True for the runner's "clocks_locked" message (noted for `_restore_clocks_if_left`)."""
        if message.get("event") != "clocks_locked":
            return False
        self._locked_device = int(message.get("device", 0))
        return True

    def _restore_clocks_if_left(self, answer: dict[str, Any] | None) -> None:
        """The runner locked the GPU's clocks and died (or was cancelled) before resetting
        them: a second runner resets them, so a crash never leaves a GPU slowed down."""
        gpu = (answer or {}).get("gpu")
        clocks = gpu.get("clocks") if isinstance(gpu, dict) else None  # a malformed answer
        restored = clocks.get("restored") if isinstance(clocks, dict) else None
        if self._locked_device is None or restored:
            return
        request = {"kind": "restore_clocks", "protocol": 1, "device": self._locked_device}
        with contextlib.suppress(Exception):  # best effort: the run's own error matters more
            start_runner(self.target, RUNNER, request, self._workdir).wait(60)

    def _cleanup(self) -> None:
        if self._workdir:
            self.target.remove_workdir(self._workdir)
        shutil.rmtree(self._stage, ignore_errors=True)

    def add_listener(self, listener: ProgressListener) -> None:
        """Call `listener(Progress)` on every progress step (from a reader thread)."""
        self._listeners.append(listener)

    def add_log_listener(self, listener: Callable[[str], None]) -> None:
        """Call `listener(line)` for each line of the runner's log (stderr), on this machine
        or streamed from a remote target: the lines so far first, then each as it comes."""
        self._job.add_log_listener(listener)

    def _set_progress(self, progress: Progress) -> None:
        self.progress = progress
        for listener in list(self._listeners):
            # A broken progress display must not break the run.
            with contextlib.suppress(Exception):
                listener(progress)


class _Waitable(Protocol[_Answer_co]):
    def wait(self, timeout: float | None = None) -> _Answer_co: ...

    def cancel(self) -> None: ...


def check_timeout(timeout: float | None, *, optional: bool = True) -> None:
    """Refuse, before any job starts, a timeout that is no number of seconds above 0 (None,
    where `optional`: no limit)."""
    if timeout is None and optional:
        return
    if (
        isinstance(timeout, bool)
        or not isinstance(timeout, (int, float))
        or not 0 < timeout < math.inf
    ):
        allowed = "a number of seconds above 0" + (" or None" if optional else "")
        raise ProfileSettingsError(f"timeout must be {allowed}, not {timeout!r}")


def wait_or_cancel(
    job: _Waitable[_Answer_co], timeout: float | None, what: str, error: type[ProfileError]
) -> _Answer_co:
    """`job.wait(timeout)`; a kernel interrupt or the timeout cancels the job (its child
    process ends) and raises ProfileCancelledError or `error`."""
    try:
        return job.wait(timeout)
    except KeyboardInterrupt:
        job.cancel()
        raise ProfileCancelledError(f"interrupted: the {what}'s child process was ended") from None
    except TimeoutError:
        job.cancel()
        raise error(f"the {what} did not finish within {timeout} s and was cancelled") from None
