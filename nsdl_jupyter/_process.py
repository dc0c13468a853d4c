"""Children that run in their own session: start them, read their lines, end them and
everything they started.

Children are started with `start_new_session=True`, so the child's pid is also its process
group id; a background grandchild (`sleep 1000 &`) stays in that group after the child exits
and is ended with it. Such a grandchild also inherits the child's stdout and stderr, so the
pipes are read only until the child has exited and `pipe_grace` has passed, never until they
close: the caller (a notebook kernel) never waits on a process it did not start.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from typing import IO, Literal

POLL_S = 0.05
_READ_BYTES = 65536
CUT_MARK = " [nsdl: {} more {} of this line were cut]"  # count, unit

Stream = Literal["stdout", "stderr"]
LineSink = Callable[[Stream, str], None]


def start_session(
    argv: Sequence[str],
    *,
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
) -> subprocess.Popen[bytes]:
    """Start `argv` (no shell) in a new session, stdin closed, stdout and stderr piped.

    Its own session and process group: `end_session` reaches its children, and a Ctrl-C
    meant for the kernel does not reach it.
    """
    return subprocess.Popen(
        list(argv),
        cwd=cwd,
        env=dict(env) if env is not None else None,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )


def signal_group(pgid: int, sig: signal.Signals) -> None:
    """Send `sig` to every process of the group; a group already gone is fine."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def group_alive(pgid: int) -> bool:
    """True while a process of the group runs (zombies waiting to be reaped do not count)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        pids = [name for name in os.listdir("/proc") if name.isdigit()]
    except OSError:  # no /proc: signal 0 reached someone, assume they run
        return True
    for pid in pids:
        # a process may end meanwhile: its stat then fails with ENOENT or ESRCH (Path.glob
        # let ESRCH through: ProcessLookupError from a cancel, in a CI run)
        with contextlib.suppress(OSError, ValueError, IndexError):
            with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as stat:
                text = stat.read()
            # the command name (2nd field) may hold spaces and parentheses: split after it
            fields = text.rsplit(")", 1)[1].split()
            if int(fields[2]) == pgid and fields[0] not in ("Z", "X"):
                return True
    return False


def end_session(process: subprocess.Popen[bytes], grace: float) -> None:
    """SIGTERM to the child's process group, SIGKILL to what is left after `grace` seconds.

    Works after the child itself has exited, while children it left behind still run.
    """
    pgid = process.pid
    signal_group(pgid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        process.poll()  # reap the child: an unreaped child keeps its group alive
        if not group_alive(pgid):
            return
        time.sleep(POLL_S)
    signal_group(pgid, signal.SIGKILL)


class LineSplitter:
    """Bytes from a pipe -> lines, in time linear in the bytes (no rejoining of a partial line).

    With `max_line_bytes` memory stays bounded: a longer line comes in pieces of that size, or,
    with `truncate=True`, as its first `max_line_bytes` bytes followed by CUT_MARK (how many
    bytes were dropped), the rest of it discarded as it arrives.
    """

    def __init__(self, max_line_bytes: int | None = None, *, truncate: bool = False) -> None:
        self._parts: list[bytes] = []
        self._size = 0
        self._cut = 0
        self._max = max_line_bytes
        self._truncate = truncate

    def feed(self, chunk: bytes) -> list[bytes]:
        lines: list[bytes] = []
        start = 0
        while (end := chunk.find(b"\n", start)) >= 0:
            self._add(chunk[start:end], lines)
            lines.append(self._take())
            start = end + 1
        self._add(chunk[start:], lines)
        return lines

    def finish(self) -> list[bytes]:
        return [self._take()] if self._size or self._cut else []

    def _add(self, piece: bytes, lines: list[bytes]) -> None:
        while piece:
            room = len(piece) if self._max is None else self._max - self._size
            if room > 0:
                self._parts.append(piece[:room])
                self._size += min(room, len(piece))
                piece = piece[room:]
            elif self._truncate:
                self._cut += len(piece)
                return
            else:  # a full piece, and more of the line comes
                lines.append(self._take())

    def _take(self) -> bytes:
        line = b"".join(self._parts)
        if self._cut:
            line += CUT_MARK.format(self._cut, "bytes").encode()
        self._parts, self._size, self._cut = [], 0, 0
        return line


def read_lines(
    process: subprocess.Popen[bytes],
    sink: LineSink,
    *,
    pipe_grace: float,
    max_line_bytes: int | None = None,
    truncate: bool = False,
) -> None:
    """Give each line of the child's stdout and stderr to `sink` (UTF-8, invalid bytes
    replaced, no line end) until both pipes close, or until the child has exited and
    `pipe_grace` seconds have passed (a background child may hold them open for ever).
    `max_line_bytes` and `truncate` bound each line as LineSplitter does."""
    pipes: tuple[tuple[Stream, IO[bytes] | None], ...] = (
        ("stdout", process.stdout),
        ("stderr", process.stderr),
    )

    def emit(stream: Stream, raw: bytes) -> None:
        sink(stream, raw.decode("utf-8", errors="replace").removesuffix("\r"))

    exited_at: float | None = None
    with selectors.DefaultSelector() as selector:
        for stream, pipe in pipes:
            assert pipe is not None, "start the child with start_session: both pipes are read"
            os.set_blocking(pipe.fileno(), False)
            splitter = LineSplitter(max_line_bytes, truncate=truncate)
            selector.register(pipe, selectors.EVENT_READ, (stream, splitter))
        while selector.get_map():
            for key, _events in selector.select(POLL_S):
                stream, splitter = key.data
                try:
                    chunk = os.read(key.fd, _READ_BYTES)
                except BlockingIOError:
                    continue
                if not chunk:
                    selector.unregister(key.fileobj)
                for raw in splitter.feed(chunk) if chunk else splitter.finish():
                    emit(stream, raw)
            if process.poll() is not None:
                exited_at = time.monotonic() if exited_at is None else exited_at
                if time.monotonic() - exited_at >= pipe_grace:
                    break
        for key in list(selector.get_map().values()):
            stream, splitter = key.data
            for raw in splitter.finish():
                emit(stream, raw)
    for _stream, pipe in pipes:
        assert pipe is not None
        pipe.close()


def run_to_end(
    process: subprocess.Popen[bytes],
    sink: LineSink,
    *,
    pipe_grace: float,
    terminate_grace: float,
    max_line_bytes: int | None = None,
    truncate: bool = False,
) -> int:
    """Read the child's lines (`read_lines`), reap it, then end whatever it left running in
    its session; returns its exit code. Call from a thread of its own."""
    try:
        read_lines(
            process,
            sink,
            pipe_grace=pipe_grace,
            max_line_bytes=max_line_bytes,
            truncate=truncate,
        )
        return process.wait()
    finally:
        end_session(process, terminate_grace)  # what the child left running (or itself)
