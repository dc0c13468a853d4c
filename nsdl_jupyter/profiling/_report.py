"""ProfileReport: the data of one profile run (ONNX Runtime or TensorRT), views aside.

A report is data first: `layers` (one row per layer), `timeline_events` (one inference),
`latencies_ms` (end-to-end, one value per iteration) and `metadata`. Figures come from
`nsdl_jupyter.figures`, which registers the report's shortcuts to them (`timeline()`) with
`register_report_figure`: profiling imports no layer above it. Reports save to one JSON file and
load back without the runtime or the GPU that produced them.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from nsdl_jupyter._atomic import atomic_write_bytes
from nsdl_jupyter._display import html_text, neutralize, shown_path
from nsdl_jupyter._errors import ArgumentError
from nsdl_jupyter._output_guard import guard_output, starts_with
from nsdl_jupyter._plugins import REPORT_FIGURES, load
from nsdl_jupyter.profiling._compare_nodes import compare_by_onnx_node
from nsdl_jupyter.profiling._errors import ProfileSettingsError, ReportFormatError
from nsdl_jupyter.profiling._files import malformed_as, read_json
from nsdl_jupyter.profiling.gpu._summary import gpu_summary_rows

if TYPE_CHECKING:
    import plotly.graph_objects as go

# The figures behind the report's shortcuts, registered by nsdl_jupyter.figures.
_FIGURES: dict[str, Callable[..., go.Figure]] = {}

FORMAT = "nsdl-profile-report"
FORMAT_VERSION = 1
MAX_METADATA_DEPTH = 32  # nesting a loaded report's metadata may have (save recurses into it)

# What names a row: the layer, the model's node, how it ran.
_NAME_COLUMNS = [
    "name",
    "node",  # the model's node the row stands for (module path + op); else `name`
    "op_type",
    "provider",
    "precision",
    "parent",
]
_STAT_COLUMNS = ["calls", "mean_ms", "median_ms", "min_ms", "max_ms", "std_ms", "share"]
_SHAPE_COLUMNS = ["input_shapes", "output_shapes"]
# The columns every report's `layers` has, in this order (others may follow).
LAYER_COLUMNS = [*_NAME_COLUMNS, *_STAT_COLUMNS, *_SHAPE_COLUMNS, "start_ms", "onnx_nodes"]
_FLOAT_COLUMNS = [*_STAT_COLUMNS, "start_ms"]
_TEXT_COLUMNS = [*_NAME_COLUMNS, *_SHAPE_COLUMNS]
TIMELINE_COLUMNS = [
    *_NAME_COLUMNS,
    "start_ms",
    "duration_ms",
    "self_ms",
    "depth",
    *_SHAPE_COLUMNS,
]


def _normalise_layers(layers: pd.DataFrame) -> pd.DataFrame:
    layers = layers.copy()
    for column in LAYER_COLUMNS:
        if column not in layers:
            if column == "onnx_nodes":
                layers[column] = [[] for _ in range(len(layers))]
            elif column in _FLOAT_COLUMNS:
                layers[column] = np.nan
            else:
                layers[column] = ""
    for column in _FLOAT_COLUMNS:
        layers[column] = pd.to_numeric(layers[column], errors="coerce").astype("float64")
    for column in _TEXT_COLUMNS:
        layers[column] = layers[column].fillna("").astype(str)
    layers["onnx_nodes"] = [
        [str(n) for n in v] if isinstance(v, (list, tuple)) else [] for v in layers["onnx_nodes"]
    ]
    layers["node"] = layers["node"].where(layers["node"] != "", layers["name"])
    extra = [c for c in layers.columns if c not in LAYER_COLUMNS]
    return layers[LAYER_COLUMNS + extra].reset_index(drop=True)


def _normalise_timeline(timeline: pd.DataFrame | None) -> pd.DataFrame:
    if timeline is None:
        timeline = pd.DataFrame(columns=TIMELINE_COLUMNS)
    timeline = timeline.copy()
    for column in TIMELINE_COLUMNS:
        if column not in timeline:
            timeline[column] = (
                0 if column == "depth" else ("" if column in _TEXT_COLUMNS else np.nan)
            )
    for column in ("start_ms", "duration_ms", "self_ms"):
        timeline[column] = pd.to_numeric(timeline[column], errors="coerce").astype("float64")
    timeline["depth"] = pd.to_numeric(timeline["depth"], errors="coerce").fillna(0).astype("int64")
    for column in set(TIMELINE_COLUMNS) & set(_TEXT_COLUMNS):
        timeline[column] = timeline[column].fillna("").astype(str)
    return timeline[TIMELINE_COLUMNS].reset_index(drop=True)


def _named_by_nodes(timeline: pd.DataFrame, layers: pd.DataFrame) -> pd.DataFrame:
    """The timeline's `node` column from the layers' (an event without a layer keeps its
    onnxruntime name)."""
    known = layers.drop_duplicates("name").set_index("name")["node"]
    given = timeline["node"].where(timeline["node"] != "", timeline["name"].map(known))
    timeline["node"] = given.fillna(timeline["name"]).astype(str)
    return timeline


def latency_stats(latencies_ms: np.ndarray) -> pd.Series:
    """count, mean, std, min, p50, p90, p99, max of end-to-end latencies (ms)."""
    values = np.asarray(latencies_ms, dtype=np.float64)
    index = ["count", "mean", "std", "min", "p50", "p90", "p99", "max"]
    if values.size == 0:
        return pd.Series([0.0] + [math.nan] * 7, index=index, name="latency_ms")
    p50, p90, p99 = np.percentile(values, [50, 90, 99])
    std = float(values.std(ddof=1)) if values.size > 1 else 0.0
    return pd.Series(
        [
            float(values.size),
            float(values.mean()),
            std,
            float(values.min()),
            p50,
            p90,
            p99,
            float(values.max()),
        ],
        index=index,
        name="latency_ms",
    )


def _jsonable(value: Any) -> Any:
    """NaN -> None, numpy scalars/arrays -> Python, so the file is strict JSON."""
    if isinstance(value, float):
        return None if math.isnan(value) or math.isinf(value) else value
    if isinstance(value, np.generic):
        return _jsonable(value.item())
    if isinstance(value, np.ndarray):
        return [_jsonable(v) for v in value.tolist()]
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    return value


def _frame_to_json(frame: pd.DataFrame) -> dict[str, list[Any]]:
    return {str(c): _jsonable(frame[c].tolist()) for c in frame.columns}


class ProfileReport:
    """Per-layer times, one inference's timeline, end-to-end latencies and run metadata."""

    def __init__(
        self,
        layers: pd.DataFrame,
        *,
        latencies_ms: Any = (),
        timeline_events: pd.DataFrame | None = None,
        metadata: Mapping[str, Any] | None = None,
        kernels: pd.DataFrame | None = None,
        kernel_timeline: pd.DataFrame | None = None,
        gpu_metrics: pd.DataFrame | None = None,
    ) -> None:
        if not isinstance(layers, pd.DataFrame):
            raise ArgumentError(
                "layers must be a pandas DataFrame (one row per layer), not "
                f"{type(layers).__name__}; to read a saved report use ProfileReport.load(path)"
            )
        self.layers = _normalise_layers(layers)
        self.timeline_events = _named_by_nodes(_normalise_timeline(timeline_events), self.layers)
        self.latencies_ms = np.asarray(latencies_ms, dtype=np.float64)
        self.metadata: dict[str, Any] = dict(metadata or {})
        # GPU truth, when the run had it (empty frames otherwise): one row per kernel kind
        # per layer, the kernels of one inference, and NVML samples of the measured pass
        self.kernels = kernels if kernels is not None else pd.DataFrame()
        self.kernel_timeline = kernel_timeline if kernel_timeline is not None else pd.DataFrame()
        self.gpu_metrics = gpu_metrics if gpu_metrics is not None else pd.DataFrame()

    @property
    def has_gpu_times(self) -> bool:
        """True when per-layer times come from the GPU's kernels (`gpu_ms`)."""
        return "gpu_ms" in self.layers and bool(self.layers["gpu_ms"].notna().any())

    @property
    def time_column(self) -> str:
        """The per-layer time views use: `gpu_ms` when the report has it, else `mean_ms`."""
        return "gpu_ms" if self.has_gpu_times else "mean_ms"

    # ---- data -----------------------------------------------------------------------------

    @property
    def latency(self) -> pd.Series:
        """End-to-end latency statistics in ms (count, mean, std, min, p50, p90, p99, max)."""
        return latency_stats(self.latencies_ms)

    @property
    def source(self) -> str:
        return str(self.metadata.get("source", ""))

    @property
    def name(self) -> str:
        """A short label: metadata 'label', else model and provider ('resnet50 CUDA', with
        'no graph opt' when graph optimization was off)."""
        if self.metadata.get("label"):
            return str(self.metadata["label"])
        model = self.metadata.get("model_name") or "model"
        provider = str(self.metadata.get("provider", self.source))
        name = f"{model} {provider.removesuffix('ExecutionProvider')}".strip()
        return name + (" no graph opt" if self.metadata.get("graph_optimization") is False else "")

    def top(self, n: int = 10, by: str = "mean_ms") -> pd.DataFrame:
        """The n layers with the largest `by`."""
        return self.layers.nlargest(n, by)

    def by_op_type(self, column: str | None = None) -> pd.DataFrame:
        """Time per op type: layers, ms per inference (`column`, default `time_column`, under
        that name), share."""
        column = column or self.time_column
        grouped = self.layers.groupby("op_type", sort=False).agg(
            layers=("name", "size"), **{column: (column, "sum")}
        )
        total = grouped[column].sum()
        grouped["share"] = grouped[column] / total if total > 0 else 0.0
        return grouped.sort_values(column, ascending=False)

    def layer_times(self, column: str | None = None) -> dict[str, float]:
        """Ms per inference per layer name, from `column` (default `time_column`): the overlay
        of a graph whose nodes are the layers (`GraphView(nj.open_engine_graph(...))`)."""
        values = self.layers[column or self.time_column]
        return {
            str(name): float(ms)
            for name, ms in zip(self.layers["name"], values, strict=True)
            if not math.isnan(ms)
        }

    def node_times(self, column: str | None = None) -> dict[str, float]:
        """Ms per inference per ONNX node name (for a graph overlay), from `column` (default
        `time_column`: GPU time when the report has it). A fused layer's time is split over
        its nodes by `onnx_weights` when the report has them (onnxruntime reports mapped
        through the optimized model), else each of its nodes gets all of it."""
        times: dict[str, float] = {}
        weights = self.layers.get("onnx_weights")
        for row, (nodes, ms) in enumerate(
            zip(self.layers["onnx_nodes"], self.layers[column or self.time_column], strict=True)
        ):
            if math.isnan(ms):
                continue
            shares = _shares(weights.iat[row] if weights is not None else None, len(nodes))
            for node, share in zip(nodes, shares, strict=True):
                times[node] = times.get(node, 0.0) + float(ms) * share
        return times

    def mapped_share(self) -> float:
        """Share of the profiled time (GPU time when the report has it) that lands on ONNX
        nodes of the model (0..1)."""
        total = float(np.nansum(self.layers[self.time_column]))
        on_nodes = sum(self.node_times().values())
        return on_nodes / total if total > 0 else math.nan

    def compare(
        self, other: ProfileReport, column: str | None = None, *, by: str | None = None
    ) -> pd.DataFrame:
        """Per-layer comparison with `other`: delta and speed-up.

        `by`: 'name' matches layers by name; 'onnx_node' matches the ONNX nodes each layer ran
        (an onnxruntime report against a TensorRT one, whose layers fuse several nodes: one row
        per group of nodes, with `onnx_nodes`, `layers_a`, `layers_b`); default: 'onnx_node'
        when the two runtimes differ, else 'name'. Times from `column`: by default `gpu_ms`
        when both reports have GPU times, else `mean_ms` (a GPU time against a host time would
        compare the profilers, not the runs). `<column>_a`, `<column>_b`; `delta_ms` = other -
        self; `speedup` = self / other (> 1: `other` is faster). The frame's `attrs` hold the
        column, `by` and the end-to-end figures.
        """
        if column is None:
            column = "gpu_ms" if self.has_gpu_times and other.has_gpu_times else "mean_ms"
        if by is None:
            runtimes = {str(r.metadata.get("runtime", r.source)) for r in (self, other)}
            by = "onnx_node" if len(runtimes) > 1 else "name"
        if by not in ("name", "onnx_node"):
            raise ProfileSettingsError(
                f"by={by!r}: use 'name' or 'onnx_node' (or None: by the runtimes)"
            )
        col_a, col_b = f"{column}_a", f"{column}_b"
        if by == "onnx_node":
            merged = compare_by_onnx_node(self, other, column)
        else:
            merged = self._compare_by_name(other, column)
        la, lb = self.latency, other.latency
        merged.attrs = {
            "a": self.name,
            "b": other.name,
            "column": column,
            "by": by,
            "p50_ms_a": float(la["p50"]),
            "p50_ms_b": float(lb["p50"]),
            "speedup_p50": float(la["p50"] / lb["p50"]) if lb["p50"] else math.nan,
            "matched_layers": int(merged[[col_a, col_b]].notna().all(axis=1).sum()),
        }
        return merged

    def _compare_by_name(self, other: ProfileReport, column: str) -> pd.DataFrame:
        a = self.layers[["name", "op_type", column]]
        b = other.layers[["name", "op_type", column]]
        merged = a.merge(b, on="name", how="outer", suffixes=("_a", "_b"), sort=False)
        merged["op_type"] = merged["op_type_a"].fillna(merged["op_type_b"])
        merged = merged.drop(columns=["op_type_a", "op_type_b"])
        col_a, col_b = f"{column}_a", f"{column}_b"
        merged["delta_ms"] = merged[col_b] - merged[col_a]
        merged["speedup"] = merged[col_a] / merged[col_b]
        merged = merged[["name", "op_type", col_a, col_b, "delta_ms", "speedup"]]
        merged = merged.reindex(merged["delta_ms"].abs().sort_values(ascending=False).index)
        return merged.reset_index(drop=True)

    # ---- views ----------------------------------------------------------------------------

    def timeline(self, color_by: str | None = None, **kwargs: Any) -> go.Figure:
        """Timeline of one inference (plotly Figure): a bar per layer at its start."""
        return _figure("timeline")(self, color_by=color_by, **kwargs)

    def roofline_table(
        self,
        model: Any = None,
        *,
        inputs: Mapping[str, Any] | None = None,
        peaks: Mapping[str, Any] | None = None,
        latency_pct: float = 60.0,
    ) -> pd.DataFrame:
        """Per layer: work (FLOPs, bytes of the ONNX nodes it ran, from `model`, by default
        `metadata["model_path"]`, at `inputs`, by default the profiled input shapes), achieved
        FLOP/s and bytes/s, intensity, the roof for its dtype from `peaks` (default
        `metadata["peaks"]`), `pct_of_roof` and `bound` (compute, memory, or latency below
        `latency_pct` % of both peaks). See profiling/analysis/_roofline.py for the peaks."""
        from nsdl_jupyter.profiling.analysis._roofline import roofline_table

        return roofline_table(
            self.layers, self.time_column, self.metadata, model,
            inputs=inputs, peaks=peaks, latency_pct=latency_pct,
        )  # fmt: skip

    def roofline(self, model: Any = None, **kwargs: Any) -> go.Figure:
        """Roofline chart (plotly): layers as points (arithmetic intensity, achieved FLOP/s)
        sized by time and coloured by op type, under the measured roofs; keywords as
        `roofline_table`."""
        return _figure("roofline")(self, model, **kwargs)

    def findings(
        self,
        model: Any = None,
        *,
        inputs: Mapping[str, Any] | None = None,
        peaks: Mapping[str, Any] | None = None,
        tiny_kernel_us: float = 10.0,
        below_roof_pct: float = 30.0,
        keep: int = 10,
    ) -> pd.DataFrame:
        """Ranked findings (what to do), each on ONNX nodes with the measurements behind it:
        host copies, fp32 GEMM/Conv off Tensor Cores, unfused elementwise chains, tiny
        kernels, layers far below their roof. `est_speedup_pct` is the share of the run's GPU
        time it would save. See nsdl_jupyter.profiling.analysis._findings for the rules."""
        from nsdl_jupyter.profiling.analysis._findings import findings
        from nsdl_jupyter.profiling.analysis._node_work import work_table
        from nsdl_jupyter.profiling.analysis._roofline import (
            model_for,
            profile_inputs,
            roofline_table,
        )

        work = work_table(model_for(model, self.metadata), inputs or profile_inputs(self.metadata))
        table = roofline_table(self.layers, self.time_column, self.metadata, work=work, peaks=peaks)
        return findings(
            table, work, self.metadata, tiny_kernel_us=tiny_kernel_us,
            below_roof_pct=below_roof_pct, keep=keep,
        )  # fmt: skip

    def summary(self) -> str:
        lat = self.latency
        md = self.metadata
        lines = [
            f"{self.name}: {len(self.layers)} layers, {md.get('iterations', '?')} iterations",
            f"  runtime: {md.get('runtime', self.source)} {md.get('runtime_version', '')}".rstrip(),
            f"  device: {md.get('device', '?')}",
            f"  end-to-end p50 {lat['p50']:.3f} ms, p90 {lat['p90']:.3f}, p99 {lat['p99']:.3f}, "
            f"mean {lat['mean']:.3f} ms",
        ]
        lines += [f"  {label}: {text}" for label, text in self.gpu_summary()]
        if md.get("timing_note"):
            lines.append(f"  note: {md['timing_note']}")
        return "\n".join(lines)

    def gpu_summary(self) -> list[tuple[str, str]]:
        """(label, text) rows on the GPU side of the run: where layer times come from, GPU
        busy and idle per inference, clocks (locked at X MHz, or the warning), NVML metrics;
        why there are no GPU times when the runner could not take them. Empty without a GPU
        part."""
        return gpu_summary_rows(self.metadata, len(self.gpu_metrics))

    def __repr__(self) -> str:
        return f"<ProfileReport {self.summary()}>"

    def _repr_html_(self) -> str:
        lat = self.latency
        md = self.metadata
        rows = [
            ("model", md.get("model_name", "")),
            ("runtime", f"{md.get('runtime', self.source)} {md.get('runtime_version', '')}"),
            ("provider", md.get("provider", "")),
            ("device", md.get("device", "")),
            ("iterations", md.get("iterations", "")),
            (
                "end-to-end p50 / p90 / p99",
                f"{lat['p50']:.3f} / {lat['p90']:.3f} / {lat['p99']:.3f} ms",
            ),
            ("end-to-end mean", f"{lat['mean']:.3f} ms"),
            ("layers", len(self.layers)),
            ("trace", shown_path(str(md["trace_path"])) if md.get("trace_path") else ""),
            *self.gpu_summary(),
        ]
        body = "".join(
            f"<tr><th style='text-align:left'>{html_text(str(k))}</th>"
            f"<td style='text-align:left'>{html_text(str(v))}</td></tr>"
            for k, v in rows
        )
        column = self.time_column
        top = self.top(10, column)[["name", "op_type", column, "share", "output_shapes"]]
        top = top.assign(name=top["name"].map(neutralize))  # to_html escapes, bidi stays
        note = md.get("timing_note", "")
        return (
            f"<div class='nsdl-profile-report'><table>{body}</table>"
            f"<p><i>{html_text(str(note))}</i></p>"
            f"<p>Top layers</p>{top.to_html(index=False, float_format=lambda x: f'{x:.4f}')}</div>"
        )

    # ---- persistence ----------------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "version": FORMAT_VERSION,
            "metadata": _jsonable(self.metadata),
            "latencies_ms": _jsonable(self.latencies_ms),
            "layers": _frame_to_json(self.layers),
            "timeline": _frame_to_json(self.timeline_events),
            "kernels": _frame_to_json(self.kernels),
            "kernel_timeline": _frame_to_json(self.kernel_timeline),
            "gpu_metrics": _frame_to_json(self.gpu_metrics),
        }

    def save(self, path: str | os.PathLike[str], *, overwrite: bool = False) -> Path:
        """Write the report as one JSON file, atomically (a crash leaves the old file or none).

        An earlier report at `path` is replaced; another file only with `overwrite=True`, and
        never a model's file (OutputPathError)."""
        path = Path(path)
        if path.is_dir():
            raise IsADirectoryError(f"{path} is a folder: give a file name such as report.json")
        guard_output(path, overwrite=overwrite, earlier=_is_report, what="report path")
        text = json.dumps(self.to_json(), allow_nan=False)
        atomic_write_bytes(path, text.encode("utf-8"))
        return path

    @classmethod
    def from_json(cls, data: Any, *, where: str = "the data") -> ProfileReport:
        """A report from what `to_json` returns; ReportFormatError naming `where` otherwise."""
        if not isinstance(data, Mapping):
            raise ReportFormatError(
                f"{where} is not a profile report: its JSON is a {type(data).__name__}, not an "
                "object; give a file written by ProfileReport.save"
            )
        if data.get("format") != FORMAT:
            raise ReportFormatError(
                f"{where} is not a profile report (format {data.get('format')!r}, want "
                f"{FORMAT!r}); give a file written by ProfileReport.save"
            )
        version = data.get("version", 0)
        if not isinstance(version, int) or isinstance(version, bool):
            raise ReportFormatError(f"{where}: version {version!r} is not an integer")
        if version > FORMAT_VERSION:
            raise ReportFormatError(
                f"{where}: report format version {version} is newer than this nsdl_jupyter reads "
                f"({FORMAT_VERSION}): upgrade nsdl_jupyter"
            )
        layers = _columns(data.get("layers"), f"{where}: 'layers'", required=True)
        timeline = _columns(data.get("timeline"), f"{where}: 'timeline'", required=False)
        gpu = {
            key: pd.DataFrame(_columns(data.get(key), f"{where}: {key!r}", required=False))
            for key in ("kernels", "kernel_timeline", "gpu_metrics")
        }
        latencies = data.get("latencies_ms", [])
        if not isinstance(latencies, list) or not all(
            v is None or (isinstance(v, (int, float)) and not isinstance(v, bool))
            for v in latencies
        ):
            raise ReportFormatError(f"{where}: 'latencies_ms' is not a list of numbers")
        metadata = data.get("metadata") or {}
        if not isinstance(metadata, Mapping):
            raise ReportFormatError(
                f"{where}: 'metadata' is a {type(metadata).__name__}, not an object"
            )
        if _depth_exceeds(metadata, MAX_METADATA_DEPTH):
            raise ReportFormatError(
                f"{where}: 'metadata' nests deeper than {MAX_METADATA_DEPTH} levels"
            )
        with malformed_as(ReportFormatError, where):
            return cls(
                pd.DataFrame(layers),
                latencies_ms=[math.nan if v is None else v for v in latencies],
                timeline_events=pd.DataFrame(timeline),
                metadata=metadata,
                **gpu,
            )

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> ProfileReport:
        """Read a report written by `save`; ReportFormatError when the file is not one."""
        data = read_json(path, ReportFormatError, "a profile report")
        return cls.from_json(data, where=str(path))


