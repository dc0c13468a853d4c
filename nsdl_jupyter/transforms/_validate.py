"""Run a modified model beside its source in a child process and compare their outputs.

FP16 and opset conversion check their result this way: onnxruntime, at its default graph
optimization level and with the chosen execution provider, runs the source and the result on
the same seeded random inputs (rounded to float16 so input rounding is not counted), and every
output is compared (max abs and relative error). onnxruntime runs in a spawned child
(`run_isolated`), so a runtime that segfaults on a model ends the child, not the kernel. The
source's inputs and outputs are kept in a file after the first round: later rounds (FP16
bisection) run only the candidate, and a crash with no such file means the source crashed.
"""

from __future__ import annotations

import math
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import onnx_ir as ir

from nsdl_jupyter._compare_child import CPU, CompareJob, compare_in_child
from nsdl_jupyter._isolated import (
    DEFAULT_MEMORY_LIMIT,
    ChildRaisedError,
    IsolatedRunError,
    run_isolated,
)
from nsdl_jupyter.transforms._status import TransformStatus
from nsdl_jupyter.transforms._working_copy import ModelSource, TransformError, working_copy

DEFAULT_PROVIDER = CPU
# One round (spawn, two sessions, one run each) of a model the size of ViT-B/16 takes seconds.
ROUND_TIMEOUT_S = 600.0
_FP16_MAX = float(np.finfo(np.float16).max)

Outcome = Literal["ok", "out_of_tolerance", "crashed", "failed", "not_validated"]


@dataclass(frozen=True)
class OutputError:
    """How far one output of the result is from the source's.

    `max_abs`: largest absolute difference (inf where one side is not finite and the other
    is, or shapes differ); `max_rel`: `max_abs` over the largest magnitude of the source's
    output (for non-float outputs: the fraction of elements that differ); `limit`: the largest
    `max_abs` allowed.
    """

    name: str
    max_abs: float
    max_rel: float
    magnitude: float
    limit: float
    note: str = ""

    @property
    def ok(self) -> bool:
        return self.max_abs <= self.limit

    def describe(self) -> str:
        verdict = "ok" if self.ok else f"over the limit {self.limit:.3g}"
        note = f"; {self.note}" if self.note else ""
        return (
            f"output {self.name!r}: max abs error {self.max_abs:.3g}, max rel error "
            f"{self.max_rel:.3g} ({verdict}{note})"
        )


@dataclass
class ValidationResult:
    """The outcome of one comparison round, and why when it is not ok. "not_validated": the
    source cannot run (or the validation itself failed), so no candidate can be judged."""

    outcome: Outcome
    errors: list[OutputError] = field(default_factory=list)
    message: str = ""

    @property
    def passed(self) -> bool:
        return self.outcome == "ok"

    def reason(self) -> str:
        """One line: what went wrong (or that all outputs are within tolerance)."""
        if self.outcome == "ok":
            return "all outputs within tolerance"
        if self.outcome == "out_of_tolerance":
            return "; ".join(error.describe() for error in self.errors if not error.ok)
        return self.message


