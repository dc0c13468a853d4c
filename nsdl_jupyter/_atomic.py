"""Atomic file writes: write beside the target, flush to disk, then rename over it.

Every file the package writes for a user (models' companions, exported images and pages,
settings, tool lists) goes through here, so a crash or a full disk never leaves half a file.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO


@contextmanager
def atomic_writer(path: str | os.PathLike[str]) -> Iterator[BinaryIO]:
    """Yield a binary file that replaces `path` only if the block finishes without error.

    Missing parent folders are created; the file gets the usual permissions (0666 less the
    umask), not mkstemp's 0600, so a saved model or page reads like any other file.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, temp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        mask = os.umask(0)
        os.umask(mask)
        os.fchmod(fd, 0o666 & ~mask)
        with os.fdopen(fd, "wb") as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp_name, target)
    except BaseException:
        Path(temp_name).unlink(missing_ok=True)
        raise


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    with atomic_writer(path) as handle:
        handle.write(data)
