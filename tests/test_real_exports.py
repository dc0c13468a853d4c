"""The real torch-export corpus (tests/real_exports.py): every export refills, passes the ONNX
checker and runs in onnxruntime CPU with finite outputs; the refill is deterministic, even
across processes, and matches the stored fill descriptions; the stored files stay small; the
short forms (BERT, GPT-2, ViT-B/16: 2 of 12 layers; ResNet-50: 2 bottlenecks per stage) keep
every op type of the whole."""

from __future__ import annotations

import hashlib
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import helper, numpy_helper

from tests import real_exports

REPO = Path(__file__).resolve().parent.parent
NAMES = real_exports.names()
MANIFEST = real_exports.manifest()
EXPORTS: dict[str, dict[str, object]] = MANIFEST["exports"]  # type: ignore[assignment]
SLOW_ABOVE = 30_000_000  # parameters: BERT, GPT-2 and ViT-B take seconds each to refill and run
MAX_FILE_BYTES = 2_000_000


def _parameters(name: str) -> int:
    count = EXPORTS[name]["parameters"]
    assert isinstance(count, int)
    return count


def _by_size(names: list[str]) -> list[object]:
    return [
        pytest.param(name, marks=pytest.mark.slow) if _parameters(name) > SLOW_ABOVE else name
        for name in names
    ]


def _fills(name: str) -> dict[str, dict[str, Any]]:
    """Seed key -> fill description of every stripped tensor in the stored file."""
    stored = onnx.load(real_exports.FOLDER / f"{name}.onnx", load_external_data=False)
    fills = ((key, real_exports.fill_of(tensor)) for key, tensor in real_exports.tensors(stored))
    return {key: fill for key, fill in fills if fill is not None}


SMALLEST = min(NAMES, key=_parameters)
# The smallest export with both kinds of fill: a constant (zero biases) and a normal.
BOTH_FILLS = next(
    name
    for name in sorted(NAMES, key=_parameters)
    if {"value", "std"} <= {key for fill in _fills(name).values() for key in fill}
)


def test_corpus_matches_manifest() -> None:
    ok = sorted(name for name, entry in EXPORTS.items() if entry["status"] == "ok")
    assert ok == NAMES
    for model in ("resnet50", "vit_b_16", "bert_base"):
        assert any(name.startswith(model + "_") for name in NAMES), model
    assert {"torch", "transformers"} <= set(MANIFEST["versions"])  # type: ignore[operator]


@pytest.mark.parametrize("name", NAMES)
def test_stored_file_is_small_and_stripped(name: str) -> None:
    path = real_exports.FOLDER / f"{name}.onnx"
    assert path.stat().st_size < MAX_FILE_BYTES
    model = onnx.load(path, load_external_data=False)
    stripped = 0
    for _key, tensor in real_exports.tensors(model):
        if real_exports.fill_of(tensor) is not None:
            assert not tensor.raw_data and math.prod(tensor.dims) > real_exports.STRIP_ABOVE
            stripped += 1
    assert stripped == EXPORTS[name]["stripped_tensors"] > 0
    if name.endswith("_dynamo"):  # the dynamo exporter's module scopes survive the stripping
        keys = {prop.key for node in model.graph.node for prop in node.metadata_props}
        assert "pkg.torch.onnx.name_scopes" in keys


def _feeds(session: ort.InferenceSession) -> dict[str, np.ndarray]:
    """Random inputs: batch 2 and sequence 16 for dynamic axes, token ids below 1000."""
    rng = np.random.default_rng(0)
    feeds = {}
    for value in session.get_inputs():
        shape = [
            dim if isinstance(dim, int) else (2 if axis == 0 else 16)
            for axis, dim in enumerate(value.shape)
        ]
        if value.type == "tensor(float)":
            feeds[value.name] = rng.standard_normal(shape, dtype=np.float32)
        elif "mask" in value.name:
            feeds[value.name] = np.ones(shape, dtype=np.int64)
        else:
            assert value.type == "tensor(int64)", value.type
            feeds[value.name] = rng.integers(0, 1000, shape, dtype=np.int64)
    return feeds


