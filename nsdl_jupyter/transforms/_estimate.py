"""Bytes a node's outputs will take, known before the node runs.

Constant folding must not compute a result only to find it over `fold_size_threshold`: a
134-byte model whose ConstantOfShape makes 4 GB would allocate them first. Operators that
make big tensors from small ones (ConstantOfShape, Expand, Tile, Range, OneHot, Pad, Resize,
Upsample, broadcasting elementwise) are sized from their actual constant inputs, not from
declared shapes (a model can declare any shape it likes); other operators from their
inferred output shapes. Unknown is None: the caller decides (the child's memory cap is the
backstop).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Protocol

import numpy as np
import onnx_ir as ir

from nsdl_jupyter.transforms._working_copy import TransformError


class UnsizedError(TransformError):
    """A node's output size cannot be told from its constant inputs (caught by output_bytes)."""


class ConstantReader(Protocol):
    """Shapes and itemsizes of constant tensors without reading them; values on demand."""

    def shape(self, value: ir.Value) -> tuple[int, ...]: ...

    def itemsize(self, value: ir.Value) -> int: ...

    def __getitem__(self, value: ir.Value) -> np.ndarray: ...


_BROADCASTING = frozenset(
    {
        "Add",
        "And",
        "BitShift",
        "BitwiseAnd",
        "BitwiseOr",
        "BitwiseXor",
        "Div",
        "Equal",
        "Greater",
        "GreaterOrEqual",
        "Less",
        "LessOrEqual",
        "Max",
        "Mean",
        "Min",
        "Mod",
        "Mul",
        "Or",
        "Pow",
        "PRelu",
        "Sub",
        "Sum",
        "Where",
        "Xor",
    }
)


def output_bytes(node: ir.Node, constants: ConstantReader) -> int | None:
    """Bytes of all of `node`'s outputs, its inputs being constants; None if unknown."""
    sizer = _SIZERS.get(node.op_type) if node.domain in ("", "ai.onnx") else None
    if node.op_type in _BROADCASTING and node.domain in ("", "ai.onnx"):
        sizer = _broadcasting
    if sizer is not None:
        try:
            return sizer(node, constants)
        # UnsizedError is a ValueError; numpy raises the others on malformed inputs
        except (ValueError, IndexError, TypeError, OverflowError, KeyError, ZeroDivisionError):
            return None  # malformed inputs: the evaluation will say what is wrong
    return _declared(node.outputs)


def _declared(outputs: Sequence[ir.Value]) -> int | None:
    total = 0
    for value in outputs:
        dtype = value.dtype
        if value.shape is None or dtype is None or not value.shape.is_static():
            return None
        dims = [dim for dim in value.shape if isinstance(dim, int)]
        total += math.prod(dims) * bytes_per_element(dtype)
    return total


def bytes_per_element(dtype: ir.DataType) -> int:
    """Rounded up (int4 takes a byte here); strings count as a pointer, their text unknown."""
    try:
        return max(math.ceil(dtype.itemsize), 1)
    except TypeError:  # STRING has no bit width
        return 8


def _ints(constants: ConstantReader, value: ir.Value | None) -> list[int]:
    if value is None:
        raise UnsizedError("missing input")
    array = constants[value]
    if array.size > 64:  # a shape or a count list, never a big tensor
        raise UnsizedError("too many values for a shape")
    return [int(v) for v in np.asarray(array).reshape(-1)]


def _input(node: ir.Node, index: int) -> ir.Value | None:
    return node.inputs[index] if len(node.inputs) > index else None


def _shape(constants: ConstantReader, node: ir.Node, index: int = 0) -> tuple[int, ...]:
    value = _input(node, index)
    if value is None:
        raise UnsizedError("missing input")
    return constants.shape(value)


def _itemsize(constants: ConstantReader, node: ir.Node, index: int = 0) -> int:
    value = _input(node, index)
    if value is None:
        raise UnsizedError("missing input")
    return constants.itemsize(value)


