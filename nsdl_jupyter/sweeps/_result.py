"""SweepResult: the tidy table of a sweep (one row per configuration x target), each run's
ProfileReport on demand from the cache, and the views of the whole (plot, heatmap, best,
compare). The figures are drawn by `nsdl_jupyter.figures`, which registers them here."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from nsdl_jupyter._atomic import atomic_write_bytes
from nsdl_jupyter._output_guard import guard_output, starts_with
from nsdl_jupyter._plugins import REPORT_FIGURES, load
from nsdl_jupyter.profiling import ProfileReport
from nsdl_jupyter.sweeps._cache import SweepCache
from nsdl_jupyter.sweeps._errors import SweepSettingsError
from nsdl_jupyter.sweeps._grid import AXES

if TYPE_CHECKING:
    import plotly.graph_objects as go

_FIGURES: dict[str, Callable[..., go.Figure]] = {}
# metrics where more is better (best() maximises them); the others are minimised
HIGHER_IS_BETTER = {"throughput_per_s", "gpu_util_pct"}

FIGURE_COLUMNS = [
    "p50_ms", "p90_ms", "p99_ms", "mean_ms", "throughput_per_s", "gpu_busy_ms", "gpu_util_pct",
    "memory_mb", "build_s",
]  # fmt: skip
IDENTITY_COLUMNS = [
    "target", "gpu_name", "driver", "cpu", "onnxruntime_version", "tensorrt_version",
]  # fmt: skip
# started / ended: the task's wall-clock span (Unix seconds) on its worker
RUN_COLUMNS = ["status", "error", "attempts", "cached", "wall_s", "started", "ended", "key"]
COLUMNS = [*AXES, *IDENTITY_COLUMNS, *FIGURE_COLUMNS, *RUN_COLUMNS]
SAVED_FORMAT = "nsdl-sweep-result"
SAVED_FILE = "sweep.json"


def register_sweep_figure(name: str, draw: Callable[..., go.Figure]) -> None:
    """Make `draw(result, ...)` the figure behind `SweepResult.<name>()`."""
    _FIGURES[name] = draw


def _figure(name: str) -> Callable[..., go.Figure]:
    load(REPORT_FIGURES)
    return _FIGURES[name]


def where_label(row: Mapping[str, Any]) -> str:
    """The machine of a row as a legend says it: the target and what ran there (GPU and
    driver, or the CPU; the onnxruntime version), so two machines are never confused."""
    hardware = row.get("gpu_name") or row.get("cpu") or "?"
    if row.get("driver"):
        hardware = f"{hardware}, driver {row['driver']}"
    runtime = f", ORT {row['onnxruntime_version']}" if row.get("onnxruntime_version") else ""
    return f"{row.get('target')} ({hardware}{runtime})"


def tidy(rows: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """The sweep's rows as a frame with the columns of COLUMNS, in that order."""
    frame = pd.DataFrame(list(rows))
    for column in COLUMNS:
        if column not in frame:
            frame[column] = math.nan if column in FIGURE_COLUMNS else None
    for column in FIGURE_COLUMNS:
        frame[column] = pd.to_numeric(frame[column], errors="coerce").astype("float64")
    return frame[COLUMNS].reset_index(drop=True)


