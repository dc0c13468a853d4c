"""The grid of a sweep: which settings it varies, expanded into one dict per configuration.

An axis is a setting of one profile: the model variant (`batch`, `precision`), the runtime
(`backend`) and the run (`optimization_level`, `iterations`, `warmup`, `intra_op_threads`).
Everything is checked here, before a model variant is made or a task starts.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any

from nsdl_jupyter.sweeps._errors import SweepSettingsError

BACKENDS = ("ort-cpu", "ort-cuda", "tensorrt")
PRECISIONS = ("fp32", "fp16")
# axis -> (default, what a value must be)
AXES: dict[str, tuple[Any, str]] = {
    "batch": (None, "an integer >= 1 (the size of the model's free first dimension)"),
    "precision": ("fp32", f"one of {', '.join(PRECISIONS)}"),
    "backend": ("ort-cpu", f"one of {', '.join(BACKENDS)}"),
    "optimization_level": (
        None,
        "an integer 0..5 (onnxruntime: 0 = graph optimizations off, else on; TensorRT: the "
        "builder optimization level)",
    ),
    "iterations": (20, "an integer >= 1"),
    "warmup": (3, "an integer >= 0"),
    "intra_op_threads": (
        None,
        "an integer >= 1 (onnxruntime's intra-op threads of a CPU run), 0 for onnxruntime's own "
        "default, or None: a fair share of the machine's cores (see sweep())",
    ),
}


def _is_int(value: Any, low: int, high: int | None = None) -> bool:
    return (
        isinstance(value, int)
        and not isinstance(value, bool)
        and value >= low
        and (high is None or value <= high)
    )


_CHECKS = {
    "batch": lambda v: v is None or _is_int(v, 1),
    "precision": lambda v: v in PRECISIONS,
    "backend": lambda v: v in BACKENDS,
    "optimization_level": lambda v: v is None or _is_int(v, 0, 5),
    "iterations": lambda v: _is_int(v, 1),
    "warmup": lambda v: _is_int(v, 0),
    "intra_op_threads": lambda v: v is None or _is_int(v, 0),
}


def check_config(config: Mapping[str, Any], where: str) -> dict[str, Any]:
    """One configuration with every axis filled in (defaults), or SweepSettingsError."""
    unknown = sorted(set(config) - set(AXES))
    if unknown:
        raise SweepSettingsError(
            f"{where}: unknown setting(s) {unknown}; a sweep varies: {', '.join(AXES)}"
        )
    full = {axis: config.get(axis, default) for axis, (default, _) in AXES.items()}
    for axis, value in full.items():
        if not _CHECKS[axis](value):
            raise SweepSettingsError(f"{where}: {axis}={value!r}: use {AXES[axis][1]}")
    return full


def expand_grid(
    grid: Mapping[str, Sequence[Any]] | Sequence[Mapping[str, Any]],
) -> tuple[list[dict[str, Any]], list[str]]:
    """The configurations of `grid` (every combination of a dict of lists, in the order given,
    or an explicit list of setting dicts) and the axes it varies; duplicates are refused."""
    if isinstance(grid, Mapping):
        for axis, values in grid.items():
            if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
                raise SweepSettingsError(
                    f"grid[{axis!r}] is {values!r}: give a list of values, e.g. "
                    f"{{{axis!r}: [{values!r}]}}"
                )
            if not values:
                raise SweepSettingsError(f"grid[{axis!r}] is empty: give at least one value")
        axes = list(grid)
        raw = [dict(zip(axes, combo, strict=True)) for combo in itertools.product(*grid.values())]
    elif isinstance(grid, Sequence) and not isinstance(grid, (str, bytes)):
        if not all(isinstance(item, Mapping) for item in grid):
            raise SweepSettingsError("a grid list holds one dict of settings per configuration")
        raw = [dict(item) for item in grid]
        axes = list(dict.fromkeys(axis for item in raw for axis in item))
    else:
        raise SweepSettingsError(
            "grid: give a dict of setting -> list of values ({'batch': [1, 8]}) or a list of "
            "setting dicts ([{'batch': 1}, {'batch': 8, 'precision': 'fp16'}])"
        )
    if not raw:
        raise SweepSettingsError("the grid has no configuration: give at least one")
    configs = [check_config(item, f"configuration {i}") for i, item in enumerate(raw)]
    seen: dict[tuple[Any, ...], int] = {}
    for index, config in enumerate(configs):
        key = tuple(config.values())
        if key in seen:
            raise SweepSettingsError(
                f"configurations {seen[key]} and {index} are the same ({config}): give each once"
            )
        seen[key] = index
    return configs, axes
