"""Find the nodes to keep unconverted so that a converted model passes validation.

It holds a passing configuration at every step, so stopping at the round limit still gives
a model that runs within tolerance (with more nodes kept than needed). Candidates are in
graph order; with `kept` always kept, "converting the first i candidates" passes for i = lo
and fails for i = hi. Halving [lo, hi] ends at one candidate whose conversion breaks the
model: it is kept, and the search goes on from lo until converting all the others passes.
Each culprit costs about log2(candidates) rounds. A fault onnxruntime has on one pattern
usually sits in every layer, and finding twelve copies one by one would cost twelve
searches: after a culprit, the nodes of the same role in the later layers (same operator,
same name scope with the layer numbers ignored) are tried together first.

Measured on torchvision's ViT-B/16 (onnxruntime 1.32 CPU crashes on our float16 GELU):
this finds 11 nodes in 12 rounds; searching over whole roles instead (every layer's copy
as one candidate) kept 96 nodes in 28 rounds, since the fault needs parts of the pattern
in different layers.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from nsdl_jupyter.transforms._validate import ValidationResult

Attempt = Callable[[frozenset[str]], ValidationResult]


@dataclass
class BisectionResult:
    """`kept`: the nodes to keep (None when even keeping every candidate fails);
    `passing`: the validation of that configuration; `culprits`: why each was kept."""

    kept: frozenset[str] | None
    passing: ValidationResult | None
    rounds: int
    culprits: dict[str, str] = field(default_factory=dict)
    capped: bool = False
    last_failure: ValidationResult | None = None


def bisect_nodes(
    candidates: Sequence[str],
    attempt: Attempt,
    max_rounds: int,
    roles: Mapping[str, str] | None = None,
) -> BisectionResult:
    """Nodes of `candidates` to keep so that `attempt(kept)` passes; `attempt(frozenset())`
    is known to fail. `roles` maps a node to its role in a repeated block ("" for none)."""
    return _Search(list(dict.fromkeys(candidates)), attempt, max_rounds, roles or {}).run()


@dataclass
class _Search:
    remaining: list[str]
    attempt: Attempt
    max_rounds: int
    roles: Mapping[str, str]
    rounds: int = 0
    kept: set[str] = field(default_factory=set)
    culprits: dict[str, str] = field(default_factory=dict)
    last_failure: ValidationResult | None = None

    def _try(self, extra: Sequence[str]) -> ValidationResult:
        self.rounds += 1
        result = self.attempt(frozenset(self.kept.union(extra)))
        if not result.passed:
            self.last_failure = result
        return result

    def run(self) -> BisectionResult:
        if self.rounds >= self.max_rounds:
            return self._result(None, None, capped=True)
        passing = self._try(self.remaining)
        if not passing.passed:
            return self._result(None, None)
        lo = 0  # converting remaining[:lo] (the rest kept) passes
        failure = self.last_failure  # converting all of remaining (hi) fails
        while True:
            hi = len(self.remaining)
            while hi - lo > 1:
                if self.rounds >= self.max_rounds:
                    return self._capped(lo, passing)
                mid = (lo + hi) // 2
                result = self._try(self.remaining[mid:])
                if result.passed:
                    lo, passing = mid, result
                else:
                    hi, failure = mid, result
            culprit = self.remaining.pop(lo)
            self.kept.add(culprit)
            self.culprits[culprit] = failure.reason() if failure is not None else ""
            same_role = self._same_role(culprit, self.remaining[lo:])
            if self.rounds >= self.max_rounds:
                return self._capped(lo, passing)
            result = self._try(same_role)
            if result.passed:
                for name in same_role:
                    self.kept.add(name)
                    self.culprits[name] = f"same role as {culprit}"
                return self._result(frozenset(self.kept), result)
            # Keeping these fails, so keeping fewer (only the culprit) is taken to fail too.
            failure = result

    def _same_role(self, culprit: str, others: Sequence[str]) -> list[str]:
        role = self.roles.get(culprit)
        if not role:
            return []
        return [name for name in others if self.roles.get(name) == role]

    def _capped(self, lo: int, passing: ValidationResult) -> BisectionResult:
        self.kept.update(self.remaining[lo:])
        return self._result(frozenset(self.kept), passing, capped=True)

    def _result(
        self, kept: frozenset[str] | None, passing: ValidationResult | None, capped: bool = False
    ) -> BisectionResult:
        return BisectionResult(
            kept, passing, self.rounds, dict(self.culprits), capped, self.last_failure
        )


_NUMBERS = re.compile(r"\d+")


def node_role(op_type: str, name: str, scope: str | None) -> str:
    """A node's role in a repeated block: its operator and its name scope (from the name or
    the exporter's metadata) with numbers ignored; "" when there is no scope to go by."""
    where = scope if scope else (name if "/" in name else "")
    if not where:
        return ""
    return f"{op_type}@{_NUMBERS.sub('#', where)}"
