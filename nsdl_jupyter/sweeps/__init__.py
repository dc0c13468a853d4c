"""Sweeps: one call profiles a grid of settings (batch, precision, backend, optimization
level, ...) across machines, on Dask, into one tidy table.

- `sweep(model, grid, targets=..., client=...)` / `start_sweep(...)`: an embedded LocalCluster,
  SSH targets (one Dask resource slot per target GPU) or your own `distributed.Client`;
- `sweep_cluster()` / `close_sweep_cluster()`: the embedded cluster, kept for the session;
- `SweepResult`: the table (`frame`), each run's report (`report(i)`), `plot()`, `heatmap()`,
  `best()`, `compare()`;
- `expand_grid(grid)`: the configurations a grid stands for.
"""

from __future__ import annotations

from nsdl_jupyter.sweeps._cluster import close_sweep_cluster, sweep_cluster
from nsdl_jupyter.sweeps._errors import SweepCancelledError, SweepError, SweepSettingsError
from nsdl_jupyter.sweeps._grid import AXES, BACKENDS, PRECISIONS, expand_grid
from nsdl_jupyter.sweeps._identity import TargetIdentity, target_identity
from nsdl_jupyter.sweeps._progress import SweepProgress
from nsdl_jupyter.sweeps._result import COLUMNS, SweepResult, register_sweep_figure, where_label
from nsdl_jupyter.sweeps._sweep import SweepJob, start_sweep, sweep

__all__ = [
    "AXES",
    "BACKENDS",
    "COLUMNS",
    "PRECISIONS",
    "SweepCancelledError",
    "SweepError",
    "SweepJob",
    "SweepProgress",
    "SweepResult",
    "SweepSettingsError",
    "TargetIdentity",
    "close_sweep_cluster",
    "expand_grid",
    "register_sweep_figure",
    "start_sweep",
    "sweep",
    "sweep_cluster",
    "target_identity",
    "where_label",
]
