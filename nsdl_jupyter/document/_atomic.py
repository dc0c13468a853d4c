"""Atomic file writes: write beside the target, flush to disk, then rename over it."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO


@contextmanager
def atomic_writer(path: str | os.PathLike[str]) -> Iterator[BinaryIO]:
    """Yield a binary file that replaces `path` only if the block finishes without error."""
    target = Path(path)
    fd, temp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp_name, target)
    except BaseException:
        if os.path.exists(temp_name):
            os.unlink(temp_name)
        raise


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    with atomic_writer(path) as handle:
        handle.write(data)
