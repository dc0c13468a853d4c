"""Notebook widgets of nsdl_jupyter (anywidget and ipywidgets), one class per module."""

from nsdl_jupyter.widgets._activity_panel import ActivityPanel
from nsdl_jupyter.widgets._designer import Designer
from nsdl_jupyter.widgets._errors import WidgetError, WidgetLookupError
from nsdl_jupyter.widgets._graph_view import GraphView
from nsdl_jupyter.widgets._initializer_editor import InitializerEditor
from nsdl_jupyter.widgets._layer_explorer import LayerExplorer
from nsdl_jupyter.widgets._layer_palette import LayerPalette
from nsdl_jupyter.widgets._log_view import LogView
from nsdl_jupyter.widgets._parameter_editor import ParameterEditor
from nsdl_jupyter.widgets._profile_view import ProfileView
from nsdl_jupyter.widgets._target_picker import TargetPicker
from nsdl_jupyter.widgets._type_check_panel import TypeCheckPanel

__all__ = [
    "ActivityPanel",
    "Designer",
    "GraphView",
    "InitializerEditor",
    "LayerExplorer",
    "LayerPalette",
    "LogView",
    "ParameterEditor",
    "ProfileView",
    "TargetPicker",
    "TypeCheckPanel",
    "WidgetError",
    "WidgetLookupError",
]
