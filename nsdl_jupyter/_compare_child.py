"""The child side of validating a modified model: run source and result, measure the errors.

It imports only numpy and onnxruntime (not the package's model layers), so each validation
round's spawned child starts in about half a second. The parent side is
`nsdl_jupyter.transforms._validate`; `run_isolated` carries a `CompareJob` here and a dict
of plain numbers back.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from nsdl_jupyter._errors import first_line

CPU = "CPUExecutionProvider"
# Free dimensions: the first dimension of an input (batch) gets 1, the others (sequence,
# image size) get this, so attention and reductions see more than one element.
FREE_DIM = 8

_NUMPY_TYPES: dict[str, type[np.generic]] = {
    "tensor(float)": np.float32,
    "tensor(float16)": np.float16,
    "tensor(double)": np.float64,
    "tensor(int64)": np.int64,
    "tensor(int32)": np.int32,
    "tensor(int16)": np.int16,
    "tensor(int8)": np.int8,
    "tensor(uint8)": np.uint8,
    "tensor(uint16)": np.uint16,
    "tensor(uint32)": np.uint32,
    "tensor(uint64)": np.uint64,
    "tensor(bool)": np.bool_,
}


@dataclass(frozen=True)
class CompareJob:
    """One round: the source, the candidate, where the source's outputs are cached."""

    source: str
    candidate: str
    reference: str
    provider: str
    seed: int


def compare_in_child(job: CompareJob) -> dict[str, Any]:
    """Source outputs (cached after the first round), then the candidate's; errors only.

    The source's feeds and outputs are written before the candidate runs, so a crash with
    that file present is the candidate's.
    """
    import onnxruntime as ort

    available = ort.get_available_providers()
    if job.provider not in available:
        message = f"execution provider {job.provider} is not available here: {available}"
        return {"source_error": message, "candidate_error": "", "outputs": []}
    reference = Path(job.reference)
    if reference.exists():
        feeds, names, expected = _load_reference(reference)
    else:
        try:
            session = _session(job.source, job.provider)
            feeds = _random_feeds(session, job.seed)
            names = [output.name for output in session.get_outputs()]
            expected = [np.asarray(x) for x in session.run(None, feeds)]
        except Exception as error:  # onnxruntime raises its own types
            return {"source_error": first_line(error), "candidate_error": "", "outputs": []}
        del session
        _save_reference(reference, feeds, names, expected)
    try:
        session = _session(job.candidate, job.provider)
        wanted = {spec.name: spec.type for spec in session.get_inputs()}
        cast = {
            name: value.astype(np.float16) if wanted[name] == "tensor(float16)" else value
            for name, value in feeds.items()
            if name in wanted
        }
        got = [np.asarray(x) for x in session.run(None, cast)]
    except Exception as error:  # onnxruntime raises its own types
        return {"source_error": "", "candidate_error": first_line(error), "outputs": []}
    return {
        "source_error": "",
        "candidate_error": "",
        "outputs": [_compare(n, x, y) for n, x, y in zip(names, expected, got, strict=False)],
    }


def _session(path: str, provider: str) -> Any:
    import onnxruntime as ort

    options = ort.SessionOptions()  # the default graph optimization level: what users get
    options.log_severity_level = 3
    providers = [provider] if provider == CPU else [provider, CPU]
    return ort.InferenceSession(path, options, providers=providers)


def _random_feeds(session: Any, seed: int) -> dict[str, np.ndarray]:
    """Floats ~N(0, 1) already rounded to float16 (input rounding is not the converter's
    error); integers 0 or 1 (valid token ids, masks and most indices)."""
    rng = np.random.default_rng(seed)
    sizes: dict[str, int] = {}
    feeds: dict[str, np.ndarray] = {}
    for spec in session.get_inputs():
        dtype = _NUMPY_TYPES.get(spec.type)
        if dtype is None:
            raise ValueError(f"input {spec.name!r} has type {spec.type}: no random values for it")
        shape = []
        for position, dim in enumerate(spec.shape):
            if isinstance(dim, int) and dim >= 0:
                shape.append(dim)
            else:  # the same symbol gets the same size in every input
                shape.append(sizes.setdefault(str(dim), 1 if position == 0 else FREE_DIM))
        if np.issubdtype(dtype, np.floating):
            values = rng.standard_normal(shape).astype(np.float16).astype(dtype)
        else:
            values = rng.integers(0, 2, shape).astype(dtype)
        feeds[spec.name] = values
    return feeds


def _save_reference(
    path: Path, feeds: dict[str, np.ndarray], names: Sequence[str], outputs: Sequence[np.ndarray]
) -> None:
    arrays = {f"in{i}": value for i, value in enumerate(feeds.values())}
    arrays.update({f"out{i}": value for i, value in enumerate(outputs)})
    arrays.update(inputs=np.array(list(feeds)), outputs=np.array(list(names)))
    partial = path.with_name(path.name + ".partial.npz")
    np.savez(partial, **arrays)  # type: ignore[arg-type]  # numpy's stub types **kwds oddly
    partial.replace(path)


def _load_reference(
    path: Path,
) -> tuple[dict[str, np.ndarray], list[str], list[np.ndarray]]:
    with np.load(path, allow_pickle=False) as cached:
        inputs = [str(name) for name in cached["inputs"]]
        names = [str(name) for name in cached["outputs"]]
        feeds = {name: cached[f"in{i}"] for i, name in enumerate(inputs)}
        expected = [cached[f"out{i}"] for i in range(len(names))]
    return feeds, names, expected


def _compare(name: str, expected: np.ndarray, got: np.ndarray) -> dict[str, Any]:
    """max abs error, the source's largest finite magnitude and max rel error; NaN or inf on
    one side only is an infinite error. Integer and bool outputs: the share that differs."""
    entry: dict[str, Any] = {
        "name": name,
        "max_abs": 0.0,
        "max_rel": 0.0,
        "magnitude": 0.0,
        "shape_note": "",
        "candidate_dtype": str(got.dtype),
    }
    if expected.shape != got.shape:
        entry.update(max_abs=math.inf, max_rel=math.inf)
        entry["shape_note"] = f"shape {list(got.shape)} instead of {list(expected.shape)}"
        return entry
    if expected.size == 0:
        return entry
    if expected.dtype.kind not in "fc":
        fraction = float(np.count_nonzero(expected != got)) / expected.size
        entry.update(max_abs=fraction, max_rel=fraction)
        return entry
    a, b = expected.astype(np.float64), got.astype(np.float64)
    same = (np.isnan(a) & np.isnan(b)) | (np.isinf(a) & (a == b))
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.where(same, 0.0, np.abs(a - b))
    diff = np.where(np.isnan(diff), np.inf, diff)
    finite = np.abs(a[np.isfinite(a)])
    magnitude = float(finite.max()) if finite.size else 0.0
    max_abs = float(diff.max())
    entry.update(max_abs=max_abs, magnitude=magnitude)
    entry["max_rel"] = max_abs / magnitude if magnitude > 0 else max_abs
    return entry
