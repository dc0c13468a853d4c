"""What a target keeps in its deploy folder between runs, and how it is trimmed.

Kinds: `files` (models and their external data, by content hash), `runners` (the runner files,
by hash), `wheels` (one copy per sha256), `runtimes` (a venv per runtime set), `engines`
(TensorRT engines by model, settings, TensorRT version and GPU) and `tensorrt` (TensorRT's
timing caches, one per backend, version and GPU). An entry's
last use is the newest modification time of its files (a deploy that finds a file there touches
it); eviction removes the least recently used entries first.
"""

from __future__ import annotations

import html
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from nsdl_jupyter.targets._errors import TargetSettingsError

CACHE_KINDS = ("files", "runners", "wheels", "runtimes", "engines", "tensorrt")

# run by the target's Python with the deploy root and the kinds: one JSON line of entries
LIST_SCRIPT = """
import json, os, sys
root, found = sys.argv[1], []
for kind in sys.argv[2:]:
    try:
        names = os.listdir(os.path.join(root, kind))
    except OSError:
        continue
    for name in names:
        top = os.path.join(root, kind, name)
        size, used = 0, 0.0
        if os.path.isfile(top):  # an entry that is one file (a timing cache)
            st = os.lstat(top)
            size, used = st.st_size, st.st_mtime
        for folder, dirs, files in os.walk(top):
            for f in files:
                try:
                    st = os.lstat(os.path.join(folder, f))
                except OSError:
                    continue
                size += st.st_size
                used = max(used, st.st_mtime)
        found.append([kind, name, top, size, used or os.lstat(top).st_mtime])
print(json.dumps(found))
"""


@dataclass(frozen=True)
class CacheEntry:
    kind: str
    key: str
    path: str
    bytes: int
    last_used: float  # seconds since the epoch, the target's clock


@dataclass(frozen=True)
class CacheInfo:
    """The caches in a target's deploy folder (`entries`, least recently used first)."""

    target: str
    entries: list[CacheEntry]
    limit_bytes: int | None

    @property
    def total_bytes(self) -> int:
        return sum(entry.bytes for entry in self.entries)

    def bytes_of(self, kind: str) -> int:
        return sum(entry.bytes for entry in self.entries if entry.kind == kind)

    def to_frame(self) -> Any:
        import pandas as pd

        return pd.DataFrame(
            [(e.kind, e.key, e.bytes, pd.Timestamp(e.last_used, unit="s")) for e in self.entries],
            columns=["kind", "key", "bytes", "last_used"],
        )

    def _repr_html_(self) -> str:
        limit = f" of {self.limit_bytes / 2**20:.1f} MiB" if self.limit_bytes else ""
        rows = "".join(
            f"<tr><td>{kind}</td><td>{sum(e.kind == kind for e in self.entries)}</td>"
            f"<td>{self.bytes_of(kind) / 2**20:.1f} MiB</td></tr>"
            for kind in CACHE_KINDS
        )
        return (
            f"<b>{html.escape(self.target)}</b>: {self.total_bytes / 2**20:.1f} MiB{limit}"
            f"<table><tr><th>kind</th><th>entries</th><th>size</th></tr>{rows}</table>"
        )


def check_kinds(kinds: str | Sequence[str] | None) -> tuple[str, ...]:
    if kinds is None:
        return CACHE_KINDS
    chosen = (kinds,) if isinstance(kinds, str) else tuple(kinds)
    unknown = [kind for kind in chosen if kind not in CACHE_KINDS]
    if unknown:
        raise TargetSettingsError(
            f"unknown cache kind(s) {unknown}: choose from {', '.join(CACHE_KINDS)}"
        )
    return chosen


def check_limit(limit: object) -> int | None:
    if limit is None:
        return None
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
        raise TargetSettingsError(
            f"cache_limit_bytes={limit!r} must be a number of bytes >= 0, e.g. 20 * 2**30"
        )
    return limit


def inside(paths: Iterable[str], folders: Collection[str]) -> list[str]:
    """Those of `paths` inside one of `folders`."""
    return [p for p in paths if any(p.startswith(folder + "/") for folder in folders)]


def evictions(
    entries: Sequence[CacheEntry], keep_bytes: int, in_use: Collection[str] = ()
) -> list[CacheEntry]:
    """The least recently used entries to remove so that at most `keep_bytes` remain; an entry
    that holds a path of `in_use` stays."""
    protected = {entry.path for entry in entries if inside(in_use, [entry.path])}
    total = sum(entry.bytes for entry in entries)
    chosen: list[CacheEntry] = []
    for entry in sorted(entries, key=lambda e: e.last_used):
        if total <= keep_bytes:
            break
        if entry.path in protected:
            continue
        chosen.append(entry)
        total -= entry.bytes
    return chosen
