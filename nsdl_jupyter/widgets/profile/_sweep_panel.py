"""SweepPanel: pick the axes of a sweep and where it runs, run it, watch it, read the table.

Built from ipywidgets only. The axes are text fields and check boxes (`batch` "1, 8, 32",
precisions, backends, optimisation levels, iterations); the targets are this machine and/or
saved SSH connections (key or agent login: a password target is passed to `nj.sweep` in code).
Run starts `start_sweep` (Dask does the work, the kernel stays free), a progress bar follows
it, Stop cancels it, and the finished table is shown below (`result` holds the SweepResult).
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import ipywidgets as widgets

from nsdl_jupyter._display import html_text
from nsdl_jupyter._errors import NsdlError
from nsdl_jupyter.sweeps import BACKENDS, PRECISIONS, SweepJob, SweepResult, start_sweep
from nsdl_jupyter.targets import LocalTarget, Target, connections
from nsdl_jupyter.widgets._main_shell import MainShellBox
from nsdl_jupyter.widgets._options import BoxOptions, check_options

if TYPE_CHECKING:
    from typing_extensions import Unpack  # typing.Unpack from Python 3.11

HERE = "this machine"
POLL_S = 0.3
# which machine ran a row: rows of two targets are never confused
_WHERE = ["target", "gpu_name", "driver", "onnxruntime_version", "tensorrt_version"]
_SHOWN = ["p50_ms", "p99_ms", "throughput_per_s", "gpu_busy_ms", "memory_mb", "status", "error"]


def parse_ints(text: str, what: str) -> list[int]:
    """'1, 8, 32' -> [1, 8, 32]; NsdlError-derived SweepSettingsError names the bad part."""
    from nsdl_jupyter.sweeps import SweepSettingsError

    values = []
    for part in filter(None, (p.strip() for p in text.replace(";", ",").split(","))):
        if not part.isdigit():
            raise SweepSettingsError(f"{what}: {part!r} is not a whole number (e.g. 1, 8, 32)")
        values.append(int(part))
    return values


class SweepPanel(MainShellBox, widgets.VBox):  # type: ignore[misc]
    """A sweep of `model` as a form; `run()` starts it, `result` holds the last SweepResult.
    `client`, `cache_dir`, `workers`: as `nj.sweep`."""

    def __init__(
        self,
        model: Any,
        *,
        client: Any = None,
        cache_dir: str | Path | None = None,
        workers: int | None = None,
        **box: Unpack[BoxOptions],
    ) -> None:
        check_options("SweepPanel", box, BoxOptions, ("client", "cache_dir", "workers"))
        self.model = model
        self.client = client
        self.cache_dir = cache_dir
        self.workers = workers
        self.job: SweepJob | None = None
        self.result: SweepResult | None = None
        self._watcher: threading.Thread | None = None

        self.batch = widgets.Text(description="batch", placeholder="1, 8, 32 (empty: as exported)")
        self.precisions = {
            p: widgets.Checkbox(description=p, value=p == "fp32") for p in PRECISIONS
        }
        self.backends = {b: widgets.Checkbox(description=b, value=b == "ort-cpu") for b in BACKENDS}
        self.levels = widgets.Text(description="opt. level", placeholder="0, 3 (empty: default)")
        self.iterations = widgets.BoundedIntText(value=20, min=1, max=1_000_000,
                                                 description="iterations")  # fmt: skip
        self.targets = widgets.SelectMultiple(
            options=[HERE, *self._saved()], value=[HERE], description="targets", rows=4
        )
        self._run = widgets.Button(description="Run", button_style="primary", icon="play")
        self._run.on_click(lambda _b: self.run())
        self._stop = widgets.Button(description="Stop", icon="stop", disabled=True)
        self._stop.on_click(lambda _b: self.stop())
        self.bar = widgets.IntProgress(value=0, min=0, max=1)
        self.status = widgets.HTML("")
        self.table = widgets.HTML("")
        super().__init__(
            children=[
                widgets.HBox([self.batch, self.levels, self.iterations]),
                widgets.HBox([widgets.Label("precision"), *self.precisions.values()]),
                widgets.HBox([widgets.Label("backend"), *self.backends.values()]),
                self.targets,
                widgets.HBox([self._run, self._stop, self.bar, self.status]),
                self.table,
            ],
            **box,
        )
        self.add_class("nsdl-sweep-panel")

    @staticmethod
    def _saved() -> list[str]:
        try:
            return connections().names()
        except NsdlError:  # an unreadable connections file: this machine only
            return []

    def grid(self) -> dict[str, list[Any]]:
        """The grid the form says (SweepSettingsError for a field that is not one)."""
        grid: dict[str, list[Any]] = {
            "precision": [p for p, box in self.precisions.items() if box.value],
            "backend": [b for b, box in self.backends.items() if box.value],
            "iterations": [int(self.iterations.value)],
        }
        batch = parse_ints(self.batch.value, "batch")
        levels = parse_ints(self.levels.value, "optimization level")
        if batch:
            grid = {"batch": batch, **grid}
        if levels:
            grid["optimization_level"] = levels
        return grid

    def chosen_targets(self) -> list[Target | str] | None:
        """The targets picked: None for this machine alone (the embedded cluster), else the
        saved connections' names, with this machine as a LocalTarget when it is picked too."""
        chosen = list(self.targets.value)
        if chosen in ([], [HERE]):
            return None
        return [LocalTarget() if name == HERE else name for name in chosen]

    def run(self) -> SweepJob | None:
        """Start the sweep the form describes; a wrong field is said in the status line."""
        if self.job is not None and not self.job.done:
            return self.job
        try:
            self.job = start_sweep(
                self.model,
                self.grid(),
                targets=self.chosen_targets(),
                client=self.client,
                cache_dir=self.cache_dir,
                workers=self.workers,
                progress=False,
            )
        except NsdlError as error:
            self.status.value = f"<span style='color:#c62828'>{html_text(str(error))}</span>"
            return None
        self.table.value = ""
        self._run.disabled, self._stop.disabled = True, False
        self._watcher = threading.Thread(target=self._watch, args=(self.job,), daemon=True)
        self._watcher.start()
        return self.job

    def stop(self) -> None:
        if self.job is not None:
            self.job.cancel()

    def wait(self, timeout: float | None = None) -> SweepResult | None:
        """Until the running sweep is shown (tests and scripts)."""
        if self._watcher is not None:
            self._watcher.join(timeout)
        return self.result

    def _watch(self, job: SweepJob) -> None:
        while not job.done:
            self._show(job)
            time.sleep(POLL_S)
        self._show(job)
        try:
            self.result = job.wait()
            frame = self.result.frame
            axes = [a for a in self.result.axes if a in frame]
            shown = frame[[*axes, *_WHERE, *_SHOWN]]
            self.table.value = shown.to_html(index=True, float_format=lambda v: f"{v:.4g}")
        except Exception as error:  # shown, never raised in a thread nobody joins
            self.status.value = html_text(f"{type(error).__name__}: {error}")
        finally:
            self._run.disabled, self._stop.disabled = False, True

    def _show(self, job: SweepJob) -> None:
        progress = job.progress
        self.bar.max = max(progress.total, 1)
        self.bar.value = progress.done
        self.status.value = html_text(progress.text())
