"""Global modifications against their peers, on real architectures and the ONNX backend
node tests (models built in code, random weights).

- sanitize vs onnxsim, onnxslim and `polygraphy surgeon sanitize --fold-constants`: nodes
  left, seconds, and whether outputs stay identical (onnxruntime, graph optimizations off);
- FP16 vs onnxconverter-common's `convert_float_to_float16`: does onnxruntime load and run
  the result, and the max relative error against float32 (max |a-b| / max |a|);
- the same on every ONNX backend node case (totals; cases where a peer removes more nodes);
- what FP16 validation costs (`validate=True`: source and result run by onnxruntime in a
  child, bisection for nodes to keep float32): seconds on top of the conversion, rounds,
  nodes kept; on the models above and, with --exports, the real torch exports of
  tests/fixtures (and the ViT-B/16 whose float16 version crashes onnxruntime).

A peer that is not installed is reported as such. Prints tables, then one JSON line.

Sanitize on the real torch exports (tests/fixtures/exports, weights refilled by
tests/real_exports.py) gets one summary table: nodes and seconds of each tool per model
(alone, in a few minutes, with --only-exports; --models picks exports). Ours, onnxsim and
onnxslim run --repeat N times each (default 5), in turns, and the median is shown: the goal
is ours below onnxsim on every export. On a shared machine, run it when it is quiet.

What a time covers: every tool goes from the input file to an output file on disk, page
cache warm (the reference run read the input just before).
- ours: `sanitize(src, out)`: load, passes, atomic save (write beside, fsync, rename, fsync
  the folder) and onnx's full checker on the result (in memory, its weights as typed
  inputs). The folding child is started once per kernel, like an import: a warm-up sanitize
  before the first model starts it.
- onnxsim: `simplify(src, output_path=out)` where onnxsim has `output_path` (else
  `simplify(src)` and `onnx.save`): its C++ load, passes, write, the checker on the written
  file, and the structure-only read-back its API returns. No Z3 proof.
- onnxslim: `slim(src)` and `onnx.save`.
- polygraphy: its CLI, so Python's start and imports are in its time.
The peers do not fsync what they write; here each peer's output file and its folder are
fsynced after it returns (`_durable`): the durability sanitize's save guarantees (a crash or
power cut after `sanitize` returns never leaves a missing or truncated model), and work that
costs milliseconds per model on this virtual disk, more while others use it. Without it the
small exports compared a durable save with a write to the page cache.

    python bench/bench_transforms.py [--no-corpus] [--no-dag] [--exports] [--only-exports]
        [--models a,b] [--repeat N] [--no-polygraphy]
"""

from __future__ import annotations

import argparse
import contextlib
import inspect
import io
import logging
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
from _common import emit_json, fmt_seconds, print_table

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the tests' models

from nsdl_jupyter.examples import bert_base, resnet50, small_transformer, synthetic_dag
from nsdl_jupyter.transforms import convert_to_fp16, sanitize
from tests._text_models import LOCAL_FUNCTION_CONSTANT, save_text

PEER_TIMEOUT_S = 600
POLYGRAPHY = str(Path(sys.executable).with_name("polygraphy"))
RANDOM_OPS = {"RandomNormal", "RandomNormalLike", "RandomUniform", "RandomUniformLike"}


# ------------------------------------------------------------------ helpers
def _session(model: Path | onnx.ModelProto, optimize: bool = False) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.log_severity_level = 4
    if not optimize:
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    data = str(model) if isinstance(model, Path) else model.SerializeToString()
    return ort.InferenceSession(data, options, providers=["CPUExecutionProvider"])


def _feeds(session: ort.InferenceSession) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    feeds = {}
    for spec in session.get_inputs():
        shape = [d if isinstance(d, int) else 2 for d in spec.shape]
        if "int" in spec.type:
            feeds[spec.name] = rng.integers(0, 2, shape).astype(np.int64)
        else:
            feeds[spec.name] = rng.standard_normal(shape).astype(np.float32)
    return feeds


