"""Nsight Compute CSV as `ncu --csv --print-units base --metrics ...` writes it (one row per
kernel and metric), for tests and the parse benchmark. The same reader placed every kernel of
real ncu 2025.3 CSVs on the H200 (tests/fixtures/gpu_why/summary.json)."""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping, Sequence

HEADER = ["ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream",
          "Block Size", "Grid Size", "Device", "CC", "Section Name", "Metric Name",
          "Metric Unit", "Metric Value"]  # fmt: skip


def _dims(text: str) -> str:
    return "(" + ", ".join(text.split("x")) + ")"


def ncu_csv(kernels: Sequence[tuple[str, str, str]], metrics: Sequence[Mapping[str, float]],
            preamble: str = "==PROF== Connected to process 1 (python3)\n") -> str:  # fmt: skip
    """CSV text for `kernels` ((name, grid, block) with grid/block as '8x1x1') with one mapping
    metric -> value per kernel."""
    out = io.StringIO()
    out.write(preamble)
    writer = csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n")
    writer.writerow(HEADER)
    for index, ((name, grid, block), values) in enumerate(zip(kernels, metrics, strict=True)):
        for metric, value in values.items():
            unit = "%" if "pct" in metric else ("nsecond" if "time" in metric else "inst")
            text = f"{value:,.2f}" if value >= 1000 else f"{value:.2f}"
            where = [index, 4242, "python3", "127.0.0.1", name, 1, 13, _dims(block), _dims(grid)]
            section = [0, "9.0", "Command line profiler metrics"]
            writer.writerow([*where, *section, metric, unit, text])
    return out.getvalue()
