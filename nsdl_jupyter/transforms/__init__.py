"""Global model modifications as onnx_ir passes (FP16, opset conversion, sanitize, batch
tensor dtype conversion, extraction) with one runner for files and documents; and user
tools (external programs run on the current model). How to add a transform: see
`nsdl_jupyter.transforms._passes`."""

from __future__ import annotations

from nsdl_jupyter._paths import config_dir
from nsdl_jupyter.transforms._extract import (
    ExtractBodyPass,
    ExtractFunctionPass,
    ExtractSubgraphPass,
    carried_nodes,
    extract_body,
    extract_function,
    extract_subgraph,
)
from nsdl_jupyter.transforms._fix_dims import FixDimsPass, batch_dims, fix_dims
from nsdl_jupyter.transforms._fp16 import (
    DEFAULT_MAX_ROUNDS,
    DEFAULT_OP_BLOCK_LIST,
    FP16_TOLERANCE,
    Fp16Pass,
    convert_to_fp16,
)
from nsdl_jupyter.transforms._opset import OPSET_TOLERANCE, OpsetPass, convert_opset
from nsdl_jupyter.transforms._passes import (
    TRANSFORMS,
    EditPass,
    ExchangeModel,
    RegisteredTransform,
    TransformPass,
    register,
    replace_document_model,
    transform_document,
    transform_file,
    transform_named,
)
from nsdl_jupyter.transforms._sanitize import SanitizePass, sanitize
from nsdl_jupyter.transforms._status import TransformStatus
from nsdl_jupyter.transforms._tensor_dtype import (
    ConversionItem,
    ConversionPreview,
    TensorDtypePass,
    TensorRef,
    convert_tensors,
    list_tensors,
    preview_tensor_conversion,
    replace_initializer_value,
)
from nsdl_jupyter.transforms._tools import (
    MAX_LOG_LINES,
    Throttle,
    ToolError,
    ToolLog,
    ToolRun,
    ToolStore,
    UserTool,
    run_tool,
    run_tool_in_notebook,
)
from nsdl_jupyter.transforms._validate import (
    DEFAULT_PROVIDER,
    OutputError,
    ValidationResult,
    Validator,
)
from nsdl_jupyter.transforms._working_copy import TransformError, data_type

__all__ = [
    "DEFAULT_MAX_ROUNDS",
    "DEFAULT_OP_BLOCK_LIST",
    "DEFAULT_PROVIDER",
    "FP16_TOLERANCE",
    "MAX_LOG_LINES",
    "OPSET_TOLERANCE",
    "TRANSFORMS",
    "ConversionItem",
    "ConversionPreview",
    "EditPass",
    "ExchangeModel",
    "ExtractBodyPass",
    "ExtractFunctionPass",
    "ExtractSubgraphPass",
    "FixDimsPass",
    "Fp16Pass",
    "OpsetPass",
    "OutputError",
    "RegisteredTransform",
    "SanitizePass",
    "TensorDtypePass",
    "TensorRef",
    "Throttle",
    "ToolError",
    "ToolLog",
    "ToolRun",
    "ToolStore",
    "TransformError",
    "TransformPass",
    "TransformStatus",
    "UserTool",
    "ValidationResult",
    "Validator",
    "batch_dims",
    "carried_nodes",
    "config_dir",
    "convert_opset",
    "convert_tensors",
    "convert_to_fp16",
    "data_type",
    "extract_body",
    "extract_function",
    "extract_subgraph",
    "fix_dims",
    "list_tensors",
    "preview_tensor_conversion",
    "register",
    "replace_document_model",
    "replace_initializer_value",
    "run_tool",
    "run_tool_in_notebook",
    "sanitize",
    "transform_document",
    "transform_file",
    "transform_named",
]