def _count(graph: onnx.GraphProto) -> int:
    """Nodes of a graph and its subgraphs (an inlined If branch is not a loss)."""
    total = 0
    for node in graph.node:
        total += 1
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                total += _count(attr.g)
            for sub in attr.graphs:
                total += _count(sub)
    return total


def _nodes(path: Path) -> int:
    return _count(onnx.load(str(path), load_external_data=False).graph)


def _quiet(fn: Callable[[], Any]) -> Any:
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        return fn()


def _peer(module: str) -> bool:
    try:
        __import__(module)
    except ImportError:
        print(f"peer not installed: {module} (pip install it into the dev environment)")
        return False
    return True


def _diff(reference: list[np.ndarray], other: list[np.ndarray]) -> float:
    worst = 0.0
    for x, y in zip(reference, other, strict=True):
        if x.dtype.kind in "fc":
            worst = max(worst, float(np.max(np.abs(x - np.asarray(y).astype(x.dtype)), initial=0)))
        elif not np.array_equal(x, y):
            return float("inf")
    return worst


def _relative(reference: list[np.ndarray], other: list[np.ndarray]) -> float:
    worst = 0.0
    for x, y in zip(reference, other, strict=True):
        if x.dtype.kind != "f":
            continue
        scale = max(float(np.max(np.abs(x))), 1e-6)
        worst = max(worst, float(np.max(np.abs(x - y.astype(np.float32)))) / scale)
    return worst


# --------------------------------------------------------------- sanitize
def _sanitize_peers(
    source: Path, folder: Path, repeat: int = 1, polygraphy: bool = True
) -> list[dict[str, Any]]:
    """Each tool turns the file `source` into a file (see the module docstring for what each
    timing covers). Ours, onnxsim and onnxslim run `repeat` times, in turns (ours, onnxsim,
    onnxslim, ours, ...) so a change in the machine's load hits all three alike; the median
    is kept. Fusion and polygraphy (its CLI starts Python) run once."""
    reference_session = _session(source)
    feeds = _feeds(reference_session)
    reference = reference_session.run(None, feeds)
    tools: dict[str, tuple[Callable[[Path], None], int]] = {
        "nsdl_jupyter": (lambda out: sanitize(source, out), repeat)
    }
    if any(n.op_type == "BatchNormalization" for n in onnx.load(str(source)).graph.node):
        tools["nsdl_jupyter fuse_batchnorm"] = (
            lambda out: sanitize(source, out, fuse_batchnorm=True),
            1,
        )
    if _peer("onnxsim"):
        tools["onnxsim"] = (_durable(_onnxsim(source)), repeat)
    if _peer("onnxslim"):
        import onnxslim

        def slim(out: Path) -> None:
            onnx.save(_quiet(lambda: onnxslim.slim(str(source))), str(out))

        tools["onnxslim"] = (_durable(slim), repeat)
    if polygraphy and _peer("onnx_graphsurgeon"):

        def surgeon(out: Path) -> None:
            done = subprocess.run(
                [
                    POLYGRAPHY,
                    "surgeon",
                    "sanitize",
                    "--fold-constants",
                    str(source),
                    "-o",
                    str(out),
                ],
                capture_output=True,
                text=True,
                timeout=PEER_TIMEOUT_S,
                check=False,
                env={**os.environ, "TMPDIR": str(folder)},  # it leaves model copies there
            )
            if done.returncode != 0:
                raise RuntimeError(done.stderr.strip().splitlines()[-1])

        tools["polygraphy (CLI)"] = (_durable(surgeon), 1)

    outputs = {name: folder / f"{source.stem}_{index}.onnx" for index, name in enumerate(tools)}
    times: dict[str, list[float]] = {name: [] for name in tools}
    errors: dict[str, str] = {}
    for turn in range(max(runs for _, runs in tools.values())):
        for name, (run, runs) in tools.items():
            if turn >= runs or name in errors:
                continue
            start = time.perf_counter()
            try:
                run(outputs[name])
            except Exception as error:
                errors[name] = str(error)[:60]
                continue
            times[name].append(time.perf_counter() - start)

    rows: list[dict[str, Any]] = [
        {"tool": "original", "nodes": _nodes(source), "seconds": "", "identical": "", "_s": 0}
    ]
    for name in tools:
        if name in errors:
            row = {"tool": name, "nodes": "-", "seconds": "-", "identical": errors[name]}
            rows.append(row)
            continue
        seconds = statistics.median(times[name])
        try:
            diff = _diff(reference, _session(outputs[name]).run(None, feeds))
            identical = "yes" if diff == 0 else f"max diff {diff:.2g}"
        except Exception as error:
            identical = str(error)[:60]
        rows.append(
            {
                "tool": name,
                "nodes": _nodes(outputs[name]),
                "seconds": fmt_seconds(seconds),
                "identical": identical,
                "_s": seconds,
                "_runs": len(times[name]),
            }
        )
    return rows


