"""Batch tensor dtype conversion inside a ModelDocument, as one undoable edit.

Pick initializers and tensor/list attributes of the main graph by name, by a filter or by
dtype; `preview_tensor_conversion` says what each conversion would lose (precision,
fractional parts, values out of range, NaN) and which consumers would no longer accept the
type; `convert_tensors` applies them as ONE document command, so one undo restores every
original value exactly (the original tensor objects are put back, not re-converted).

A Constant's `value_float(s)`/`value_int(s)` becomes a `value` tensor of the new dtype (its
output's dtype is the point of converting it). Other list attributes keep their attribute
type (FLOATS stay FLOATS); their values are passed through the target dtype, which is how a
precision or range reduction is simulated for them.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import onnx_ir as ir

from nsdl_jupyter._errors import ArgumentError, list_argument
from nsdl_jupyter.document import ChangeEvent, ModelDocument
from nsdl_jupyter.document import edits as e
from nsdl_jupyter.transforms._dtypes import DtypeInference, formal_index, node_schema
from nsdl_jupyter.transforms._passes import EditPass, register, transform_document
from nsdl_jupyter.transforms._status import TransformStatus
from nsdl_jupyter.transforms._working_copy import TransformError, data_type

TensorKind = Literal["initializer", "attribute"]
_LIST_TYPES = {
    ir.AttributeType.FLOATS: ir.DataType.FLOAT,
    ir.AttributeType.INTS: ir.DataType.INT64,
    ir.AttributeType.FLOAT: ir.DataType.FLOAT,
    ir.AttributeType.INT: ir.DataType.INT64,
}
_CONSTANT_VALUE_ATTRS = frozenset(
    {"value", "value_float", "value_floats", "value_int", "value_ints"}
)


@dataclass(frozen=True)
class TensorRef:
    """A convertible tensor: an initializer (`name`) or a node attribute (`node.attribute`)."""

    name: str
    kind: TensorKind
    dtype: ir.DataType
    shape: tuple[int, ...]
    node: str | None = None
    attribute: str | None = None


@dataclass
class ConversionItem:
    """What converting one tensor would do."""

    tensor: TensorRef
    to: ir.DataType
    warnings: list[str] = field(default_factory=list)
    max_abs_error: float = 0.0
    values_changed: int = 0


@dataclass
class ConversionPreview:
    """The preview of a batch conversion; `warnings` lists every item's warnings."""

    to: ir.DataType
    items: list[ConversionItem]

    @property
    def warnings(self) -> list[str]:
        return [f"{item.tensor.name}: {w}" for item in self.items for w in item.warnings]

    def __str__(self) -> str:
        lines = [f"convert {len(self.items)} tensor(s) to {self.to.name}"]
        for item in self.items:
            head = (
                f"  {item.tensor.name}: {item.tensor.dtype.name} -> {item.to.name}, "
                f"{item.values_changed} value(s) change, max abs error {item.max_abs_error:.3g}"
            )
            lines.append(head)
            lines.extend(f"    warning: {w}" for w in item.warnings)
        return "\n".join(lines)


Selection = str | Iterable[str] | Callable[[TensorRef], bool]


def list_tensors(doc: ModelDocument, dtype: ir.DataType | str | None = None) -> list[TensorRef]:
    """Every convertible tensor of the main graph (optionally only those of `dtype`)."""
    if not isinstance(doc, ModelDocument):
        raise ArgumentError(
            f"list_tensors takes a ModelDocument, not {type(doc).__name__}: "
            "list_tensors(nsdl_jupyter.open_model(path))"
        )
    return _tensors_of(doc.graph, dtype)


def _tensors_of(graph: ir.Graph, dtype: ir.DataType | str | None = None) -> list[TensorRef]:
    wanted = data_type(dtype) if dtype is not None else None
    refs: list[TensorRef] = []
    for name, value in graph.initializers.items():
        tensor = value.const_value
        if tensor is None:
            continue
        refs.append(TensorRef(name, "initializer", tensor.dtype, tuple(tensor.shape.numpy())))
    for node in graph:
        for attr_name, attr in node.attributes.items():
            ref = _attribute_ref(node, attr_name, attr)
            if ref is not None:
                refs.append(ref)
    return [ref for ref in refs if wanted is None or ref.dtype == wanted]


