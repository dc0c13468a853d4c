"""A file's identity: how a document knows a file is still the one it read or wrote."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class FileIdentity:
    """A file's identity: the same path with another inode, size or mtime is another file."""

    device: int
    inode: int
    size: int
    mtime_ns: int

    @classmethod
    def of(cls, path: Path) -> FileIdentity | None:
        try:
            return cls.of_stat(path.stat())
        except OSError:
            return None

    @classmethod
    def of_stat(cls, stat: os.stat_result) -> FileIdentity:
        return cls(stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns)
