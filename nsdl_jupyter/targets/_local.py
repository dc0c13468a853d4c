"""LocalTarget: run a runner module in a child process of this machine.

The child has its own Python (by default the kernel's interpreter), so a segfault, an abort or an
out-of-memory kill inside onnxruntime ends the child and never the notebook kernel.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from nsdl_jupyter._process import Stream, end_session, run_to_end, start_session
from nsdl_jupyter.targets._base import (
    CollectingJob,
    EventListener,
    JobResult,
    MessageCollector,
)
from nsdl_jupyter.targets._wire import MAX_MESSAGE_BYTES

TERMINATE_GRACE_S = 2.0  # cancel: SIGTERM to the runner's session, SIGKILL after this
PIPE_GRACE_S = 0.5  # after the runner exits, how long pipes a background child holds are read


class LocalJob(CollectingJob):
    """A runner child process in its own session; a reader thread turns its output into events.

    The job is done when the runner has exited and its output is read: pipes a background
    child inherited are read for PIPE_GRACE_S more, then whatever the runner left in its
    session is ended. `cancel()` ends the whole session, also once only such a child runs.
    """

    def __init__(
        self,
        argv: list[str],
        cwd: str,
        env: Mapping[str, str] | None,
        listener: EventListener | None = None,
    ) -> None:
        self._collector = MessageCollector()
        if listener is not None:  # before the reader starts, so no early event is missed
            self._collector.listeners.append(listener)
        self._cancelled = False
        self._finished = threading.Event()
        self._process = start_session(argv, cwd=cwd, env=env)
        self._reader = threading.Thread(target=self._run, daemon=True, name="nsdl-runner")
        self._reader.start()

    def _run(self) -> None:
        try:
            run_to_end(
                self._process,
                self._line,
                pipe_grace=PIPE_GRACE_S,
                terminate_grace=TERMINATE_GRACE_S,
                max_line_bytes=MAX_MESSAGE_BYTES,
                truncate=True,
            )
        finally:
            self._finished.set()

    def _line(self, stream: Stream, line: str) -> None:
        try:
            if stream == "stdout":
                self._collector.stdout_line(line)
            else:
                self._collector.stderr_line(line)
        except Exception as error:  # a broken listener must not stop reading the runner
            self._collector.stderr_line(f"event listener failed: {error!r}")

    @property
    def pid(self) -> int:
        return self._process.pid

    def cancel(self) -> None:
        """End the runner and everything it started (SIGTERM to its session, SIGKILL after
        TERMINATE_GRACE_S), also when only a background child of it still runs."""
        if self.done:
            return
        self._cancelled = True
        end_session(self._process, TERMINATE_GRACE_S)

    def wait(self, timeout: float | None = None) -> JobResult:
        """Wait for the end; raises TimeoutError when `timeout` passes first."""
        if not self._finished.wait(timeout):
            raise TimeoutError(f"runner still running after {timeout} s")
        return self._collector.job_result(self._process.returncode, cancelled=self._cancelled)


class LocalTarget:
    """This machine. `python` is the interpreter that runs the runner (default: the kernel's)."""

    def __init__(
        self, python: str | os.PathLike[str] | None = None, env: Mapping[str, str] | None = None
    ) -> None:
        self.python = str(python) if python is not None else sys.executable
        self.env = env
        self.name = "local"

    def __repr__(self) -> str:
        return f"LocalTarget(python={self.python!r})"

    def make_workdir(self) -> str:
        return tempfile.mkdtemp(prefix="nsdl-job-")

    def put(
        self, local_path: Path, workdir: str, *, companions: Mapping[str, Path] | None = None
    ) -> str:
        # Same machine: the runner reads the file where it is, its companions beside it.
        return str(Path(local_path).resolve())

    def get(self, target_path: str, local_path: Path) -> None:
        local_path = Path(local_path)
        local_path.parent.mkdir(parents=True, exist_ok=True)
        try:  # same filesystem: a rename, no copy of a trace that can be hundreds of MB
            os.replace(target_path, local_path)
            return
        except OSError:
            pass
        partial = local_path.with_name(f".{local_path.name}.partial")
        shutil.copyfile(target_path, partial)
        os.replace(partial, local_path)

    def get_many(self, files: Mapping[str, Path]) -> None:
        for target_path, local_path in files.items():
            self.get(target_path, local_path)

    def remove_workdir(self, workdir: str) -> None:
        shutil.rmtree(workdir, ignore_errors=True)

    def start(
        self,
        runner: Path,
        request: Mapping[str, Any],
        workdir: str,
        listener: EventListener | None = None,
        *,
        support_files: Sequence[Path] = (),
    ) -> LocalJob:
        # `support_files` are already beside the runner on this machine.
        request_path = Path(workdir) / "request.json"
        request_path.write_text(json.dumps(dict(request)), encoding="utf-8")
        argv = [self.python, "-u", str(runner), str(request_path)]
        return LocalJob(argv, workdir, self.env, listener)
