"""Views of a ProfileReport: plotly figures and pandas tables (no widget code).

Widgets (`ProfileView`, `ActivityPanel`) are built from these; in a plain notebook, call them
directly and `fig.show()`. For a static HTML export, call `use_static_renderer()` first.
Per-layer views show GPU kernel time when the report has it (`times='host'` for the
profiler's host times) and take `hide_non_compute=True` to leave out copies, layout reorders
and shape-only ops (`NON_COMPUTE_OP_TYPES`). Importing this package registers the figure
shortcuts of `ProfileReport` (`report.timeline()`) and `SweepResult` (`result.plot()`).
"""

from __future__ import annotations

from nsdl_jupyter.figures._charts import latency_figure, op_type_share_figure, top_layers_figure
from nsdl_jupyter.figures._compare import compare_figure, compare_table
from nsdl_jupyter.figures._errors import FigureError
from nsdl_jupyter.figures._filters import (
    NON_COMPUTE_OP_TYPES,
    compute_only,
    non_compute_mask,
    time_column,
    time_label,
    time_shares,
)
from nsdl_jupyter.figures._roofline import roofline_figure
from nsdl_jupyter.figures._static import use_static_renderer
from nsdl_jupyter.figures._sweep import sweep_figure, sweep_heatmap
from nsdl_jupyter.figures._tables import kernels_table, layers_table
from nsdl_jupyter.figures._timeline import MAX_LAYER_ROWS, timeline_figure
from nsdl_jupyter.profiling import register_report_figure
from nsdl_jupyter.sweeps import register_sweep_figure

__all__ = [
    "MAX_LAYER_ROWS",
    "NON_COMPUTE_OP_TYPES",
    "FigureError",
    "compare_figure",
    "compare_table",
    "compute_only",
    "kernels_table",
    "latency_figure",
    "layers_table",
    "non_compute_mask",
    "op_type_share_figure",
    "roofline_figure",
    "sweep_figure",
    "sweep_heatmap",
    "time_column",
    "time_label",
    "time_shares",
    "timeline_figure",
    "top_layers_figure",
    "use_static_renderer",
]

register_report_figure("timeline", timeline_figure)
register_report_figure("roofline", roofline_figure)
register_sweep_figure("sweep_plot", sweep_figure)
register_sweep_figure("sweep_heatmap", sweep_heatmap)
