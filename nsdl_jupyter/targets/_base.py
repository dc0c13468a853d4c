"""The transport seam: how an activity runs a runner module somewhere and gets JSON back.

A runner is one self-contained Python file that reads a JSON request and writes `@@nsdl {json}`
lines on stdout (progress, then one result or error; `_wire` says how, and what is capped). A
target stages files, starts the runner, streams its messages, cancels it and brings result
files back. `LocalTarget` does that with a child process; `SshTarget` does the same over an
SSH connection, with the same runner files.
"""

from __future__ import annotations

import contextlib
import json
import signal
import threading
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from nsdl_jupyter.targets._wire import (
    MALFORMED,
    MAX_LOG_CHARS,
    MAX_LOG_LINES,
    RUNNER_PREFIX,
    cut_log_line,
)

EventListener = Callable[[dict[str, Any]], None]
LogListener = Callable[[str], None]  # one line of the runner's log (stderr, stray stdout)

_SIGNAL_MEANING = {
    "SIGSEGV": "segmentation fault",
    "SIGABRT": "abort",
    "SIGBUS": "bus error",
    "SIGFPE": "floating point exception",
    "SIGILL": "illegal instruction",
    "SIGKILL": "killed: out of memory, or ended from outside",
}


@dataclass(frozen=True)
class JobResult:
    """How a runner process ended, and what it said."""

    returncode: int | None
    result: dict[str, Any] | None
    error: dict[str, Any] | None
    stderr: str
    cancelled: bool = False
    last_progress: dict[str, Any] | None = None
    lost: str | None = None  # a remote target's connection dropped: what happened
    target: str = "local"  # the name of the target it ran on

    @property
    def signal_name(self) -> str | None:
        """The signal that ended the process (POSIX negative return codes), if any."""
        if self.returncode is None or self.returncode >= 0:
            return None
        try:
            return signal.Signals(-self.returncode).name
        except ValueError:
            return f"signal {-self.returncode}"

    @property
    def crash_description(self) -> str:
        """'SIGSEGV (segmentation fault)' or 'exit code 3'."""
        name = self.signal_name
        if name is not None:
            meaning = _SIGNAL_MEANING.get(name)
            return f"{name} ({meaning})" if meaning else name
        return f"exit code {self.returncode}"


