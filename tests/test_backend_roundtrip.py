"""Round trip of every ONNX backend node test (~1,900 models) through ModelDocument.

For each case: `nj.open_model`, `doc.save`, then
- the saved proto equals the original (fields explicitly set to their default value and
  type annotations (value_info) the save adds are ignored; every original annotation stays),
  and passes `onnx.checker` whenever the original does;
- onnxruntime (CPU) runs original and saved on the case's inputs: outputs must be identical
  (shapes and dtypes only for random ops), and are compared with the expected outputs.

Where onnxruntime cannot load or run the original (missing kernels, float8/int4 types...)
the structural comparison is the check. Outputs where onnxruntime itself disagrees with
the expected values (identically for original and saved) are listed, not failed.

The cases run in child processes (this file run as a script), two shards at once, so a
crash or hang inside onnxruntime costs one case, not the test session. The cases are
generated once per session and shared with tests/test_transforms_corpus.py
(tests/_backend_cases.py); each shard's saved model is written in memory (/dev/shm), where
the atomic save's fsyncs cost nothing. Lists land in test-output/backend_roundtrip/.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from _backend_cases import case_data, node_cases
from _scratch import scratch_parent
from google.protobuf.message import Message

RANDOM_OPS = frozenset(
    {
        "RandomNormal",
        "RandomNormalLike",
        "RandomUniform",
        "RandomUniformLike",
        "Multinomial",
        "Bernoulli",
    }
)
STALL_SECONDS = 120  # no progress from a worker for this long: the case hangs
PASSED, ORT_CANNOT_RUN, ORT_DIFFERS, FAILED = (
    "passed",
    "ort_cannot_run",
    "ort_differs_from_expected",
    "failed",
)


# ------------------------------------------------------------- comparisons
def _clear_defaults(message: Message) -> None:
    """Unset scalar fields holding their default: `domain: ""` set or not is the same model."""
    for field, value in message.ListFields():
        if field.is_repeated:
            if field.type == field.TYPE_MESSAGE:
                for item in value:
                    _clear_defaults(item)
        elif field.type == field.TYPE_MESSAGE:
            _clear_defaults(value)
        elif field.containing_oneof is None and value == field.default_value:
            message.ClearField(field.name)


def _graphs(graph: onnx.GraphProto) -> Iterator[onnx.GraphProto]:
    yield graph
    for node in graph.node:
        for attribute in node.attribute:
            if attribute.HasField("g"):
                yield from _graphs(attribute.g)
            for sub in attribute.graphs:
                yield from _graphs(sub)


def _canonical(model: onnx.ModelProto) -> tuple[onnx.ModelProto, set[bytes]]:
    """A copy without default-valued fields, and its value_info entries taken out."""
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    _clear_defaults(copy)
    annotations: set[bytes] = set()
    for graph in [*_graphs(copy.graph)]:
        annotations.update(info.SerializeToString(deterministic=True) for info in graph.value_info)
        del graph.value_info[:]
    return copy, annotations


def structure_difference(original: onnx.ModelProto, saved: onnx.ModelProto) -> str | None:
    """None when `saved` is `original` up to defaults and added annotations, else a hint."""
    a, a_infos = _canonical(original)
    b, b_infos = _canonical(saved)
    if a_infos - b_infos:
        return f"{len(a_infos - b_infos)} value_info entries lost or changed"
    if a == b:
        return None
    for field in ("ir_version", "opset_import", "functions", "metadata_props"):
        if getattr(a, field) != getattr(b, field):
            return f"model.{field} differs"
    for field in ("node", "initializer", "sparse_initializer", "input", "output", "name"):
        if getattr(a.graph, field) != getattr(b.graph, field):
            return f"graph.{field} differs"
    return "model differs"


def _checker_error(model: onnx.ModelProto) -> str | None:
    try:
        onnx.checker.check_model(model)
    except Exception as error:  # checker raises ValidationError and others
        return str(error).splitlines()[0][:200] if str(error) else type(error).__name__
    return None


def _is_ml_dtype(value: Any) -> bool:
    """bfloat16 / float8 arrays (ml_dtypes): onnxruntime's numpy bridge does not know them.

    (int4/int2/float4 are left out: ONNX packs several of them in a byte.)
    """
    if not isinstance(value, np.ndarray) or value.dtype.type.__module__ != "ml_dtypes":
        return False
    name = str(value.dtype.name)
    return name == "bfloat16" or name.startswith("float8")


def _feed(value: Any, value_type: onnx.TypeProto) -> Any:
    import onnxruntime as ort

    if _is_ml_dtype(value):
        raw = value.view(np.uint8 if value.dtype.itemsize == 1 else np.uint16)
        return ort.OrtValue.ortvalue_from_numpy_with_onnx_type(
            raw, value_type.tensor_type.elem_type
        )
    return value


def _as_expected(outputs: list[Any], expected: list[Any]) -> list[Any]:
    """onnxruntime returns bfloat16/float8 outputs as raw uint16/uint8: view them typed."""
    typed = []
    for output, reference in zip(outputs, expected, strict=False):
        if (
            _is_ml_dtype(reference)
            and isinstance(output, np.ndarray)
            and output.dtype.kind == "u"
            and output.dtype.itemsize == reference.dtype.itemsize
        ):
            typed.append(output.view(reference.dtype))
        else:
            typed.append(output)
    return typed + outputs[len(typed) :]


def _assert_same(saved: Any, original: Any, exact: bool) -> None:
    if isinstance(original, (list, tuple)):
        assert isinstance(saved, (list, tuple)) and len(saved) == len(original)
        for s, o in zip(saved, original, strict=True):
            _assert_same(s, o, exact)
        return
    if original is None or saved is None:
        assert saved is None and original is None
        return
    saved, original = np.asarray(saved), np.asarray(original)
    assert saved.shape == original.shape, f"shape {saved.shape} != {original.shape}"
    assert saved.dtype == original.dtype, f"dtype {saved.dtype} != {original.dtype}"
    if exact:
        np.testing.assert_array_equal(saved, original)


def _is_random(model: onnx.ModelProto) -> bool:
    """Random ops, and Dropout in training mode (its mask is random)."""
    nodes = [node for graph in _graphs(model.graph) for node in graph.node]
    nodes += [node for function in model.functions for node in function.node]
    return any(
        node.op_type in RANDOM_OPS
        or (node.op_type == "Dropout" and len(node.input) > 2 and node.input[2])
        for node in nodes
    )


# ------------------------------------------------------------- one case
def check_case(case: Path, work: Path, progress: Any) -> dict[str, Any]:
    """Round-trip one case; returns {"status", "detail"}. `progress(stage)` marks stages."""
    import onnxruntime as ort

    import nsdl_jupyter as nj

    original = onnx.load(case / "model.onnx")
    progress("open")
    try:
        # one scratch file per shard, replaced case after case
        saved_path = nj.open_model(case / "model.onnx").save(work / "saved.onnx", overwrite=True)
        saved = onnx.load(saved_path)
    except Exception as error:
        return {"status": FAILED, "detail": f"open/save raised {error!r}"[:500]}
    difference = structure_difference(original, saved)
    if difference is not None:
        return {"status": FAILED, "detail": f"saved model differs from the original: {difference}"}
    if _checker_error(original) is None and (problem := _checker_error(saved)) is not None:
        return {"status": FAILED, "detail": f"checker refuses the saved model: {problem}"}

    inputs, expected = case_data(case, original)
    graph = original.graph
    feeds = {graph.input[i].name: _feed(v, graph.input[i].type) for i, v in enumerate(inputs)}
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.log_severity_level = 4
    progress("ort-original")
    try:
        session = ort.InferenceSession(
            original.SerializeToString(), options, providers=["CPUExecutionProvider"]
        )
        from_original = session.run(None, feeds)
    except Exception as error:
        return {"status": ORT_CANNOT_RUN, "detail": str(error).strip().splitlines()[0][:300]}
    progress("ort-saved")
    try:
        session = ort.InferenceSession(str(saved_path), options, providers=["CPUExecutionProvider"])
        from_saved = session.run(None, feeds)
    except Exception as error:
        return {"status": FAILED, "detail": f"ORT runs the original, not the saved: {error}"[:500]}
    random = _is_random(original)
    try:
        _assert_same(from_saved, from_original, exact=not random)
    except AssertionError as error:
        return {"status": FAILED, "detail": f"saved and original outputs differ: {error}"[:500]}
    if random:
        return {"status": PASSED, "detail": "random op: shapes and dtypes compared"}
    from onnx.backend.test.runner import Runner

    try:
        Runner.assert_similar_outputs(
            expected, _as_expected(from_saved, expected), rtol=1e-3, atol=1e-7
        )
    except (AssertionError, TypeError, ValueError) as error:
        detail = " ".join(str(error).split())[:300]
        return {"status": ORT_DIFFERS, "detail": detail}
    return {"status": PASSED, "detail": ""}


# ------------------------------------------------------------ workers
def _worker(shard_file: Path, results: Path, start: int, work: Path) -> None:
    """Child process: run the cases of a shard from `start`, one JSON line per step."""
    import onnxruntime as ort

    ort.set_default_logger_severity(4)
    cases = shard_file.read_text().split("\n")
    with results.open("a") as log:

        def write(record: dict[str, Any]) -> None:
            log.write(json.dumps(record) + "\n")
            log.flush()

        for index in range(start, len(cases)):
            case = Path(cases[index])

            def progress(stage: str, index: int = index) -> None:
                write({"index": index, "stage": stage})

            try:
                result = check_case(case, work, progress)
            except Exception:
                result = {"status": FAILED, "detail": traceback.format_exc()[-500:]}
            write({"index": index, "case": case.name, **result})


class _Shard:
    """Runs a list of cases in a child process, restarting it past a case that kills it."""

    def __init__(self, cases: list[Path], work: Path) -> None:
        self.cases = cases
        self.work = work
        self.done: dict[int, dict[str, Any]] = {}
        self.stage: dict[int, str] = {}
        self._lines_read = 0
        work.mkdir(parents=True, exist_ok=True)
        self.case_file, self.results = work / "cases.txt", work / "results.jsonl"
        self.case_file.write_text("\n".join(str(c) for c in cases))
        self.results.write_text("")

    def _read_new_lines(self) -> bool:
        text = self.results.read_text()
        # a line being written may be incomplete: read only up to the last newline
        lines = text[: text.rfind("\n") + 1].splitlines()
        complete = lines[self._lines_read :]
        for line in complete:
            record = json.loads(line)
            if "status" in record:
                self.done[record["index"]] = record
            else:
                self.stage[record["index"]] = record["stage"]
        self._lines_read += len(complete)
        return bool(complete)

    def _run_child(self, start: int) -> tuple[int, str]:
        command = [sys.executable, __file__, str(self.case_file), str(self.results), str(start)]
        command.append(str(self.work))
        child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        last_progress = time.monotonic()
        while child.poll() is None:
            time.sleep(0.2)
            if self._read_new_lines():
                last_progress = time.monotonic()
            elif time.monotonic() - last_progress > STALL_SECONDS:
                child.kill()
        stderr = child.stderr.read().decode(errors="replace") if child.stderr else ""
        self._read_new_lines()
        return child.wait(), stderr

    def run(self) -> None:
        start = 0
        while start < len(self.cases):
            returncode, stderr = self._run_child(start)
            while start in self.done:
                start += 1
            if start < len(self.cases):
                # the child died (crashed, or was killed for hanging) inside this case
                where = self.stage.get(start, "load")
                self.done[start] = {
                    "index": start,
                    "case": self.cases[start].name,
                    "status": ORT_CANNOT_RUN if where == "ort-original" else FAILED,
                    "detail": f"process died in stage {where!r} (rc={returncode}): "
                    + " ".join(stderr.split())[-300:],
                }
                start += 1


def run_all(cases: list[Path], work: Path, workers: int) -> list[dict[str, Any]]:
    shards = [_Shard(cases[i::workers], work / f"shard{i}") for i in range(workers)]
    threads = [threading.Thread(target=shard.run) for shard in shards]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    records = [record for shard in shards for record in shard.done.values()]
    return sorted(records, key=lambda r: str(r["case"]))


# ------------------------------------------------------------------ tests
@pytest.fixture(scope="session")
def scratch() -> Iterator[Path]:
    """Each shard's saved model, replaced case after case, in memory (atomic saves fsync)."""
    with tempfile.TemporaryDirectory(prefix="nsdl-roundtrip-", dir=scratch_parent()) as folder:
        yield Path(folder)


