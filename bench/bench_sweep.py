"""Benchmark of nj.sweep: 24 tiny CPU configurations (12 batch sizes x 2 optimization levels;
`--tasks 12`: 6 batch sizes, the earlier figures' grid) over 2 Dask workers vs the same profiles
one after another, per-task overhead (the same tasks on one worker, against one after another,
per task), and a cached re-run. Prints figures and one JSON line.

Goals (issue 26): a 24-task sweep over 2 workers <= 0.6x the one-after-another time; per-task
overhead over a single `profile_ort` <= 0.3 s; cached re-run <= 1 s. Two baselines, both
`profile_ort` in a loop: `sequential_s` with onnxruntime's default threads (what a user's
hand loop runs: every core for each profile), `sequential_same_threads_s` with the
`intra_op_threads` the sweep gave each of its side-by-side CPU runs (a fair share of the
cores, `intra_op_threads` below); each ratio is given against both. `sweep_s` is the first
sweep of the session: it includes importing Dask and starting the embedded LocalCluster
(in-process workers, kept for the session; the start overlaps the sweep's target check);
`first_sweep_extra_s` is what that costs over `sweep_kept_cluster_s`, a second sweep of new
rows on the kept cluster. `sweep_on_process_cluster_s` runs the same tasks on an already
running LocalCluster of worker processes (client=), for comparison: there the sweep cannot
know how many runs share a machine, so its grid sets the same `intra_op_threads`. The
one-worker sweep (per-task overhead) runs each profile alone, with onnxruntime's default
threads, like `sequential_s`. Each phase's `*_cpu_s` is the CPU time it used (this
process, its threads and its reaped child processes: the runners; the worker processes of the
process cluster are not counted), so that a busy shared machine can be told from a slow
sweep: on a machine with fewer free cores than workers, two CPU profiles cannot run side by
side and the ratios measure the machine.

    python bench/bench_sweep.py [--iterations 20] [--workers 2] [--tasks 24]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import onnx
import psutil  # type: ignore[import-untyped]  # (no stubs here)
from _common import emit_json, print_table

from nsdl_jupyter.examples import small_transformer
from nsdl_jupyter.profiling import profile_ort
from nsdl_jupyter.sweeps import close_sweep_cluster, expand_grid, sweep
from nsdl_jupyter.sweeps._variants import SourceModel, make_variant, source_model

# batch sizes per task count (x 2 optimization levels)
BATCHES = {12: [1, 2, 4, 8, 16, 32], 24: [1, 2, 3, 4, 6, 8, 12, 16, 20, 24, 28, 32]}


def cpu_s() -> float:
    """CPU seconds of this process and of its reaped children, user + system."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def one_after_another(
    configs: Sequence[dict[str, Any]], source: SourceModel, folder: Path, threads: int | None
) -> tuple[float, float, list[float]]:
    """The configurations profiled in a loop, as a user would: wall s, CPU s, each run's s."""
    cpu = cpu_s()
    started = time.perf_counter()
    each = []
    for config in configs:
        t = time.perf_counter()
        profile_ort(
            make_variant(source, config["batch"], "fp32", folder / "cache" / "models"),
            iterations=config["iterations"],
            warmup=config["warmup"],
            graph_optimization=config["optimization_level"] > 0,
            intra_op_threads=threads,
            trace_path=folder / "trace.json",
            overwrite=True,
        )
        each.append(time.perf_counter() - t)
    return time.perf_counter() - started, cpu_s() - cpu, each


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--tasks", type=int, choices=sorted(BATCHES), default=24)
    args = parser.parse_args()
    grid: dict[str, list[Any]] = {
        "batch": list(BATCHES[args.tasks]),
        "optimization_level": [0, 3],
        "iterations": [args.iterations],
    }
    configs, _ = expand_grid(grid)
    with tempfile.TemporaryDirectory(prefix="nsdl-bench-sweep-") as folder:
        root = Path(folder)
        model = root / "bert.onnx"
        onnx.save(small_transformer(1, hidden=32, heads=2, seq=8, vocab=100), model)
        cache = root / "cache"
        source = source_model(model, cache / "models")
        for config in configs:  # the variants both ways use (made once, outside the timing)
            make_variant(source, config["batch"], "fp32", cache / "models")

        sequential_s, sequential_cpu, one_by_one = one_after_another(configs, source, root, None)

        cpu = cpu_s()
        started = time.perf_counter()
        result = sweep(model, grid, cache_dir=cache, workers=args.workers, progress=False)
        sweep_s = time.perf_counter() - started
        sweep_cpu = cpu_s() - cpu
        assert (result.frame["status"] == "ok").all(), result.frame["error"].tolist()
        task_s = statistics.median(result.frame["wall_s"])
        (threads,) = set(result.frame["intra_op_threads"])  # the share each CPU run got

        # the same loop with the sweep's threads: what the sweep gains by running side by side
        same_s, same_cpu, _ = one_after_another(configs, source, root, int(threads) or None)

        # the same tasks again on the kept cluster (a new cache: nothing served from it)
        cpu = cpu_s()
        started = time.perf_counter()
        kept = sweep(model, grid, cache_dir=root / "cache3", workers=args.workers, progress=False)
        kept_s = time.perf_counter() - started
        kept_cpu = cpu_s() - cpu
        assert kept.ran == len(configs)

        # the first sweep again: every row from the cache
        started = time.perf_counter()
        again = sweep(model, grid, cache_dir=cache, workers=args.workers, progress=False)
        cached_s = time.perf_counter() - started
        assert again.ran == 0

        # per-task overhead: the same tasks on one worker against one after another
        cpu = cpu_s()
        started = time.perf_counter()
        one = sweep(model, grid, cache_dir=root / "cache4", workers=1, progress=False)
        one_worker_s = time.perf_counter() - started
        one_worker_cpu = cpu_s() - cpu
        assert one.ran == len(configs)

        close_sweep_cluster()

        # the same tasks on a cluster of worker processes already running (client=)
        import distributed

        with (
            distributed.LocalCluster(  # type: ignore[no-untyped-call]
                n_workers=args.workers, threads_per_worker=1, dashboard_address=":0"
            ) as cluster,
            distributed.Client(cluster) as client,  # type: ignore[no-untyped-call]
        ):
            client.run(lambda: __import__("nsdl_jupyter.sweeps._task"))  # workers warm
            cpu = cpu_s()
            started = time.perf_counter()
            warm = sweep(
                model, {**grid, "intra_op_threads": [int(threads)]}, client=client,
                cache_dir=root / "cache2", progress=False,
            )  # fmt: skip
            running_s = time.perf_counter() - started
            running_cpu = cpu_s() - cpu
        assert warm.ran == len(configs)

    figures = {
        "configurations": len(configs),
        "workers": args.workers,
        "cpu_count": os.cpu_count(),
        "physical_cores": psutil.cpu_count(logical=False),
        "intra_op_threads": int(threads),
        "load_1min": round(os.getloadavg()[0], 2),
        "sequential_s": round(sequential_s, 3),
        "sequential_cpu_s": round(sequential_cpu, 3),
        "sequential_same_threads_s": round(same_s, 3),
        "sequential_same_threads_cpu_s": round(same_cpu, 3),
        "sweep_s": round(sweep_s, 3),
        "sweep_cpu_s": round(sweep_cpu, 3),
        "sweep_over_sequential": round(sweep_s / sequential_s, 3),
        "sweep_over_same_threads": round(sweep_s / same_s, 3),
        "first_sweep_extra_s": round(sweep_s - kept_s, 3),
        "sweep_kept_cluster_s": round(kept_s, 3),
        "sweep_kept_cluster_cpu_s": round(kept_cpu, 3),
        "kept_cluster_over_sequential": round(kept_s / sequential_s, 3),
        "kept_cluster_over_same_threads": round(kept_s / same_s, 3),
        "profile_ort_median_s": round(statistics.median(one_by_one), 3),
        "task_median_s": round(task_s, 3),
        "sweep_one_worker_s": round(one_worker_s, 3),
        "sweep_one_worker_cpu_s": round(one_worker_cpu, 3),
        "per_task_overhead_s": round((one_worker_s - sequential_s) / len(configs), 3),
        "per_task_overhead_cpu_s": round((one_worker_cpu - sequential_cpu) / len(configs), 3),
        "sweep_on_process_cluster_s": round(running_s, 3),
        "sweep_on_process_cluster_cpu_s": round(running_cpu, 3),
        "process_cluster_over_sequential": round(running_s / sequential_s, 3),
        "process_cluster_over_same_threads": round(running_s / same_s, 3),
        "cached_rerun_s": round(cached_s, 3),
    }
    print_table("sweep", [figures])
    emit_json("sweep", figures)


if __name__ == "__main__":  # Dask's worker processes re-import this file: run only as a script
    main()
