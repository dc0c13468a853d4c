"""Parse an onnxruntime profiler trace (Chrome trace JSON) into per-node statistics.

Traces get big (a 20-iteration profile of a 20,000-node model: 215 MB, 240k events), so the
file is streamed: onnxruntime writes one event per line, and a regular expression reads the
few fields needed from the head of each line; the full JSON of a node is decoded only the
first time its name appears (op type, provider, shapes). Files in another layout (one huge
line, `{"traceEvents": [...]}`, pretty-printed) fall back to an incremental JSON decoder over
chunks. Memory stays proportional to the number of events times a few integers, never to the
file size; a trace is untrusted input, and anything malformed raises TraceFormatError.

Nested events: nodes inside If/Loop/Scan bodies run inside their control-flow node's event, on
the same thread. Their time is counted once: each event's *self* time is its duration minus
its direct children's, and a node's per-inference time is the sum of its self times.
"""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import numpy as np
import pandas as pd

from nsdl_jupyter.profiling._errors import ProfileSettingsError, TraceFormatError
from nsdl_jupyter.profiling._files import malformed_as, open_regular
from nsdl_jupyter.profiling.ort._fusion_map import LayerMapping, by_profiled_name

__all__ = ["ParsedTrace", "TraceFormatError", "parse_ort_trace"]

_KERNEL_SUFFIX = "_kernel_time"
_HEAD = re.compile(
    rb'\{"cat" : "(\w+)","pid" :-?\d+,"tid" :(-?\d+),"dur" :(-?\d+),"ts" :(-?\d+),'
    rb'"ph" : "X","name" :"((?:[^"\\]|\\.)*)"'
)
_CHUNK = 1 << 20
_MAX_LINE = 1 << 20  # a longer line means another layout: the chunked decoder reads it
_MAX_EVENT = 16 << 20  # characters; onnxruntime's events are a few hundred


@dataclass(frozen=True)
class NodeInfo:
    op_type: str
    provider: str
    input_shapes: str
    output_shapes: str


@dataclass(frozen=True)
class ParsedTrace:
    """Per-node statistics over the profiled runs, and one run's events for a timeline."""

    layers: pd.DataFrame
    timeline: pd.DataFrame
    run_ms: np.ndarray  # profiled model_run durations (inflated by the profiler)
    node_sum_ms: np.ndarray  # per run: sum of node self times
    n_events: int
    n_runs_total: int
    windows: NodeWindows
    skipped_runs: int
    providers: list[str]


def format_shapes(shapes: Any) -> str:
    """`[{"float": [8, 3]}, ...]` -> 'float[8,3], ...'."""
    if not isinstance(shapes, list):
        return ""
    parts = []
    for entry in shapes:
        if isinstance(entry, dict):
            for dtype, dims in entry.items():
                dims_text = ",".join(str(d) for d in dims) if isinstance(dims, list) else "?"
                parts.append(f"{dtype}[{dims_text}]")
    return ", ".join(parts)


class _Accumulator:
    """Columns of kernel events and run boundaries, filled while streaming."""

    def __init__(self) -> None:
        self.names: dict[str, int] = {}
        self.info: list[NodeInfo] = []
        self.name_id: list[int] = []
        self.tid: list[int] = []
        self.ts: list[int] = []
        self.dur: list[int] = []
        self.runs: list[tuple[int, int]] = []
        self.n_events = 0

    def known(self, name: str) -> bool:
        return name in self.names

    def add_kernel(self, name: str, tid: int, ts: int, dur: int, info: NodeInfo | None) -> None:
        nid = self.names.get(name)
        if nid is None:
            nid = len(self.info)
            self.names[name] = nid
            self.info.append(info or NodeInfo("", "", "", ""))
        self.name_id.append(nid)
        self.tid.append(tid)
        self.ts.append(ts)
        self.dur.append(dur)

    def add_event(self, event: dict[str, Any]) -> None:
        self.n_events += 1
        cat = event.get("cat")
        name = str(event.get("name", ""))
        try:
            if cat == "Session" and name == "model_run":
                self.runs.append((int(event["ts"]), int(event["dur"])))
            elif cat == "Node" and name.endswith(_KERNEL_SUFFIX):
                node = name[: -len(_KERNEL_SUFFIX)]
                info = None if self.known(node) else _node_info(event)
                self.add_kernel(
                    node, int(event.get("tid", 0)), int(event["ts"]), int(event["dur"]), info
                )
        except (KeyError, TypeError, ValueError, OverflowError) as exc:
            raise TraceFormatError(
                f"event {self.n_events} ({name[:80]!r}) has no integer 'ts', 'dur' or 'tid' "
                f"({type(exc).__name__}: {exc}): not an onnxruntime trace event"
            ) from exc


