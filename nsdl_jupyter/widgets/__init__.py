"""Notebook widgets of nsdl_jupyter (anywidget and ipywidgets), one class per module.

Each class is imported on first use, so that showing a GraphView does not import pandas and
the profiling stack that the profiling widgets need.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from nsdl_jupyter.widgets._errors import WidgetError, WidgetLookupError

if TYPE_CHECKING:
    from nsdl_jupyter.widgets.designer._designer import Designer
    from nsdl_jupyter.widgets.designer._initializer_editor import InitializerEditor
    from nsdl_jupyter.widgets.designer._layer_explorer import LayerExplorer
    from nsdl_jupyter.widgets.designer._layer_palette import LayerPalette
    from nsdl_jupyter.widgets.designer._parameter_editor import ParameterEditor
    from nsdl_jupyter.widgets.designer._trt_profile_form import OptimizationProfileForm
    from nsdl_jupyter.widgets.designer._type_check_panel import TypeCheckPanel
    from nsdl_jupyter.widgets.graph._graph_view import GraphView
    from nsdl_jupyter.widgets.profile._activity_panel import ActivityPanel
    from nsdl_jupyter.widgets.profile._log_view import LogView
    from nsdl_jupyter.widgets.profile._profile_view import ProfileView
    from nsdl_jupyter.widgets.profile._sweep_panel import SweepPanel
    from nsdl_jupyter.widgets.targets._fleet_view import FleetView
    from nsdl_jupyter.widgets.targets._target_picker import TargetPicker

_MODULES = {
    "ActivityPanel": "profile._activity_panel",
    "Designer": "designer._designer",
    "FleetView": "targets._fleet_view",
    "GraphView": "graph._graph_view",
    "InitializerEditor": "designer._initializer_editor",
    "LayerExplorer": "designer._layer_explorer",
    "LayerPalette": "designer._layer_palette",
    "LogView": "profile._log_view",
    "ParameterEditor": "designer._parameter_editor",
    "ProfileView": "profile._profile_view",
    "SweepPanel": "profile._sweep_panel",
    "TargetPicker": "targets._target_picker",
    "OptimizationProfileForm": "designer._trt_profile_form",
    "TypeCheckPanel": "designer._type_check_panel",
}

__all__ = [
    "ActivityPanel",
    "Designer",
    "FleetView",
    "GraphView",
    "InitializerEditor",
    "LayerExplorer",
    "LayerPalette",
    "LogView",
    "OptimizationProfileForm",
    "ParameterEditor",
    "ProfileView",
    "SweepPanel",
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
