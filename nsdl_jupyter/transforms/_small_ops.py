"""Small exact shape arithmetic, folded in the kernel.

Exports compute shapes at run time (HF's `cls_token.expand(batch, -1, -1)` is Concat,
ConstantOfShape, Mul, Equal, Where, Expand on a handful of integers). Sending such a chain
to the folding child costs a wake-up of that process, more than the numpy work, and more
than onnxruntime's own time for it. The operators here are exact (integers, comparisons,
selection, data movement: no rounding, so the values are the ones onnxruntime computes) and
are written with numpy on tensors of at most `SMALL_BYTES`, each result sized before it is
made: nothing here can crash the kernel or take much memory. Anything else, or anything
that does not fit, goes to the child as before (`evaluate_small` answers None).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import onnx_ir as ir

SMALL_BYTES = 1 << 14  # inputs and outputs of one node at most this big

_INTEGRAL = frozenset("biu")  # numpy kinds: bool, signed, unsigned


class _NotSmallError(Exception):
    """This node is not computed here (the caller sends the chain to the child)."""


def evaluate_small(
    nodes: Sequence[ir.Node], feeds: Mapping[str, np.ndarray], max_bytes: int | None
) -> dict[str, np.ndarray] | None:
    """Outputs of `nodes` (in graph order, reading `feeds` or earlier outputs), by name,
    when every node is one of the operators here and every tensor is small; else None.
    `max_bytes`: the caller's fold size threshold (a node over it is left to the child,
    which reports it)."""
    limit = SMALL_BYTES if max_bytes is None else min(SMALL_BYTES, max_bytes)
    if any(array.nbytes > limit or array.dtype.kind not in "biuf" for array in feeds.values()):
        return None
    known = dict(feeds)
    try:
        with np.errstate(all="ignore"):  # integer arithmetic wraps, as onnxruntime's does
            for node in nodes:
                rule = _RULES.get(node.op_type) if node.domain in ("", "ai.onnx") else None
                if rule is None or len(node.outputs) != 1:
                    raise _NotSmallError
                inputs = [None if v is None else known[v.name or ""] for v in node.inputs]
                result = np.asarray(rule(node, inputs, limit))
                if result.nbytes > limit:
                    raise _NotSmallError
                known[node.outputs[0].name or ""] = result
    except (_NotSmallError, KeyError, ValueError, IndexError, TypeError, OverflowError):
        return None  # the child computes it, or reports why it cannot
    return {name: array for name, array in known.items() if name not in feeds}


# ------------------------------------------------------------------ operators
_Input = np.ndarray | None
_Rule = Callable[[ir.Node, list[_Input], int], np.ndarray]


def _ints(node: ir.Node, name: str) -> list[int] | None:
    attr = node.attributes.get(name)
    return None if attr is None else list(attr.as_ints())


def _int(node: ir.Node, name: str, default: int) -> int:
    attr = node.attributes.get(name)
    return default if attr is None else attr.as_int()


def _present(inputs: list[_Input], count: int) -> list[np.ndarray]:
    """The first `count` inputs, all required."""
    if len(inputs) < count or any(array is None for array in inputs[:count]):
        raise _NotSmallError
    return [array for array in inputs[:count] if array is not None]


def _fits(shape: Sequence[int], dtype: np.dtype, limit: int) -> tuple[int, ...]:
    """`shape`, checked before an array of it is made."""
    dims = tuple(int(dim) for dim in shape)
    if any(dim < 0 for dim in dims) or int(np.prod(dims, dtype=object)) * dtype.itemsize > limit:
        raise _NotSmallError
    return dims


def _axes(node: ir.Node, inputs: list[_Input]) -> list[int] | None:
    """Unsqueeze/Squeeze axes: an input since opset 13, an attribute before."""
    if len(inputs) > 1 and inputs[1] is not None:
        return [int(axis) for axis in inputs[1].reshape(-1)]
    return _ints(node, "axes")


def _same_dtype(arrays: Sequence[np.ndarray]) -> None:
    if len({array.dtype for array in arrays}) != 1:
        raise _NotSmallError  # ONNX requires it; a mixed model is the child's to reject


def _identity(node: ir.Node, inputs: list[_Input], limit: int) -> np.ndarray:
    return _present(inputs, 1)[0]


def _concat(node: ir.Node, inputs: list[_Input], limit: int) -> np.ndarray:
    arrays = _present(inputs, len(inputs))
    _same_dtype(arrays)
    return np.concatenate(arrays, axis=_int(node, "axis", 0))


def _unsqueeze(node: ir.Node, inputs: list[_Input], limit: int) -> np.ndarray:
    (data,) = _present(inputs, 1)
    axes = _axes(node, inputs)
    if axes is None:
        raise _NotSmallError
    rank = data.ndim + len(axes)
    normalized = sorted(axis + rank if axis < 0 else axis for axis in axes)
    if len(set(normalized)) != len(normalized) or not all(0 <= a < rank for a in normalized):
        raise _NotSmallError
    return np.expand_dims(data, tuple(normalized))


def _squeeze(node: ir.Node, inputs: list[_Input], limit: int) -> np.ndarray:
    (data,) = _present(inputs, 1)
    axes = _axes(node, inputs)
    if axes is None:
        return np.squeeze(data)
    normalized = {axis + data.ndim if axis < 0 else axis for axis in axes}
    if len(normalized) != len(axes) or any(data.shape[axis] != 1 for axis in normalized):
        raise _NotSmallError
    return np.squeeze(data, axis=tuple(normalized))


def _gather(node: ir.Node, inputs: list[_Input], limit: int) -> np.ndarray:
    data, indices = _present(inputs, 2)
    if indices.dtype.kind not in "iu":
        raise _NotSmallError
    axis = _int(node, "axis", 0)
    axis = axis + data.ndim if axis < 0 else axis
    dims = (*data.shape[:axis], *indices.shape, *data.shape[axis + 1 :])
    _fits(dims, data.dtype, limit)
    return np.take(data, indices.astype(np.int64), axis=axis, mode="raise")


def _constant_of_shape(node: ir.Node, inputs: list[_Input], limit: int) -> np.ndarray:
    (shape,) = _present(inputs, 1)
    attr = node.attributes.get("value")
    value = np.zeros(1, np.float32) if attr is None else attr.as_tensor().numpy().reshape(-1)
    if value.size != 1 or value.dtype.kind not in "biuf":
        raise _NotSmallError
    dims = _fits([int(dim) for dim in shape.reshape(-1)], value.dtype, limit)
    return np.full(dims, value[0], dtype=value.dtype)  # type: ignore[arg-type]


def _expand(node: ir.Node, inputs: list[_Input], limit: int) -> np.ndarray:
    data, shape = _present(inputs, 2)
    target = np.broadcast_shapes(data.shape, tuple(int(dim) for dim in shape.reshape(-1)))
    return np.array(np.broadcast_to(data, _fits(target, data.dtype, limit)))


def _reshape(node: ir.Node, inputs: list[_Input], limit: int) -> np.ndarray:
    data, shape = _present(inputs, 2)
    dims = [int(dim) for dim in shape.reshape(-1)]
    if not _int(node, "allowzero", 0):
        dims = [data.shape[i] if dim == 0 else dim for i, dim in enumerate(dims)]
    if dims.count(-1) > 1:
        raise _NotSmallError
    return data.reshape(dims)


def _cast(node: ir.Node, inputs: list[_Input], limit: int) -> np.ndarray:
    """Between integer and bool types, and integers to float32/64 (rounded to nearest even
    by both); a float source, float16 and the 8-bit floats are the child's."""
    (data,) = _present(inputs, 1)
    target = ir.DataType(_int(node, "to", 0))
    if data.dtype.kind not in _INTEGRAL:
        raise _NotSmallError
    if not (target.is_integer() or target == ir.DataType.BOOL) and target not in (
        ir.DataType.FLOAT,
        ir.DataType.DOUBLE,
    ):
        raise _NotSmallError
    return data.astype(target.numpy())


