"""FP16 and sanitize on every ONNX backend node test case (~1,900 models).

A child process (this file run as a script) converts or sanitizes each case and runs the
results in onnxruntime, one JSON line per case, so a crash inside onnxruntime costs one
case and names it instead of ending the test session. Each test has its own child, one per
transform, so parallel workers (pytest-xdist) run the two at once. The cases are read from
the files generated once per session for them and tests/test_backend_roundtrip.py
(tests/_backend_cases.py), and every onnxruntime session runs on one thread. Cases
onnxruntime cannot run in the original are skipped. Checked:

- FP16: the converted model loads and runs; its float outputs stay within 1e-2 of the
  float32 model run on the same (float16-representable) inputs, relative to the output's
  largest magnitude; elements beyond float16's range are left out of the comparison.
- sanitize: the result loads and runs and gives identical outputs (random operators: same
  shapes and dtypes). Where folding materializes float16 constants, onnxruntime's CPU, which
  runs float16 chains in float32 internally, may differ in the last float16 bit: those
  are compared with a float16 tolerance and listed.

Lists land in test-output/transforms_corpus/.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
import warnings
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _backend_cases import case_data, node_cases
from _scratch import scratch_parent

FP16_MAX = 65504.0
FP16_LIMIT = 1e-2
RANDOM_OPS = frozenset(
    {
        "RandomNormal",
        "RandomNormalLike",
        "RandomUniform",
        "RandomUniformLike",
        "Bernoulli",
        "Multinomial",
        "Dropout",
    }
)


# ------------------------------------------------------------------ worker
def _session(model: Any) -> Any:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 4
    # one thread: a thread pool per session (~3,400 sessions) and its spinning cost more CPU
    # than these tiny models' runs
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    data = model if isinstance(model, (str, Path)) else model.SerializeToString()
    return ort.InferenceSession(
        str(data) if isinstance(data, Path) else data, options, providers=["CPUExecutionProvider"]
    )


def _fp16_error(reference: list[Any], converted: list[Any]) -> float:
    worst = 0.0
    for x, y in zip(reference, converted, strict=True):
        if not isinstance(x, np.ndarray) or x.dtype.kind != "f" or x.size == 0:
            continue
        a = x.astype(np.float64)
        b = np.asarray(y).astype(np.float64)
        if a.shape != b.shape:
            return float("inf")
        valid = np.isfinite(a) & (np.abs(a) <= FP16_MAX)
        if not valid.any():
            continue
        scale = max(float(np.max(np.abs(a[valid]))), 1e-6)
        worst = max(worst, float(np.max(np.abs(a[valid] - b[valid]))) / scale)
    return worst


def _same(a: list[Any], b: list[Any], random: bool) -> str:
    """'identical', 'close' (float16 tolerance) or a description of the difference."""
    verdict = "identical"
    for x, raw in zip(a, b, strict=True):
        if not isinstance(x, np.ndarray):
            continue
        y = np.asarray(raw)
        if x.shape != y.shape or x.dtype != y.dtype:
            return f"shape/dtype {x.shape}/{x.dtype} vs {y.shape}/{y.dtype}"
        if random:
            continue
        equal_nan = x.dtype.kind in "fc"
        if np.array_equal(x, y, equal_nan=equal_nan):
            continue
        if x.dtype == np.float16 and np.allclose(x, y, rtol=2e-3, atol=1e-3, equal_nan=True):
            verdict = "close"
            continue
        return "values differ"
    return verdict


def _case(case: Path, folder: Path, transform: str) -> dict[str, Any]:
    """One case folder (read only) through `transform`; its results go to `folder`."""
    import onnx

    record: dict[str, Any] = {"name": case.name}
    source = case / "model.onnx"
    model = onnx.load(source)
    inputs, _expected = case_data(case, model)
    try:
        original = _session(model)
        names = [i.name for i in original.get_inputs()]
        feeds = dict(zip(names, inputs, strict=False))
        expected = original.run(None, feeds)
    except Exception:
        record["status"] = "ort_cannot_run_original"
        return record
    random = any(n.op_type in RANDOM_OPS for n in model.graph.node)
    if transform == "sanitize":
        _sanitize_case(record, model, (source, folder), (feeds, expected), random)
    else:
        _fp16_case(record, original, (source, folder), feeds, random)
    record["status"] = "ran"
    return record


def _sanitize_case(
    record: dict[str, Any],
    model: Any,
    paths: tuple[Path, Path],
    run: tuple[dict[str, Any], list[Any]],
    random: bool,
) -> None:
    feeds, expected = run
    source, folder = paths
    from nsdl_jupyter.transforms import sanitize

    try:
        status = sanitize(source, folder / "sanitized.onnx", overwrite=True)  # scratch, per case
        result = _session(folder / "sanitized.onnx")
        kept = {i.name for i in result.get_inputs()}
        record["sanitize"] = _same(
            expected, result.run(None, {k: v for k, v in feeds.items() if k in kept}), random
        )
        record["nodes"] = [len(model.graph.node), _count(folder / "sanitized.onnx")]
        record["sanitize_warnings"] = len(status.warnings)
    except Exception as error:
        record["sanitize"] = f"failed: {type(error).__name__}: {str(error)[:300]}"


def _fp16_case(
    record: dict[str, Any],
    original: Any,
    paths: tuple[Path, Path],
    feeds: dict[str, Any],
    random: bool,
) -> None:
    source, folder = paths
    from nsdl_jupyter.transforms import convert_to_fp16

    try:
        status = convert_to_fp16(
            source, folder / "fp16.onnx", validate=False, overwrite=True
        )  # compared here; scratch, per case
        converted = _session(folder / "fp16.onnx")
        rounded = {
            k: v.astype(np.float16).astype(np.float32)
            if isinstance(v, np.ndarray) and v.dtype == np.float32
            else v
            for k, v in feeds.items()
        }
        reference = original.run(None, rounded)
        fp16_types = {i.name for i in converted.get_inputs() if i.type == "tensor(float16)"}
        fp16_feeds = {k: v.astype(np.float16) if k in fp16_types else v for k, v in rounded.items()}
        outputs = converted.run(None, fp16_feeds)
        record["fp16"] = "converted" if status.counts["nodes_converted"] else "unchanged"
        record["fp16_error"] = 0.0 if random else _fp16_error(reference, outputs)
    except Exception as error:
        record["fp16"] = f"failed: {type(error).__name__}: {str(error)[:300]}"


def _count(path: Path) -> int:
    import onnx

    return len(onnx.load(str(path)).graph.node)


def worker(cases: list[Path], output: Path, transform: str) -> None:
    with (
        tempfile.TemporaryDirectory(prefix="nsdl-corpus-", dir=scratch_parent()) as scratch,
        output.open("w") as stream,
    ):
        for case in cases:
            stream.write(json.dumps({"start": case.name}) + "\n")
            stream.flush()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                stream.write(json.dumps(_case(case, Path(scratch), transform)) + "\n")
            stream.flush()


# -------------------------------------------------------------------- tests
def _corpus(
    tmp_path_factory: pytest.TempPathFactory, test_output_dir: Path, transform: str
) -> dict[str, dict[str, Any]]:
    """Every case through `transform` in a child process: name -> record."""
    cases = node_cases(tmp_path_factory)
    folder = test_output_dir / "transforms_corpus"
    folder.mkdir(exist_ok=True)
    lines = folder / f"{transform}_cases.jsonl"
    listed = folder / f"{transform}_case_folders.txt"
    listed.write_text("\n".join(str(case) for case in cases))
    started = time.perf_counter()
    command = [sys.executable, __file__, "--cases", str(listed), "--out", str(lines)]
    done = subprocess.run(
        [*command, "--transform", transform],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    records: dict[str, dict[str, Any]] = {}
    last = None
    for line in lines.read_text().splitlines():
        entry = json.loads(line)
        if "start" in entry:
            last = entry["start"]
        else:
            records[entry["name"]] = entry
            last = None
    assert done.returncode == 0 and last is None, (
        f"the corpus worker died in case {last} (exit {done.returncode}): {done.stderr[-2000:]}"
    )
    print(f"corpus ({transform}): {len(records)} cases in {time.perf_counter() - started:.0f} s")
    return records


@pytest.mark.slow
def test_fp16_every_backend_case_runs_and_stays_close(
    tmp_path_factory: pytest.TempPathFactory, test_output_dir: Path
) -> None:
    corpus = _corpus(tmp_path_factory, test_output_dir, "fp16")
    ran = [r for r in corpus.values() if r["status"] == "ran"]
    failed = {r["name"]: r["fp16"] for r in ran if str(r["fp16"]).startswith("failed")}
    errors = {r["name"]: r.get("fp16_error", 0.0) for r in ran if "fp16_error" in r}
    far = {name: e for name, e in errors.items() if e > FP16_LIMIT}
    tally = Counter(r["fp16"] if not str(r["fp16"]).startswith("failed") else "failed" for r in ran)
    summary = {
        "cases": len(corpus),
        "ran": len(ran),
        "tally": dict(tally),
        "max_relative_error": max(errors.values(), default=0.0),
        "median_relative_error": float(np.median([e for e in errors.values() if e > 0] or [0])),
        "failed": failed,
        "beyond_limit": far,
    }
    (test_output_dir / "transforms_corpus" / "fp16.json").write_text(json.dumps(summary, indent=1))
    print(f"fp16: {dict(tally)}, max relative error {summary['max_relative_error']:.2e}")
    assert tally["converted"] > 1000
    assert not failed, failed
    assert not far, far


@pytest.mark.slow
def test_sanitize_every_backend_case_runs_with_identical_outputs(
    tmp_path_factory: pytest.TempPathFactory, test_output_dir: Path
) -> None:
    corpus = _corpus(tmp_path_factory, test_output_dir, "sanitize")
    ran = [r for r in corpus.values() if r["status"] == "ran"]
    verdicts = Counter(
        r["sanitize"] if r["sanitize"] in ("identical", "close") else "other" for r in ran
    )
    wrong = {r["name"]: r["sanitize"] for r in ran if r["sanitize"] not in ("identical", "close")}
    close = sorted(r["name"] for r in ran if r["sanitize"] == "close")
    before = sum(r["nodes"][0] for r in ran if "nodes" in r)
    after = sum(r["nodes"][1] for r in ran if "nodes" in r)
    summary = {
        "verdicts": dict(verdicts),
        "nodes_before": before,
        "nodes_after": after,
        "float16_tolerance": close,
        "wrong": wrong,
    }
    (test_output_dir / "transforms_corpus" / "sanitize.json").write_text(
        json.dumps(summary, indent=1)
    )
    print(f"sanitize: {dict(verdicts)}, nodes {before} -> {after}")
    assert not wrong, wrong
    assert all("fp16" in name or "float16" in name or "half" in name for name in close), close
    assert after < before * 0.5


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", type=Path, required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--transform", choices=["fp16", "sanitize"], required=True)
    arguments = parser.parse_args()
    cases = [Path(line) for line in arguments.cases.read_text().splitlines()]
    worker(cases, arguments.out, arguments.transform)
