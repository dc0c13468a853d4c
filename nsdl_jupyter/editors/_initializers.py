"""State of the InitializerEditor: the initializer table, the create form, and the inputs of
the selected node that use (or could use) an initializer.

Sizes and locations come from tensor metadata: listing never reads weight bytes, so a model
with gigabytes of external data lists at once.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import onnx_ir as ir

from nsdl_jupyter.document import DocumentError, ModelDocument, UnknownDataTypeError, fill_methods

SourceKind = Literal["literal", "npy", "generate"]
FILL_METHODS = ("zeros", "normal", "uniform")
# dtypes offered by the create form, in the order users look for them
CREATE_DTYPES = (
    "float",
    "float16",
    "bfloat16",
    "double",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "bool",
    "string",
)
_SHAPE_SPLIT = re.compile(r"[\s,x*\u00d7]+")


@dataclass(frozen=True)
class InitializerRow:
    name: str
    dtype: str
    shape: tuple[int | str | None, ...]
    size: int
    nbytes: int
    location: str
    users: int

    def label(self, name_width: int = 32) -> str:
        """A fixed-width line for a list box."""
        shape = "[" + ", ".join(str(d) for d in self.shape) + "]"
        name = self.name if len(self.name) <= name_width else "…" + self.name[-(name_width - 1) :]
        return (
            f"{name:<{name_width}} {self.dtype:<8} {shape:<18} "
            f"{_human_bytes(self.nbytes):>9}  {self.location}"
        )


def dtype_name(dtype: ir.DataType | None) -> str:
    """ONNX's spelling of a dtype: float, float16, int64 ... (as in ``tensor(float)``)."""
    return dtype.name.lower() if dtype is not None else "?"


def initializer_rows(doc: ModelDocument) -> list[InitializerRow]:
    rows = []
    for name, value in doc.graph.initializers.items():
        tensor = value.const_value
        dtype = tensor.dtype if tensor is not None else value.dtype
        dims = tensor.shape.numpy() if tensor is not None else (value.shape or ())
        shape = tuple(d if isinstance(d, int) else str(d) for d in dims)
        size = 1
        for dim in shape:
            size *= dim if isinstance(dim, int) else 1
        external = doc.external_location(name)
        rows.append(
            InitializerRow(
                name=name,
                dtype=dtype_name(dtype),
                shape=shape,
                size=size,
                nbytes=int(tensor.nbytes) if tensor is not None else 0,
                location=f"external: {external.location}" if external else "inline",
                users=len(value.uses()),
            )
        )
    return rows


def filter_rows(
    rows: Iterable[InitializerRow], text: str = "", dtype: str | None = None
) -> list[InitializerRow]:
    """Rows whose name contains `text` (case-insensitive) and whose dtype is `dtype`."""
    needle = text.strip().lower()
    return [
        row
        for row in rows
        if (not needle or needle in row.name.lower()) and (not dtype or row.dtype == dtype)
    ]


def dtypes_present(rows: Iterable[InitializerRow]) -> list[str]:
    return sorted({row.dtype for row in rows})


def allowed_fill_methods(dtype: str) -> tuple[str, ...]:
    """The generate methods a dtype allows (the others are shown disabled)."""
    return tuple(fill_methods(_data_type(dtype)))


def _data_type(dtype: str) -> ir.DataType:
    try:
        return ir.DataType[dtype.upper()]
    except KeyError:
        raise UnknownDataTypeError(
            f"unknown dtype {dtype!r}: use one of {', '.join(CREATE_DTYPES)}"
        ) from None


def parse_shape(text: str) -> tuple[int, ...] | None:
    """``[1, 3]``, ``1, 3``, ``1x3`` -> (1, 3); ``[]`` -> () (a scalar); empty -> None."""
    stripped = text.strip()
    if not stripped:
        return None
    inner = stripped.removeprefix("[").removesuffix("]").removeprefix("(").removesuffix(")")
    parts = [p for p in _SHAPE_SPLIT.split(inner.strip()) if p]
    dims = []
    for part in parts:
        if not part.isdigit():
            raise DocumentError(
                f"shape {text!r}: {part!r} is not a non-negative integer; "
                "write e.g. [1, 3, 224, 224]"
            )
        dims.append(int(part))
    return tuple(dims)


