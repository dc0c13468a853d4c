"""Profile files as untrusted input: malformed reports, traces and trtexec exports end in typed
errors; one-line traces in bounded memory; atomic report saves; no home paths or host names."""

from __future__ import annotations

import copy
import json
import os
import platform
import random
import shutil
import subprocess
import sys
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper
from test_profiling_helpers import control_flow_model, shared_fixture

from nsdl_jupyter.profiling import (
    ProfileFileError,
    ProfileReport,
    ProfileSettingsError,
    ReportFormatError,
    TraceFormatError,
    TrtexecFormatError,
    load_ort_profile,
    load_trtexec,
    parse_ort_trace,
    profile_ort,
)

DEEP = "__deep__"  # replaced in the JSON text by 100,000 nested lists
WRONG_VALUES: list[Any] = [None, -1, 2**70, 1e308, "x", [], {"a": {"b": []}}, DEEP]
TRTEXEC = "mobilenet.qat.onnx.engine."


def _profiled_trace(folder: Path, model: onnx.ModelProto, runs: int, feed: np.ndarray) -> Path:
    """A real onnxruntime trace (tests may run onnxruntime in-process; the product never does)."""
    so = ort.SessionOptions()
    so.enable_profiling = True
    so.profile_file_prefix = str(folder / "trace")
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    name = sess.get_inputs()[0].name
    for _ in range(runs):
        sess.run(None, {name: feed})
    return Path(sess.end_profiling())


@pytest.fixture(scope="module")
def trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("trace")
    return _profiled_trace(folder, control_flow_model(), 3, np.ones((2, 64), np.float32))