def _elementwise(function: Callable[..., np.ndarray], kinds: str, *, unary: bool = False) -> _Rule:
    """An operator on inputs of one dtype of the numpy `kinds` ONNX allows it ("b" bool,
    "i" signed, "u" unsigned, "f" float), broadcasting several inputs (Min and Max take any
    number), sized before it runs."""

    def rule(node: ir.Node, inputs: list[_Input], limit: int) -> np.ndarray:
        arrays = _present(inputs, len(inputs))
        _same_dtype(arrays)
        if arrays[0].dtype.kind not in kinds or unary != (len(arrays) == 1):
            raise _NotSmallError
        _fits(np.broadcast_shapes(*(a.shape for a in arrays)), arrays[0].dtype, limit)
        return function(arrays[0]) if unary else functools.reduce(function, arrays)

    return rule


def _where(node: ir.Node, inputs: list[_Input], limit: int) -> np.ndarray:
    condition, x, y = _present(inputs, 3)
    _same_dtype([x, y])
    if condition.dtype != np.bool_:
        raise _NotSmallError
    _fits(np.broadcast_shapes(condition.shape, x.shape, y.shape), x.dtype, limit)
    return np.where(condition, x, y)


_NUMBERS = "iuf"
_RULES: dict[str, _Rule] = {
    "Identity": _identity,
    "Concat": _concat,
    "Unsqueeze": _unsqueeze,
    "Squeeze": _squeeze,
    "Gather": _gather,
    "ConstantOfShape": _constant_of_shape,
    "Expand": _expand,
    "Reshape": _reshape,
    "Cast": _cast,
    "Where": _where,
    # IEEE addition, subtraction and multiplication are exactly rounded: floats too
    "Add": _elementwise(np.add, _NUMBERS),
    "Sub": _elementwise(np.subtract, _NUMBERS),
    "Mul": _elementwise(np.multiply, _NUMBERS),
    "Neg": _elementwise(np.negative, "if", unary=True),
    "Equal": _elementwise(np.equal, "biuf"),
    "Less": _elementwise(np.less, _NUMBERS),
    "Greater": _elementwise(np.greater, _NUMBERS),
    "LessOrEqual": _elementwise(np.less_equal, _NUMBERS),
    "GreaterOrEqual": _elementwise(np.greater_equal, _NUMBERS),
    "Not": _elementwise(np.logical_not, "b", unary=True),
    "And": _elementwise(np.logical_and, "b"),
    "Or": _elementwise(np.logical_or, "b"),
    # onnxruntime's Min/Max on floats treat NaN their own way: integers only
    "Min": _elementwise(np.minimum, "iu"),
    "Max": _elementwise(np.maximum, "iu"),
    "Abs": _elementwise(np.abs, "iu", unary=True),
}