def _durable(run: Callable[[Path], None]) -> Callable[[Path], None]:
    """`run`, then its output made as durable as sanitize's save makes ours: the file and
    its folder fsynced (the module docstring says why)."""

    def durable(out: Path) -> None:
        run(out)
        for path in (out, out.parent):
            handle = os.open(path, os.O_RDONLY)
            try:
                os.fsync(handle)
            finally:
                os.close(handle)

    return durable


def _onnxsim(source: Path) -> Callable[[Path], None]:
    """onnxsim's fastest file-to-file path: `output_path` (it writes the result itself, no
    second save) where this onnxsim has it, and no Z3 proof (`certify`) where it has that."""
    import onnxsim

    options = inspect.signature(onnxsim.simplify).parameters
    extra = {"certify": False} if "certify" in options else {}

    def simplify(out: Path) -> None:
        if "output_path" in options:
            _quiet(lambda: onnxsim.simplify(str(source), output_path=str(out), **extra))
        else:
            model, _ = _quiet(lambda: onnxsim.simplify(str(source), **extra))
            onnx.save(model, str(out))

    return simplify


# ------------------------------------------------------------------- fp16
def _fp16_peers(source: Path, folder: Path) -> list[dict[str, Any]]:
    reference_session = _session(source, optimize=True)
    feeds = _feeds(reference_session)
    reference = reference_session.run(None, feeds)
    rows = []

    def record(name: str, convert: Callable[[Path], None]) -> None:
        out = folder / f"{source.stem}_{name}_fp16.onnx"
        start = time.perf_counter()
        try:
            convert(out)
        except Exception as error:
            rows.append({"tool": name, "runs": "convert failed", "max_rel_error": str(error)[:60]})
            return
        seconds = time.perf_counter() - start
        try:
            session = _session(out, optimize=True)
            halves = {i.name for i in session.get_inputs() if i.type == "tensor(float16)"}
            converted = {k: v.astype(np.float16) if k in halves else v for k, v in feeds.items()}
            error = _relative(reference, session.run(None, converted))
            rows.append(
                {
                    "tool": name,
                    "runs": "yes",
                    "max_rel_error": f"{error:.2e}",
                    "seconds": fmt_seconds(seconds),
                    "_e": error,
                }
            )
        except Exception as problem:
            text = str(problem).replace("\n", " ")
            rows.append({"tool": name, "runs": "NO", "max_rel_error": text[:90], "seconds": ""})

    record("nsdl_jupyter", lambda out: convert_to_fp16(source, out, validate=False))
    if _peer("onnxconverter_common"):
        from onnxconverter_common import float16

        def peer(out: Path) -> None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model = float16.convert_float_to_float16(onnx.load(str(source)))
            onnx.save(model, str(out))

        record("onnxconverter-common", peer)
    return rows


