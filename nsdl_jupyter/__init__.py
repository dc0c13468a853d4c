"""nsdl_jupyter: the Nsight Deep Learning Designer workflow inside Jupyter.

Public names are imported lazily so that `import nsdl_jupyter` stays cheap: onnxruntime,
plotly and the widget stack load only when the first name that needs them is used.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from nsdl_jupyter import _plugins
from nsdl_jupyter._errors import NsdlError
from nsdl_jupyter._lazy_modules import defer_imports
from nsdl_jupyter._version import __version__

defer_imports()  # before any module of the package imports onnx_ir (it imports sympy)

if TYPE_CHECKING:
    from nsdl_jupyter._errors import OutputPathError
    from nsdl_jupyter._paths import output_folder, set_output_folder
    from nsdl_jupyter.document import ModelDocument, new_model, open_model
    from nsdl_jupyter.graph import open_engine_graph
    from nsdl_jupyter.nbconvert import export_notebook_html
    from nsdl_jupyter.profiling import (
        ProfileReport,
        TrtSettings,
        check_target,
        check_trt_capability,
        export_engine,
        fleet,
        load_ort_profile,
        load_trtexec,
        node_work,
        profile_ort,
        profile_trt,
    )
    from nsdl_jupyter.sweeps import SweepResult, sweep
    from nsdl_jupyter.targets import LocalTarget, SshTarget, connections
    from nsdl_jupyter.transforms import (
        ToolStore,
        UserTool,
        convert_opset,
        convert_tensors,
        convert_to_fp16,
        extract_body,
        extract_function,
        extract_subgraph,
        fix_dims,
        list_tensors,
        preview_tensor_conversion,
        run_tool,
        sanitize,
    )
    from nsdl_jupyter.widgets import (
        ActivityPanel,
        Designer,
        FleetView,
        GraphView,
        InitializerEditor,
        LayerExplorer,
        LayerPalette,
        OptimizationProfileForm,
        ParameterEditor,
        ProfileView,
        SweepPanel,
        TypeCheckPanel,
    )

# public name -> module that defines it
_LAZY: dict[str, str] = {
    "OutputPathError": "nsdl_jupyter._errors",
    "output_folder": "nsdl_jupyter._paths",
    "set_output_folder": "nsdl_jupyter._paths",
    "ModelDocument": "nsdl_jupyter.document",
    "open_model": "nsdl_jupyter.document",
    "new_model": "nsdl_jupyter.document",
    "GraphView": "nsdl_jupyter.widgets",
    "open_engine_graph": "nsdl_jupyter.graph",
    "ProfileReport": "nsdl_jupyter.profiling",
    "profile_ort": "nsdl_jupyter.profiling",
    "load_ort_profile": "nsdl_jupyter.profiling",
    "load_trtexec": "nsdl_jupyter.profiling",
    "check_target": "nsdl_jupyter.profiling",
    "fleet": "nsdl_jupyter.profiling",
    "node_work": "nsdl_jupyter.profiling",
    "sweep": "nsdl_jupyter.sweeps",
    "SweepResult": "nsdl_jupyter.sweeps",
    "LocalTarget": "nsdl_jupyter.targets",
    "SshTarget": "nsdl_jupyter.targets",
    "connections": "nsdl_jupyter.targets",
    "TrtSettings": "nsdl_jupyter.profiling",
    "export_engine": "nsdl_jupyter.profiling",
    "check_trt_capability": "nsdl_jupyter.profiling",
    "profile_trt": "nsdl_jupyter.profiling",
    "convert_to_fp16": "nsdl_jupyter.transforms",
    "convert_opset": "nsdl_jupyter.transforms",
    "fix_dims": "nsdl_jupyter.transforms",
    "sanitize": "nsdl_jupyter.transforms",
    "extract_subgraph": "nsdl_jupyter.transforms",
    "extract_body": "nsdl_jupyter.transforms",
    "extract_function": "nsdl_jupyter.transforms",
    "convert_tensors": "nsdl_jupyter.transforms",
    "preview_tensor_conversion": "nsdl_jupyter.transforms",
    "list_tensors": "nsdl_jupyter.transforms",
    "UserTool": "nsdl_jupyter.transforms",
    "ToolStore": "nsdl_jupyter.transforms",
    "run_tool": "nsdl_jupyter.transforms",
    "ActivityPanel": "nsdl_jupyter.widgets",
    "Designer": "nsdl_jupyter.widgets",
    "ParameterEditor": "nsdl_jupyter.widgets",
    "InitializerEditor": "nsdl_jupyter.widgets",
    "LayerPalette": "nsdl_jupyter.widgets",
    "LayerExplorer": "nsdl_jupyter.widgets",
    "OptimizationProfileForm": "nsdl_jupyter.widgets",
    "TypeCheckPanel": "nsdl_jupyter.widgets",
    "ProfileView": "nsdl_jupyter.widgets",
    "SweepPanel": "nsdl_jupyter.widgets",
    "FleetView": "nsdl_jupyter.widgets",
    "export_notebook_html": "nsdl_jupyter.nbconvert",
}

__all__ = [  # noqa: RUF022 - grouped by layer, as _LAZY
    "__version__",
    "NsdlError",
    "OutputPathError",
    "output_folder",
    "set_output_folder",
    "ModelDocument",
    "open_model",
    "new_model",
    "GraphView",
    "open_engine_graph",
    "ProfileReport",
    "profile_ort",
    "load_ort_profile",
    "load_trtexec",
    "check_target",
    "fleet",
    "node_work",
    "sweep",
    "SweepResult",
    "LocalTarget",
    "SshTarget",
    "connections",
    "TrtSettings",
    "export_engine",
    "check_trt_capability",
    "profile_trt",
    "convert_to_fp16",
    "convert_opset",
    "fix_dims",
    "sanitize",
    "extract_subgraph",
    "extract_body",
    "extract_function",
    "convert_tensors",
    "preview_tensor_conversion",
    "list_tensors",
    "UserTool",
    "ToolStore",
    "run_tool",
    "ActivityPanel",
    "Designer",
    "ParameterEditor",
    "InitializerEditor",
    "LayerPalette",
    "LayerExplorer",
    "OptimizationProfileForm",
    "TypeCheckPanel",
    "ProfileView",
    "SweepPanel",
    "FleetView",
    "export_notebook_html",
]


def _load_figures() -> None:
    import nsdl_jupyter.figures  # noqa: F401 - registers ProfileReport.timeline() and friends


# Profiling names the extension point; only this package, which knows every layer, fills it.
_plugins.provide(_plugins.REPORT_FIGURES, _load_figures)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'nsdl_jupyter' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
