"""Static pictures of our widgets for notebooks viewed without a widget manager (an nbconvert
HTML export, nbviewer, GitHub): the text/html fallback of each widget's display bundle, the
last-state picture kept in the widget state, and the rewrite of a notebook's widget outputs
that `nsdl_jupyter.nbconvert.StaticWidgetsPreprocessor` performs."""

from __future__ import annotations

from nsdl_jupyter._static_export._graph_picture import GraphViewState, graph_view_html, overlay_of
from nsdl_jupyter._static_export._live import (
    StaticPictureMixin,
    refresh_static_picture,
    static_html,
    track_static_picture,
    with_static_fallback,
)
from nsdl_jupyter._static_export._notebook import Replaced, replace_widget_outputs

__all__ = [
    "GraphViewState",
    "Replaced",
    "StaticPictureMixin",
    "graph_view_html",
    "overlay_of",
    "refresh_static_picture",
    "replace_widget_outputs",
    "static_html",
    "track_static_picture",
    "with_static_fallback",
]
