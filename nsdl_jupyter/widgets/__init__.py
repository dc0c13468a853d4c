"""anywidget classes of nsdl_jupyter."""

from nsdl_jupyter.widgets._graph_view import GraphView

__all__ = ["GraphView"]
