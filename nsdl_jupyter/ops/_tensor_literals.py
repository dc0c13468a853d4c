"""Nested lists (parsed literals or python values) to numpy arrays, with ONNX's dtype habits.

float literals -> float32, ints -> int64, true/false -> bool, strings -> a string tensor
(object array of str). Ragged lists and mixed kinds are refused with the position of the first
offending item, so a literal error can name its column.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nsdl_jupyter._errors import NsdlError

_INT64 = np.iinfo(np.int64)


class TensorLiteralError(NsdlError, ValueError):
    """What is wrong with a nested list, and where: item `index` of list `container`.

    `container` is None when the problem is the value as a whole.
    """

    def __init__(self, problem: str, container: object = None, index: int = 0) -> None:
        super().__init__(problem)
        self.problem = problem
        self.container = container
        self.index = index


def describe_value(value: object) -> str:
    """'the int 5', "the str 'a'", 'a float32 numpy array of shape (2, 3)' ... for messages."""
    if isinstance(value, np.ndarray):
        return f"a {value.dtype} numpy array of shape {tuple(value.shape)}"
    if value is None:
        return "None"
    if isinstance(value, bool):
        return f"the bool {'true' if value else 'false'}"
    kinds: tuple[type, ...] = (int, float, str, bytes, list, tuple)
    for kind in kinds:
        if isinstance(value, kind) and not isinstance(value, np.generic):
            text = repr(value)
            if len(text) > 40:
                text = text[:37] + "..."
            return f"the {kind.__name__} {text}"
    if isinstance(value, np.generic):
        return f"the numpy {value.dtype} {value!r}"
    return f"a {type(value).__module__}.{type(value).__qualname__}"


def _kind(value: object) -> str:
    if isinstance(value, (bool, np.bool_)):
        return "bool"
    if isinstance(value, (int, np.integer)):
        return "int"
    if isinstance(value, (float, np.floating)):
        return "float"
    if isinstance(value, (str, bytes, np.str_, np.bytes_)):
        return "str"
    return "other"


_KIND_WORDS = {"bool": "true/false", "int": "a number", "float": "a number", "str": "a string"}
_KIND_PLURAL = {"bool": "true/false", "int": "numbers", "float": "numbers", "str": "strings"}


def _shape_and_leaves(value: Any, leaves: list[Any]) -> tuple[int, ...]:
    """Shape of a rectangular nested list; leaves appended in C order. Raises on ragged."""
    if not isinstance(value, (list, tuple)):
        leaves.append(value)
        return ()
    if not value:
        return (0,)
    first = _shape_and_leaves(value[0], leaves)
    for index in range(1, len(value)):
        item = value[index]
        shape = _shape_and_leaves(item, leaves)
        if shape != first:
            if not first or not shape:
                what = "a list" if shape else "a single value"
                other = "a list" if first else "a single value"
                problem = f"ragged list: item {index + 1} is {what} but item 1 is {other}"
            else:
                problem = (
                    f"ragged list: item {index + 1} has shape {shape} but item 1 has "
                    f"shape {first}; a tensor needs rows of equal length"
                )
            raise TensorLiteralError(problem, value, index)
    return (len(value), *first)


def _locate(value: Any, flat_index: int, shape: tuple[int, ...]) -> tuple[object, int]:
    """The (innermost list, index in it) of leaf number `flat_index` of a nested list."""
    if not shape:
        return None, 0
    indices = np.unravel_index(flat_index, shape)
    container = value
    for position in indices[:-1]:
        container = container[int(position)]
    return container, int(indices[-1])


def array_from_nested(value: Any) -> np.ndarray[Any, Any]:
    """A numpy array from a scalar or a rectangular nested list of one kind of scalars."""
    leaves: list[Any] = []
    shape = _shape_and_leaves(value, leaves)
    kinds = [_kind(leaf) for leaf in leaves]
    seen = set(kinds)
    if "other" in seen:
        at = kinds.index("other")
        container, index = _locate(value, at, shape)
        raise TensorLiteralError(
            f"item {index + 1} is {describe_value(leaves[at])}: tensors hold numbers, "
            "true/false or strings",
            container,
            index,
        )
    numeric = seen <= {"int", "float"}
    if len(seen) > 1 and not numeric:
        first_kind = kinds[0]
        at = next(i for i, k in enumerate(kinds) if _KIND_WORDS[k] != _KIND_WORDS[first_kind])
        container, index = _locate(value, at, shape)
        raise TensorLiteralError(
            f"item {index + 1} is {_KIND_WORDS[kinds[at]]} but earlier items are "
            f"{_KIND_PLURAL[first_kind]}: a tensor holds one kind of value",
            container,
            index,
        )
    if seen == {"str"}:
        strings = [
            leaf.decode("utf-8") if isinstance(leaf, (bytes, np.bytes_)) else str(leaf)
            for leaf in leaves
        ]
        array = np.empty(len(strings), dtype=object)
        array[:] = strings
        return array.reshape(shape)
    if seen == {"bool"}:
        return np.array(leaves, dtype=np.bool_).reshape(shape)
    if seen == {"int"}:
        for at, leaf in enumerate(leaves):
            if not _INT64.min <= int(leaf) <= _INT64.max:
                container, index = _locate(value, at, shape)
                raise TensorLiteralError(
                    f"{int(leaf)} does not fit in int64: write it as a float ({int(leaf)}.0) "
                    "or use a smaller number",
                    container,
                    index,
                )
        return np.array(leaves, dtype=np.int64).reshape(shape)
    # floats (or an empty list): float32 as ONNX models use it
    as_float = np.array(leaves, dtype=np.float64)
    with np.errstate(over="ignore"):
        as_single = as_float.astype(np.float32)
    too_big = np.isfinite(as_float) & ~np.isfinite(as_single)
    if too_big.any():
        at = int(np.argmax(too_big))
        container, index = _locate(value, at, shape)
        raise TensorLiteralError(
            f"{as_float[at]!r} is outside the float32 range (about 3.4e38): "
            "pass a float64 numpy array for a DOUBLE tensor",
            container,
            index,
        )
    return as_single.reshape(shape)