@dataclass
class MessageCollector:
    """Parses runner stdout lines into events; keeps the stderr tail (at most MAX_LOG_LINES
    lines, MAX_LOG_CHARS characters) and streams its lines to log listeners. Shared by all
    targets; `source` (the target's name) names where a malformed message came from."""

    source: str = "local"
    listeners: list[EventListener] = field(default_factory=list)
    log_listeners: list[LogListener] = field(default_factory=list)
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    last_progress: dict[str, Any] | None = None
    malformed: dict[str, Any] | None = None  # the error a malformed message stands for
    _stderr: deque[str] = field(default_factory=lambda: deque(maxlen=MAX_LOG_LINES))
    _stderr_chars: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def stdout_line(self, line: str) -> None:
        if not line.startswith(RUNNER_PREFIX):
            # Something a runner that does not keep stdout for messages printed: keep it with
            # stderr for diagnosis.
            self.stderr_line(line)
            return
        try:
            message = json.loads(line[len(RUNNER_PREFIX) :])
        except (ValueError, RecursionError):
            message = None
        if not isinstance(message, dict) or not isinstance(message.get("event"), str):
            self._malformed(line)
            return
        kind = message["event"]
        if kind == "result":
            self.result = message
        elif kind == "error":
            self.error = message
        elif kind == "progress":
            self.last_progress = message
        for listener in list(self.listeners):
            listener(message)

    def _malformed(self, line: str) -> None:
        """A message line that does not parse (cut at MAX_MESSAGE_BYTES, or not the runner's):
        logged, and the job's error if the runner gives neither a result nor an error."""
        self.stderr_line(line)
        if self.malformed is None:
            self.malformed = {
                "event": "error",
                "type": MALFORMED,
                "message": f"the runner on {self.source} sent a malformed message "
                f"({len(line)} characters, starting {line[:60]!r}): its log may say why; "
                "run again",
            }

    def stderr_line(self, line: str) -> None:
        line = cut_log_line(line.rstrip("\n"))
        with self._lock:
            if len(self._stderr) == self._stderr.maxlen:
                self._stderr_chars -= len(self._stderr[0])
            self._stderr.append(line)
            self._stderr_chars += len(line)
            while self._stderr_chars > MAX_LOG_CHARS and len(self._stderr) > 1:
                self._stderr_chars -= len(self._stderr.popleft())
            listeners = list(self.log_listeners)
        for listener in listeners:
            with contextlib.suppress(Exception):  # a broken log view must not stop the reader
                listener(line)

    def add_log_listener(self, listener: LogListener) -> None:
        """Stream log lines to `listener`: first the lines kept so far, then each new one."""
        with self._lock:
            kept = list(self._stderr)
            self.log_listeners.append(listener)
        for line in kept:
            with contextlib.suppress(Exception):
                listener(line)

    @property
    def stderr(self) -> str:
        with self._lock:
            return "\n".join(self._stderr)

    def job_result(
        self, returncode: int | None, *, cancelled: bool, lost: str | None = None
    ) -> JobResult:
        """The JobResult of a runner that ended with `returncode`, from what it said."""
        return JobResult(
            returncode=returncode,
            result=self.result,
            error=self.error or (None if self.result is not None else self.malformed),
            stderr=self.stderr,
            cancelled=cancelled,
            last_progress=self.last_progress,
            lost=lost,
            target=self.source,
        )


class CollectingJob:
    """What every job does the same way: listeners go to its MessageCollector, and it is done
    once its `_finished` event is set (LocalJob and SshJob differ in how they run)."""

    _collector: MessageCollector
    _finished: threading.Event

    def add_listener(self, listener: EventListener) -> None:
        self._collector.listeners.append(listener)

    def add_log_listener(self, listener: LogListener) -> None:
        """Stream the runner's log lines (those kept so far first)."""
        self._collector.add_log_listener(listener)

    @property
    def done(self) -> bool:
        return self._finished.is_set()


class RunnerJob(Protocol):
    """A started runner: progress events arrive through listeners until it ends."""

    def add_listener(self, listener: EventListener) -> None: ...

    def add_log_listener(self, listener: LogListener) -> None:
        """Stream the runner's log lines (those kept so far first)."""
        ...

    @property
    def done(self) -> bool: ...

    def cancel(self) -> None: ...

    def wait(self, timeout: float | None = None) -> JobResult: ...


class Target(Protocol):
    """Where a runner runs. Paths in requests are paths *on the target* (from `put`)."""

    name: str

    def make_workdir(self) -> str:
        """A fresh, private directory on the target for one job."""
        ...

    def put(
        self, local_path: Path, workdir: str, *, companions: Mapping[str, Path] | None = None
    ) -> str:
        """Make a local file available on the target; returns its target path. `companions`
        (relative name -> local file) are files it refers to by relative path (a model's
        external data); they are placed beside it there."""
        ...

    def get(self, target_path: str, local_path: Path) -> None:
        """Bring a file the runner wrote back to `local_path` (atomically)."""
        ...

    def get_many(self, files: Mapping[str, Path]) -> None:
        """`get` for several files at once (target path -> local path): a remote target brings
        them in as few round trips as it can."""
        ...

    def remove_workdir(self, workdir: str) -> None: ...

    def start(
        self,
        runner: Path,
        request: Mapping[str, Any],
        workdir: str,
        listener: EventListener | None = None,
        *,
        support_files: Sequence[Path] = (),
    ) -> RunnerJob:
        """Run `runner` with `request`; `support_files` are files it loads from its own folder
        (a remote target deploys them beside it)."""
        ...