def _elements(dims: Sequence[int]) -> int:
    if any(dim < 0 for dim in dims):
        raise UnsizedError("negative dimension")
    return math.prod(dims)


def _constant_of_shape(node: ir.Node, constants: ConstantReader) -> int:
    attr = node.attributes.get("value")
    itemsize = bytes_per_element(attr.as_tensor().dtype) if attr is not None else 4
    return _elements(_ints(constants, _input(node, 0))) * itemsize


def _expand(node: ir.Node, constants: ConstantReader) -> int:
    dims = np.broadcast_shapes(_shape(constants, node), tuple(_ints(constants, _input(node, 1))))
    return _elements(dims) * _itemsize(constants, node)


def _tile(node: ir.Node, constants: ConstantReader) -> int:
    repeats = _ints(constants, _input(node, 1))
    dims = [d * r for d, r in zip(_shape(constants, node), repeats, strict=True)]
    return _elements(dims) * _itemsize(constants, node)


def _range(node: ir.Node, constants: ConstantReader) -> int:
    start, limit, delta = (
        float(np.asarray(constants[v]).reshape(-1)[0]) for v in node.inputs[:3] if v is not None
    )
    count = max(math.ceil((limit - start) / delta), 0)
    return count * _itemsize(constants, node)


def _one_hot(node: ir.Node, constants: ConstantReader) -> int:
    (depth,) = _ints(constants, _input(node, 1))
    return _elements(_shape(constants, node)) * max(depth, 0) * _itemsize(constants, node, 2)


def _pad(node: ir.Node, constants: ConstantReader) -> int:
    dims = _shape(constants, node)
    if "pads" in node.attributes:
        pads = list(node.attributes["pads"].as_ints())
    else:
        pads = _ints(constants, _input(node, 1))
    if _input(node, 3) is not None or len(pads) != 2 * len(dims):
        raise UnsizedError("axes given")  # opset 18 axes: sized from the declared shape
    padded = [d + pads[i] + pads[i + len(dims)] for i, d in enumerate(dims)]
    return _elements(padded) * _itemsize(constants, node)


def _resize(node: ir.Node, constants: ConstantReader) -> int:
    dims = _shape(constants, node)
    if "axes" in node.attributes:
        raise UnsizedError("axes given")  # opset 18: sized from the declared shape
    # Upsample and Resize-10 take (X, scales); Resize-11+ (X, roi, scales, sizes).
    scales_value = _input(node, 1 if len(node.inputs) == 2 else 2)
    sizes_value = _input(node, 3)
    if sizes_value is not None and sizes_value.name:
        return _elements(_ints(constants, sizes_value)) * _itemsize(constants, node)
    if scales_value is None:
        raise UnsizedError("no scales")
    scales = [float(s) for s in np.asarray(constants[scales_value]).reshape(-1)]
    out = [math.floor(d * s) for d, s in zip(dims, scales, strict=True)]
    return _elements(out) * _itemsize(constants, node)


def _broadcasting(node: ir.Node, constants: ConstantReader) -> int:
    shapes = [constants.shape(v) for v in node.inputs if v is not None]
    itemsize = max(constants.itemsize(v) for v in node.inputs if v is not None)
    return _elements(np.broadcast_shapes(*shapes)) * itemsize


def _cast(node: ir.Node, constants: ConstantReader) -> int:
    to = ir.DataType(node.attributes["to"].as_int())
    return _elements(_shape(constants, node)) * bytes_per_element(to)


_SIZERS: dict[str, Callable[[ir.Node, ConstantReader], int]] = {
    "ConstantOfShape": _constant_of_shape,
    "Expand": _expand,
    "Tile": _tile,
    "Range": _range,
    "OneHot": _one_hot,
    "Pad": _pad,
    "Resize": _resize,
    "Upsample": _resize,
    "Cast": _cast,
}
