"""The onnxruntime threads of a sweep's CPU runs: several runs side by side on one machine
share its cores fairly, instead of each taking every core.

onnxruntime's default gives one run an intra-op thread per core, so two CPU profiles at once
fight over the same cores and the sweep is hardly faster than one run after another. A CPU run
that shares its machine with `concurrent - 1` others gets `max(1, cores // concurrent)` threads
unless its configuration sets `intra_op_threads` itself; the value applied stays in the
configuration, hence in the row, the report's settings and the cache key, so figures taken with
different thread counts are never mixed up. Runs given a share also sleep when idle
(`spin_wait=False`): onnxruntime's spinning threads would burn the cores the other runs need.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

CPU_BACKENDS = frozenset({"ort-cpu"})
ORT_DEFAULT = 0  # intra_op_threads=0: onnxruntime chooses (one thread per core)


def thread_share(cores: int, concurrent: int) -> int:
    """Each of `concurrent` runs' fair share of `cores`, at least one thread."""
    return max(1, cores // max(1, concurrent))


def with_threads(config: Mapping[str, Any], *, cores: int, concurrent: int) -> dict[str, Any]:
    """`config` with the `intra_op_threads` its run uses: its own value when it sets one; on
    a CPU backend, the fair share when `concurrent` (> 1) runs share `cores` (known, > 0), else
    onnxruntime's default (0); GPU runs (one per GPU slot) keep theirs (None: the default)."""
    threads = config.get("intra_op_threads")
    if threads is not None or config.get("backend") not in CPU_BACKENDS:
        return dict(config)
    if concurrent <= 1 or cores <= 0:
        return {**config, "intra_op_threads": ORT_DEFAULT}
    return {**config, "intra_op_threads": thread_share(cores, concurrent), "spin_wait": False}
