"""Two passes over the same model, their kernels paired one to one by the kernel sequence.

The profiled pass knows each kernel's node (onnxruntime's trace), but its durations carry the
profiler's per-node syncs; a free-running pass (CUPTI only) or an Nsight Compute replay has
true durations or counters but no node. Within one run both launch the same kernels in the same
order on each stream, so a kernel of the measured pass takes the node of the reference kernel
it is paired with. A kernel's key is what both passes see alike: (name, grid, block).

What happens when the sequences differ:
- equal per stream: paired position by position;
- streams: a kernel's stream id differs between processes and sessions, and kernels of two
  streams interleave differently from run to run, so each stream is aligned on its own; the
  streams of the two passes are paired greedily by how many keys they share (most first);
- an extra, missing or different kernel (a different algorithm chosen, a copy that one pass
  makes and the other not): the longest common subsequence of keys (difflib's matching blocks,
  no junk heuristic) pairs the rest; the kernels outside it are returned as unmatched on their
  side, never given a neighbour's node;
- a stream of one pass with no partner in the other: all its kernels are unmatched.
The caller reports the unmatched kernels (count and time) instead of hiding them.
"""

from __future__ import annotations

import difflib
from collections import Counter
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class KernelAlignment:
    """Index pairs into the two sequences, and the indices left without a partner."""

    pairs: np.ndarray  # (k, 2) int64: (reference index, measured index), by reference index
    unmatched_reference: np.ndarray  # int64 indices into the reference sequence
    unmatched_measured: np.ndarray  # int64 indices into the measured sequence

    @property
    def exact(self) -> bool:
        """True when every kernel of both sequences has a partner."""
        return not len(self.unmatched_reference) and not len(self.unmatched_measured)


def _by_stream(streams: Sequence[Hashable] | None, count: int) -> dict[Hashable, list[int]]:
    groups: dict[Hashable, list[int]] = {}
    for index in range(count):
        groups.setdefault(streams[index] if streams is not None else 0, []).append(index)
    return groups


def _pair_streams(
    reference: dict[Hashable, list[int]],
    measured: dict[Hashable, list[int]],
    ref_keys: Sequence[Hashable],
    meas_keys: Sequence[Hashable],
) -> list[tuple[Hashable, Hashable]]:
    """Stream pairs, most shared keys first; streams sharing no key stay unpaired."""
    ref_counts = {s: Counter(ref_keys[i] for i in idx) for s, idx in reference.items()}
    meas_counts = {s: Counter(meas_keys[i] for i in idx) for s, idx in measured.items()}
    scored = sorted(
        (
            (-sum((ref_counts[r] & meas_counts[m]).values()), rank_r, rank_m, r, m)
            for rank_r, r in enumerate(reference)
            for rank_m, m in enumerate(measured)
        ),
        key=lambda t: (t[0], t[1], t[2]),
    )
    pairs: list[tuple[Hashable, Hashable]] = []
    used_r: set[Hashable] = set()
    used_m: set[Hashable] = set()
    for shared, _, _, r, m in scored:
        if shared == 0 or r in used_r or m in used_m:
            continue
        pairs.append((r, m))
        used_r.add(r)
        used_m.add(m)
    return pairs


def _align_one(a: list[Hashable], b: list[Hashable]) -> list[tuple[int, int]]:
    if a == b:
        return [(i, i) for i in range(len(a))]
    # the common head and tail pair as they are; only the differing middle needs the LCS
    head = 0
    while head < min(len(a), len(b)) and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < min(len(a), len(b)) - head and a[-1 - tail] == b[-1 - tail]:
        tail += 1
    middle_a, middle_b = a[head : len(a) - tail], b[head : len(b) - tail]
    matcher = difflib.SequenceMatcher(None, middle_a, middle_b, autojunk=False)
    middle = [
        (head + block.a + k, head + block.b + k)
        for block in matcher.get_matching_blocks()
        for k in range(block.size)
    ]
    ends = [(len(a) - tail + k, len(b) - tail + k) for k in range(tail)]
    return [(i, i) for i in range(head)] + middle + ends


def align_kernels(
    reference: Sequence[Hashable],
    measured: Sequence[Hashable],
    *,
    reference_streams: Sequence[Hashable] | None = None,
    measured_streams: Sequence[Hashable] | None = None,
) -> KernelAlignment:
    """Pair the kernels of one run of `measured` with those of one run of `reference`.

    Both are kernel keys in launch (or start) order, e.g. (name, grid, block) tuples; the
    optional streams say which stream each kernel ran on (see the module doc for what
    happens when the sequences differ). Pure: no I/O, inputs untouched.
    """
    ref_groups = _by_stream(reference_streams, len(reference))
    meas_groups = _by_stream(measured_streams, len(measured))
    found: list[tuple[int, int]] = []
    for r, m in _pair_streams(ref_groups, meas_groups, reference, measured):
        ref_idx, meas_idx = ref_groups[r], meas_groups[m]
        local = _align_one([reference[i] for i in ref_idx], [measured[i] for i in meas_idx])
        found.extend((ref_idx[i], meas_idx[j]) for i, j in local)
    found.sort()
    pairs = np.asarray(found, dtype=np.int64).reshape(-1, 2)
    ref_left = np.setdiff1d(np.arange(len(reference), dtype=np.int64), pairs[:, 0])
    meas_left = np.setdiff1d(np.arange(len(measured), dtype=np.int64), pairs[:, 1])
    return KernelAlignment(pairs, ref_left, meas_left)
