"""Graph data for views, without widget code: extraction into binary columns, name-scope
hierarchy with grouping of oversized levels, layered layout (python-igraph), edit patches,
what a properties pane says about a node, tensor or group, the drawing vocabulary shared
with the canvas (drawing.json) and the one SVG renderer; a TensorRT engine's layer JSON as
a graph."""

from nsdl_jupyter.graph._columns import decode_columns, encode_columns
from nsdl_jupyter.graph._drawing import COLORMAPS, VOCABULARY, Overlay, op_category
from nsdl_jupyter.graph._engine_layers import (
    EngineGraph,
    EngineGraphError,
    open_engine_graph,
    precision_of,
    trt_layer_nodes,
)
from nsdl_jupyter.graph._errors import GraphDataError
from nsdl_jupyter.graph._extract import (
    CONSTANT,
    GRAPH_INPUT,
    GRAPH_OUTPUT,
    PSEUDO,
    GraphTable,
    build_table,
    scope_of,
    short_name,
)
from nsdl_jupyter.graph._hierarchy import Hierarchy, build_hierarchy, is_group_ref
from nsdl_jupyter.graph._layout import HEADER, KIND_FRAME, KIND_GROUP, LayoutEngine, LayoutResult
from nsdl_jupyter.graph._properties import (
    GroupProperties,
    NodeProperties,
    Properties,
    PropertiesLookupError,
    TensorProperties,
    TensorStats,
)
from nsdl_jupyter.graph._scene import EditSummary, GraphScene, NeedsRebuild
from nsdl_jupyter.graph._skeleton import GraphSkeleton
from nsdl_jupyter.graph._svg import MARGIN, scene_svg, visible_edges

__all__ = [
    "COLORMAPS",
    "CONSTANT",
    "GRAPH_INPUT",
    "GRAPH_OUTPUT",
    "HEADER",
    "KIND_FRAME",
    "KIND_GROUP",
    "MARGIN",
    "PSEUDO",
    "VOCABULARY",
    "EditSummary",
    "EngineGraph",
    "EngineGraphError",
    "GraphDataError",
    "GraphScene",
    "GraphSkeleton",
    "GraphTable",
    "GroupProperties",
    "Hierarchy",
    "LayoutEngine",
    "LayoutResult",
    "NeedsRebuild",
    "NodeProperties",
    "Overlay",
    "Properties",
    "PropertiesLookupError",
    "TensorProperties",
    "TensorStats",
    "build_hierarchy",
    "build_table",
    "decode_columns",
    "encode_columns",
    "is_group_ref",
    "op_category",
    "open_engine_graph",
    "precision_of",
    "scene_svg",
    "scope_of",
    "short_name",
    "trt_layer_nodes",
    "visible_edges",
]