class Validator:
    """Compares candidates with one source model; keeps the source's outputs between rounds.

    Use as a context manager: it owns a temporary folder for the source (when it is not a
    file already), the candidates and the cached reference outputs.
    """

    def __init__(
        self,
        source: ModelSource,
        *,
        tolerance: float,
        provider: str = DEFAULT_PROVIDER,
        seed: int = 0,
        timeout: float = ROUND_TIMEOUT_S,
        before_round: Callable[[int], None] | None = None,
    ) -> None:
        check_validation_arguments(tolerance, provider)
        self.tolerance = tolerance
        # called with the round's number before each round; raising stops the work there
        self.before_round = before_round
        self.provider = provider
        self.seed = seed
        self.timeout = timeout
        self.rounds = 0
        self.seconds = 0.0
        self._folder = tempfile.TemporaryDirectory(prefix="nsdl-validate-")
        self.folder = Path(self._folder.name)
        self.source = self._source_file(source)
        self._reference = self.folder / "reference.npz"
        self._source_failure: ValidationResult | None = None

    def __enter__(self) -> Validator:
        return self

    def __exit__(self, *exc: object) -> None:
        self._folder.cleanup()

    def _source_file(self, source: ModelSource) -> Path:
        if isinstance(source, (str, os.PathLike)):
            return Path(source).expanduser().absolute()
        path = self.folder / "source.onnx"
        ir.save(working_copy(source).model, path, external_data="source.onnx.data")
        return path

    def check(self, candidate: Path) -> ValidationResult:
        """Run the source (first round only) and `candidate`; compare every output."""
        import time

        if self._source_failure is not None:
            return self._source_failure
        if self.before_round is not None:
            self.before_round(self.rounds + 1)
        started = time.perf_counter()
        self.rounds += 1
        job = CompareJob(
            str(self.source), str(candidate), str(self._reference), self.provider, self.seed
        )
        try:
            limit = child_memory_limit(self.source, candidate)
            raw = run_isolated(compare_in_child, job, timeout=self.timeout, memory_limit=limit)
        except IsolatedRunError as error:
            result = self._died(error)
        except ChildRaisedError as error:  # a bug of ours in the child, not the model's
            result = ValidationResult("not_validated", message=f"validation failed: {error}")
        else:
            result = self._judge(raw)
        finally:
            self.seconds += time.perf_counter() - started
        if result.outcome == "not_validated":
            self._source_failure = result
        return result

    def _died(self, error: IsolatedRunError) -> ValidationResult:
        what = "ran past its time limit" if error.timed_out else "crashed"
        detail = str(error).split("(")[-1].rstrip(")") if error.crashed else f"{self.timeout:g} s"
        if not self._reference.exists():
            return ValidationResult(
                "not_validated",
                message=f"onnxruntime {what} on the source model ({detail}), so the result "
                "cannot be validated",
            )
        return ValidationResult(
            "crashed", message=f"onnxruntime {what} on the result ({detail}, {self.provider})"
        )

    def _judge(self, raw: dict[str, Any]) -> ValidationResult:
        if raw["source_error"]:
            return ValidationResult(
                "not_validated",
                message=f"onnxruntime cannot run the source model, so the result cannot be "
                f"validated: {raw['source_error']}",
            )
        if raw["candidate_error"]:
            return ValidationResult(
                "failed", message=f"onnxruntime cannot run the result: {raw['candidate_error']}"
            )
        errors = [
            OutputError(
                name=entry["name"],
                max_abs=entry["max_abs"],
                max_rel=entry["max_rel"],
                magnitude=entry["magnitude"],
                limit=self.tolerance * max(1.0, entry["magnitude"]),
                note=_note(entry),
            )
            for entry in raw["outputs"]
        ]
        outcome: Outcome = "ok" if all(error.ok for error in errors) else "out_of_tolerance"
        return ValidationResult(outcome, errors)

    def report(self, status: TransformStatus, result: ValidationResult) -> None:
        """Per-output errors into the status log; a source that cannot run is a warning."""
        status.counts["validation_rounds"] = self.rounds
        if result.outcome == "not_validated":
            status.warn(f"not validated: {result.message}")
            return
        for error in result.errors:
            status.info(f"validation: {error.describe()}")


def child_memory_limit(*models: Path) -> int:
    """The child's address-space cap: the default, or room for sessions on big models."""
    total = 0
    for model in models:
        folder = model.parent
        total += model.stat().st_size
        stem = model.name
        total += sum(p.stat().st_size for p in folder.glob(f"{stem}.data*") if p.is_file())
    return max(DEFAULT_MEMORY_LIMIT, 6 * total)


def check_validation_arguments(tolerance: float, provider: str) -> None:
    """Refuse a tolerance or provider that cannot work, before any work is done."""
    if isinstance(tolerance, bool) or not isinstance(tolerance, (int, float)):
        raise TransformError(f"tolerance must be a number such as 1e-2, not {tolerance!r}")
    if not (tolerance >= 0 and math.isfinite(tolerance)):
        raise TransformError(f"tolerance must be a finite number >= 0, not {tolerance!r}")
    if not isinstance(provider, str) or not provider.endswith("ExecutionProvider"):
        raise TransformError(
            f"provider must be an onnxruntime execution provider name such as "
            f"'CPUExecutionProvider' or 'CUDAExecutionProvider', not {provider!r}"
        )


def _note(entry: dict[str, Any]) -> str:
    if entry["shape_note"]:
        return str(entry["shape_note"])
    if entry["candidate_dtype"] == "float16" and entry["magnitude"] > _FP16_MAX:
        return (
            f"the source's values reach {entry['magnitude']:.3g}, beyond float16's range: "
            "keep this output float32 (keep_io_types)"
        )
    return ""
