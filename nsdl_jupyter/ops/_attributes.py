"""Python values and literal text to `onnx_ir.Attr` of a given ONNX attribute type, and back.

`to_attribute` is what every attribute edit goes through: it checks the value against the
type before anything changes and says what was expected and what was given. Literal text is
parsed here, so an error in ``[1, 2, 'x']`` names the column of ``'x'``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import onnx
import onnx_ir as ir

from nsdl_jupyter.ops._errors import AttributeLiteralError, AttributeValueError, LiteralSyntaxError
from nsdl_jupyter.ops._literal import LiteralPositions, parse_literal_with_positions
from nsdl_jupyter.ops._reference import AttributeReference
from nsdl_jupyter.ops._tensor_literals import (
    TensorLiteralError,
    array_from_nested,
    describe_value,
)

AT = ir.AttributeType
_INT64 = np.iinfo(np.int64)

EXPECTATIONS: dict[ir.AttributeType, str] = {
    AT.INT: "an int, e.g. 1",
    AT.FLOAT: "a float, e.g. 0.5",
    AT.STRING: "a string, e.g. 'text'",
    AT.INTS: "a list of ints, e.g. [1, 2]",
    AT.FLOATS: "a list of floats, e.g. [0.5, 1.0]",
    AT.STRINGS: "a list of strings, e.g. ['a', 'b']",
    AT.TENSOR: "a number, a nested list of numbers or strings, or a numpy array, e.g. [[1.0, 2.0]]",
    AT.TENSORS: "a list of tensors, e.g. [[1, 2], [3.0]]",
    AT.GRAPH: "an onnx_ir.Graph",
    AT.GRAPHS: "a list of onnx_ir.Graph",
    AT.TYPE_PROTO: "an onnx_ir type such as onnx_ir.TensorType(onnx_ir.DataType.FLOAT)",
    AT.TYPE_PROTOS: "a list of onnx_ir types",
    AT.SPARSE_TENSOR: "an onnx.SparseTensorProto",
    AT.SPARSE_TENSORS: "a list of onnx.SparseTensorProto",
}
_NO_LITERAL = {
    AT.GRAPH: "build an onnx_ir.Graph and pass it",
    AT.GRAPHS: "build onnx_ir.Graph objects and pass a list of them",
    AT.TYPE_PROTO: "pass an onnx_ir type, e.g. onnx_ir.TensorType(onnx_ir.DataType.FLOAT)",
    AT.TYPE_PROTOS: "pass a list of onnx_ir types",
    AT.SPARSE_TENSOR: "pass an onnx.SparseTensorProto",
    AT.SPARSE_TENSORS: "pass a list of onnx.SparseTensorProto",
}


class _Context:
    """Who is being converted, and the literal text (if any) for columns in errors."""

    __slots__ = ("attr_type", "name", "positions")

    def __init__(
        self, name: str, attr_type: ir.AttributeType, positions: LiteralPositions | None
    ) -> None:
        self.name = name
        self.attr_type = attr_type
        self.positions = positions

    @property
    def expectation(self) -> str:
        return (
            f"attribute {self.name!r} expects {self.attr_type.name} "
            f"({EXPECTATIONS[self.attr_type]})"
        )

    def error(self, problem: str, container: object = None, index: int = 0) -> AttributeValueError:
        """The error for `problem`; with a column when the value came from literal text."""
        if self.positions is not None:
            column = None
            if container is not None:
                column = self.positions.item_column(container, index)
            if column is None:
                text = self.positions.text
                column = len(text) - len(text.lstrip()) + 1
            return AttributeLiteralError(
                self.name, self.expectation, problem, column, self.positions.text
            )
        return AttributeValueError(f"{self.expectation}: {problem}", self.name)


def to_attribute(name: str, value: object, attr_type: ir.AttributeType | int) -> ir.Attr:
    """Convert `value` to an attribute `name` of type `attr_type`, or raise AttributeValueError.

    `value` may be a python value (int, float, str, list, numpy array, onnx_ir tensor,
    onnx.TensorProto, onnx_ir.Graph ...), an `onnx_ir.Attr`, or literal text such as
    ``"[1, 2]"``. For STRING attributes, text that starts with a quote is read as a quoted
    literal (``'It\\'s'``) and any other text is taken verbatim.
    """
    try:
        attr_type = ir.AttributeType(attr_type)
    except ValueError:
        raise AttributeValueError(
            f"attribute {name!r}: {attr_type!r} is not an ONNX attribute type", name
        ) from None
    if attr_type == AT.UNDEFINED:
        raise AttributeValueError(
            f"attribute {name!r} has type UNDEFINED, which holds no value: give a type", name
        )
    if isinstance(value, ir.Attr):
        if value.is_ref():
            assert value.ref_attr_name is not None
            return ir.RefAttr(name, value.ref_attr_name, attr_type)
        value = value.value
    if isinstance(value, AttributeReference):
        return ir.RefAttr(name, value.name, attr_type)
    positions = None
    if isinstance(value, str) and _reads_literal(value, attr_type):
        if attr_type in _NO_LITERAL:
            raise AttributeValueError(
                f"attribute {name!r} expects {attr_type.name} ({EXPECTATIONS[attr_type]}): "
                f"it cannot be typed as literal text; {_NO_LITERAL[attr_type]}",
                name,
            )
        context = _Context(name, attr_type, None)
        try:
            value, positions = parse_literal_with_positions(value)
        except LiteralSyntaxError as error:
            raise AttributeLiteralError(
                name, context.expectation, error.reason, error.column, error.text
            ) from None
    context = _Context(name, attr_type, positions)
    return ir.Attr(name, attr_type, _CONVERTERS[attr_type](value, context))


def _reads_literal(text: str, attr_type: ir.AttributeType) -> bool:
    if attr_type == AT.STRING:
        return text.lstrip()[:1] in ("'", '"')
    return True


# ------------------------------------------------------------------------------ scalars


def _unwrap_scalar(value: object) -> object:
    if isinstance(value, np.ndarray) and value.ndim == 0:
        return value[()]
    return value


def _int(value: object, context: _Context, container: object = None, index: int = 0) -> int:
    value = _unwrap_scalar(value)
    where = f"item {index + 1} is " if container is not None else "got "
    if isinstance(value, (bool, np.bool_)):
        return int(value)
    if isinstance(value, (int, np.integer)):
        number = int(value)
    elif isinstance(value, (float, np.floating)):
        if not math.isfinite(value) or not float(value).is_integer():
            raise context.error(
                f"{where}{describe_value(value)}, not a whole number", container, index
            )
        number = int(value)
    else:
        raise context.error(f"{where}{describe_value(value)}", container, index)
    if not _INT64.min <= number <= _INT64.max:
        raise context.error(f"{where}{number}, which does not fit in int64", container, index)
    return number


def _float(value: object, context: _Context, container: object = None, index: int = 0) -> float:
    value = _unwrap_scalar(value)
    where = f"item {index + 1} is " if container is not None else "got "
    if isinstance(value, (bool, np.bool_)) or not isinstance(
        value, (int, float, np.integer, np.floating)
    ):
        raise context.error(f"{where}{describe_value(value)}", container, index)
    number = float(value)
    with np.errstate(over="ignore"):
        single = np.float32(number)
    if math.isfinite(number) and not np.isfinite(single):
        raise context.error(
            f"{where}{number!r}, outside the float32 range of FLOAT attributes (about 3.4e38)",
            container,
            index,
        )
    # store what a reload of the saved model gives: FLOAT attributes are float32
    return float(single)


def _string(value: object, context: _Context, container: object = None, index: int = 0) -> str:
    value = _unwrap_scalar(value)
    where = f"item {index + 1} is " if container is not None else "got "
    if isinstance(value, str):
        return str(value)
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            raise context.error(f"{where}bytes that are not UTF-8 text", container, index) from None
    raise context.error(f"{where}{describe_value(value)}", container, index)


# ------------------------------------------------------------------------------ lists


def _sequence(value: object, context: _Context) -> Sequence[Any]:
    if isinstance(value, np.ndarray):
        if value.ndim != 1:
            raise context.error(
                f"got {describe_value(value)}; a list attribute needs one dimension"
            )
        return value.tolist() if value.dtype.kind != "O" else list(value)
    if isinstance(value, (list, tuple)):
        return value
    if isinstance(value, ir.TensorProtocol):
        return _sequence(value.numpy(), context)
    hint = ""
    if isinstance(value, (int, float, str, np.generic)):
        hint = "; write it in brackets for a one-item list"
    raise context.error(f"got {describe_value(value)}{hint}")


def _ints(value: object, context: _Context) -> tuple[int, ...]:
    items = _sequence(value, context)
    return tuple(_int(item, context, items, i) for i, item in enumerate(items))


def _floats(value: object, context: _Context) -> tuple[float, ...]:
    items = _sequence(value, context)
    return tuple(_float(item, context, items, i) for i, item in enumerate(items))


def _strings(value: object, context: _Context) -> tuple[str, ...]:
    items = _sequence(value, context)
    return tuple(_string(item, context, items, i) for i, item in enumerate(items))


# ------------------------------------------------------------------------------ tensors


def _tensor(
    value: object, context: _Context, container: object = None, index: int = 0
) -> ir.TensorProtocol:
    prefix = f"item {index + 1}: " if container is not None else ""
    if isinstance(value, onnx.TensorProto):
        return ir.serde.deserialize_tensor(value)
    if isinstance(value, ir.TensorProtocol):
        return value
    if isinstance(value, (np.ndarray, np.generic)):
        return _tensor_from_array(np.asarray(value), context, prefix, container, index)
    if isinstance(value, (list, tuple, int, float, str, bytes)):
        try:
            array = array_from_nested(value)
        except TensorLiteralError as problem:
            if problem.container is None:
                raise context.error(prefix + problem.problem, container, index) from None
            raise context.error(
                prefix + problem.problem, problem.container, problem.index
            ) from None
        return _tensor_from_array(array, context, prefix, container, index)
    raise context.error(f"{prefix}got {describe_value(value)}", container, index)


def _tensor_from_array(
    array: np.ndarray[Any, Any], context: _Context, prefix: str, container: object, index: int
) -> ir.TensorProtocol:
    if array.dtype.kind in "OUS":
        flat = []
        for item in array.reshape(-1):
            if isinstance(item, (str, np.str_)):
                flat.append(str(item).encode("utf-8"))
            elif isinstance(item, (bytes, np.bytes_)):
                flat.append(bytes(item))
            else:
                raise context.error(
                    f"{prefix}an object array must hold strings, found {describe_value(item)}",
                    container,
                    index,
                )
        data = np.empty(len(flat), dtype=object)
        data[:] = flat
        return ir.StringTensor(data.reshape(array.shape))
    try:
        return ir.Tensor(array)
    except (TypeError, ValueError, NotImplementedError) as error:
        raise context.error(
            f"{prefix}{describe_value(array)} cannot be an ONNX tensor: {error}", container, index
        ) from None


def _tensors(value: object, context: _Context) -> tuple[ir.TensorProtocol, ...]:
    if not isinstance(value, (list, tuple)):
        raise context.error(
            f"got {describe_value(value)}; write a list of tensors: [[1, 2], [3.0]]"
        )
    return tuple(_tensor(item, context, value, i) for i, item in enumerate(value))


# ------------------------------------------------------------------------------ objects


def _graph(value: object, context: _Context, container: object = None, index: int = 0) -> ir.Graph:
    if isinstance(value, ir.Graph):
        return value
    where = f"item {index + 1} is " if container is not None else "got "
    hint = ""
    if isinstance(value, onnx.GraphProto):
        hint = "; convert it with onnx_ir.serde.deserialize_graph(proto)"
    raise context.error(f"{where}{describe_value(value)}{hint}", container, index)


def _graphs(value: object, context: _Context) -> tuple[ir.Graph, ...]:
    if not isinstance(value, (list, tuple)):
        raise context.error(f"got {describe_value(value)}")
    return tuple(_graph(item, context, value, i) for i, item in enumerate(value))


def _type(
    value: object, context: _Context, container: object = None, index: int = 0
) -> ir.TypeAndShape:
    if isinstance(value, ir.TypeAndShape):
        return value
    if isinstance(value, ir.TypeProtocol):
        return ir.TypeAndShape(value, None)
    where = f"item {index + 1} is " if container is not None else "got "
    raise context.error(f"{where}{describe_value(value)}", container, index)


def _types(value: object, context: _Context) -> tuple[ir.TypeAndShape, ...]:
    if not isinstance(value, (list, tuple)):
        raise context.error(f"got {describe_value(value)}")
    return tuple(_type(item, context, value, i) for i, item in enumerate(value))


def _sparse(value: object, context: _Context) -> object:
    if not isinstance(value, onnx.SparseTensorProto):
        raise context.error(f"got {describe_value(value)}")
    _check_serializable(context, value)
    return value


def _sparses(value: object, context: _Context) -> tuple[object, ...]:
    if not isinstance(value, (list, tuple)) or not all(
        isinstance(item, onnx.SparseTensorProto) for item in value
    ):
        raise context.error(f"got {describe_value(value)}")
    _check_serializable(context, tuple(value))
    return tuple(value)


def _check_serializable(context: _Context, value: object) -> None:
    """onnx_ir 1.x cannot save sparse attributes; refuse now rather than fail at save time."""
    try:
        ir.serde.serialize_attribute(ir.Attr(context.name, context.attr_type, value))
    except (NotImplementedError, ir.serde.SerdeError):
        raise context.error(
            "onnx_ir (the in-memory model) cannot store sparse tensor attributes: "
            "use a dense TENSOR attribute instead (e.g. Constant's 'value')"
        ) from None


_CONVERTERS: dict[ir.AttributeType, Callable[[Any, _Context], Any]] = {
    AT.INT: _int,
    AT.FLOAT: _float,
    AT.STRING: _string,
    AT.INTS: _ints,
    AT.FLOATS: _floats,
    AT.STRINGS: _strings,
    AT.TENSOR: _tensor,
    AT.TENSORS: _tensors,
    AT.GRAPH: _graph,
    AT.GRAPHS: _graphs,
    AT.TYPE_PROTO: _type,
    AT.TYPE_PROTOS: _types,
    AT.SPARSE_TENSOR: _sparse,
    AT.SPARSE_TENSORS: _sparses,
}


# ------------------------------------------------------------------------------ back to python


def short_float(value: float) -> float:
    """The float64 whose repr is the shortest text of the float32 `value` (0.1, not 0.1000000015).

    Converting it back to float32 gives the same bits, so editing a displayed value round-trips.
    """
    single = np.float32(value)
    if not np.isfinite(single):
        return float(single)
    return float(str(single))


def _readonly(array: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    view: np.ndarray[Any, Any] = array.view()
    view.flags.writeable = False
    return view


def _tensor_to_python(tensor: ir.TensorProtocol) -> np.ndarray[Any, Any]:
    array: np.ndarray[Any, Any] = np.asarray(tensor.numpy())
    if tensor.dtype == ir.DataType.STRING:
        decoded = np.empty(array.size, dtype=object)
        decoded[:] = [
            item.decode("utf-8", errors="replace") if isinstance(item, bytes) else item
            for item in array.reshape(-1)
        ]
        result: np.ndarray[Any, Any] = decoded.reshape(array.shape)
        return result
    return _readonly(array)


def attribute_to_python(attr: ir.Attr) -> object:
    """The value of `attr` for display and editing; `to_attribute` reads it back unchanged.

    INT -> int, FLOAT -> float (shortest float32 text), STRING -> str, INTS/FLOATS/STRINGS ->
    lists, TENSOR -> a read-only numpy array (string tensors: an object array of str),
    TENSORS -> a list of arrays, GRAPH -> the onnx_ir.Graph, TYPE_PROTO -> onnx_ir.TypeAndShape,
    a reference to a function attribute -> `AttributeReference`.
    """
    if attr.is_ref():
        assert attr.ref_attr_name is not None
        return AttributeReference(attr.ref_attr_name, attr.type)
    kind, value = attr.type, attr.value
    if kind == AT.INT:
        return int(value)
    if kind == AT.FLOAT:
        return short_float(value)
    if kind == AT.STRING:
        return value.decode("utf-8", errors="replace") if isinstance(value, bytes) else value
    if kind == AT.INTS:
        return [int(v) for v in value]
    if kind == AT.FLOATS:
        return [short_float(v) for v in value]
    if kind == AT.STRINGS:
        return [v.decode("utf-8", errors="replace") if isinstance(v, bytes) else v for v in value]
    if kind == AT.TENSOR:
        return _tensor_to_python(value)
    if kind == AT.TENSORS:
        return [_tensor_to_python(t) for t in value]
    if kind in (AT.GRAPHS, AT.TYPE_PROTOS, AT.SPARSE_TENSORS):
        return list(value)
    return value
