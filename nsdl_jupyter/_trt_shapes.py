"""The checks of a TensorRT optimization profile's min/opt/max shapes, shared by the companion
file's properties (document) and the build settings (profiling); each raises its own error."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def size_list(where: str, value: Any, error: type[Exception]) -> list[int]:
    """`value` as a list of sizes >= 0; else `error` saying so about `where`."""
    if not isinstance(value, (list, tuple)) or not all(
        isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in value
    ):
        raise error(f"{where}={value!r}: give a list of sizes >= 0, e.g. [1, 3, 224, 224]")
    return [int(d) for d in value]


def check_min_opt_max(
    where: str, shapes: Mapping[str, Sequence[int]], error: type[Exception]
) -> None:
    """`error` unless min, opt and max have one rank and min <= opt <= max in every dimension."""
    lo, mid, hi = shapes["min"], shapes["opt"], shapes["max"]
    if not len(lo) == len(mid) == len(hi) or any(
        not a <= b <= c for a, b, c in zip(lo, mid, hi, strict=True)
    ):
        raise error(
            f"{where}: min, opt and max need the same rank and min <= opt <= max in every "
            f"dimension (got {dict(shapes)})"
        )