def _node_info(event: dict[str, Any]) -> NodeInfo:
    args = event.get("args")
    if not isinstance(args, dict):
        args = {}
    return NodeInfo(
        op_type=str(args.get("op_name", "")),
        provider=str(args.get("provider", "")),
        input_shapes=format_shapes(args.get("input_type_shape")),
        output_shapes=format_shapes(args.get("output_type_shape")),
    )


def _decode_name(raw: bytes) -> str:
    if b"\\" in raw:
        return str(json.loads(b'"' + raw + b'"'))
    return raw.decode("utf-8", "replace")


def _scan_lines(stream: IO[bytes], acc: _Accumulator) -> bool:
    """Fast path over a one-event-per-line file; False when the layout is something else."""
    kernel_suffix = _KERNEL_SUFFIX.encode()
    while line := stream.readline(_MAX_LINE):
        if len(line) == _MAX_LINE and not line.endswith(b"\n"):
            return False  # one huge line: not read whole
        m = _HEAD.match(line)
        if m is None:
            stripped = line.strip().rstrip(b",")
            if stripped in (b"", b"[", b"]"):
                continue
            try:
                event = json.loads(stripped)
            except json.JSONDecodeError:
                return False
            if not isinstance(event, dict) or "traceEvents" in event:
                return False
            acc.add_event(event)
            continue
        acc.n_events += 1
        cat, tid, dur, ts, raw_name = m.groups()
        if cat == b"Node":
            if not raw_name.endswith(kernel_suffix):
                continue
            node = _decode_name(raw_name)[: -len(_KERNEL_SUFFIX)]
            info = None
            if not acc.known(node):
                info = _node_info(json.loads(line.strip().rstrip(b",")))
            acc.add_kernel(node, int(tid), int(ts), int(dur), info)
        elif cat == b"Session" and raw_name == b"model_run":
            acc.runs.append((int(ts), int(dur)))
    return True


class _ChunkedJson:
    """JSON values read one at a time from a stream, holding at most one value in memory."""

    def __init__(self, stream: IO[bytes]) -> None:
        self.stream = stream
        self.decoder = json.JSONDecoder()
        # incremental: a UTF-8 character split across two chunks stays one character
        self.utf8 = codecs.getincrementaldecoder("utf-8")("replace")
        self.text = ""
        self.pos = 0
        self.eof = False

    def fill(self) -> bool:
        if self.eof:
            return False
        chunk = self.stream.read(_CHUNK)
        self.eof = not chunk
        self.text = self.text[self.pos :] + self.utf8.decode(chunk, final=self.eof)
        self.pos = 0
        return not self.eof

    def peek(self, skip: str = "") -> str:
        """The next character after whitespace and any of `skip` ('' at the end)."""
        while True:
            text, pos = self.text, self.pos
            while pos < len(text) and (text[pos].isspace() or text[pos] in skip):
                pos += 1
            self.pos = pos
            if pos < len(text):
                return text[pos]
            if not self.fill():
                return ""

    def value(self) -> Any:
        self.peek()  # raw_decode does not skip leading whitespace
        while True:
            try:
                obj, end = self.decoder.raw_decode(self.text, self.pos)
            except json.JSONDecodeError as exc:
                if len(self.text) - self.pos > _MAX_EVENT:
                    raise TraceFormatError(
                        f"a value in the trace is over {_MAX_EVENT >> 20} M characters long: "
                        "not an onnxruntime event"
                    ) from None
                if not self.fill():
                    raise TraceFormatError(f"truncated or invalid trace: {exc}") from exc
                continue
            except RecursionError:
                raise TraceFormatError("the trace nests JSON too deeply") from None
            if end == len(self.text) and self.fill():
                continue  # a number at the end of the buffer may go on in the next chunk
            self.pos = end
            return obj

    def expect(self, char: str, what: str) -> None:
        if self.peek() != char:
            raise TraceFormatError(what)
        self.pos += 1


