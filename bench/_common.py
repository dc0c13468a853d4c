"""Shared helpers for the benchmarks in bench/: timing, peak memory, reporting.

Every benchmark prints a table for people and ends with ONE JSON line for machines (also
written to bench/results/<name>.json, gitignored). Benchmarks measure; they never assert.

    from _common import emit_json, measure_in_child, median_seconds, print_table

    seconds = median_seconds(lambda: onnx.load(path), repeat=5)
    child = measure_in_child("m = onnx.load(path)", setup="import onnx", env={"path": str(path)})
    print_table("open", [{"model": "bert", "seconds": child.seconds, "peak": child.peak_rss}])
    emit_json("document", {"open_seconds": child.seconds})

Benchmarks run as scripts, `python bench/bench_document.py`: Python puts bench/ first on
sys.path, so `from _common import ...` finds this module from any working directory.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

RESULTS_DIR = Path(__file__).resolve().parent / "results"
_MARK = "@@bench-child@@"

# Runs in a fresh interpreter: `setup` (imports, untimed), then `code` once, timed; reports
# wall seconds, the RSS after setup and the peak RSS. The peak is VmHWM, not ru_maxrss:
# Linux carries ru_maxrss across fork+exec, so a child of a big parent would inherit its peak.
_CHILD = """
import json, sys, time
def _status(key):
    with open("/proc/self/status") as f:
        line = next(line for line in f if line.startswith(key + ":"))
    return int(line.split()[1]) * 1024
def _rss():
    return _status("VmRSS")
_spec = json.loads(sys.argv[1])
_ns = dict(_spec["env"])
exec(_spec["setup"], _ns)
_setup_rss = _rss()
_t = time.perf_counter()
exec(_spec["code"], _ns)
_seconds = time.perf_counter() - _t
_peak = _status("VmHWM")
print(_spec["mark"] + json.dumps({"seconds": _seconds, "setup_rss": _setup_rss, "peak_rss": _peak}))
"""


def timings(fn: Callable[[], object], *, repeat: int = 5, warmup: int = 1) -> list[float]:
    """Seconds of each of `repeat` calls of `fn`, after `warmup` untimed calls."""
    for _ in range(warmup):
        fn()
    out = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        out.append(time.perf_counter() - start)
    return out


def median_seconds(fn: Callable[[], object], *, repeat: int = 5, warmup: int = 1) -> float:
    """Median wall time of `fn` in seconds."""
    return statistics.median(timings(fn, repeat=repeat, warmup=warmup))


@dataclass(frozen=True)
class ChildMeasure:
    """One run in a fresh process: `code`'s wall time, RSS after `setup`, peak RSS (bytes)."""

    seconds: float
    setup_rss: int
    peak_rss: int

    @property
    def peak_over_setup(self) -> int:
        """Peak RSS attributable to `code` (the peak minus what the imports already took)."""
        return max(0, self.peak_rss - self.setup_rss)


def measure_in_child(
    code: str, *, setup: str = "", env: Mapping[str, Any] | None = None
) -> ChildMeasure:
    """Run `setup` then `code` (Python source) in a fresh interpreter and measure `code`.

    `env` holds JSON-able values visible as globals to both (e.g. {"path": "model.onnx"}).
    A fresh process per measurement keeps peak RSS honest: nothing earlier inflates it.
    """
    spec = json.dumps({"setup": setup, "code": code, "env": dict(env or {}), "mark": _MARK})
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, spec], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"benchmark child failed ({done.returncode}):\n{done.stderr[-3000:]}")
    line = next(line for line in done.stdout.splitlines() if line.startswith(_MARK))
    return ChildMeasure(**json.loads(line[len(_MARK) :]))


def median_in_child(
    code: str, *, setup: str = "", env: Mapping[str, Any] | None = None, repeat: int = 5
) -> ChildMeasure:
    """Median seconds and median peak RSS over `repeat` fresh-process runs."""
    runs = [measure_in_child(code, setup=setup, env=env) for _ in range(repeat)]
    return ChildMeasure(
        seconds=statistics.median(r.seconds for r in runs),
        setup_rss=int(statistics.median(r.setup_rss for r in runs)),
        peak_rss=int(statistics.median(r.peak_rss for r in runs)),
    )


def fmt_seconds(seconds: float) -> str:
    if seconds < 1e-3:
        return f"{seconds * 1e6:.1f} us"
    if seconds < 1:
        return f"{seconds * 1e3:.1f} ms"
    return f"{seconds:.2f} s"


def fmt_bytes(size: float) -> str:
    return f"{size / 2**20:.0f} MiB"


def print_table(title: str, rows: Sequence[Mapping[str, object]]) -> None:
    """Print rows (dicts with the same keys) as an aligned text table under `title`."""
    print(f"\n{title}")
    if not rows:
        return
    columns = list(rows[0])
    cells = [[str(row.get(c, "")) for c in columns] for row in rows]
    widths = [max(len(c), *(len(r[i]) for r in cells)) for i, c in enumerate(columns)]
    print("  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)))
    print("  ".join("-" * w for w in widths))
    for row in cells:
        print("  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)))


def emit_json(bench: str, results: Mapping[str, Any]) -> None:
    """Print the one JSON line of a benchmark and keep it in bench/results/<bench>.json."""
    payload = {"bench": bench, **results}
    line = json.dumps(payload, sort_keys=True)
    RESULTS_DIR.mkdir(exist_ok=True)
    (RESULTS_DIR / f"{bench}.json").write_text(line + "\n")
    print(line)