def _validation_cost(models: dict[str, Path], folder: Path) -> list[dict[str, Any]]:
    """FP16 without and with validation: the seconds validation adds, its rounds, the nodes
    it kept float32 and whether the result passed."""
    rows = []
    for name, source in models.items():
        start = time.perf_counter()
        convert_to_fp16(source, folder / f"{name}_plain16.onnx", validate=False)
        plain = time.perf_counter() - start
        start = time.perf_counter()
        status = convert_to_fp16(source, folder / f"{name}_valid16.onnx")
        validated = time.perf_counter() - start
        not_validated = any(w.startswith("not validated") for w in status.warnings)
        rows.append(
            {
                "model": name,
                "convert": fmt_seconds(plain),
                "with validation": fmt_seconds(validated),
                "validation adds": fmt_seconds(validated - plain),
                "rounds": status.counts["validation_rounds"],
                "kept fp32": status.counts["nodes_kept_by_validation"],
                "result": "not validated" if not_validated else ("ok" if status.ok else "FAILED"),
                "_plain": plain,
                "_validated": validated,
            }
        )
        print(f"  {name}: {rows[-1]['with validation']} ({rows[-1]['rounds']} rounds)", flush=True)
    return rows


def _real_exports(folder: Path, only: list[str] | None = None) -> dict[str, Path]:
    """The weight-stripped torch exports, refilled, and the ViT that crashes onnxruntime
    (all of them, or those named in `only`)."""
    root = Path(__file__).resolve().parent.parent
    from tests import real_exports

    wanted = [*real_exports.names(), "vit_b_16_dynamic_batch"]
    unknown = sorted(set(only or []) - set(wanted))
    if unknown:
        raise SystemExit(f"unknown exports {unknown}: choose from {wanted}")
    paths = {}
    for name in wanted if only is None else [n for n in wanted if n in only]:
        if name != "vit_b_16_dynamic_batch":
            paths[name] = real_exports.save(name, folder)
            continue
        vit = onnx.load(str(root / "tests/fixtures/fp16/vit_b_16_dynamic_batch_torchscript.onnx"))
        real_exports.refill(vit)
        paths[name] = folder / f"{name}.onnx"
        onnx.save(vit, str(paths[name]))
    return paths


def _special_models(folder: Path) -> dict[str, Path]:
    """Small models with the structures converters get wrong (If, local functions)."""
    texts = {
        "if_subgraph": """<ir_version: 8, opset_import: ["": 18]>
            g (float[4] x) => (float[4] y) {
                s = ReduceSum<keepdims = 0>(x)
                z = Constant<value_float: float = 0.0>()
                c = Greater(s, z)
                y = If(c) <
                    then_branch = t () => (float[4] a) { a = Mul(x, x) },
                    else_branch = e () => (float[4] b) {
                        h = Constant<value_float: float = 0.5>()
                        b = Mul(x, h)
                    }
                >
            }""",
        "local_function": LOCAL_FUNCTION_CONSTANT,
    }
    return {name: save_text(folder, text, f"{name}.onnx") for name, text in texts.items()}


def _fused_bert(source: Path, folder: Path) -> Path | None:
    try:
        from onnxruntime.transformers.optimizer import optimize_model
    except ImportError:
        print("onnxruntime.transformers is not available: no ORT-fused BERT")
        return None
    logging.disable(logging.WARNING)
    fused = _quiet(
        lambda: optimize_model(
            str(source), model_type="bert", num_heads=12, hidden_size=768, opt_level=0
        )
    )
    path = folder / "bert_base_ort_fused.onnx"
    fused.save_model_to_file(str(path))
    return path