def _iter_array(stream: IO[bytes]) -> Iterator[dict[str, Any]]:
    """Objects of a top-level JSON array (or of its `traceEvents`), decoded one at a time."""
    reader = _ChunkedJson(stream)
    if reader.peek() == "{":
        # {"traceEvents": [...], ...}: chrome://tracing's object form
        reader.pos += 1
        while True:
            if reader.peek(",") != '"':
                raise TraceFormatError("the trace object has no 'traceEvents' array of events")
            key = reader.value()
            reader.expect(":", "invalid trace object: ':' expected after a key")
            if key == "traceEvents":
                break
            reader.value()  # another key's value (metadata): skipped
    reader.expect("[", 'an onnxruntime trace is a JSON array of events (or {"traceEvents": [...]})')
    while (char := reader.peek(",")) != "]":
        if not char:
            raise TraceFormatError("truncated trace: the event array is not closed")
        obj = reader.value()
        if isinstance(obj, dict):
            yield obj


def _accumulate(path: Path) -> _Accumulator:
    acc = _Accumulator()
    with open_regular(path, TraceFormatError) as stream:
        if _scan_lines(stream, acc):
            return acc
    acc = _Accumulator()
    with open_regular(path, TraceFormatError) as stream:
        for event in _iter_array(stream):
            acc.add_event(event)
    return acc