def _attribute_ref(node: ir.Node, attr_name: str, attr: ir.Attr) -> TensorRef | None:
    name = f"{node.name}.{attr_name}"
    if attr.is_ref():
        return None
    if attr.type == ir.AttributeType.TENSOR:
        tensor = attr.as_tensor()
        shape = tuple(tensor.shape.numpy())
        return TensorRef(name, "attribute", tensor.dtype, shape, node.name, attr_name)
    if attr.type in _LIST_TYPES:
        values = attr.value if isinstance(attr.value, Sequence) else [attr.value]
        shape = (len(values),) if isinstance(attr.value, Sequence) else ()
        dtype = _LIST_TYPES[attr.type]
        return TensorRef(name, "attribute", dtype, shape, node.name, attr_name)
    return None


def _select(graph: ir.Graph, selection: Selection) -> list[TensorRef]:
    refs = _tensors_of(graph)
    if callable(selection):
        return [ref for ref in refs if selection(ref)]
    names = [selection] if isinstance(selection, str) else list_argument(selection, "tensor names")
    by_name = {ref.name: ref for ref in refs}
    chosen = []
    for name in names:
        ref = by_name.get(name)
        if ref is None:
            close = difflib.get_close_matches(name, list(by_name), n=3)
            hint = f" (did you mean {', '.join(map(repr, close))}?)" if close else ""
            raise TransformError(
                f"no initializer or tensor/list attribute named {name!r}{hint}; attributes "
                "are named 'node.attribute'"
            )
        chosen.append(ref)
    return chosen


# ------------------------------------------------------------------ arrays
def _nodes_by_name(graph: ir.Graph) -> dict[str, ir.Node]:
    return {node.name or "": node for node in graph}


def _current_array(graph: ir.Graph, nodes: Mapping[str, ir.Node], ref: TensorRef) -> np.ndarray:
    if ref.kind == "initializer":
        tensor = graph.initializers[ref.name].const_value
        assert tensor is not None
        return tensor.numpy()
    attr = nodes[ref.node or ""].attributes[ref.attribute or ""]
    if attr.type == ir.AttributeType.TENSOR:
        return attr.as_tensor().numpy()
    return np.array(attr.value, dtype=ref.dtype.numpy())


def convert_array(array: np.ndarray, to: ir.DataType) -> tuple[np.ndarray, list[str]]:
    """`array` converted to `to` (saturating, never wrapping) and the warnings it deserves."""
    if to == ir.DataType.STRING or array.dtype.kind in "OSU":
        raise TransformError("string tensors cannot be converted to or from numbers")
    try:
        target = np.dtype(to.numpy())
    except (TypeError, ValueError) as problem:
        raise TransformError(f"{to.name} is not supported by numpy here: {problem}") from None
    source = array.astype(np.int64) if array.dtype.kind == "b" else array
    wide = source.astype(np.float64) if source.dtype.kind in "fc" else source
    if to == ir.DataType.BOOL:
        unusual = int(np.count_nonzero((wide != 0) & (wide != 1)))
        warnings = [f"{unusual} value(s) other than 0/1 become True"] if unusual else []
        return array.astype(bool), warnings
    if target.kind in "iu":
        return _to_integers(wide, target, to)
    return _to_floats(array, wide, target, to)


def _to_integers(
    wide: np.ndarray, target: np.dtype, to: ir.DataType
) -> tuple[np.ndarray, list[str]]:
    warnings: list[str] = []
    info = np.iinfo(target)
    if wide.dtype.kind == "f":
        nans = np.isnan(wide)
        if nans.any():
            warnings.append(f"{int(nans.sum())} NaN value(s) become 0")
        fractional = int(np.count_nonzero(~nans & (np.trunc(wide) != wide)))
        if fractional:
            warnings.append(f"{fractional} value(s) lose their fractional part (truncated)")
        wide = np.where(nans, 0, np.trunc(wide))
    out_of_range = int(np.count_nonzero((wide < info.min) | (wide > info.max)))
    if out_of_range:
        warnings.append(
            f"{out_of_range} value(s) outside {to.name.lower()}'s range "
            f"[{info.min}, {info.max}] are saturated"
        )
    return np.clip(wide, info.min, info.max).astype(target), warnings


def saturate_to_float(array: np.ndarray, target: np.dtype) -> tuple[np.ndarray, np.ndarray]:
    """`array` cast to the float type `target` with finite values beyond its range clamped
    to its largest (never inf), and the mask of the clamped ones."""
    finite_max = float(np.finfo(target).max)
    over = np.isfinite(array) & (np.abs(array) > finite_max)
    if over.any():
        array = np.where(over, np.sign(array) * finite_max, array)
    return array.astype(target), over


