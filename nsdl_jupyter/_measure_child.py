"""The child side of measuring tensors' dims: run a model once on the CPU, return shapes.

It imports only numpy and onnxruntime, plus the profiler's runner file (by path, as the kernel
loads the runners' pure parts) whose random inputs it feeds, so the sizes are the ones a
profile uses. The parent side is `nsdl_jupyter.transforms._measured_dims`; `run_isolated`
carries a `MeasureJob` here and plain lists back.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class MeasureJob:
    """A model file whose outputs include `names`, and how to feed it."""

    model: str
    names: tuple[str, ...]
    runner: str  # the onnxruntime runner script: its random inputs are the profiler's
    dim_sizes: dict[str, int]
    seed: int


def measure_in_child(job: MeasureJob) -> dict[str, list[int]]:
    """The shapes of the tensors `job.names` after one run of `job.model`."""
    import numpy as np
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 3
    session = ort.InferenceSession(job.model, options, providers=["CPUExecutionProvider"])
    feeds, _ = _runner(job.runner)._random_inputs(session, dict(job.dim_sizes), job.seed)
    arrays = session.run(list(job.names), feeds)
    return {name: list(np.shape(a)) for name, a in zip(job.names, arrays, strict=True)}


def _runner(path: str) -> Any:
    spec = importlib.util.spec_from_file_location("_nsdl_ort_runner", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