def register_report_figure(name: str, draw: Callable[..., go.Figure]) -> None:
    """Make `draw(report, ...)` the figure behind the shortcut `ProfileReport.<name>()`."""
    _FIGURES[name] = draw


def _figure(name: str) -> Callable[..., go.Figure]:
    load(REPORT_FIGURES)
    return _FIGURES[name]


def _columns(value: Any, where: str, *, required: bool) -> dict[str, list[Any]]:
    """A frame as saved: an object of equally long lists."""
    if value is None and not required:
        return {}
    if not isinstance(value, Mapping) or not all(isinstance(v, list) for v in value.values()):
        raise ReportFormatError(f"{where} is not an object of column lists")
    if len({len(v) for v in value.values()}) > 1:
        raise ReportFormatError(f"{where}: its columns have different lengths")
    return dict(value)


def _depth_exceeds(value: Any, limit: int) -> bool:
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        if isinstance(item, Mapping):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item)
    return False


def recorded_path(path: str | os.PathLike[str] | None, *, full_paths: bool) -> str | None:
    """How a report records a file path: absolute with `full_paths`, else relative to the
    working folder when under it, else the file name (no home folder or user name leaks)."""
    if path is None:
        return None
    absolute = Path(os.path.abspath(path))
    if full_paths:
        return str(absolute)
    cwd = Path.cwd()
    if cwd != Path(cwd.anchor) and absolute.is_relative_to(cwd):
        return absolute.relative_to(cwd).as_posix()
    return absolute.name


def _shares(weights: Any, count: int) -> list[float]:
    """The split of a row's time over its `count` nodes (whole time each without weights)."""
    if isinstance(weights, (list, tuple)) and len(weights) == count:
        try:
            return [float(w) for w in weights]
        except (TypeError, ValueError):
            pass
    return [1.0] * count


def now_iso() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def _is_report(path: Path) -> bool:
    """A file `ProfileReport.save` wrote (its JSON starts with the format name)."""
    return starts_with(path, b'{"format": "' + FORMAT.encode() + b'"')