@pytest.fixture(scope="session")
def backend_cases(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    return node_cases(tmp_path_factory)


def test_structure_difference_sees_real_changes() -> None:
    """The comparison used below must notice a changed attribute, op or lost annotation."""
    from nsdl_jupyter.examples import small_transformer

    model = small_transformer()
    model.graph.value_info.append(onnx.helper.make_tensor_value_info("x", 1, [2]))
    same = onnx.ModelProto()
    same.CopyFrom(model)
    same.graph.node[0].domain = ""  # explicitly set to the default: still the same model
    assert structure_difference(model, same) is None
    changed = onnx.ModelProto()
    changed.CopyFrom(model)
    softmax = next(node for node in changed.graph.node if node.op_type == "Softmax")
    softmax.attribute[0].i = 1
    assert structure_difference(model, changed) == "graph.node differs"
    del changed.graph.value_info[:]
    assert structure_difference(model, changed) == "1 value_info entries lost or changed"


@pytest.mark.slow
def test_every_backend_node_case_round_trips(
    backend_cases: list[Path], scratch: Path, test_output_dir: Path
) -> None:
    assert len(backend_cases) > 1500, f"only {len(backend_cases)} backend cases generated"
    workers = max(1, min(2, os.cpu_count() or 1))
    records = run_all(backend_cases, scratch / "shards", workers)
    assert len(records) == len(backend_cases)
    counts = Counter(record["status"] for record in records)

    out = test_output_dir / "backend_roundtrip"
    out.mkdir(exist_ok=True)
    (out / "results.json").write_text(json.dumps(records, indent=1))
    for status in (ORT_CANNOT_RUN, ORT_DIFFERS, FAILED):
        lines = [f"{r['case']}\t{r['detail']}" for r in records if r["status"] == status]
        (out / f"{status}.txt").write_text("\n".join(lines) + ("\n" if lines else ""))
    summary = ", ".join(f"{counts[s]} {s}" for s in (PASSED, ORT_CANNOT_RUN, ORT_DIFFERS, FAILED))
    print(f"\nONNX backend node round trip: {len(records)} cases: {summary}; lists in {out}")

    failed = [f"{r['case']}: {r['detail']}" for r in records if r["status"] == FAILED]
    assert not failed, f"{len(failed)} round-trip failures:\n" + "\n".join(failed[:50])
    assert counts[PASSED] > 1000, summary


if __name__ == "__main__":
    _worker(Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]), Path(sys.argv[4]))
