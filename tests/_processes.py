"""Process checks shared by the tests that start real children: alive, gone within a time."""

from __future__ import annotations

import os
import time
from pathlib import Path


def alive(pid: int) -> bool:
    """True while `pid` runs; a zombie (exited, not yet reaped) counts as gone."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = Path(f"/proc/{pid}/stat")
    # the command name (2nd field) may hold spaces and parentheses: split after it
    return not (status.exists() and status.read_text().rsplit(")", 1)[1].split()[0] == "Z")


def wait_gone(pid: int, seconds: float) -> bool:
    """True once `pid` is gone, False if it still runs after `seconds`."""
    deadline = time.monotonic() + seconds
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not alive(pid)
