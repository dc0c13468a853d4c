"""The status every global modification returns: ok flag, output path, counts and a log."""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class TransformStatus:
    """What one modification did: `ok`, where it wrote, what it counted, and its log lines.

    `counts` holds figures such as ``nodes_folded`` or ``casts_inserted``; `warnings` are the
    log lines a user should read (also in `log`, marked ``warning:``).
    """

    operation: str
    ok: bool = True
    output: Path | None = None
    log: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    counts: Counter[str] = field(default_factory=Counter)
    seconds: float = 0.0
    _started: float = field(default_factory=time.perf_counter, repr=False, compare=False)

    def info(self, message: str) -> None:
        self.log.append(message)

    def warn(self, message: str) -> None:
        self.warnings.append(message)
        self.log.append(f"warning: {message}")

    def fail(self, message: str) -> None:
        self.ok = False
        self.log.append(f"error: {message}")

    @property
    def errors(self) -> list[str]:
        """The messages of `fail` (why `ok` is False)."""
        return [line.removeprefix("error: ") for line in self.log if line.startswith("error: ")]

    def count(self, key: str, amount: int = 1) -> None:
        self.counts[key] += amount

    def finish(self, output: Path | None) -> TransformStatus:
        self.output = output
        self.seconds = time.perf_counter() - self._started
        return self

    def summary(self) -> str:
        """One line: operation, outcome, counts, time."""
        figures = ", ".join(f"{key}={value}" for key, value in sorted(self.counts.items()))
        where = f" -> {self.output}" if self.output else ""
        state = "ok" if self.ok else "FAILED"
        return f"{self.operation}: {state}{where} ({figures or 'no changes'}; {self.seconds:.2f} s)"

    def __str__(self) -> str:
        return "\n".join([self.summary(), *(f"  {line}" for line in self.log)])

    def _repr_pretty_(self, printer: object, cycle: bool) -> None:
        printer.text(str(self))  # type: ignore[attr-defined]