class SweepResult:
    """`frame`: one row per configuration x target (settings, where it ran, latency p50/p90/p99,
    throughput, GPU busy/utilisation, memory, engine build time, status, error, attempts,
    cached). `report(i)` loads row i's ProfileReport; `axes` are the settings the grid varies.
    `ran` / `from_cache`: how many rows this call profiled and how many the cache served."""

    def __init__(
        self,
        frame: pd.DataFrame,
        cache: SweepCache,
        axes: Sequence[str],
        *,
        ran: int = 0,
        from_cache: int = 0,
        dashboard: str | None = None,
    ) -> None:
        self.frame = frame
        self.cache = cache
        self.axes = list(axes)
        self.ran = ran
        self.from_cache = from_cache
        self.dashboard = dashboard

    def __len__(self) -> int:
        return len(self.frame)

    def __repr__(self) -> str:
        ok = int((self.frame["status"] == "ok").sum())
        return (
            f"SweepResult({len(self)} rows: {ok} ok, {len(self) - ok} failed; "
            f"{self.ran} ran, {self.from_cache} from the cache)"
        )

    def _repr_html_(self) -> str:
        return str(self.frame._repr_html_())  # type: ignore[operator]

    @property
    def ok(self) -> pd.DataFrame:
        """The rows that finished."""
        return self.frame[self.frame["status"] == "ok"]

    def save(self, folder: str | os.PathLike[str]) -> Path:
        """Keep the sweep in `folder`: the table (`sweep.json`) and each finished row's report
        (`runs/<key>.report.json`, the cache's layout), for `SweepResult.load` anywhere."""
        folder = Path(folder)
        path = guard_output(
            folder / SAVED_FILE,
            earlier=lambda p: starts_with(p, b'{"format": "' + SAVED_FORMAT.encode()),
            what="saved sweep",
        )
        target = SweepCache(folder)
        target.runs.mkdir(parents=True, exist_ok=True)
        for index in self.ok.index:
            self.report(int(index)).save(target.report_path(str(self.frame.loc[index, "key"])))
        rows = [
            {k: None if isinstance(v, float) and not math.isfinite(v) else v for k, v in r.items()}
            for r in self.frame.to_dict("records")
        ]
        text = json.dumps({"format": SAVED_FORMAT, "version": 1, "axes": self.axes, "rows": rows})
        atomic_write_bytes(path, text.encode("utf-8"))
        return folder

    @classmethod
    def load(cls, folder: str | os.PathLike[str]) -> SweepResult:
        """A sweep kept by `save` (no runtime needed: the reports are read from `folder`)."""
        path = Path(folder) / SAVED_FILE
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as error:
            raise SweepSettingsError(
                f"{path} cannot be read as a saved sweep ({error}): give a folder written by "
                "SweepResult.save"
            ) from error
        if not isinstance(data, dict) or data.get("format") != SAVED_FORMAT:
            raise SweepSettingsError(
                f"{path} is not a saved sweep: give a folder written by SweepResult.save"
            )
        return cls(tidy(data["rows"]), SweepCache(Path(folder)), data["axes"])

    def label(self, index: int) -> str:
        """Row `index` named by the axes the grid varies (and the target)."""
        row = self.frame.loc[index]
        parts = [f"{axis}={row[axis]}" for axis in self.axes]
        if self.frame["target"].nunique() > 1:
            parts.append(f"@{where_label(row)}")
        return " ".join(parts) or f"run {index}"

    def _index(self, which: int | Mapping[str, Any]) -> int:
        if isinstance(which, Mapping):
            mask = pd.Series(True, index=self.frame.index)
            for column, value in which.items():
                if column not in self.frame:
                    raise SweepSettingsError(f"{column!r} is not a column of the sweep")
                mask &= self.frame[column] == value
            found = list(self.frame.index[mask])
            if len(found) != 1:
                raise SweepSettingsError(
                    f"{dict(which)} matches {len(found)} rows: name one row (add the other "
                    f"axes: {', '.join(self.axes)}) or give its index"
                )
            return int(found[0])
        if not isinstance(which, int) or which not in self.frame.index:
            raise SweepSettingsError(f"row {which!r}: give an index 0..{len(self) - 1}")
        return which

    def report(self, which: int | Mapping[str, Any]) -> ProfileReport:
        """The ProfileReport of one row (an index, or settings that name one row)."""
        index = self._index(which)
        row = self.frame.loc[index]
        if row["status"] != "ok":
            raise SweepSettingsError(
                f"row {index} ({self.label(index)}) has no report: {row['error']}"
            )
        return self.cache.report(str(row["key"]))

    def best(
        self,
        metric: str = "p50_ms",
        constraints: Mapping[str, Any] | None = None,
        *,
        maximize: bool | None = None,
    ) -> pd.Series:
        """The finished row with the best `metric` (lowest, or highest for throughput and
        utilisation unless `maximize` says) among those meeting `constraints`: column -> a value,
        or a function of the column giving a mask (`{"p99_ms": lambda s: s < 5}`)."""
        if metric not in self.frame:
            raise SweepSettingsError(f"metric {metric!r}: use one of {', '.join(FIGURE_COLUMNS)}")
        rows = self.ok
        for column, wanted in (constraints or {}).items():
            if column not in rows:
                raise SweepSettingsError(f"constraint on {column!r}: not a column of the sweep")
            rows = rows[wanted(rows[column]) if callable(wanted) else rows[column] == wanted]
        rows = rows[rows[metric].notna()]
        if rows.empty:
            raise SweepSettingsError(f"no finished row meets {dict(constraints or {})}")
        high = metric in HIGHER_IS_BETTER if maximize is None else maximize
        return rows.loc[rows[metric].idxmax() if high else rows[metric].idxmin()]

    def compare(
        self, a: int | Mapping[str, Any], b: int | Mapping[str, Any], **kwargs: Any
    ) -> pd.DataFrame:
        """Per-layer comparison of two rows' reports (ProfileReport.compare: delta, speed-up)."""
        return self.report(a).compare(self.report(b), **kwargs)

    def layer_times(self, column: str | None = None) -> pd.DataFrame:
        """Per-layer time (ms): one row per layer, one column per finished configuration."""
        series = {}
        for index in self.ok.index:
            report = self.report(int(index))
            series[self.label(int(index))] = pd.Series(report.layer_times(column))
        return pd.DataFrame(series)

    def plot(self, metric: str = "p50_ms", x: str | None = None, **kwargs: Any) -> go.Figure:
        """`metric` against the swept axis `x` (default: the first numeric axis), one line per
        combination of the other axes (plotly)."""
        return _figure("sweep_plot")(self, metric=metric, x=x, **kwargs)

    def heatmap(self, column: str | None = None, top: int = 30, **kwargs: Any) -> go.Figure:
        """Per-layer time across configurations (the `top` layers by total time): which
        layers change with precision or batch (plotly)."""
        return _figure("sweep_heatmap")(self, column=column, top=top, **kwargs)
