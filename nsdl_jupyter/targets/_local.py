"""LocalTarget: run a runner module in a child process of this machine.

The child has its own Python (by default the kernel's interpreter), so a segfault, an abort or an
out-of-memory kill inside onnxruntime ends the child and never the notebook kernel.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

from nsdl_jupyter.targets._base import EventListener, JobResult, MessageCollector

_TERMINATE_GRACE_S = 2.0


class LocalJob:
    """A runner child process; reader threads turn its output into events."""

    def __init__(
        self,
        argv: list[str],
        cwd: str,
        env: Mapping[str, str] | None,
        listener: EventListener | None = None,
    ) -> None:
        self._collector = MessageCollector()
        if listener is not None:  # before the readers start, so no early event is missed
            self._collector.listeners.append(listener)
        self._cancelled = False
        self._lock = threading.Lock()
        self._process = subprocess.Popen(
            argv,
            cwd=cwd,
            env=dict(env) if env is not None else None,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
            errors="replace",
            bufsize=1,
            # Its own process group: cancel ends the runner and anything it started, and a
            # Ctrl-C meant for the kernel does not reach the child.
            start_new_session=True,
        )
        assert self._process.stdout is not None
        assert self._process.stderr is not None
        self._readers = [
            threading.Thread(
                target=self._pump,
                args=(self._process.stdout, self._collector.stdout_line),
                daemon=True,
                name="nsdl-runner-stdout",
            ),
            threading.Thread(
                target=self._pump,
                args=(self._process.stderr, self._collector.stderr_line),
                daemon=True,
                name="nsdl-runner-stderr",
            ),
        ]
        for reader in self._readers:
            reader.start()

    @staticmethod
    def _pump(stream: IO[str], sink: Any) -> None:
        with stream:
            for line in stream:
                sink(line.rstrip("\n"))

    @property
    def pid(self) -> int:
        return self._process.pid

    def add_listener(self, listener: EventListener) -> None:
        self._collector.listeners.append(listener)

    @property
    def done(self) -> bool:
        return self._process.poll() is not None

    def cancel(self) -> None:
        """End the child (SIGTERM, then SIGKILL after a short grace)."""
        with self._lock:
            if self.done:
                return
            self._cancelled = True
            self._signal_group(signal.SIGTERM)
        try:
            self._process.wait(_TERMINATE_GRACE_S)
        except subprocess.TimeoutExpired:
            self._signal_group(signal.SIGKILL)
            self._process.wait()

    def _signal_group(self, sig: signal.Signals) -> None:
        if os.name == "posix":
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self._process.pid, sig)
        elif sig == signal.SIGTERM:
            self._process.terminate()
        else:
            self._process.kill()

    def wait(self, timeout: float | None = None) -> JobResult:
        """Wait for the end; raises TimeoutError when `timeout` passes first."""
        try:
            returncode = self._process.wait(timeout)
        except subprocess.TimeoutExpired as exc:
            raise TimeoutError(f"runner still running after {timeout} s") from exc
        for reader in self._readers:
            reader.join(5.0)
        c = self._collector
        return JobResult(
            returncode=returncode,
            result=c.result,
            error=c.error,
            stderr=c.stderr,
            cancelled=self._cancelled,
            last_progress=c.last_progress,
        )


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

    def put(self, local_path: Path, workdir: str) -> str:
        # Same machine: the runner reads the file where it is.
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

    def remove_workdir(self, workdir: str) -> None:
        shutil.rmtree(workdir, ignore_errors=True)

    def start(
        self,
        runner: Path,
        request: Mapping[str, Any],
        workdir: str,
        listener: EventListener | None = None,
    ) -> LocalJob:
        request_path = Path(workdir) / "request.json"
        request_path.write_text(json.dumps(dict(request)), encoding="utf-8")
        argv = [self.python, "-u", str(runner), str(request_path)]
        return LocalJob(argv, workdir, self.env, listener)
