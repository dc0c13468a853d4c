"""Values for new initializers: from literals, arrays, .npy files, or generated fills."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

import numpy as np
import onnx_ir as ir

from nsdl_jupyter.document._errors import InitializerError
from nsdl_jupyter.ops import LiteralSyntaxError, parse_literal

FillMethod = Literal["zeros", "normal", "uniform"]

_FLOATS = frozenset(
    {
        ir.DataType.FLOAT16,
        ir.DataType.BFLOAT16,
        ir.DataType.FLOAT,
        ir.DataType.DOUBLE,
    }
)
_INTEGERS = frozenset(
    {
        ir.DataType.INT8,
        ir.DataType.INT16,
        ir.DataType.INT32,
        ir.DataType.INT64,
        ir.DataType.UINT8,
        ir.DataType.UINT16,
        ir.DataType.UINT32,
        ir.DataType.UINT64,
    }
)
# Integer fills stay small so that generated indices, axes and shapes remain plausible.
_UNIFORM_BOUND = 100


def fill_methods(dtype: ir.DataType) -> tuple[FillMethod, ...]:
    """The generators a dtype allows: zeros for all; normal for floats of 2+ bytes;
    uniform integers (negative and positive for signed types, positive for unsigned)."""
    methods: list[FillMethod] = ["zeros"]
    if dtype in _FLOATS:
        methods.append("normal")
    if dtype in _INTEGERS:
        methods.append("uniform")
    return tuple(methods)


def generate_array(
    dtype: ir.DataType, shape: tuple[int, ...], method: str, seed: int = 0
) -> np.ndarray:
    allowed = fill_methods(dtype)
    if method not in allowed:
        raise InitializerError(
            f"fill method {method!r} is not available for {dtype.name}: choose one of {allowed}"
        )
    np_dtype = dtype.numpy()
    if method == "zeros":
        return np.zeros(shape, dtype=np_dtype)
    rng = np.random.default_rng(seed)
    if method == "normal":
        return rng.standard_normal(shape).astype(np_dtype)
    info = np.iinfo(np_dtype)
    low = max(int(info.min), -_UNIFORM_BOUND)
    high = min(int(info.max), _UNIFORM_BOUND)
    return rng.integers(low, high, size=shape, endpoint=True).astype(np_dtype)


def array_from_source(
    value: object, dtype: ir.DataType | None, shape: tuple[int, ...] | None
) -> np.ndarray:
    """An array from a numpy array, nested lists, literal text or a `.npy` path."""
    if isinstance(value, Path) or (isinstance(value, str) and value.endswith(".npy")):
        array = _load_npy(Path(value))
        if dtype is not None and array.dtype != dtype.numpy():
            raise InitializerError(
                f"{value} holds {array.dtype} values but the initializer is {dtype.name}: "
                "convert the file or choose the matching dtype"
            )
    else:
        if isinstance(value, str):
            try:
                value = parse_literal(value)
            except LiteralSyntaxError as error:
                raise InitializerError(f"invalid initializer value: {error}") from error
        try:
            array = np.asarray(value, dtype=dtype.numpy() if dtype is not None else None)
        except (ValueError, TypeError, OverflowError) as error:
            raise InitializerError(f"cannot make a tensor from {value!r}: {error}") from error
        if array.dtype == np.float64 and dtype is None:
            array = array.astype(np.float32)  # a typed float literal means FLOAT, as in ONNX
    if shape is not None and tuple(array.shape) != tuple(shape):
        if array.size != int(np.prod(shape)):
            raise InitializerError(
                f"value has shape {tuple(array.shape)} ({array.size} elements) but shape "
                f"{tuple(shape)} needs {int(np.prod(shape))}"
            )
        array = array.reshape(shape)
    return array


def _load_npy(path: Path) -> np.ndarray:
    if not path.is_file():
        raise InitializerError(f"no such .npy file: {path}")
    try:
        array = np.load(os.fspath(path), allow_pickle=False)
    except (ValueError, OSError, EOFError) as error:
        raise InitializerError(f"{path} is not a readable .npy file: {error}") from error
    if not isinstance(array, np.ndarray):
        raise InitializerError(f"{path} does not hold a single array")
    return array


def to_tensor(
    array: np.ndarray, dtype: ir.DataType | None = None, name: str | None = None
) -> ir.TensorProtocol:
    """An onnx_ir tensor of `array`; strings become a StringTensor (UTF-8), the only tensor
    type onnx_ir can serialize them from."""
    if dtype == ir.DataType.STRING or array.dtype.kind in "OSU":
        encoded = [
            item if isinstance(item, bytes) else str(item).encode() for item in array.ravel()
        ]
        return ir.StringTensor(
            np.array(encoded, dtype=object).reshape(array.shape),
            shape=ir.Shape(array.shape),
            name=name,
        )
    return ir.tensor(array, dtype=dtype, name=name)