def _to_floats(
    array: np.ndarray, wide: np.ndarray, target: np.dtype, to: ir.DataType
) -> tuple[np.ndarray, list[str]]:
    warnings: list[str] = []
    as_float = wide.astype(np.float64)
    finite = np.isfinite(as_float)
    converted, over = saturate_to_float(as_float, target)
    if over.any():
        warnings.append(
            f"{int(over.sum())} value(s) beyond {to.name.lower()}'s range are clamped to "
            f"+-{float(np.finfo(target).max):g}"
        )
        as_float = np.where(over, np.sign(as_float) * float(np.finfo(target).max), as_float)
    back = converted.astype(np.float64)
    lost = finite & ~over & (back != as_float)
    if lost.any():
        if array.dtype.kind in "iub":
            warnings.append(f"{int(lost.sum())} integer value(s) are not exact in {to.name}")
        else:
            worst = float(np.max(np.abs(back[lost] - as_float[lost])))
            warnings.append(
                f"precision loss: {int(lost.sum())} value(s) change, max abs error {worst:.3g}"
            )
    if array.dtype.kind == "f":
        tiny = finite & (as_float != 0) & (back == 0)
        if tiny.any():
            warnings.append(f"{int(tiny.sum())} small value(s) underflow to 0")
    return converted, warnings


def _consumer_warnings(
    graph: ir.Graph, ref: TensorRef, to: ir.DataType, types: DtypeInference
) -> list[str]:
    """Consumers whose schema does not accept `to` at that input, or binds it elsewhere."""
    if ref.kind != "initializer":
        return []
    value = graph.initializers[ref.name]
    found = []
    for user, index in value.uses():
        schema = node_schema(user, graph.opset_imports)
        formal = formal_index(schema, index) if schema is not None else None
        if schema is None or formal is None:
            continue
        type_str = schema.inputs[formal].type_str
        allowed = schema.type_constraints.get(type_str, (type_str,))
        wanted = f"tensor({_onnx_type_name(to)})"
        if wanted not in allowed:
            found.append(
                f"{user.op_type} {user.name} input {index} ({schema.inputs[formal].name}) "
                f"does not accept {to.name.lower()}: the model will not type-check"
            )
            continue
        for other_index, other in enumerate(user.inputs):
            if other is None or other is value or other_index == index:
                continue
            other_formal = formal_index(schema, other_index)
            if other_formal is None or schema.inputs[other_formal].type_str != type_str:
                continue
            other_dtype = types.of(other)
            if other_dtype is not None and other_dtype != to:
                found.append(
                    f"{user.op_type} {user.name} needs input {other_index} ({other.name}) of "
                    f"the same type, which is {other_dtype.name.lower()}"
                )
                break
    return found


def _onnx_type_name(dtype: ir.DataType) -> str:
    return {
        ir.DataType.FLOAT: "float",
        ir.DataType.DOUBLE: "double",
        ir.DataType.FLOAT16: "float16",
        ir.DataType.BFLOAT16: "bfloat16",
    }.get(dtype, dtype.name.lower())


# ---------------------------------------------------------------- preview
def preview_tensor_conversion(
    doc: ModelDocument, names_or_filter: Selection, dtype: ir.DataType | str | int
) -> ConversionPreview:
    """What converting the selected tensors to `dtype` would lose; changes nothing."""
    return _preview(doc.model, names_or_filter, data_type(dtype))


def _preview(model: ir.Model, names_or_filter: Selection, to: ir.DataType) -> ConversionPreview:
    items = []
    types = DtypeInference(model).run()
    nodes = _nodes_by_name(model.graph)
    for ref in _select(model.graph, names_or_filter):
        item = ConversionItem(ref, to)
        if ref.dtype == to:
            item.warnings.append(f"already {to.name.lower()}: nothing to convert")
            items.append(item)
            continue
        array = _current_array(model.graph, nodes, ref)
        converted, item.warnings = convert_array(array, to)
        if array.dtype.kind in "fiub" and converted.size:
            before = array.astype(np.float64)
            after = converted.astype(np.float64)
            both = np.isfinite(before) & np.isfinite(after)
            if both.any():
                item.max_abs_error = float(np.max(np.abs(after[both] - before[both])))
            item.values_changed = int(np.count_nonzero(~(after == before) & both))
        item.warnings.extend(_consumer_warnings(model.graph, ref, to, types))
        items.append(item)
    return ConversionPreview(to, items)


# ------------------------------------------------------------------ apply
def convert_tensors(
    doc: ModelDocument, names_or_filter: Selection, dtype: ir.DataType | str | int
) -> TransformStatus:
    """Convert the selected tensors to `dtype` as one undoable document edit.

    `names_or_filter`: a name, a list of names (`initializer` or `node.attribute`) or a
    function `TensorRef -> bool` (see `list_tensors`). The preview's warnings land in the
    returned status; `doc.undo()` restores every original value exactly.
    """
    return transform_document(TensorDtypePass(names_or_filter, dtype), doc)