def _nesting(
    tid: np.ndarray, ts: np.ndarray, dur: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Parent event index (-1 at top level), self time and depth of every event."""
    n = len(ts)
    parent = np.full(n, -1, dtype=np.int64)
    depth = np.zeros(n, dtype=np.int64)
    if n == 0:
        return parent, dur.copy(), depth
    order = np.lexsort((-dur, ts, tid))
    end = ts + dur
    o_tid, o_ts, o_end = tid[order], ts[order], end[order]
    same = o_tid[1:] == o_tid[:-1]
    # Fast exit: nothing starts before the previous event on its thread has ended.
    if not np.any(same & (o_ts[1:] < np.maximum.accumulate(o_end)[:-1])):
        return parent, dur.copy(), depth
    child_sum = np.zeros(n, dtype=np.int64)
    stack: list[int] = []
    prev_tid = None
    ends = end.tolist()
    starts = ts.tolist()
    durs = dur.tolist()
    tids = tid.tolist()
    parents = parent.tolist()
    depths = depth.tolist()
    sums = child_sum.tolist()
    for i in order.tolist():
        if tids[i] != prev_tid:
            stack.clear()
            prev_tid = tids[i]
        s = starts[i]
        while stack and ends[stack[-1]] <= s:
            stack.pop()
        if stack:
            p = stack[-1]
            parents[i] = p
            depths[i] = depths[p] + 1
            sums[p] += durs[i]
        stack.append(i)
    parent = np.asarray(parents, dtype=np.int64)
    self_time = np.maximum(dur - np.asarray(sums, dtype=np.int64), 0)
    return parent, self_time, np.asarray(depths, dtype=np.int64)


@dataclass(frozen=True)
class _Events:
    """Kernel events of the kept runs, as columns."""

    name_id: np.ndarray
    parent_id: np.ndarray  # name id of the enclosing event, -1 at top level
    run: np.ndarray
    self_us: np.ndarray
    dur_us: np.ndarray
    offset_us: np.ndarray  # start relative to its run's start
    depth: np.ndarray
    ts_us: np.ndarray  # start, microseconds since the profiler started
    run_start_us: np.ndarray  # per kept run


@dataclass(frozen=True)
class NodeWindows:
    """When each node ran on the host, per kept run (for placing GPU kernel launches)."""

    names: list[str]
    name_id: np.ndarray
    run: np.ndarray
    ts_us: np.ndarray  # microseconds since the profiler started
    dur_us: np.ndarray
    depth: np.ndarray
    run_start_us: np.ndarray
    representative: int  # the run a timeline shows (median duration)


def _events(acc: _Accumulator, skip_runs: int) -> tuple[_Events, np.ndarray, int]:
    """Events assigned to runs (warm-up runs dropped), nesting resolved; and run durations."""
    name_id = np.asarray(acc.name_id, dtype=np.int64)
    tid = np.asarray(acc.tid, dtype=np.int64)
    ts = np.asarray(acc.ts, dtype=np.int64)
    dur = np.asarray(acc.dur, dtype=np.int64)
    runs = sorted(acc.runs)
    if not runs:  # a trace cut out of a session: treat it as a single run
        start = int(ts.min())
        runs = [(start, int((ts + dur).max()) - start)]
    if skip_runs >= len(runs):
        raise ProfileSettingsError(
            f"the trace has {len(runs)} runs; cannot skip {skip_runs} as warm-up "
            f"(use skip_runs < {len(runs)})"
        )
    run_start = np.asarray([r[0] for r in runs], dtype=np.int64)
    run_end = run_start + np.asarray([r[1] for r in runs], dtype=np.int64)
    run_idx = np.searchsorted(run_start, ts, side="right") - 1
    inside = (run_idx >= 0) & (ts <= run_end[np.clip(run_idx, 0, None)])
    keep = inside & (run_idx >= skip_runs)
    parent_ev, self_time, depth = _nesting(tid[keep], ts[keep], dur[keep])
    name_id, ts, dur, run_idx = name_id[keep], ts[keep], dur[keep], run_idx[keep]
    events = _Events(
        name_id=name_id,
        parent_id=np.where(parent_ev >= 0, name_id[np.clip(parent_ev, 0, None)], -1),
        run=run_idx - skip_runs,
        self_us=self_time,
        dur_us=dur,
        offset_us=ts - run_start[run_idx],
        depth=depth,
        ts_us=ts,
        run_start_us=run_start[skip_runs:],
    )
    return events, (run_end - run_start)[skip_runs:] / 1e3, len(runs)


def _layers(acc: _Accumulator, ev: _Events, n_runs: int) -> pd.DataFrame:
    """One row per (node, enclosing node): statistics over runs of its per-run self time."""
    frame = pd.DataFrame(
        {
            "name_id": ev.name_id,
            "parent_id": ev.parent_id,
            "run": ev.run,
            "self_us": ev.self_us,
            "offset_us": ev.offset_us,
        }
    )
    keys = ["name_id", "parent_id"]
    per_run = frame.groupby([*keys, "run"], sort=False)["self_us"].sum()
    matrix = per_run.unstack("run", fill_value=0).reindex(columns=range(n_runs), fill_value=0)
    values_ms = matrix.to_numpy(dtype=np.float64) / 1e3
    grouped = frame.groupby(keys, sort=False)
    counts = grouped.size().reindex(matrix.index).to_numpy(dtype=np.float64)
    start_ms = grouped["offset_us"].median().reindex(matrix.index).to_numpy(np.float64) / 1e3
    names = list(acc.names)
    key_name = matrix.index.get_level_values("name_id").to_numpy()
    key_parent = matrix.index.get_level_values("parent_id").to_numpy()
    infos = [acc.info[i] for i in key_name]
    mean = values_ms.mean(axis=1)
    total = mean.sum()
    return pd.DataFrame(
        {
            "name": [names[i] for i in key_name],
            "op_type": [info.op_type for info in infos],
            "provider": [info.provider for info in infos],
            "parent": [names[p] if p >= 0 else "" for p in key_parent],
            "calls": counts / n_runs,
            "mean_ms": mean,
            "median_ms": np.median(values_ms, axis=1),
            "min_ms": values_ms.min(axis=1),
            "max_ms": values_ms.max(axis=1),
            "std_ms": values_ms.std(axis=1, ddof=1) if n_runs > 1 else np.zeros(len(mean)),
            "share": mean / total if total > 0 else np.zeros(len(mean)),
            "input_shapes": [info.input_shapes for info in infos],
            "output_shapes": [info.output_shapes for info in infos],
            "start_ms": start_ms,
        }
    )


def _timeline(acc: _Accumulator, ev: _Events, run: int) -> pd.DataFrame:
    """Every event of one run, in start order."""
    names = list(acc.names)
    mask = ev.run == run
    ids = ev.name_id[mask]
    timeline = pd.DataFrame(
        {
            "name": [names[i] for i in ids],
            "op_type": [acc.info[i].op_type for i in ids],
            "provider": [acc.info[i].provider for i in ids],
            "parent": [names[p] if p >= 0 else "" for p in ev.parent_id[mask]],
            "start_ms": ev.offset_us[mask] / 1e3,
            "duration_ms": ev.dur_us[mask] / 1e3,
            "self_ms": ev.self_us[mask] / 1e3,
            "depth": ev.depth[mask],
            "input_shapes": [acc.info[i].input_shapes for i in ids],
            "output_shapes": [acc.info[i].output_shapes for i in ids],
        }
    )
    return timeline.sort_values(["start_ms", "depth"], kind="stable").reset_index(drop=True)


def parse_ort_trace(
    path: str | Path,
    *,
    skip_runs: int = 0,
    graph_nodes: set[str] | None = None,
    mapping: Mapping[str, LayerMapping] | None = None,
) -> ParsedTrace:
    """Per-node statistics of an onnxruntime trace; `skip_runs` drops warm-up runs.

    `graph_nodes` (the model's node names) fills `in_graph` and `onnx_nodes` for the rows that
    are nodes of the graph. `mapping` (from the optimized model, `_fusion_map`) also maps fused
    and inserted rows: `onnx_nodes`, the share of the row's time each gets (`onnx_weights`)
    and how it was mapped (`mapped_as`: original, fused, inlined, inserted or unmapped).
    """
    if not isinstance(skip_runs, int) or isinstance(skip_runs, bool) or skip_runs < 0:
        raise ProfileSettingsError(
            f"skip_runs={skip_runs!r}: give the number of warm-up runs to drop, an integer >= 0"
        )
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no trace file at {path}")
    with malformed_as(TraceFormatError, f"{path} (onnxruntime trace)"):
        acc = _accumulate(path)
    if not acc.name_id:
        raise TraceFormatError(
            f"{path} has no node events: profile with SessionOptions.enable_profiling = True "
            "(onnxruntime's profiler) and pass the JSON file that end_profiling() returns"
        )
    with malformed_as(TraceFormatError, f"{path} (onnxruntime trace)"):
        parsed = _parsed(acc, skip_runs, graph_nodes)
    if mapping is not None:
        _apply_mapping(parsed.layers, mapping)
    return parsed


def _apply_mapping(layers: pd.DataFrame, mapping: Mapping[str, LayerMapping]) -> None:
    """Fill `onnx_nodes`, `onnx_weights` and `mapped_as` of the node rows from `mapping`."""
    top = layers["parent"] == ""  # rows are in run order: unnamed nodes pair by it
    rows = zip(layers["name"][top], layers["op_type"][top], strict=True)
    mapping = by_profiled_name(mapping, rows)
    nodes, weights, kinds = [], [], []
    for name, parent, known in zip(
        layers["name"], layers["parent"], layers["onnx_nodes"], strict=True
    ):
        found = mapping.get(name)
        if found is not None and found.nodes and not parent:
            nodes.append(list(found.nodes))
            weights.append(list(found.weights))
            kinds.append(found.kind)
        else:
            nodes.append(list(known))
            weights.append([1.0] * len(known))
            kinds.append("original" if known else ("" if parent else "unmapped"))
    layers["onnx_nodes"] = nodes
    layers["onnx_weights"] = weights
    layers["mapped_as"] = kinds


def _parsed(acc: _Accumulator, skip_runs: int, graph_nodes: set[str] | None) -> ParsedTrace:
    events, run_ms, n_runs_total = _events(acc, skip_runs)
    n_runs = n_runs_total - skip_runs
    layers = _layers(acc, events, n_runs)
    if graph_nodes is not None:
        layers["in_graph"] = layers["name"].isin(graph_nodes)
        layers["onnx_nodes"] = [[n] if n in graph_nodes else [] for n in layers["name"]]
    else:
        layers["onnx_nodes"] = [
            [n] if not p else [] for n, p in zip(layers["name"], layers["parent"], strict=True)
        ]
    layers = layers.sort_values(["start_ms", "name"], kind="stable").reset_index(drop=True)
    node_sum_ms = np.bincount(events.run, weights=events.self_us, minlength=n_runs) / 1e3
    representative = int(np.argsort(run_ms)[len(run_ms) // 2])  # the run of median duration
    windows = NodeWindows(
        names=list(acc.names),
        name_id=events.name_id,
        run=events.run,
        ts_us=events.ts_us,
        dur_us=events.dur_us,
        depth=events.depth,
        run_start_us=events.run_start_us,
        representative=representative,
    )
    return ParsedTrace(
        layers=layers,
        windows=windows,
        timeline=_timeline(acc, events, representative),
        run_ms=run_ms,
        node_sum_ms=node_sum_ms,
        n_events=acc.n_events,
        n_runs_total=n_runs_total,
        skipped_runs=skip_runs,
        providers=sorted({info.provider for info in acc.info if info.provider}),
    )
