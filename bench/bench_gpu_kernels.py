"""GPU kernel attribution benchmark: placing CUPTI kernel records in onnxruntime node windows.

Synthetic but shaped like a real run (tests/fixtures/gpu_truth: ~234 kernels per ResNet-50
inference, a few per node): --runs inferences of --kernels kernels each, spread over --nodes
nodes, written as the runner writes them (.npz) and placed by `attribute_kernels`; then the
size and load time of a saved report that carries the kernel tables. Goal (issue 10): 100
inferences x 1,000 kernels placed in <= 1 s.

    python bench/bench_gpu_kernels.py [--runs 100] [--kernels 1000] [--nodes 400]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
from _common import emit_json, fmt_bytes, fmt_seconds, measure_in_child, print_table

from nsdl_jupyter.profiling import ProfileReport
from nsdl_jupyter.profiling.gpu._kernels import attribute_kernels
from nsdl_jupyter.profiling.ort._trace import NodeWindows

GOAL_S = 1.0


def synthetic_run(runs: int, kernels: int, nodes: int, folder: Path) -> tuple[Path, NodeWindows]:
    """Node windows of `runs` inferences and kernel records launched inside them."""
    rng = np.random.default_rng(0)
    node_us, gap_us = 10, 2
    run_us = nodes * (node_us + gap_us) + 100
    starts = np.arange(runs)[:, None] * run_us + 50 + np.arange(nodes)[None, :] * (node_us + gap_us)
    windows = NodeWindows(
        names=[f"/block{i // 8}/node_{i}" for i in range(nodes)],
        name_id=np.tile(np.arange(nodes), runs),
        run=np.repeat(np.arange(runs), nodes),
        ts_us=starts.ravel().astype(np.int64),
        dur_us=np.full(runs * nodes, node_us, dtype=np.int64),
        depth=np.zeros(runs * nodes, dtype=np.int64),
        run_start_us=(np.arange(runs) * run_us).astype(np.int64),
        representative=runs // 2,
    )
    node_of = rng.integers(0, nodes, size=(runs, kernels))
    node_of.sort(axis=1)
    launch_us = starts[np.arange(runs)[:, None], node_of] + rng.uniform(0.5, 9.5, (runs, kernels))
    profiling_start = 1_700_000_000_000_000_000
    launch_ns = profiling_start + (launch_us * 1e3).astype(np.int64)
    start_ns = launch_ns + 5_000
    names = [f"kernel_{i}<float, 128>" for i in range(64)]
    path = folder / "kernels.npz"
    np.savez_compressed(
        path,
        name_id=rng.integers(0, len(names), runs * kernels).astype(np.int32),
        start_ns=start_ns.ravel(),
        end_ns=start_ns.ravel() + rng.integers(1_000, 20_000, runs * kernels),
        launch_ns=launch_ns.ravel(),
        stream=np.full(runs * kernels, 7, dtype=np.int64),
        grid=np.ones((runs * kernels, 3), dtype=np.int32),
        block=np.full((runs * kernels, 3), 128, dtype=np.int32),
        names_utf8=np.frombuffer("".join(names).encode(), dtype=np.uint8),
        name_lengths=np.asarray([len(n) for n in names], dtype=np.int64),
        profiling_start_ns=np.asarray([profiling_start], dtype=np.int64),
    )
    return path, windows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--kernels", type=int, default=1000, help="kernels per inference")
    parser.add_argument("--nodes", type=int, default=400, help="nodes per inference")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="nsdl-bench-") as folder:
        path, windows = synthetic_run(args.runs, args.kernels, args.nodes, Path(folder))
        start = time.perf_counter()
        timing = attribute_kernels(path, windows)
        seconds = time.perf_counter() - start
        layers = {
            "name": windows.names,
            "mean_ms": [0.01] * len(windows.names),
            "gpu_ms": [timing.gpu_ms.get(n, 0.0) for n in windows.names],
        }
        import pandas as pd

        report = ProfileReport(
            pd.DataFrame(layers), kernels=timing.kernels, kernel_timeline=timing.timeline
        )
        saved = report.save(Path(folder) / "report.json")
        load = measure_in_child(
            "r = ProfileReport.load(path)",
            setup="from nsdl_jupyter.profiling import ProfileReport",
            env={"path": str(saved)},
        )
        rows = {
            "kernels": args.runs * args.kernels,
            "place_s": seconds,
            "placed_share": timing.placed_share,
            "kernel_rows": len(timing.kernels),
            "report_bytes": saved.stat().st_size,
            "report_load_s": load.seconds,
            "report_load_rss_added": load.peak_over_setup,
        }
    print_table(
        f"kernel placement: {args.runs} inferences x {args.kernels} kernels, {args.nodes} nodes",
        [
            {
                "kernels": rows["kernels"],
                "placed in": fmt_seconds(seconds),
                f"goal <= {GOAL_S:g} s": "met" if seconds <= GOAL_S else "MISSED",
                "kernel table rows": rows["kernel_rows"],
                "report file": fmt_bytes(rows["report_bytes"]),
                "report load": fmt_seconds(rows["report_load_s"]),
                "load RSS+": fmt_bytes(rows["report_load_rss_added"]),
            }
        ],
    )
    emit_json("gpu_kernels", rows)


if __name__ == "__main__":
    main()
