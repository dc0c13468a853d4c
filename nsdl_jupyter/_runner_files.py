"""Where the runner scripts lie: plain files in profiling/runners that a target runs and that
the kernel loads pure parts of by path. Named here, below every layer, because a base module
loads one too (`_measure_child` feeds a model the onnxruntime runner's random inputs); the
profiling package takes its names from here."""

from __future__ import annotations

from pathlib import Path

RUNNERS = Path(__file__).parent / "profiling" / "runners"
ORT_RUNNER = RUNNERS / "_ort_runner.py"
TRT_RUNNER = RUNNERS / "_trt_runner.py"