# ----------------------------------------------------------------- corpus
def _corpus(folder: Path) -> dict[str, Any]:
    from onnx.backend.test.case import node

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = node.collect_testcases(None)
    has_occ = _peer("onnxconverter_common")
    # Each peer's simplified graph of a model (it may raise: then it removed nothing).
    peers: dict[str, Callable[[onnx.ModelProto], onnx.GraphProto]] = {}
    if _peer("onnxsim"):
        import onnxsim

        peers["onnxsim"] = lambda model: onnxsim.simplify(model)[0].graph
    if _peer("onnx_graphsurgeon"):
        from polygraphy.backend.onnx import fold_constants

        peers["polygraphy"] = lambda model: (
            fold_constants(
                onnx.ModelProto.FromString(model.SerializeToString()), error_ok=True
            ).graph
        )
    totals = dict.fromkeys(
        [
            "cases",
            "original",
            "ours",
            "onnxsim",
            "polygraphy",
            "ours_s",
            "onnxsim_s",
            "polygraphy_s",
            "fp16_runs",
            "fp16_fails",
            "occ_runs",
            "occ_fails",
        ],
        0.0,
    )
    fewer: dict[str, list[str]] = {"onnxsim": [], "polygraphy": []}
    worst_fp16 = 0.0
    source = folder / "case.onnx"
    logging.disable(logging.WARNING)
    for case in cases:
        try:
            original = _session(case.model)
            feeds = dict(
                zip([i.name for i in original.get_inputs()], case.data_sets[0][0], strict=False)
            )
            original.run(None, feeds)
        except Exception:
            continue
        totals["cases"] += 1
        onnx.save(case.model, str(source))
        count = _count(case.model.graph)
        totals["original"] += count
        start = time.perf_counter()
        sanitize(source, folder / "ours.onnx", overwrite=True)
        totals["ours_s"] += time.perf_counter() - start
        ours = _nodes(folder / "ours.onnx")
        totals["ours"] += ours
        for peer, simplify in peers.items():
            start = time.perf_counter()
            try:
                nodes = _count(_quiet(lambda simplify=simplify, model=case.model: simplify(model)))
            except Exception:
                nodes = count
            totals[f"{peer}_s"] += time.perf_counter() - start
            totals[peer] += nodes
            if nodes < ours:
                fewer[peer].append(case.name)
        fp16_ok, error = _fp16_case(source, folder / "ours16.onnx", feeds, original, ours=True)
        totals["fp16_runs" if fp16_ok else "fp16_fails"] += 1
        worst_fp16 = max(worst_fp16, error)
        if has_occ:
            ok, _ = _fp16_case(source, folder / "occ16.onnx", feeds, original, ours=False)
            totals["occ_runs" if ok else "occ_fails"] += 1
    return {"totals": totals, "fewer": fewer, "fp16_max_rel_error": worst_fp16}


def _fp16_case(
    source: Path,
    out: Path,
    feeds: dict[str, Any],
    original: ort.InferenceSession,
    *,
    ours: bool,
) -> tuple[bool, float]:
    try:
        if ours:
            convert_to_fp16(source, out, validate=False, overwrite=True)
        else:
            from onnxconverter_common import float16

            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                onnx.save(float16.convert_float_to_float16(onnx.load(str(source))), str(out))
        session = _session(out)
        halves = {i.name for i in session.get_inputs() if i.type == "tensor(float16)"}
        rounded = {
            k: v.astype(np.float16).astype(np.float32)
            if isinstance(v, np.ndarray) and v.dtype == np.float32
            else v
            for k, v in feeds.items()
        }
        outputs = session.run(
            None, {k: v.astype(np.float16) if k in halves else v for k, v in rounded.items()}
        )
        reference = original.run(None, rounded)
    except Exception:
        return False, 0.0
    worst = 0.0
    for x, y in zip(reference, outputs, strict=False):
        if isinstance(x, np.ndarray) and x.dtype.kind == "f" and x.size:
            a, b = x.astype(np.float64), np.asarray(y).astype(np.float64)
            valid = np.isfinite(a) & (np.abs(a) <= 65504)
            if valid.any() and a.shape == b.shape:
                scale = max(float(np.max(np.abs(a[valid]))), 1e-6)
                worst = max(worst, float(np.max(np.abs(a[valid] - b[valid]))) / scale)
    return True, worst


