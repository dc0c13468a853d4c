"""The companion file `<model>.nsdl.json`: state kept beside a model (layout, collapsed
groups, TensorRT properties). It is never required: a missing, oversized, malformed or
mistyped one is ignored with a warning, and only entries of the expected shape are kept."""

from __future__ import annotations

import json
import math
import os
import warnings
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from nsdl_jupyter._atomic import atomic_write_bytes
from nsdl_jupyter._output_guard import companion_of
from nsdl_jupyter.document import edits as e
from nsdl_jupyter.document._tensorrt import COMPANION_KEY, companion_entry

# node name -> [x, y]: where the user dragged a box on the canvas (top-left, layout units);
# applied over the computed layout, dropped by "Arrange"
MOVED_KEY = "moved"
_VERSION = 1
_MAX_BYTES = 64 * 2**20
# No box lies farther out than this (layout units): the layout packs coordinates as float32
# and the SVG renderer as integers, so 1e308 (finite as a double) broke both
MAX_COORDINATE = 1e7


class CompanionWarning(UserWarning):
    """The companion file was ignored or could not be written; the model itself is fine."""


def companion_path(model_path: str | os.PathLike[str]) -> Path:
    return companion_of(model_path)


def read_companion(model_path: Path) -> dict[str, Any]:
    """The companion's entries, or {} (with a CompanionWarning when one exists but is bad)."""
    path = companion_path(model_path)
    try:
        if not path.is_file():
            return {}
        if path.stat().st_size > _MAX_BYTES:
            return _ignored(path, f"it is over {_MAX_BYTES >> 20} MiB")
        data = json.loads(path.read_bytes())
    except OSError as error:
        return _ignored(path, str(error))
    except (ValueError, RecursionError) as error:
        return _ignored(path, f"it is not valid JSON ({type(error).__name__})")
    if not isinstance(data, dict):
        return _ignored(path, "it is not a JSON object")
    data.pop("version", None)
    return _well_formed(
        data, _CHECKS, _json_simple, f"ignoring malformed {{}} entries in {path.name}"
    )


def write_companion(model_path: Path, companion: dict[str, Any]) -> None:
    """Write the companion as standard JSON: positions that are no place on the canvas and
    values JSON cannot hold (NaN, infinities, objects) are left out, with a warning."""
    path = companion_path(model_path)
    kept = _well_formed(
        companion,
        _WRITE_CHECKS,
        _standard_json,
        f"not writing malformed {{}} entries to {path.name}",
    )
    if not kept:
        return
    payload = {"version": _VERSION, **kept}
    text = json.dumps(payload, indent=1, sort_keys=True, allow_nan=False)
    atomic_write_bytes(path, text.encode())


def companion_problem(key: Any, value: Any) -> str | None:
    """Why entry `key` could not be written as is, or None."""
    if not isinstance(key, str):
        return f"entry names are strings, not {type(key).__name__}"
    if _WRITE_CHECKS.get(key, _standard_json)(value) != value:
        if key in _WRITE_CHECKS:
            return f"give each node [x, y], finite numbers within ±{MAX_COORDINATE:g} layout units"
        return "give standard JSON (no NaN or infinity, no objects)"
    return None


def _well_formed(
    data: dict[str, Any],
    checks: dict[str, Callable[[Any], Any]],
    default: Callable[[Any], Any],
    warning: str,
) -> dict[str, Any]:
    """The entries of `data` as their check keeps them (a warning for each one changed)."""
    kept: dict[str, Any] = {}
    for key, value in data.items():
        checked = checks.get(key, default)(value)
        if checked != value:
            warnings.warn(
                warning.format(key) + " (kept what was well formed; the model is not affected)",
                CompanionWarning,
                stacklevel=4,
            )
        if checked is not None:
            kept[key] = checked
    return kept


def layout_coordinate(value: Any) -> float | None:
    """`value` as a coordinate of a box on the canvas, or None when it is not one (not a
    number, a bool, non-finite, an int too big for a float, beyond MAX_COORDINATE)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) and abs(number) <= MAX_COORDINATE else None


class FollowMoves(e.Edit):
    """Dragged positions follow node renames and leave with removed nodes, in the same
    command (one undo restores both)."""

    def __init__(
        self, companion: dict[str, Any], renamed: Sequence[tuple[str, str]], removed: Iterable[str]
    ) -> None:
        self.companion, self.renamed, self.removed = companion, tuple(renamed), frozenset(removed)
        self._old: dict[str, Any] | None = None

    def apply(self) -> None:
        self._old = self.companion.get(MOVED_KEY)
        if not self._old:
            return
        moved = {k: v for k, v in self._old.items() if k not in self.removed}
        for old, new in self.renamed:
            if old in moved:
                moved[new] = moved.pop(old)
        if moved != self._old:
            self.companion[MOVED_KEY] = moved

    def revert(self) -> None:
        if self._old is not None:
            self.companion[MOVED_KEY] = self._old


def _ignored(path: Path, why: str) -> dict[str, Any]:
    warnings.warn(
        f"ignoring the view state in {path.name}: {why} (layout starts fresh; the model is "
        "not affected)",
        CompanionWarning,
        stacklevel=4,
    )
    return {}


def _positions(value: Any) -> dict[str, list[float]] | None:
    if not isinstance(value, dict):
        return None
    kept: dict[str, list[float]] = {}
    for key, point in value.items():
        if isinstance(key, str) and isinstance(point, (list, tuple)) and len(point) == 2:
            x, y = (layout_coordinate(v) for v in point)
            if x is not None and y is not None:
                kept[key] = [x, y]
    return kept


def _collapsed(value: Any) -> list[str] | None:
    if not isinstance(value, list):
        return None
    return [key for key in value if isinstance(key, str)]


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _json_simple(value: Any, depth: int = 0) -> Any:
    """Other entries (future tools' state) kept only when shallow plain JSON."""
    if depth > 16:
        return None
    if isinstance(value, dict):
        items = {k: _json_simple(v, depth + 1) for k, v in value.items()}
        return None if any(v is None for v in items.values()) else items
    if isinstance(value, list):
        elements = [_json_simple(v, depth + 1) for v in value]
        return None if any(v is None for v in elements) else elements
    if isinstance(value, (str, bool, int)) or _finite(value):
        return value
    return None


def _standard_json(value: Any) -> Any:
    """`value` when standard JSON can hold it (no NaN, no infinity, no objects), else None."""
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        return None
    return value


# Entries read with a check of their own; other entries (future tools' state) are kept when
# plain JSON. Whatever a check leaves out is said in a warning.
_CHECKS: dict[str, Callable[[Any], Any]] = {
    "positions": _positions,
    "collapsed": _collapsed,
    MOVED_KEY: _positions,
    COMPANION_KEY: companion_entry,
}
# On writing, box positions are checked as on reading; everything else must be standard JSON.
_WRITE_CHECKS: dict[str, Callable[[Any], Any]] = {"positions": _positions, MOVED_KEY: _positions}
