"""Ending a child that runs in its own session: the child and everything it started.

Children are started with `start_new_session=True`, so the child's pid is also its process
group id; a background grandchild (`sleep 1000 &`) stays in that group after the child exits
and is ended with it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path

POLL_S = 0.05


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
    proc = Path("/proc")
    if not proc.is_dir():  # no /proc: signal 0 reached someone, assume they run
        return True
    for stat in proc.glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            # the command name (2nd field) may hold spaces and parentheses: split after it
            fields = stat.read_text().rsplit(")", 1)[1].split()
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
