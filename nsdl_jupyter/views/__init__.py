"""Views of a ProfileReport: plotly figures and pandas tables (no widget code).

Widgets (`ProfileView`, `ActivityPanel`) are built from these; in a plain notebook, call them
directly and `fig.show()`. For a static HTML export, call `use_static_renderer()` first.
"""

from __future__ import annotations

from nsdl_jupyter.views._charts import latency_figure, op_type_share_figure, top_layers_figure
from nsdl_jupyter.views._compare import compare_figure, compare_table
from nsdl_jupyter.views._static import use_static_renderer
from nsdl_jupyter.views._tables import layers_table
from nsdl_jupyter.views._timeline import MAX_LAYER_ROWS, timeline_figure

__all__ = [
    "MAX_LAYER_ROWS",
    "compare_figure",
    "compare_table",
    "latency_figure",
    "layers_table",
    "op_type_share_figure",
    "timeline_figure",
    "top_layers_figure",
    "use_static_renderer",
]
