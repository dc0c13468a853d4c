"""Graph data for views, without widget code: extraction into binary columns, name-scope
hierarchy with grouping of oversized levels, layered layout (python-igraph), edit patches,
the drawing vocabulary shared with the canvas (drawing.json) and the one SVG renderer."""

from nsdl_jupyter.graph._columns import decode_columns, encode_columns
from nsdl_jupyter.graph._drawing import COLORMAPS, VOCABULARY, Overlay, op_category
from nsdl_jupyter.graph._extract import GraphTable, build_table, scope_of
from nsdl_jupyter.graph._hierarchy import Hierarchy, build_hierarchy
from nsdl_jupyter.graph._layout import LayoutEngine, LayoutResult
from nsdl_jupyter.graph._scene import EditSummary, GraphScene, NeedsRebuild
from nsdl_jupyter.graph._svg import scene_svg

__all__ = [
    "COLORMAPS",
    "VOCABULARY",
    "EditSummary",
    "GraphScene",
    "GraphTable",
    "Hierarchy",
    "LayoutEngine",
    "LayoutResult",
    "NeedsRebuild",
    "Overlay",
    "build_hierarchy",
    "build_table",
    "decode_columns",
    "encode_columns",
    "op_category",
    "scene_svg",
    "scope_of",
]
