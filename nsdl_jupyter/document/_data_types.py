"""Data types as users name them: `ir.DataType`, its number, or text like 'float16'."""

from __future__ import annotations

import reprlib

import numpy as np
import onnx_ir as ir

from nsdl_jupyter.document._errors import DocumentError

_ALIASES = {"float32": "FLOAT", "float64": "DOUBLE", "half": "FLOAT16", "bool": "BOOL"}


class UnknownDataTypeError(DocumentError):
    """The text names no ONNX data type."""


def as_data_type(dtype: ir.DataType | str | int) -> ir.DataType:
    """`ir.DataType` for 'float32', 'FLOAT', 'int8', 1, numpy names ... or a clear error."""
    if isinstance(dtype, ir.DataType):
        return dtype
    if isinstance(dtype, int) and not isinstance(dtype, bool):
        try:
            return ir.DataType(dtype)
        except ValueError:
            raise _unknown(dtype) from None
    if not isinstance(dtype, str):
        raise _unknown(dtype)
    key = _ALIASES.get(dtype.lower(), dtype.upper())
    try:
        return ir.DataType[key]
    except KeyError:
        pass
    try:
        return ir.DataType.from_numpy(np.dtype(dtype))
    except (TypeError, ValueError):
        raise _unknown(dtype) from None


def _unknown(dtype: object) -> UnknownDataTypeError:
    names = ", ".join(t.name.lower() for t in ir.DataType if t.name != "UNDEFINED")
    shown = reprlib.repr(dtype)
    return UnknownDataTypeError(f"unknown dtype {shown}: use one of {names} (or its number)")