def _paths(value: Any, depth: int, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every position down to `depth` (in a list: its first item; the second at the top, where
    trtexec puts a count record first)."""
    yield prefix
    if depth == 0:
        return
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, depth - 1, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value[: 1 if prefix else 2]):
            yield from _paths(item, depth - 1, (*prefix, index))


def _dumps(value: Any) -> str:
    return json.dumps(value).replace(json.dumps(DEEP), "[" * 100_000 + "]" * 100_000)


def _mutants(data: Any, depth: int, cap: int) -> list[tuple[str, Any]]:
    """Up to `cap` (a fixed sample) of `_all_mutants`: loading a report costs ~30 ms."""
    every = list(_all_mutants(data, depth))
    return random.Random(len(every)).sample(every, min(cap, len(every)))


def _all_mutants(data: Any, depth: int) -> Iterator[tuple[str, Any]]:
    """(label, document) with one position replaced by a wrong value, or removed."""
    for path in _paths(data, depth):
        for wrong in WRONG_VALUES:
            if not path:
                yield f"top={wrong!r:.20}", wrong
                continue
            mutant = copy.deepcopy(data)
            parent = mutant
            for key in path[:-1]:
                parent = parent[key]
            parent[path[-1]] = wrong
            yield f"{path}={wrong!r:.20}", mutant
        if path:
            mutant = copy.deepcopy(data)
            parent = mutant
            for key in path[:-1]:
                parent = parent[key]
            del parent[path[-1]]
            yield f"{path} removed", mutant


def _truncations(text: str, count: int = 40) -> Iterator[str]:
    step = max(len(text) // count, 1)
    for end in range(0, len(text) - 1, step):
        yield text[:end]


def _outcome(load: Callable[[], Any], error: type[ProfileFileError], label: str) -> Any:
    """What `load` returns, or the `error` it raised; any other exception fails the test."""
    try:
        return load()
    except error as exc:
        return exc
    except Exception as exc:
        raise AssertionError(f"{label}: {type(exc).__name__}: {exc}") from exc


def _check_accepted(report: ProfileReport) -> None:
    """Whatever a loader accepts must work like any report."""
    report.summary()
    report._repr_html_()
    again = ProfileReport.from_json(json.loads(json.dumps(report.to_json(), allow_nan=False)))
    assert len(again.layers) == len(report.layers)


# ---- ProfileReport.load ----------------------------------------------------------------------


def test_report_load_fuzz_ends_in_report_format_errors(trace: Path, tmp_path: Path) -> None:
    saved = load_ort_profile(trace).to_json()
    target = tmp_path / "r.json"
    documents = [(label, _dumps(doc)) for label, doc in _mutants(saved, 3, cap=300)]
    documents += [(f"cut at {len(t)}", t) for t in _truncations(json.dumps(saved), 20)]
    accepted = refused = 0
    for label, text in documents:
        target.write_text(text)
        result = _outcome(lambda: ProfileReport.load(target), ReportFormatError, label)
        if isinstance(result, ReportFormatError):
            assert str(target) in str(result), f"{label}: the error does not name the file"
            refused += 1
        else:
            _check_accepted(result)
            accepted += 1
    assert refused > 50 and accepted > 50  # both sides of the line are exercised


@pytest.mark.timeout(30)
def test_report_load_refuses_bytes_fifos_and_devices(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    for content in (b"", b"\xff\xfe{", b"[" * 200_000, b'{"format": "nsdl-profile-report"'):
        bad.write_bytes(content)
        with pytest.raises(ReportFormatError, match=r"bad\.json"):
            ProfileReport.load(bad)
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    with pytest.raises(ReportFormatError, match="not a regular file"):
        ProfileReport.load(fifo)  # once blocked forever waiting for a writer
    link = tmp_path / "zero.json"
    link.symlink_to("/dev/zero")
    with pytest.raises(ReportFormatError, match="not a regular file"):
        ProfileReport.load(link)  # once read until memory ran out
    assert issubclass(ReportFormatError, ValueError)


def test_report_save_is_atomic_when_the_write_fails(trace: Path, tmp_path: Path) -> None:
    """A write that fails midway (here: the file size limit, as on a full disk) leaves the old
    report whole and no temporary file behind."""
    report = load_ort_profile(trace)
    path = report.save(tmp_path / "report.json")
    before = path.read_bytes()
    report.metadata["padding"] = "x" * 200_000  # the new file is bigger than the limit below
    script = (
        "import resource, signal, sys\n"
        "from nsdl_jupyter.profiling import ProfileReport\n"
        "report = ProfileReport.load(sys.argv[1])\n"
        "report.metadata['padding'] = 'x' * 200_000\n"
        "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (100_000, 100_000))\n"
        "report.save(sys.argv[1])\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script, str(path)], capture_output=True, text=True, check=False
    )
    assert result.returncode != 0 and "File too large" in result.stderr
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.json"]
    assert ProfileReport.load(report.save(path)).metadata["padding"] == "x" * 200_000


# ---- load_trtexec ----------------------------------------------------------------------------


@pytest.mark.may_skip  # the real trtexec exports live beside the repository, not in it
def test_trtexec_fuzz_ends_in_trtexec_format_errors(tmp_path: Path) -> None:
    originals = {}
    for kind in ("profile", "graph", "timing", "profile.metadata", "build.metadata"):
        source = shared_fixture("trtexec", f"{TRTEXEC}{kind}.json")
        originals[kind] = json.loads(source.read_text())
    originals["timing"] = originals["timing"][:50]
    files = {kind: tmp_path / f"{TRTEXEC}{kind}.json" for kind in originals}
    for kind, data in originals.items():
        files[kind].write_text(json.dumps(data))

    def load() -> ProfileReport:
        return load_trtexec(files["profile"], files["graph"], files["timing"])

    _check_accepted(load())
    depths = {"profile": 2, "graph": 3, "timing": 2, "profile.metadata": 2, "build.metadata": 2}
    accepted = refused = 0
    for kind, data in originals.items():
        documents = [(label, _dumps(doc)) for label, doc in _mutants(data, depths[kind], cap=60)]
        documents += [(f"cut at {len(t)}", t) for t in _truncations(json.dumps(data), 10)]
        for label, text in documents:
            files[kind].write_text(text)
            result = _outcome(load, TrtexecFormatError, f"{kind} {label}")
            if isinstance(result, TrtexecFormatError):
                refused += 1
            else:
                _check_accepted(result)
                accepted += 1
        files[kind].write_text(json.dumps(data))
    assert refused > 30 and accepted > 30


# ---- onnxruntime traces ----------------------------------------------------------------------


def _kernel_and_run_lines(lines: list[str]) -> list[int]:
    found: dict[str, int] = {}
    for index, line in enumerate(lines):
        text = line.strip().rstrip(",")
        if not text.startswith("{"):
            continue
        event = json.loads(text)
        if event["name"] == "model_run":
            found.setdefault("run", index)
        elif event["name"].endswith("_kernel_time"):
            found.setdefault("kernel", index)
    return sorted(found.values())


def test_trace_fuzz_ends_in_trace_format_errors(trace: Path, tmp_path: Path) -> None:
    """Wrong types in onnxruntime's own line layout and in a re-saved one-line trace."""
    lines = trace.read_text().splitlines()
    events = [json.loads(line.strip().rstrip(",")) for line in lines if line.strip()[:1] == "{"]
    target = tmp_path / "t.json"
    documents: list[tuple[str, str]] = []
    for index in _kernel_and_run_lines(lines):
        event = json.loads(lines[index].strip().rstrip(","))
        position = events.index(event)
        for label, mutant in _mutants(event, 3, cap=1000):
            changed = [*lines[:index], _dumps(mutant) + ",", *lines[index + 1 :]]
            documents.append((f"line {label}", "\n".join(changed)))
            one_line = [*events[:position], mutant, *events[position + 1 :]]
            documents.append((f"one-line {label}", _dumps(one_line)))
    documents += [(f"cut at {len(t)}", t) for t in _truncations(json.dumps(events))]
    documents += [("object", '{"traceEvents": 3}'), ("string", '"x"'), ("deep", DEEP)]
    refused = 0
    for label, text in documents:
        target.write_text(_dumps(text) if text == DEEP else text)
        result = _outcome(lambda: parse_ort_trace(target), TraceFormatError, label)
        refused += isinstance(result, TraceFormatError)
    assert refused > 50


def test_negative_or_non_integer_skip_runs_are_refused(trace: Path) -> None:
    for bad in (-1, 1.5, True, "1"):
        with pytest.raises(ProfileSettingsError, match="skip_runs"):
            parse_ort_trace(trace, skip_runs=bad)  # type: ignore[arg-type]
        with pytest.raises(ProfileSettingsError, match="skip_runs"):
            load_ort_profile(trace, skip_runs=bad)  # type: ignore[arg-type]
    with pytest.raises(ProfileSettingsError, match="cannot skip 3"):
        parse_ort_trace(trace, skip_runs=3)


def _chain_model(nodes: int) -> onnx.ModelProto:
    """Relu chain with long scoped names: real traces of a few MB from a few hundred runs."""
    made, previous = [], "x"
    for i in range(nodes):
        name = f"/encoder/layer.{i}/" + "block_" * 30 + "relu"
        made.append(helper.make_node("Relu", [previous], [f"t{i}"], name=name))
        previous = f"t{i}"
    graph = helper.make_graph(
        made,
        "chain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
        [helper.make_tensor_value_info(previous, TensorProto.FLOAT, [1, 4])],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_one_line_trace_is_parsed_in_bounded_memory(tmp_path: Path) -> None:
    """A 20 MB trace re-saved as one line (once decoded whole: 110 MB of Python objects)."""
    original = _profiled_trace(tmp_path, _chain_model(20), 1000, np.ones((1, 4), np.float32))
    one_line = tmp_path / "one_line.json"
    one_line.write_text(json.dumps(json.loads(original.read_text())))
    size = one_line.stat().st_size
    assert size > 15_000_000 and b"\n" not in one_line.read_bytes()
    expected = parse_ort_trace(original)
    tracemalloc.start()
    try:
        parsed = parse_ort_trace(one_line)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < size / 2, f"peak {peak / 1e6:.1f} MB for a {size / 1e6:.1f} MB file"
    assert parsed.layers["name"].tolist() == expected.layers["name"].tolist()
    assert np.array_equal(parsed.run_ms, expected.run_ms)


def test_trace_events_object_form_on_one_line_and_unicode_across_chunks(
    trace: Path, tmp_path: Path
) -> None:
    events = json.loads(trace.read_text())
    expected = parse_ort_trace(trace)
    # metadata before the events, holding a '[' and a 2 MB string, as chrome://tracing writes
    wrapped = {"otherData": {"note": "[not events]", "pad": "ü" * 1_000_000}, "traceEvents": events}
    for text in (
        json.dumps(wrapped),
        json.dumps(wrapped, ensure_ascii=False),
        json.dumps(wrapped, indent=1),
    ):
        path = tmp_path / "wrapped.json"
        path.write_text(text, encoding="utf-8")
        parsed = parse_ort_trace(path)
        assert parsed.layers["name"].tolist() == expected.layers["name"].tolist()
        assert np.allclose(parsed.layers["mean_ms"], expected.layers["mean_ms"])
    # node names with 2-byte characters on both sides of every 1 MiB chunk boundary
    renamed = json.loads(json.dumps(events).replace('"sum', '"süm'))
    pad = {"cat": "Pad", "name": "é" * 700_000, "ts": 0, "dur": 0, "ph": "X", "pid": 0, "tid": 0}
    path = tmp_path / "unicode.json"
    path.write_text(json.dumps([pad, pad, *renamed], ensure_ascii=False), encoding="utf-8")
    names = set(parse_ort_trace(path).layers["name"])
    assert "süm" in names and not any("\ufffd" in n for n in names)
    path.write_text(json.dumps({"otherData": {}, "traceEvents": "none"}))
    with pytest.raises(TraceFormatError, match="traceEvents"):
        parse_ort_trace(path)


# ---- no home paths or host names in reports --------------------------------------------------


def _private_strings() -> list[str]:
    return [s for s in (str(Path.home()), platform.node()) if len(s) > 1]


def test_reports_record_file_names_and_no_host_unless_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))  # a home folder the paths below really are in
    model = tmp_path / "models" / "cf.onnx"
    model.parent.mkdir()
    onnx.save(control_flow_model(), model)
    work = tmp_path / "notebooks"
    work.mkdir()
    monkeypatch.chdir(work)
    report = profile_ort(model, iterations=1, warmup=0, trace_path=work / "runs" / "t.json")
    md = report.metadata
    assert md["model_path"] == "cf.onnx"  # outside the working folder: the name only
    assert md["trace_path"] == "runs/t.json"  # inside: relative to it
    assert md["settings"]["trace_path"] == "runs/t.json"
    assert "host" not in md
    text = report.save(work / "r.json").read_text()
    for private in _private_strings():
        assert private not in text
    kept = profile_ort(model, iterations=1, warmup=0, trace_path=work / "t2.json", full_paths=True)
    assert kept.metadata["model_path"] == str(model)
    assert kept.metadata["trace_path"] == str(work / "t2.json")
    assert kept.metadata["host"] == platform.node()

    trace_file = work / "runs" / "t.json"
    assert load_ort_profile(trace_file).metadata["trace_path"] == "runs/t.json"
    assert load_ort_profile(trace_file, full_paths=True).metadata["trace_path"] == str(trace_file)


@pytest.mark.may_skip  # the real trtexec exports live beside the repository, not in it
def test_trtexec_reports_record_file_names_unless_asked(tmp_path: Path) -> None:
    for kind in ("profile", "graph", "profile.metadata"):
        source = shared_fixture("trtexec", f"{TRTEXEC}{kind}.json")
        shutil.copy(source, tmp_path / source.name)
    profile = tmp_path / f"{TRTEXEC}profile.json"
    md = load_trtexec(profile, tmp_path / f"{TRTEXEC}graph.json").metadata
    assert md["profile_path"] == profile.name and md["layer_info_path"] == f"{TRTEXEC}graph.json"
    md = load_trtexec(profile, full_paths=True).metadata
    assert md["profile_path"] == str(profile)


def test_error_classes_are_value_errors_of_one_family() -> None:
    for cls in (ReportFormatError, TrtexecFormatError, TraceFormatError):
        assert issubclass(cls, ProfileFileError) and issubclass(cls, ValueError)
