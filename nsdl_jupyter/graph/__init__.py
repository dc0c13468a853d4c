"""Graph data for views, without widget code: extraction into binary columns, name-scope
hierarchy with grouping of oversized levels, layered layout (python-igraph), edit patches,
and SVG export; a TensorRT engine's layer JSON as a graph."""

from nsdl_jupyter.graph._columns import decode_columns, encode_columns
from nsdl_jupyter.graph._engine_layers import (
    EngineGraph,
    EngineGraphError,
    open_engine_graph,
    precision_of,
    trt_layer_nodes,
)
from nsdl_jupyter.graph._extract import GraphTable, build_table, scope_of
from nsdl_jupyter.graph._hierarchy import Hierarchy, build_hierarchy
from nsdl_jupyter.graph._layout import LayoutEngine, LayoutResult
from nsdl_jupyter.graph._scene import EditSummary, GraphScene, NeedsRebuild

__all__ = [
    "EditSummary",
    "EngineGraph",
    "EngineGraphError",
    "GraphScene",
    "GraphTable",
    "Hierarchy",
    "LayoutEngine",
    "LayoutResult",
    "NeedsRebuild",
    "build_hierarchy",
    "build_table",
    "decode_columns",
    "encode_columns",
    "open_engine_graph",
    "precision_of",
    "scope_of",
    "trt_layer_nodes",
]
