"""Nsight Compute counters benchmark: ncu's CSV (one row per kernel and metric, as
`ncu --csv --print-units base` writes it) parsed, each kernel placed on its node by the kernel
sequence alignment, per-layer columns made. Synthetic but shaped like a real run: --kernels
kernels of one inference over --nodes nodes, the 7 metrics of the default set, one kernel of
the reference missing from the CSV (a --kernel-name filter). Goal (issue 24): 10k kernel rows
parsed and placed in <= 1 s.

    python bench/bench_ncu_parse.py [--kernels 10000] [--nodes 3000]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
from _common import emit_json, fmt_seconds, print_table

from nsdl_jupyter.profiling.gpu._ncu_counters import (
    NCU_METRICS,
    layer_counters,
    place_counters,
    read_ncu_csv,
)
from tests._ncu_csv import ncu_csv

GOAL_S = 1.0


def reference(kernels: int, nodes: int) -> pd.DataFrame:
    """The profiled pass's kernel rows of one run: a few kernels per node, repeated names."""
    rng = np.random.default_rng(0)
    names = [f"_ZN11onnxruntime4cuda{k}_kernelIfEEvPKT_" for k in range(40)]
    layer = np.sort(rng.integers(0, nodes, kernels))
    return pd.DataFrame({
        "layer": [f"/encoder/layer.{i // 20}/node_{i}" for i in layer],
        "kernel": [names[i] for i in rng.integers(0, len(names), kernels)],
        "grid": [f"{g}x1x1" for g in rng.integers(1, 5, kernels)],
        "block": ["256x1x1"] * kernels,
        "stream": 13, "run": 0,
        "start_ns": np.arange(kernels) * 5_000, "end_ns": np.arange(kernels) * 5_000 + 4_000,
        "duration_ms": 0.004,
    })  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernels", type=int, default=10_000)
    parser.add_argument("--nodes", type=int, default=3_000)
    args = parser.parse_args()
    ref = reference(args.kernels, args.nodes)
    keys = list(zip(ref["kernel"], ref["grid"], ref["block"], strict=True))
    rng = np.random.default_rng(1)
    values = [{m: float(rng.uniform(0, 100)) for m in NCU_METRICS} for _ in keys]
    del keys[args.kernels // 2], values[args.kernels // 2]
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "ncu.csv"
        path.write_text(ncu_csv(keys, values))
        size = path.stat().st_size
        start = time.perf_counter()
        kernels = read_ncu_csv(path)
        parsed = time.perf_counter()
        placed, counts = place_counters(kernels, ref)
        aligned = time.perf_counter()
        columns = layer_counters(placed)
        done = time.perf_counter()
    if counts["placed"] != len(keys) or counts["unmatched"]:
        raise SystemExit(f"kernels left unplaced: {counts}")
    total = done - start
    steps = [("read CSV", parsed - start), ("align + place", aligned - parsed),
             ("per-layer columns", done - aligned), ("total", total)]  # fmt: skip
    rows = [{"step": k, "time": fmt_seconds(v)} for k, v in steps]
    print_table("ncu CSV parse and place", rows)
    verdict = "met" if total <= GOAL_S else "MISSED"
    print(f"{len(keys)} kernels x {len(NCU_METRICS)} metrics, CSV {size / 1e6:.1f} MB, "
          f"{len(columns)} layers; goal <= {GOAL_S} s: {verdict}")  # fmt: skip
    emit_json("ncu_parse", {"kernels": len(keys), "rows": len(keys) * len(NCU_METRICS),
               "read_s": parsed - start, "place_s": aligned - parsed, "layers_s": done - aligned,
               "total_s": total, "goal_s": GOAL_S, "met": total <= GOAL_S})  # fmt: skip


if __name__ == "__main__":
    main()
