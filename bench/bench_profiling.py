"""Benchmarks of the ONNX Runtime profile activity. Prints figures and one JSON line.

1. End-to-end median reported by `profile_ort` (child process, separate pass with profiling
   off) vs a bare onnxruntime loop in this process, same model, same inputs (goal: within 3%).
2. Sum of per-node times vs end-to-end, and the profiled run time vs the bare one (what the
   profiler adds).
3. Parse time of a real onnxruntime trace of about 20,000 node events.
4. Parse time and peak memory for a synthetic 240k-event trace in onnxruntime's own line
   layout (the size of a 20-iteration profile of a 20,000-node model).

    python bench/bench_profiling.py                       # CPU, ResNet-18 batch 1
    python bench/bench_profiling.py --provider cuda --model resnet50 --batch 8 \
        --save-report tests/fixtures/ort_cuda_resnet50_b8_report.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import onnx

from nsdl_jupyter import examples
from nsdl_jupyter.profiling import parse_ort_trace, profile_ort, provider_name
from nsdl_jupyter.profiling.runners._ort_runner import _random_inputs as random_inputs


def build_model(name: str, batch: int) -> onnx.ModelProto:
    if name == "resnet50":
        return examples.resnet50(batch=batch)
    if name == "resnet18":
        return examples.resnet18(batch=batch)
    if name == "small":
        return examples.small_transformer(batch=batch)
    raise SystemExit(f"unknown model {name}: use resnet50, resnet18 or small")


def bare_loop(
    model_path: Path, provider: str, iterations: int, warmup: int, seed: int
) -> list[float]:
    """What a user would time by hand: one session, the same inputs, perf_counter."""
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    providers = [provider] + (
        ["CPUExecutionProvider"] if provider != "CPUExecutionProvider" else []
    )
    sess = ort.InferenceSession(str(model_path), so, providers=providers)
    feeds, _ = random_inputs(sess, {}, seed)  # the runner's own recipe: identical inputs
    names = [o.name for o in sess.get_outputs()]
    for _ in range(warmup):
        sess.run(names, feeds)
    times = []
    for _ in range(iterations):
        start = time.perf_counter_ns()
        sess.run(names, feeds)
        times.append((time.perf_counter_ns() - start) / 1e6)
    return times


def write_synthetic_trace(path: Path, n_nodes: int, n_runs: int, sub_threads: int = 6) -> int:
    """A trace in onnxruntime's exact line layout; returns its size in bytes."""
    subs = ", ".join(f'"14020673{i:06d}": {{"num_run": 0, "core": -1}}' for i in range(sub_threads))
    stats = (
        '"thread_scheduling_stats" : {"main_thread": {"thread_pool_name": "session-1-intra-op", '
        '"thread_id": "140211849281856", "block_size": [], "core": -1, "Distribution": 0, '
        '"DistributionEnqueue": 0, "Run": 0, "Wait": 0, "WaitRevoke": 0}, "sub_threads": {'
        + subs
        + "}}"
    )
    ops = ["Conv", "Relu", "Add", "MatMul", "Mul"]
    node = (
        '{"cat" : "Node","pid" :1,"tid" :1,"dur" :%d,"ts" :%d,"ph" : "X",'
        '"name" :"/blk%d/%s_%d_kernel_time","args" : {"op_name" : "%s","provider" : '
        '"CPUExecutionProvider","node_index" : "%d","output_size" : "4096","parameter_size" : '
        '"0","activation_size" : "4096","input_type_shape" : [{"float":[1,1024]},'
        '{"float":[1,1024]}],"output_type_shape" : [{"float":[1,1024]}],%s}},\n'
    )
    ts = 1000
    with path.open("w") as f:
        f.write("[\n")
        for _ in range(n_runs):
            start = ts
            for i in range(n_nodes):
                op = ops[i % len(ops)]
                f.write(node % (5 + i % 7, ts, i // 10, op, i, op, i, stats))
                ts += 6 + i % 7
            run_event = {
                "cat": "Session",
                "pid": 1,
                "tid": 1,
                "dur": ts - start + 2,
                "ts": start - 1,
                "ph": "X",
                "name": "model_run",
                "args": {},
            }
            f.write(json.dumps(run_event, separators=(",", " :")) + ",\n")
            ts += 50
        end = {
            "cat": "Session",
            "pid": 1,
            "tid": 1,
            "dur": 1,
            "ts": ts,
            "ph": "X",
            "name": "end",
            "args": {},
        }
        f.write(json.dumps(end, separators=(",", " :")) + "\n]\n")
    return path.stat().st_size


# VmHWM (the peak RSS of this process image), not ru_maxrss: on Linux, ru_maxrss survives
# fork+exec and would report the parent's peak.
_PARSE_CHILD = """
import json, sys, time
from nsdl_jupyter.profiling import parse_ort_trace
def hwm():
    for line in open('/proc/self/status'):
        if line.startswith('VmHWM:'):
            return int(line.split()[1]) / 1024
before = hwm()
t = time.perf_counter()
parsed = parse_ort_trace(sys.argv[1])
elapsed = time.perf_counter() - t
print(json.dumps({"s": elapsed, "peak_mib": hwm(), "base_mib": before,
                  "layers": len(parsed.layers), "events": parsed.n_events}))
"""


def parse_in_child(path: Path) -> dict[str, Any]:
    """Parse in a fresh process, so its peak memory is the parser's alone."""
    out = subprocess.run(
        [sys.executable, "-c", _PARSE_CHILD, str(path)], check=True, capture_output=True, text=True
    )
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--provider", default="cpu")
    parser.add_argument("--model", default="resnet18")
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--iterations", type=int, default=100)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=3, help="alternating activity/bare pairs")
    parser.add_argument("--trace-nodes", type=int, default=1000, help="nodes of the 20-run trace")
    parser.add_argument("--synthetic-events", type=int, default=240_000)
    parser.add_argument("--save-report", type=Path, default=None)
    parser.add_argument("--save-trace", type=Path, default=None)
    args = parser.parse_args()
    provider = provider_name(args.provider)
    figures: dict[str, Any] = {"provider": provider, "model": args.model, "batch": args.batch}

    with tempfile.TemporaryDirectory(prefix="nsdl-bench-") as tmp:
        work = Path(tmp)
        model_path = work / f"{args.model}_b{args.batch}.onnx"
        onnx.save(build_model(args.model, args.batch), model_path)

        # 1 + 2: activity vs bare loop, alternating to spread machine noise over both.
        activity, bare, node_sums, profiled = [], [], [], []
        report = None
        for i in range(args.repeats):
            t = time.perf_counter()
            report = profile_ort(
                model_path,
                provider=provider,
                iterations=args.iterations,
                warmup=args.warmup,
                trace_path=work / f"trace_{i}.json",
            )
            activity_wall = time.perf_counter() - t
            activity.append(float(report.latency["p50"]))
            node_sums.append(float(np.median(report.metadata["node_sum_ms"])))
            profiled.append(float(np.median(report.metadata["profiled_run_ms"])))
            bare.append(
                statistics.median(
                    bare_loop(model_path, provider, args.iterations, args.warmup, seed=0)
                )
            )
            print(
                f"repeat {i}: activity p50 {activity[-1]:.3f} ms, bare p50 {bare[-1]:.3f} ms, "
                f"profiled run {profiled[-1]:.3f} ms, node sum {node_sums[-1]:.3f} ms "
                f"(activity wall {activity_wall:.1f} s)"
            )
        assert report is not None
        a, b = statistics.median(activity), statistics.median(bare)
        figures.update(
            activity_p50_ms=a,
            bare_p50_ms=b,
            activity_vs_bare_pct=100 * (a - b) / b,
            node_sum_ms=statistics.median(node_sums),
            node_sum_vs_e2e=statistics.median(node_sums) / a,
            profiled_run_ms=statistics.median(profiled),
            profiler_overhead=statistics.median(profiled) / a,
            device=report.metadata.get("device"),
            ort_version=report.metadata.get("runtime_version"),
            layers=len(report.layers),
        )
        print(
            f"end-to-end p50: activity {a:.3f} ms vs bare loop {b:.3f} ms "
            f"({figures['activity_vs_bare_pct']:+.2f}%, goal within 3%)"
        )
        print(
            f"sum of per-node times {figures['node_sum_ms']:.3f} ms = "
            f"{figures['node_sum_vs_e2e']:.2f}x end-to-end; profiled run "
            f"{figures['profiled_run_ms']:.3f} ms = {figures['profiler_overhead']:.2f}x bare"
        )
        if args.save_report:
            report.save(args.save_report)
            print(f"report saved: {args.save_report}")
        if args.save_trace:
            args.save_trace.write_bytes(Path(report.metadata["trace_path"]).read_bytes())

        # 3: a real onnxruntime trace of ~20,000 node events (20 runs of a synthetic DAG).
        dag_path = work / "dag.onnx"
        onnx.save(examples.synthetic_dag(args.trace_nodes), dag_path)
        dag = profile_ort(
            dag_path,
            iterations=20,
            warmup=0,
            graph_optimization=False,
            trace_path=work / "dag_trace.json",
        )
        trace = Path(dag.metadata["trace_path"])
        t = time.perf_counter()
        parsed = parse_ort_trace(trace)
        figures.update(
            real_trace_events=parsed.n_events,
            real_trace_mib=trace.stat().st_size / 2**20,
            real_trace_parse_s=time.perf_counter() - t,
        )
        print(
            f"real trace: {parsed.n_events} events, {figures['real_trace_mib']:.1f} MiB, "
            f"parsed in {figures['real_trace_parse_s']:.3f} s"
        )

        # 4: synthetic trace of the big case.
        if args.synthetic_events:
            big = work / "big_trace.json"
            n_runs = 20
            size = write_synthetic_trace(big, args.synthetic_events // n_runs, n_runs)
            result = parse_in_child(big)
            figures.update(
                synthetic_events=result["events"],
                synthetic_mib=size / 2**20,
                synthetic_parse_s=result["s"],
                synthetic_parse_peak_mib=result["peak_mib"],
                synthetic_parse_base_mib=result["base_mib"],
            )
            print(
                f"synthetic trace: {result['events']} events, {size / 2**20:.0f} MiB, parsed in "
                f"{result['s']:.2f} s, peak RSS {result['peak_mib']:.0f} MiB "
                f"(before parsing {result['base_mib']:.0f} MiB)"
            )
    print(json.dumps({"bench": "profiling", **figures}))


if __name__ == "__main__":
    main()