@pytest.mark.parametrize("name", _by_size(NAMES))
def test_export_checks_and_runs(name: str) -> None:
    """BERT, GPT-2, ViT-B/16 and ResNet-50 check and run in their short form (the first two
    of each run of identical blocks, every op type of the whole: see the next test), a third
    of the CPU; the refill and the exporter's ops are what is checked, the same in every
    block."""
    model = real_exports.load(name, short=name in real_exports.SHORT)
    onnx.checker.check_model(model)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    outputs = session.run(None, _feeds(session))
    assert [output.name for output in session.get_outputs()] == [
        output.name for output in model.graph.output
    ]
    for output in outputs:
        assert output.size > 0 and np.isfinite(output).all()


@pytest.mark.parametrize("name", sorted(real_exports.SHORT))
def test_short_form_keeps_every_op_type_and_output_of_the_whole(name: str) -> None:
    whole, short = real_exports.stored(name), real_exports.stored(name, short=True)
    ops = [{(node.domain, node.op_type) for node in m.graph.node} for m in (whole, short)]
    assert ops[0] == ops[1]
    assert short.graph.output == whole.graph.output
    assert short.graph.input == whole.graph.input
    produced = {output for node in short.graph.node for output in node.output}
    for last, new_last in real_exports.SHORT[name]:
        assert new_last in produced or last in produced  # the second block is kept ...
    assert len(short.graph.node) < 0.6 * len(whole.graph.node)  # ... and the later ones go


def test_refill_is_deterministic_across_processes() -> None:
    digest = hashlib.sha256(real_exports.load(SMALLEST).SerializeToString()).hexdigest()
    again = hashlib.sha256(real_exports.load(SMALLEST).SerializeToString()).hexdigest()
    child = subprocess.run(
        [
            sys.executable,
            "-c",
            "import hashlib; from tests import real_exports; "
            f"print(hashlib.sha256(real_exports.load({SMALLEST!r}).SerializeToString())"
            ".hexdigest())",
        ],
        cwd=REPO,
        check=True,
        capture_output=True,
        text=True,
        # the child refills for itself, never reading a refill the cache kept
        env={k: v for k, v in os.environ.items() if k != real_exports.CACHE_ENV},
    )
    assert digest == again == child.stdout.strip()


def test_refill_follows_fill_descriptions() -> None:
    fills = _fills(BOTH_FILLS)
    refilled = real_exports.load(BOTH_FILLS)
    seen = 0
    for key, tensor in real_exports.tensors(refilled):
        if key not in fills:
            continue
        fill = fills[key]
        values = numpy_helper.to_array(tensor)
        assert values.dtype == helper.tensor_dtype_to_np_dtype(tensor.data_type)
        assert tensor.doc_string == fill.get("doc", "")
        if "value" in fill:
            assert (values == fill["value"]).all()
        else:
            assert values.mean() == pytest.approx(fill["mean"], abs=fill["std"] / 5)
            assert values.std() == pytest.approx(fill["std"], rel=0.2)
        seen += 1
    assert seen == len(fills) > 0


@pytest.mark.parametrize("name", [SMALLEST, BOTH_FILLS])
def test_refill_changes_only_tensor_data(name: str) -> None:
    """Stripping the refilled model again gives the stored file back, fill statistics aside:
    names, node metadata, functions, value_info and opsets come through untouched."""
    stored = onnx.load(real_exports.FOLDER / f"{name}.onnx", load_external_data=False)
    again = real_exports.load(name)
    assert real_exports.strip(again) == EXPORTS[name]["stripped_tensors"]
    for model in (stored, again):
        for _key, tensor in real_exports.tensors(model):
            fill = real_exports.fill_of(tensor)
            if fill is not None:
                tensor.doc_string = "value" if "value" in fill else "normal"
    assert again == stored


@pytest.mark.parametrize("external_data", [False, True])
def test_save_writes_the_refilled_model(tmp_path: Path, external_data: bool) -> None:
    path = real_exports.save(SMALLEST, tmp_path, external_data=external_data)
    assert path.name == f"{SMALLEST}.onnx"
    data = path.with_name(f"{SMALLEST}.onnx.data")
    assert data.is_file() == external_data
    saved = onnx.load(path)
    for _key, tensor in real_exports.tensors(saved):
        tensor.ClearField("data_location")  # loading external data sets it to DEFAULT
    assert saved == real_exports.load(SMALLEST)
