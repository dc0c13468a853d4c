"""Notebook widgets of nsdl_jupyter (anywidget and ipywidgets), one class per module.

Each class is imported on first use, so that showing a GraphView does not import pandas and
the profiling stack that the profiling widgets need.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from nsdl_jupyter.widgets._errors import WidgetError, WidgetLookupError

if TYPE_CHECKING:
    from nsdl_jupyter.widgets._activity_panel import ActivityPanel
    from nsdl_jupyter.widgets._designer import Designer
    from nsdl_jupyter.widgets._graph_view import GraphView
    from nsdl_jupyter.widgets._initializer_editor import InitializerEditor
    from nsdl_jupyter.widgets._layer_explorer import LayerExplorer
    from nsdl_jupyter.widgets._layer_palette import LayerPalette
    from nsdl_jupyter.widgets._log_view import LogView
    from nsdl_jupyter.widgets._parameter_editor import ParameterEditor
    from nsdl_jupyter.widgets._profile_view import ProfileView
    from nsdl_jupyter.widgets._target_picker import TargetPicker
    from nsdl_jupyter.widgets._trt_profile_form import OptimizationProfileForm
    from nsdl_jupyter.widgets._type_check_panel import TypeCheckPanel

_MODULES = {
    "ActivityPanel": "_activity_panel",
    "Designer": "_designer",
    "GraphView": "_graph_view",
    "InitializerEditor": "_initializer_editor",
    "LayerExplorer": "_layer_explorer",
    "LayerPalette": "_layer_palette",
    "LogView": "_log_view",
    "ParameterEditor": "_parameter_editor",
    "ProfileView": "_profile_view",
    "TargetPicker": "_target_picker",
    "OptimizationProfileForm": "_trt_profile_form",
    "TypeCheckPanel": "_type_check_panel",
}

__all__ = [
    "ActivityPanel",
    "Designer",
    "GraphView",
    "InitializerEditor",
    "LayerExplorer",
    "LayerPalette",
    "LogView",
    "OptimizationProfileForm",
    "ParameterEditor",
    "ProfileView",
    "TargetPicker",
    "TypeCheckPanel",
    "WidgetError",
    "WidgetLookupError",
]


def __getattr__(name: str) -> Any:
    module = _MODULES.get(name)
    if module is None:
        raise AttributeError(f"module 'nsdl_jupyter.widgets' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
