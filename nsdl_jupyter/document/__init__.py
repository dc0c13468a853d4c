"""The ModelDocument: one editable ONNX model with undo/redo, events, checks and safe saving."""

from __future__ import annotations

from nsdl_jupyter._output_guard import COMPANION_SUFFIX
from nsdl_jupyter.document._bodies import BodyDocument, FunctionDocument
from nsdl_jupyter.document._check import Diagnostic, SavedWithErrorsWarning, check_proto
from nsdl_jupyter.document._companion import (
    MAX_COORDINATE,
    MOVED_KEY,
    CompanionWarning,
    layout_coordinate,
)
from nsdl_jupyter.document._data_files import external_tensors
from nsdl_jupyter.document._data_types import UnknownDataTypeError, as_data_type
from nsdl_jupyter.document._document import (
    AttributeListing,
    ModelDocument,
    new_model,
    open_model,
)
from nsdl_jupyter.document._errors import (
    AttributeEditError,
    DocumentError,
    GraphEditError,
    InitializerError,
    InvalidNameError,
    ModelLoadError,
    ModelSaveError,
    UnknownNodeError,
)
from nsdl_jupyter.document._events import ChangeEvent
from nsdl_jupyter.document._loading import load_model, read_model_proto, resolve_inside
from nsdl_jupyter.document._saving import ExternalLocation
from nsdl_jupyter.document._tensor_values import fill_methods
from nsdl_jupyter.document._tensorrt import (
    NO_CONSTRAINT,
    PRECISIONS,
    LayerPrecision,
    TensorRtProperties,
    TensorRtPropertyError,
)

__all__ = [
    "COMPANION_SUFFIX",
    "MAX_COORDINATE",
    "MOVED_KEY",
    "NO_CONSTRAINT",
    "PRECISIONS",
    "AttributeEditError",
    "AttributeListing",
    "BodyDocument",
    "ChangeEvent",
    "CompanionWarning",
    "Diagnostic",
    "DocumentError",
    "ExternalLocation",
    "FunctionDocument",
    "GraphEditError",
    "InitializerError",
    "InvalidNameError",
    "LayerPrecision",
    "ModelDocument",
    "ModelLoadError",
    "ModelSaveError",
    "SavedWithErrorsWarning",
    "TensorRtProperties",
    "TensorRtPropertyError",
    "UnknownDataTypeError",
    "UnknownNodeError",
    "as_data_type",
    "check_proto",
    "external_tensors",
    "fill_methods",
    "layout_coordinate",
    "load_model",
    "new_model",
    "open_model",
    "read_model_proto",
    "resolve_inside",
]
