"""The runner wire protocol as the host reads it: the control lines and the caps on everything
read from a runner, on this machine or over SSH.

A runner's messages are `@@nsdl {json}` lines on its stdout, which it keeps for them alone: before
any runtime loads, it points file descriptor 1 at stderr and writes its messages to a copy of
the old one, so nothing a runtime, a plugin or a model's text prints can pass for a message.
Over SSH the launcher (`/bin/sh`) writes one line before the runner starts, `@@nsdl-pid
<job token> <pid>`: the process group that `cancel()` may signal, accepted only with the token
that the host made for that job; the exit code comes from SSH's own exit-status message.
"""

from __future__ import annotations

import re

from nsdl_jupyter._process import CUT_MARK

RUNNER_PREFIX = "@@nsdl "
PID_PREFIX = "@@nsdl-pid "

# A message line (a runner's result included): longer ones are cut, so they no longer parse.
MAX_MESSAGE_BYTES = 16 << 20
MALFORMED = "RunnerProtocolError"  # the error type of a message line that does not parse
MAX_LOG_LINE_CHARS = 16 << 10  # one log line (stderr, stray stdout) as kept and shown
MAX_LOG_LINES = 200  # the log tail kept in memory...
MAX_LOG_CHARS = 1 << 20  # ...and its size

# the mark LineSplitter leaves on a line it cut, found again at the end of a line
_READER_MARK = re.compile(re.escape(CUT_MARK.format("N", "bytes")).replace("N", r"\d+") + "$")
_PID_LINE = re.compile(r"(?P<token>[0-9a-f]{32}) (?P<pid>[1-9][0-9]{0,9})")


def pid_line(token: str) -> str:
    """The launcher's printf format of its pid line (`%s` takes `$$`)."""
    return f"{PID_PREFIX}{token} %s"


def read_pid_line(line: str, token: str) -> int | None:
    """The process group named by a pid line that carries `token`, else None. Group 1 (and 0,
    every group of the caller) is never a job's."""
    match = _PID_LINE.fullmatch(line.removeprefix(PID_PREFIX))
    if not line.startswith(PID_PREFIX) or match is None or match["token"] != token:
        return None
    pid = int(match["pid"])
    return pid if pid > 1 else None


def cut_log_line(line: str) -> str:
    """`line` within MAX_LOG_LINE_CHARS, saying how much was cut (the reader's own mark, for a
    line it cut already, is kept)."""
    if len(line) <= MAX_LOG_LINE_CHARS:
        return line
    mark = _READER_MARK.search(line)
    cut = CUT_MARK.format(len(line) - MAX_LOG_LINE_CHARS, "characters")
    return line[:MAX_LOG_LINE_CHARS] + cut + (mark[0] if mark else "")