@register("tensor_dtype", "convert initializers and tensor/list attributes to another dtype")
class TensorDtypePass(EditPass):
    """The selected tensors of the main graph converted to `dtype` (see `convert_tensors`);
    on a document, one command that undo reverts to the very same tensor objects."""

    operation = "convert_tensors"

    def __init__(
        self,
        names_or_filter: Selection,
        dtype: ir.DataType | str | int,
        *,
        status: TransformStatus | None = None,
    ) -> None:
        super().__init__(status=status)
        self.selection = names_or_filter
        self.to = data_type(dtype)

    def plan(self, model: ir.Model) -> tuple[str, list[e.Edit], ChangeEvent]:
        to, status, graph = self.to, self.status, model.graph
        nodes = _nodes_by_name(graph)
        preview = _preview(model, self.selection, to)
        edits: list[e.Edit] = []
        changed_nodes: set[str] = set()
        touched_initializers = False
        for item in preview.items:
            ref = item.tensor
            for warning in item.warnings:
                status.warn(f"{ref.name}: {warning}")
            if ref.dtype == to:
                continue
            converted, _ = convert_array(_current_array(graph, nodes, ref), to)
            if ref.kind == "initializer":
                edits.extend(_initializer_edits(graph, ref.name, converted, to))
                touched_initializers = True
                users = graph.initializers[ref.name].uses()
                changed_nodes.update(user.name or "" for user, _ in users)
            else:
                edits.extend(_attribute_edits(nodes, ref, converted, to))
                changed_nodes.add(ref.node or "")
            status.count("tensors_converted")
        description = f"convert {status.counts['tensors_converted']} tensor(s) to {to.name}"
        event = ChangeEvent(
            description, changed=frozenset(changed_nodes), initializers=touched_initializers
        )
        return description, edits, event


def replace_initializer_value(
    doc: ModelDocument, name: str, array: np.ndarray, description: str | None = None
) -> None:
    """Give initializer `name` a new value (any dtype) as one undoable document edit."""
    value = doc.graph.initializers.get(name)
    if value is None:
        raise TransformError(f"no initializer named {name!r}")
    to = ir.DataType.from_numpy(array.dtype)
    text = description or f"replace value of {name}"
    users = frozenset(user.name or "" for user, _ in value.uses())
    doc.apply_edits(
        text,
        _initializer_edits(doc.graph, name, array, to),
        ChangeEvent(text, changed=users, initializers=True),
    )


def _initializer_edits(
    graph: ir.Graph, name: str, array: np.ndarray, to: ir.DataType
) -> list[e.Edit]:
    value = graph.initializers[name]
    tensor = ir.tensor(array, dtype=to, name=name)
    edits: list[e.Edit] = [
        e.SetField(value, "const_value", tensor),
        e.SetField(value, "type", ir.TensorType(to)),
    ]
    if value.shape is None or tuple(value.shape) != tuple(array.shape):
        edits.append(e.SetField(value, "shape", ir.Shape(array.shape)))
    return edits


def _attribute_edits(
    nodes: Mapping[str, ir.Node], ref: TensorRef, converted: np.ndarray, to: ir.DataType
) -> list[e.Edit]:
    node = nodes[ref.node or ""]
    name = ref.attribute or ""
    attr = node.attributes[name]
    if attr.type == ir.AttributeType.TENSOR:
        tensor = ir.tensor(converted, dtype=to, name=attr.as_tensor().name)
        return [e.SetAttr(node, name, ir.AttrTensor(name, tensor))]
    if node.op_type == "Constant" and name in _CONSTANT_VALUE_ATTRS:
        tensor = ir.tensor(converted, dtype=to)
        value = ir.AttrTensor("value", tensor)
        return [e.SetAttr(node, name, None), e.SetAttr(node, "value", value)]
    values = converted.tolist()
    if attr.type == ir.AttributeType.FLOATS:
        return [e.SetAttr(node, name, ir.AttrFloat32s(name, [float(v) for v in values]))]
    if attr.type == ir.AttributeType.INTS:
        return [e.SetAttr(node, name, ir.AttrInt64s(name, [int(v) for v in values]))]
    if attr.type == ir.AttributeType.FLOAT:
        return [e.SetAttr(node, name, ir.AttrFloat32(name, float(values)))]
    return [e.SetAttr(node, name, ir.AttrInt64(name, int(values)))]