# ---------------------------------------------------------- real exports
def _sanitize_exports(
    folder: Path, repeat: int = 1, only: list[str] | None = None, polygraphy: bool = True
) -> dict[str, Any]:
    """sanitize and its peers on every real torch export (or those in `only`): one row per
    model, with whether ours was faster than onnxsim and onnxslim (medians)."""
    warm = folder / "warm_up.onnx"
    onnx.save(small_transformer(), str(warm))
    sanitize(warm, folder / "warm_up_out.onnx")  # starts the folding child (once per kernel)
    table, results = [], {}
    for name, path in _real_exports(folder, only).items():
        results_folder = Path(tempfile.mkdtemp(dir=folder))
        rows = {r["tool"]: r for r in _sanitize_peers(path, results_folder, repeat, polygraphy)}
        shutil.rmtree(results_folder)  # five copies of GPT-2's weights per model add up
        path.unlink()
        row: dict[str, Any] = {"model": name, "original": rows["original"]["nodes"]}
        for tool, label in _TOOLS.items():
            found = rows.get(tool)
            row[label] = found["nodes"] if found else "-"
            row[f"{label} s"] = found["seconds"] if found else "-"
        ours = rows["nsdl_jupyter"]
        peers = [rows[t]["nodes"] for t in _TOOLS if t in rows and t != "nsdl_jupyter"]
        peers = [n for n in peers if isinstance(n, int)]
        row["ours <= min peer"] = "yes" if peers and ours["nodes"] <= min(peers) else "NO"
        for peer in ("onnxsim", "onnxslim"):
            theirs = rows.get(peer, {}).get("_s")
            faster = "-" if theirs is None else "yes" if ours.get("_s", 1e9) < theirs else "NO"
            row[f"ours s < {peer} s"] = faster
        row["identical"] = ours["identical"]
        table.append(row)
        results[name] = {
            r["tool"]: {
                "nodes": r["nodes"],
                "seconds": r.get("_s"),
                "runs": r.get("_runs"),
                "identical": r["identical"],
            }
            for r in rows.values()
        }
    print_table(f"sanitize on real torch exports (nodes, median of {repeat} seconds)", table)
    return results


_TOOLS = {
    "nsdl_jupyter": "ours",
    "onnxsim": "onnxsim",
    "onnxslim": "onnxslim",
    "polygraphy (CLI)": "polygraphy",
}


