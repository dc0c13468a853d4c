"""Memory-backed scratch folders for the tests that write thousands of small files."""

from __future__ import annotations

import os
from pathlib import Path


def scratch_parent() -> str | None:
    """Memory-backed /dev/shm when there is one, else the default temporary folder: the
    backend-corpus tests save every case atomically (two fsyncs each), and on a disk those
    syncs were a quarter of a worker's time; the save path itself is the same."""
    shm = Path("/dev/shm")
    return str(shm) if shm.is_dir() and os.access(shm, os.W_OK) else None
