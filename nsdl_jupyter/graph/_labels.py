"""What a node's box says: its caption (op type plus the last meaningful part of its name,
``Conv conv1``, ``MatMul query``, ``Softmax``) and its weights with their shapes
(``W⟨64x3x7x7⟩``), as Netron draws them. Computed once in Python; both renderers draw the text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

import onnx
import onnx_ir as ir

from nsdl_jupyter.graph._extract import PSEUDO, GraphTable, Item
from nsdl_jupyter.graph._shapes import shape_text
from nsdl_jupyter.graph._vocabulary import VOCABULARY

# exporter noise at the end of a name part: "_123", ".4", ":0"
_SUFFIX = re.compile(r"(?:[_.:]\d+)+$")
WEIGHT_OPEN, WEIGHT_CLOSE = "⟨", "⟩"
WEIGHT_ALIAS = "Identity"  # torch writes shared weights as Identity(initializer)


def _meaningful(part: str, op_type: str) -> str:
    """`part` without exporter noise; "" when nothing but noise or the op type is left."""
    head, _, tail = part.rpartition("_")
    if part == op_type or (head == op_type and tail.isdigit()):
        return ""  # most TorchScript names: "Add", "Add_12"
    if part.startswith(("node_", "aten", "onnx")) or "::" in part:
        return ""  # dynamo's node_add_413, TorchScript's onnx::Add_12, aten ops
    part = _SUFFIX.sub("", part).strip("_.")
    if not part or part.lower() == op_type.lower() or part.isdigit():
        return ""
    return part


def caption(item: Item, leaf_scope: bool) -> str:
    """The box's title: op type plus the last meaningful name part; the node's own name
    part first, else its scope when that is a leaf module (``query``, ``features.0.2``)."""
    scope = item.scope[-1] if leaf_scope and item.scope else ""
    return _caption(item.op, item.name.rsplit("/", 1)[-1], scope)


@lru_cache(maxsize=1 << 16)  # big graphs repeat their name parts ("Add_1" in every block)
def _caption(op: str, name_part: str, leaf_scope: str) -> str:
    op_type = op.rpartition("::")[2]
    part = _meaningful(name_part, op_type)
    if not part and leaf_scope:
        # module indices ("layer1.0") are meaningful here; a reused module's "relu_1" is not
        scope = re.sub(r"_\d+$", "", leaf_scope)
        part = "" if scope.lower() == op_type.lower() or scope.isdigit() else scope
    return f"{op} {part}" if part else op


def scopes_with_children(items: Iterable[Item]) -> set[tuple[str, ...]]:
    """Name scopes holding a deeper scope: every other scope is a leaf module."""
    scopes = {it.scope for it in items}
    return {s[:k] for s in scopes for k in range(1, len(s))}


@lru_cache(maxsize=4096)
def _input_names(op_type: str, domain: str, opset: int) -> tuple[str, ...]:
    """Schema names of the non-variadic inputs (``X W B`` of Conv); () when unknown."""
    try:
        schema = onnx.defs.get_schema(op_type, opset, domain)
    except Exception:  # unknown or custom op: the initializer's short name is used
        return ()
    variadic = onnx.defs.OpSchema.FormalParameterOption.Variadic
    names: list[str] = []
    for p in schema.inputs:
        if p.option == variadic:
            break
        names.append(p.name)
    return tuple(names)


def _short_tensor_name(name: str) -> str:
    tail = re.split(r"[/.:]", name.rsplit("::", 1)[-1])
    return next((p for p in reversed(tail) if p and not p.isdigit()), name)


def weight_text(name: str, shape: Iterable[object] | None) -> str:
    dims = shape_text(shape)
    return f"{name}{WEIGHT_OPEN}{'' if dims == 'scalar' else dims}{WEIGHT_CLOSE}"


def _weight_value(value: ir.Value) -> ir.Value | None:
    """The initializer behind an input: itself, or the one a weight alias reads."""
    producer = value.producer()
    if producer is None:
        return value if value.const_value is not None or value.is_initializer() else None
    if producer.op_type != WEIGHT_ALIAS or not producer.inputs:
        return None  # most inputs: one look at the producer's op type
    source = producer.inputs[0]
    return source if source is not None and source.is_initializer() else None


def weights(table: GraphTable, item: int, opsets: dict[str, int]) -> list[str]:
    """``W<64x3x7x7>`` for every input of `item` fed by an initializer (directly or through a
    weight alias), named by its schema input name, else by the initializer's short name."""
    node = table.items[item].node
    if node is None:
        return []
    lines: list[str] = []
    for slot, value in enumerate(node.inputs):
        source = _weight_value(value) if value is not None else None
        if source is None:
            continue
        names = _input_names(node.op_type, node.domain, opsets.get(node.domain, 21))
        tensor = source.const_value
        shape = source.shape or (tensor.shape if tensor is not None else None)
        name = names[slot] if slot < len(names) else _short_tensor_name(source.name or "")
        lines.append(weight_text(name, shape))
    return lines


def item_texts(
    table: GraphTable,
    items: Iterable[int],
    opsets: dict[str, int],
    inner: set[tuple[str, ...]],
) -> dict[int, tuple[str, tuple[str, ...]]]:
    """(caption, weight lines) of `items`; graph inputs/outputs have none. `inner`: the
    scopes holding deeper ones (`scopes_with_children`)."""
    out: dict[int, tuple[str, tuple[str, ...]]] = {}
    for i in items:
        it = table.items[i]
        if it.flags & PSEUDO or not it.alive:
            out[i] = ("", ())
            continue
        out[i] = (caption(it, it.scope not in inner), shown_weights(weights(table, i, opsets)))
    return out


def shown_weights(lines: list[str]) -> tuple[str, ...]:
    """The weight lines a box has room for: the last says how many more there are."""
    most = int(VOCABULARY["weights"]["max"])
    if len(lines) <= most:
        return tuple(lines)
    more = str(VOCABULARY["weights"]["more"]).format(n=len(lines) - most + 1)
    return (*lines[: most - 1], more)