# ------------------------------------------------------------------- main
def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-corpus", action="store_true", help="skip the backend node tests")
    parser.add_argument("--no-dag", action="store_true", help="skip the 20,000-node DAG")
    parser.add_argument(
        "--exports",
        action="store_true",
        help="FP16 validation cost on the real torch exports too (minutes)",
    )
    parser.add_argument(
        "--only-exports", action="store_true", help="only sanitize on the real torch exports"
    )
    parser.add_argument(
        "--models",
        help="comma-separated exports for --only-exports (default: all), e.g. gpt2_torchscript",
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=5,
        help="time ours, onnxsim and onnxslim this many times on each export, in turns, and "
        "show the median (default 5)",
    )
    parser.add_argument(
        "--no-polygraphy",
        action="store_true",
        help="leave polygraphy out of the exports table (its CLI takes seconds per model)",
    )
    args = parser.parse_args()
    ort.set_default_logger_severity(3)  # peers' own sessions warn about every shape merge
    folder = Path(tempfile.mkdtemp(prefix="bench-transforms-"))
    if args.only_exports:
        only = args.models.split(",") if args.models else None
        exports = _sanitize_exports(folder, args.repeat, only, not args.no_polygraphy)
        emit_json("transforms_exports", {"exports": exports})
        shutil.rmtree(folder)
        return
    models = {
        "resnet50": resnet50(),
        "resnet50_unfolded_bn": resnet50(fold_batchnorm=False),
        "bert_base": bert_base(),
        "small_transformer": small_transformer(),
    }
    if not args.no_dag:
        models["dag_20000"] = synthetic_dag(20000)
    paths = {}
    for name, proto in models.items():
        paths[name] = folder / f"{name}.onnx"
        onnx.save(proto, str(paths[name]))
    results: dict[str, Any] = {"sanitize": {}, "fp16": {}}

    for name, path in paths.items():
        rows = _sanitize_peers(path, folder)
        print_table(
            f"sanitize: {name}", [{k: v for k, v in r.items() if k[0] != "_"} for r in rows]
        )
        results["sanitize"][name] = {
            r["tool"]: {"nodes": r["nodes"], "seconds": r.get("_s")} for r in rows
        }

    fp16_models = {k: v for k, v in paths.items() if k != "dag_20000"}
    fp16_models.update(_special_models(folder))
    fused = _fused_bert(paths["bert_base"], folder)
    if fused is not None:
        fp16_models["bert_base_ort_fused"] = fused
    for name, path in fp16_models.items():
        rows = _fp16_peers(path, folder)
        print_table(f"fp16: {name}", [{k: v for k, v in r.items() if k[0] != "_"} for r in rows])
        results["fp16"][name] = {
            r["tool"]: {"runs": r["runs"], "max_rel_error": r.get("_e")} for r in rows
        }

    validation_models = dict(fp16_models)
    if args.exports:
        validation_models.update(_real_exports(folder))
    print("fp16 validation cost:")
    rows = _validation_cost(validation_models, folder)
    print_table("fp16 validation cost", [{k: v for k, v in r.items() if k[0] != "_"} for r in rows])
    results["fp16_validation"] = {
        r["model"]: {
            "convert_s": r["_plain"],
            "validated_s": r["_validated"],
            "rounds": r["rounds"],
            "kept": r["kept fp32"],
            "result": r["result"],
        }
        for r in rows
    }

    if not args.no_corpus:
        corpus = _corpus(folder)
        t = corpus["totals"]
        print_table(
            f"ONNX backend node tests: {int(t['cases'])} cases onnxruntime runs",
            [
                {"tool": "original", "nodes": int(t["original"]), "seconds": ""},
                {
                    "tool": "nsdl_jupyter sanitize",
                    "nodes": int(t["ours"]),
                    "seconds": fmt_seconds(t["ours_s"]),
                },
                {
                    "tool": "onnxsim",
                    "nodes": int(t["onnxsim"]),
                    "seconds": fmt_seconds(t["onnxsim_s"]),
                },
                {
                    "tool": "polygraphy fold_constants",
                    "nodes": int(t["polygraphy"]),
                    "seconds": fmt_seconds(t["polygraphy_s"]),
                },
            ],
        )
        for peer, names in corpus["fewer"].items():
            shown = ", ".join(names[:8]) + (" ..." if len(names) > 8 else "")
            print(f"cases where {peer} leaves fewer nodes than ours: {len(names)} {shown}")
        print_table(
            "FP16 on the same cases",
            [
                {
                    "tool": "nsdl_jupyter",
                    "runs": int(t["fp16_runs"]),
                    "fails": int(t["fp16_fails"]),
                    "max_rel_error": f"{corpus['fp16_max_rel_error']:.2e}",
                },
                {
                    "tool": "onnxconverter-common",
                    "runs": int(t["occ_runs"]),
                    "fails": int(t["occ_fails"]),
                    "max_rel_error": "",
                },
            ],
        )
        results["corpus"] = {
            **t,
            "fp16_max_rel_error": corpus["fp16_max_rel_error"],
            "fewer_than_onnxsim": len(corpus["fewer"]["onnxsim"]),
            "fewer_than_polygraphy": len(corpus["fewer"]["polygraphy"]),
        }
    results["exports"] = _sanitize_exports(folder, args.repeat, None, not args.no_polygraphy)
    emit_json("transforms", results)
    shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
