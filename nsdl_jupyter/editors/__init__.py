"""State logic of the tool windows, without widget code (testable without a browser).

Each module holds what one tool window shows and the document edits it sends:
`_parameters` (ParameterEditor), `_tensor_view` (tensor editor), `_initializers`
(InitializerEditor), `_palette` (LayerPalette), `_layers` (LayerExplorer), `_type_check`
(TypeCheckPanel), `_functions` (Local functions window), `_trt_profiles`
(OptimizationProfileForm), `_settings` (user settings shared by them).
"""

from __future__ import annotations

from nsdl_jupyter.editors._errors import EditorError
from nsdl_jupyter.editors._functions import (
    FunctionRow,
    create_function,
    delete_function,
    function_rows,
)
from nsdl_jupyter.editors._initializers import (
    CREATE_DTYPES,
    FILL_METHODS,
    InitializerRow,
    InputSlot,
    allowed_fill_methods,
    candidates,
    connect_initializer,
    create_initializer,
    delete_initializer,
    disconnect_input,
    dtypes_present,
    filter_rows,
    initializer_rows,
    input_slots,
    parse_shape,
    set_initializer_value,
)
from nsdl_jupyter.editors._layers import (
    COMPARISONS,
    LAYER_SORTS,
    AttributeCondition,
    LayerExplorerState,
    LayerFilter,
    LayerRow,
    ListEntry,
    apply_filter,
    layer_rows,
)
from nsdl_jupyter.editors._modification import (
    Modification,
    ModificationResult,
    ModificationRun,
    OptionSpec,
    OptionValue,
    modifications,
)
from nsdl_jupyter.editors._palette import (
    PALETTE_SORTS,
    PaletteEntry,
    PaletteIndex,
    add_operator,
    entry_for_text,
    explain_missing,
    operator_counts,
)
from nsdl_jupyter.editors._parameters import (
    AttributeRow,
    ModelInfo,
    NodeForm,
    apply_attribute,
    describe_selection,
    follow_event,
    model_info,
    rename,
    reset_attribute,
)
from nsdl_jupyter.editors._settings import get_setting, load_settings, set_setting, settings_path
from nsdl_jupyter.editors._sorting import SortOrder, sort_choices
from nsdl_jupyter.editors._tensor_view import (
    GridPage,
    TensorEditError,
    TensorGrid,
    TensorStats,
    as_array,
    tensor_stats,
)
from nsdl_jupyter.editors._trt_profiles import (
    ProfileRow,
    apply_profile,
    parse_dims,
    profile_rows,
)
from nsdl_jupyter.editors._type_check import (
    TypeCheckRunner,
    check_in_child,
    diagnostic_label,
    marks_of,
    summary_of,
)

__all__ = [
    "COMPARISONS",
    "CREATE_DTYPES",
    "FILL_METHODS",
    "LAYER_SORTS",
    "PALETTE_SORTS",
    "AttributeCondition",
    "AttributeRow",
    "EditorError",
    "FunctionRow",
    "GridPage",
    "InitializerRow",
    "InputSlot",
    "LayerExplorerState",
    "LayerFilter",
    "LayerRow",
    "ListEntry",
    "ModelInfo",
    "Modification",
    "ModificationResult",
    "ModificationRun",
    "NodeForm",
    "OptionSpec",
    "OptionValue",
    "PaletteEntry",
    "PaletteIndex",
    "ProfileRow",
    "SortOrder",
    "TensorEditError",
    "TensorGrid",
    "TensorStats",
    "TypeCheckRunner",
    "add_operator",
    "allowed_fill_methods",
    "apply_attribute",
    "apply_filter",
    "apply_profile",
    "as_array",
    "candidates",
    "check_in_child",
    "connect_initializer",
    "create_function",
    "create_initializer",
    "delete_function",
    "delete_initializer",
    "describe_selection",
    "diagnostic_label",
    "disconnect_input",
    "dtypes_present",
    "entry_for_text",
    "explain_missing",
    "filter_rows",
    "follow_event",
    "function_rows",
    "get_setting",
    "initializer_rows",
    "input_slots",
    "layer_rows",
    "load_settings",
    "marks_of",
    "model_info",
    "modifications",
    "operator_counts",
    "parse_dims",
    "parse_shape",
    "profile_rows",
    "rename",
    "reset_attribute",
    "set_initializer_value",
    "set_setting",
    "settings_path",
    "sort_choices",
    "summary_of",
    "tensor_stats",
]