def create_initializer(
    doc: ModelDocument,
    name: str,
    dtype: str,
    shape_text: str,
    source: SourceKind,
    *,
    value_text: str = "",
    npy_path: str = "",
    method: str = "zeros",
    seed: int = 0,
) -> str | None:
    """Create an initializer from the form; the error message, or None."""
    try:
        shape = parse_shape(shape_text)
        if source == "generate":
            if shape is None:
                raise DocumentError("give a shape to generate values, e.g. [64, 3, 7, 7]")
            doc.create_initializer(
                name.strip(), dtype=dtype, shape=shape, generate=method, seed=seed
            )
        elif source == "npy":
            if not npy_path.strip():
                raise DocumentError("give the path of a .npy file")
            path = npy_path.strip()
            if not path.endswith(".npy"):
                raise DocumentError(f"{path!r} is not a .npy file: save the array with numpy.save")
            doc.create_initializer(name.strip(), path, dtype=dtype, shape=shape)
        else:
            if not value_text.strip():
                raise DocumentError("give a value as a literal, e.g. [[1.0, 2.0], [3.0, 4.0]]")
            doc.create_initializer(name.strip(), value_text, dtype=dtype, shape=shape)
    except DocumentError as error:
        return str(error)
    return None


def set_initializer_value(doc: ModelDocument, name: str, array: np.ndarray) -> str | None:
    """The tensor editor's cell edit of an initializer (one undo step); the error, or None."""
    try:
        doc.set_initializer_value(name, array)
    except DocumentError as error:
        return str(error)
    return None


def delete_initializer(doc: ModelDocument, name: str) -> str | None:
    try:
        doc.delete_initializer(name)
    except DocumentError as error:
        return str(error)
    return None


# ------------------------------------------------------------------ node inputs
@dataclass(frozen=True)
class InputSlot:
    """One input of the selected node: what feeds it now and what may feed it."""

    index: int
    label: str
    optional: bool
    tensor: str | None
    is_initializer: bool
    allowed: tuple[str, ...]  # dtype names the schema allows here; () when unknown

    @property
    def free(self) -> bool:
        return self.tensor is None


def input_slots(doc: ModelDocument, node_name: str) -> list[InputSlot]:
    """Every connected input, and the free ones the schema defines after them."""
    node = doc.nodes[node_name]
    schema = doc.schema(node)
    formals = tuple(schema.inputs) if schema is not None else ()
    count = len(node.inputs)
    if schema is not None:
        count = max(count, min(len(formals), schema.max_input))
    slots = []
    for index in range(count):
        formal = formals[min(index, len(formals) - 1)] if formals else None
        allowed: tuple[str, ...] = ()
        if formal is None:
            label, optional = f"input {index}", True
        else:
            label = formal.name
            if formal.option == "variadic":
                label = f"{formal.name}[{index - formals.index(formal)}]"
            optional = formal.option != "single"
            allowed = _allowed(schema, formal.type_str)
        value = node.inputs[index] if index < len(node.inputs) else None
        slots.append(
            InputSlot(
                index=index,
                label=label,
                optional=optional,
                tensor=(value.name or "") if value is not None else None,
                is_initializer=value is not None and value.is_initializer(),
                allowed=allowed,
            )
        )
    return slots


def _allowed(schema: object, type_str: str) -> tuple[str, ...]:
    constraints = getattr(schema, "type_constraints", {})
    types = constraints.get(type_str) or ((type_str,) if type_str.startswith("tensor(") else ())
    return tuple(t[len("tensor(") : -1] for t in types if t.startswith("tensor("))


def candidates(doc: ModelDocument, slot: InputSlot) -> list[str]:
    """Initializer names that fit the slot's allowed dtypes (all of them when unknown)."""
    names = []
    for name, value in doc.graph.initializers.items():
        if slot.allowed and dtype_name(value.dtype) not in slot.allowed:
            continue
        names.append(name)
    return sorted(names)


def connect_initializer(
    doc: ModelDocument, node: str, index: int, initializer: str, *, replace: bool = False
) -> str | None:
    """Link `initializer` to input `index` (replacing what is there when `replace`)."""
    try:
        if initializer not in doc.graph.initializers:
            raise DocumentError(f"no initializer named {initializer!r}: pick one from the list")
        if replace:
            doc.connect(initializer, node, index, replace=True)
        else:
            doc.connect_initializer(initializer, node, index)
    except DocumentError as error:
        return str(error)
    return None


def disconnect_input(doc: ModelDocument, node: str, index: int) -> str | None:
    try:
        doc.disconnect(node, index)
    except DocumentError as error:
        return str(error)
    return None


def _human_bytes(count: int) -> str:
    size = float(count)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{count} B"


def slot_summary(slots: Sequence[InputSlot]) -> str:
    used = sum(1 for s in slots if s.is_initializer)
    return f"{used} of {len(slots)} inputs use initializers"
