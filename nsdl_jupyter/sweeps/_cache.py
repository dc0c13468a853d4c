"""The sweep cache on disk: one row (and its report) per (model variant, settings, target
identity, runtime versions), written as each run finishes, so a re-run costs only what changed
and the finished part of a sweep survives a kernel restart. Writes go through the output guard.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from nsdl_jupyter._atomic import atomic_write_bytes
from nsdl_jupyter._output_guard import guard_output, starts_with
from nsdl_jupyter.profiling import ProfileReport

FORMAT = "nsdl-sweep-row"
VERSION = 1
_HEAD = b'{"format": "' + FORMAT.encode() + b'"'


def default_cache_dir() -> Path:
    """`$NSDL_CACHE_DIR/sweeps`, else `$XDG_CACHE_HOME/nsdl_jupyter/sweeps`, else
    `~/.cache/nsdl_jupyter/sweeps`."""
    explicit = os.environ.get("NSDL_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser() / "sweeps"
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "nsdl_jupyter" / "sweeps"


def run_key(variant: str, config: Mapping[str, Any], identity_key: str) -> str:
    """The cache key of one run: model variant hash, settings, target identity (which holds
    the runtime versions)."""
    spec = {"variant": variant, "config": dict(config), "target": identity_key, "v": VERSION}
    return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()


def _is_row_file(path: Path) -> bool:
    return starts_with(path, _HEAD)


class SweepCache:
    """Rows and reports under `folder/runs/`; model variants under `folder/models/`."""

    def __init__(self, folder: Path) -> None:
        self.folder = Path(folder).expanduser().absolute()
        self.runs = self.folder / "runs"
        self.models = self.folder / "models"

    def row_path(self, key: str) -> Path:
        return self.runs / f"{key}.json"

    def report_path(self, key: str) -> Path:
        return self.runs / f"{key}.report.json"

    def get(self, key: str) -> dict[str, Any] | None:
        """The cached row of `key`, or None (absent, unreadable or of another format)."""
        try:
            data = json.loads(self.row_path(key).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            return None
        row = data.get("row")
        if not isinstance(row, dict) or not self.report_path(key).is_file():
            return None
        return row

    def put(self, key: str, row: Mapping[str, Any], report: ProfileReport) -> None:
        """Keep a finished run: the report first, then the row that points to it."""
        report.save(self.report_path(key))
        path = guard_output(self.row_path(key), earlier=_is_row_file, what="sweep cache row")
        text = json.dumps({"format": FORMAT, "version": VERSION, "row": dict(row)})
        atomic_write_bytes(path, text.encode("utf-8"))

    def report(self, key: str) -> ProfileReport:
        return ProfileReport.load(self.report_path(key))
