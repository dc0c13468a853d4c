"""State of the ParameterEditor: what to show for a selection, and the edits it sends.

A selection of one node gives its name, op type, domain and attributes (set values first,
schema defaults after); several nodes give only their common attributes, edited in one undo
step; an empty selection gives model information. Every edit goes through the document and
comes back as an error message (shown inline) or None; a refused edit changes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import onnx_ir as ir

from nsdl_jupyter.document import DocumentError, ModelDocument
from nsdl_jupyter.ops import format_literal

AT = ir.AttributeType
InputKind = Literal["int", "float", "text", "literal", "readonly"]

# Tensors bigger than this are not written into the text box (the browser would get the
# whole tensor); they are edited in the tensor editor, page by page.
INLINE_ELEMENTS = 64
_LISTS = frozenset({AT.INTS, AT.FLOATS, AT.STRINGS})
_GRID_TYPES = _LISTS | {AT.TENSOR}
_NO_TEXT = frozenset(
    {AT.GRAPH, AT.GRAPHS, AT.TYPE_PROTO, AT.TYPE_PROTOS, AT.SPARSE_TENSOR, AT.SPARSE_TENSORS}
)
_MIXED = object()


@dataclass(frozen=True)
class AttributeRow:
    """One attribute line of the editor.

    `kind` picks the input: "int"/"float" number boxes, "text" (STRING, verbatim),
    "literal" (lists and tensors as literal text), "readonly" (graphs, types, and tensors
    too big to show inline: edited with the tensor editor or from Python).
    """

    name: str
    type: ir.AttributeType
    kind: InputKind
    text: str
    value: Any
    is_set: bool
    required: bool
    mixed: bool
    grid: bool
    description: str

    @property
    def type_name(self) -> str:
        return self.type.name.lower()


@dataclass(frozen=True)
class NodeForm:
    """The editor for one node (or the common part of several, `names` longer than one)."""

    names: tuple[str, ...]
    op_type: str
    domain: str
    set_rows: tuple[AttributeRow, ...]
    default_rows: tuple[AttributeRow, ...]
    inputs: tuple[str, ...] = ()
    outputs: tuple[str, ...] = ()
    has_schema: bool = True

    @property
    def multiple(self) -> bool:
        return len(self.names) > 1

    def row(self, name: str) -> AttributeRow | None:
        return next((r for r in (*self.set_rows, *self.default_rows) if r.name == name), None)


@dataclass(frozen=True)
class ModelInfo:
    """What the editor shows when nothing is selected."""

    path: str | None
    ir_version: int
    opset_imports: tuple[tuple[str, int], ...]
    producer: str
    graph_name: str
    nodes: int
    initializers: int
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    metadata: tuple[tuple[str, str], ...]
    doc_string: str


def describe_selection(doc: ModelDocument, names: Sequence[str]) -> NodeForm | ModelInfo:
    """The form for `names` (unknown names are ignored; none left gives the model info)."""
    present = [name for name in dict.fromkeys(names) if name in doc.nodes]
    if not present:
        return model_info(doc)
    if len(present) == 1:
        return _single_form(doc, present[0])
    return _common_form(doc, present)


def model_info(doc: ModelDocument) -> ModelInfo:
    model, graph = doc.model, doc.graph
    producer = " ".join(p for p in (model.producer_name, model.producer_version) if p)
    return ModelInfo(
        path=str(doc.path) if doc.path else None,
        ir_version=int(model.ir_version),
        opset_imports=tuple(
            sorted((d or "ai.onnx", int(v)) for d, v in graph.opset_imports.items())
        ),
        producer=producer,
        graph_name=graph.name or "",
        nodes=len(graph),
        initializers=len(graph.initializers),
        inputs=tuple(v.name or "" for v in graph.inputs),
        outputs=tuple(v.name or "" for v in graph.outputs),
        metadata=tuple(sorted(model.metadata_props.items())),
        doc_string=model.doc_string or "",
    )


def _single_form(doc: ModelDocument, name: str) -> NodeForm:
    node = doc.nodes[name]
    listing = doc.attributes_of(node)
    schema = doc.schema(node)
    infos = schema.attributes if schema is not None else {}
    set_rows = []
    for attr_name, value in listing.set_values.items():
        info = infos.get(attr_name)
        attr_type = info.type if info is not None else node.attributes[attr_name].type
        set_rows.append(
            make_row(
                attr_name,
                attr_type,
                value,
                is_set=True,
                required=attr_name in listing.required,
                description=info.description if info is not None else "",
            )
        )
    default_rows = []
    for attr_name, info in infos.items():
        if attr_name in listing.set_values:
            continue
        default_rows.append(
            make_row(
                attr_name,
                info.type,
                listing.defaults.get(attr_name),
                is_set=False,
                required=info.required,
                description=info.description,
            )
        )
    # required-but-missing first among the defaults: the node is invalid until they are set
    default_rows.sort(key=lambda r: (not r.required, r.name))
    return NodeForm(
        names=(name,),
        op_type=node.op_type,
        domain=node.domain or "ai.onnx",
        set_rows=tuple(sorted(set_rows, key=lambda r: r.name)),
        default_rows=tuple(default_rows),
        inputs=tuple(v.name or "" if v is not None else "" for v in node.inputs),
        outputs=tuple(v.name or "" for v in node.outputs),
        has_schema=schema is not None,
    )


def _common_form(doc: ModelDocument, names: list[str]) -> NodeForm:
    """Attributes every selected node has, with the same type; values shown when equal."""
    per_node: list[tuple[dict[str, Any], dict[str, tuple[ir.AttributeType, Any, bool, str]]]] = []
    for name in names:
        node = doc.nodes[name]
        listing = doc.attributes_of(node)
        schema = doc.schema(node)
        infos = schema.attributes if schema is not None else {}
        available: dict[str, tuple[ir.AttributeType, Any, bool, str]] = {}
        for attr_name, info in infos.items():
            value = listing.set_values.get(attr_name, listing.defaults.get(attr_name))
            available[attr_name] = (info.type, value, info.required, info.description)
        for attr_name, value in listing.set_values.items():
            if attr_name not in available:
                available[attr_name] = (node.attributes[attr_name].type, value, False, "")
        per_node.append((listing.set_values, available))
    common = set(per_node[0][1])
    for _, available in per_node[1:]:
        common &= set(available)
    set_rows: list[AttributeRow] = []
    default_rows: list[AttributeRow] = []
    for attr_name in sorted(common):
        types = {available[attr_name][0] for _, available in per_node}
        if len(types) != 1:
            continue
        attr_type = types.pop()
        values = [available[attr_name][1] for _, available in per_node]
        first = values[0]
        value = first if all(_same(first, v) for v in values[1:]) else _MIXED
        is_set = any(attr_name in set_values for set_values, _ in per_node)
        required = any(available[attr_name][2] for _, available in per_node)
        row = make_row(
            attr_name,
            attr_type,
            value,
            is_set=is_set,
            required=required,
            description=per_node[0][1][attr_name][3],
        )
        (set_rows if is_set else default_rows).append(row)
    ops = sorted({doc.nodes[n].op_type for n in names})
    domains = sorted({doc.nodes[n].domain or "ai.onnx" for n in names})
    return NodeForm(
        names=tuple(names),
        op_type=ops[0] if len(ops) == 1 else ", ".join(ops),
        domain=domains[0] if len(domains) == 1 else ", ".join(domains),
        set_rows=tuple(set_rows),
        default_rows=tuple(default_rows),
    )


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (
            isinstance(a, np.ndarray)
            and isinstance(b, np.ndarray)
            and a.dtype == b.dtype
            and a.shape == b.shape
            and bool(np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))
        )
    try:
        return bool(a == b) and type(a) is type(b)
    except (TypeError, ValueError):
        return a is b


def make_row(
    name: str,
    attr_type: ir.AttributeType,
    value: Any,
    *,
    is_set: bool,
    required: bool,
    description: str = "",
) -> AttributeRow:
    """One row: which input it needs and the text that input starts with."""
    mixed = value is _MIXED
    grid = attr_type in _GRID_TYPES and not mixed
    if mixed:
        kind: InputKind = "readonly" if attr_type in _NO_TEXT else "literal"
        return AttributeRow(
            name, attr_type, kind, "", None, is_set, required, True, False, description
        )
    if value is None:
        text = ""
    elif attr_type == AT.STRING and isinstance(value, str):
        text = value
    else:
        text = _text_of(value)
    if attr_type in _NO_TEXT:
        kind = "readonly"
    elif attr_type in (AT.INT, AT.FLOAT) and value is None:
        kind = "literal"  # a required number not set yet: an empty box, not a 0
    elif attr_type == AT.INT:
        kind = "int"
    elif attr_type == AT.FLOAT:
        kind = "float"
    elif attr_type == AT.STRING:
        kind = "text"
    elif _too_big(value):
        kind = "readonly"
        text = _summary(value)
    else:
        kind = "literal"
    if isinstance(value, ir.Graph | ir.TypeAndShape) or attr_type in _NO_TEXT:
        grid = False
    return AttributeRow(
        name, attr_type, kind, text, value, is_set, required, False, grid, description
    )


def _text_of(value: Any) -> str:
    try:
        return format_literal(value)
    except TypeError:
        return repr(value)


def _too_big(value: Any) -> bool:
    if isinstance(value, np.ndarray):
        return bool(value.size > INLINE_ELEMENTS)
    if isinstance(value, list):
        if value and isinstance(value[0], np.ndarray):
            return sum(int(v.size) for v in value) > INLINE_ELEMENTS
        return len(value) > 4 * INLINE_ELEMENTS
    return False


def _summary(value: Any) -> str:
    if isinstance(value, np.ndarray):
        return f"<{value.dtype} tensor {list(value.shape)}: {value.size} values, see the grid>"
    return f"<{len(value)} values, see the grid>"


# ------------------------------------------------------------------------------- edits
def apply_attribute(doc: ModelDocument, names: Sequence[str], attr: str, value: Any) -> str | None:
    """Set `attr` on the named nodes (one undo step); the error message, or None."""
    try:
        if len(names) == 1:
            doc.set_attribute(names[0], attr, value)
        else:
            doc.set_attributes(list(names), attr, value)
    except DocumentError as error:
        return str(error)
    return None


def reset_attribute(doc: ModelDocument, names: Sequence[str], attr: str) -> str | None:
    """Restore the schema default on every named node, as one undo step."""
    try:
        with doc.batch(
            f"reset {attr} on {len(names)} nodes" if len(names) > 1 else f"reset {attr}"
        ):
            for name in names:
                doc.reset_attribute(name, attr)
    except DocumentError as error:
        return str(error)
    return None


def rename(doc: ModelDocument, old: str, new: str) -> str | None:
    try:
        doc.rename_node(old, new.strip())
    except DocumentError as error:
        return str(error)
    return None


def follow_event(
    selected: Sequence[str],
    renamed: Sequence[tuple[str, str]],
    removed: frozenset[str],
    present: Mapping[str, Any],
) -> list[str]:
    """The selection after an edit: renamed nodes keep their place, removed ones leave."""
    mapping = dict(renamed)
    result = []
    for old in selected:
        name = mapping.get(old, old)
        if name not in removed and name in present:
            result.append(name)
    return result


def path_label(path: Path | None) -> str:
    return str(path) if path is not None else "(not saved yet)"
