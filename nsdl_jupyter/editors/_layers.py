"""State of the LayerExplorer: the table of layers, filters, grouping and paging.

Rows are built once per structural edit (a 20,000-node model takes a few tens of ms) and
patched for renames and attribute changes; only the visible page becomes widget options.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import numpy as np
import onnx_ir as ir

from nsdl_jupyter.document import NO_CONSTRAINT, PRECISIONS, ChangeEvent, ModelDocument
from nsdl_jupyter.editors._errors import EditorError
from nsdl_jupyter.editors._settings import get_setting, set_setting
from nsdl_jupyter.editors._sorting import POSITION, SortOrder, check_sort
from nsdl_jupyter.graph import scope_of
from nsdl_jupyter.ops import LiteralSyntaxError, attribute_to_python, parse_literal

GroupBy = Literal["none", "type", "scope"]
Comparison = Literal["=", "!=", "<", "<=", ">", ">=", "contains"]
COMPARISONS: tuple[Comparison, ...] = ("=", "!=", "<", "<=", ">", ">=", "contains")
PAGE_SIZE = 200
SHOW_CONSTANTS_SETTING = "layer_explorer.show_constants"
_ONNX = ("", "ai.onnx")
LAYER_SORTS = (POSITION, "name", "op type", "count")  # count: nodes of the row's op type
_ORDER: dict[str, Callable[[Any, Any], bool]] = {
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


@dataclass(frozen=True)
class LayerRow:
    name: str
    op_type: str
    domain: str
    is_constant: bool
    position: int

    @property
    def type_key(self) -> str:
        return self.op_type if self.domain in _ONNX else f"{self.domain}::{self.op_type}"


def layer_row(node: ir.Node, position: int) -> LayerRow:
    return LayerRow(
        name=node.name or "",
        op_type=node.op_type,
        domain=node.domain or "",
        is_constant=node.op_type == "Constant" and node.domain in _ONNX,
        position=position,
    )


def scope_key(node: ir.Node) -> str:
    """``/encoder/layer.3`` (the GraphView's grouping), ``/`` for top-level nodes."""
    scope = scope_of(node)
    return "/" + "/".join(scope) if scope else "/"


def layer_rows(doc: ModelDocument) -> list[LayerRow]:
    return [layer_row(node, i) for i, node in enumerate(doc.graph)]


# ------------------------------------------------------------------ filters
@dataclass(frozen=True)
class AttributeCondition:
    """``group = 2``, ``strides contains 2``, ``alpha < 0.5``: on set values and defaults."""

    attribute: str
    op: Comparison
    value: str

    def __post_init__(self) -> None:
        if self.op not in COMPARISONS:
            raise EditorError(f"comparison {self.op!r}: use one of {', '.join(COMPARISONS)}")
        if not self.attribute.strip():
            raise EditorError("give the attribute name to filter on, e.g. group")

    @property
    def wanted(self) -> Any:
        try:
            return parse_literal(self.value)
        except LiteralSyntaxError:
            return self.value.strip()

    def matches(self, actual: Any) -> bool:
        wanted = self.wanted
        actual = _plain(actual)
        if self.op == "contains":
            if isinstance(actual, str):
                return str(wanted) in actual
            if isinstance(actual, list):
                flat = list(_flatten(actual))
                return wanted in flat or (isinstance(wanted, list) and _sublist(wanted, flat))
            return False
        if self.op in ("=", "!="):
            equal = _equal(actual, wanted)
            return equal if self.op == "=" else not equal
        compare = _ORDER[self.op]
        if _is_number(actual) and _is_number(wanted):
            return bool(compare(actual, wanted))
        return False

    def describe(self) -> str:
        return f"{self.attribute} {self.op} {self.value}"


def _plain(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _flatten(values: Iterable[Any]) -> Iterable[Any]:
    for value in values:
        if isinstance(value, list):
            yield from _flatten(value)
        else:
            yield value


def _sublist(needle: list[Any], hay: list[Any]) -> bool:
    n = len(needle)
    return any(hay[i : i + n] == needle for i in range(len(hay) - n + 1))


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _equal(actual: Any, wanted: Any) -> bool:
    if _is_number(actual) and _is_number(wanted):
        return bool(abs(actual - wanted) <= 1e-6 * max(1.0, abs(wanted)))
    if isinstance(actual, list) and not isinstance(wanted, list):
        return actual == [wanted]
    return bool(actual == wanted)


@dataclass(frozen=True)
class LayerFilter:
    """What the table shows. `active_count` is the number on the filter badge."""

    text: str = ""
    op_types: frozenset[str] = frozenset()
    conditions: tuple[AttributeCondition, ...] = ()
    show_constants: bool = False
    precisions: frozenset[str] = frozenset()  # TensorRT layer precisions; NO_CONSTRAINT: none

    @property
    def active_count(self) -> int:
        return (
            int(bool(self.text.strip()))
            + int(bool(self.op_types))
            + int(bool(self.precisions))
            + len(self.conditions)
        )


def attribute_value(doc: ModelDocument, node: ir.Node, name: str) -> tuple[bool, Any]:
    """(found, value): the set value, else the schema default."""
    attr = node.attributes.get(name)
    if attr is not None:
        return True, attribute_to_python(attr)
    schema = doc.schema(node)
    info = schema.attributes.get(name) if schema is not None else None
    if info is None or info.default is None:
        return False, None
    return True, attribute_to_python(info.default)


def apply_filter(doc: ModelDocument, rows: Sequence[LayerRow], flt: LayerFilter) -> list[LayerRow]:
    needle = flt.text.strip().lower()
    result = []
    nodes = doc.nodes
    precisions = doc.tensorrt.layer_precisions if flt.precisions else {}
    for row in rows:
        if row.is_constant and not flt.show_constants:
            continue
        if needle and needle not in row.name.lower():
            continue
        if flt.op_types and row.type_key not in flt.op_types:
            continue
        if flt.precisions and precisions.get(row.name, NO_CONSTRAINT) not in flt.precisions:
            continue
        if flt.conditions:
            node = nodes.get(row.name)
            if node is None:
                continue
            if not all(_condition_holds(doc, node, c) for c in flt.conditions):
                continue
        result.append(row)
    return result


def _condition_holds(doc: ModelDocument, node: ir.Node, condition: AttributeCondition) -> bool:
    found, value = attribute_value(doc, node, condition.attribute.strip())
    return found and condition.matches(value)


# ------------------------------------------------------------------ listing
@dataclass(frozen=True)
class ListEntry:
    """One line of the list: a group header (`node` None) or a layer."""

    label: str
    node: str | None = None
    group: str | None = None
    precision: str | None = None  # the TRT-Prec column: the node's TensorRT layer precision


@dataclass
class LayerExplorerState:
    """Rows, filter, grouping, expanded groups and the current page."""

    doc: ModelDocument
    page_size: int = PAGE_SIZE
    group_by: GroupBy = "none"
    filter: LayerFilter = field(default_factory=LayerFilter)
    expanded: set[str] = field(default_factory=set)
    page: int = 0
    order: SortOrder = field(default_factory=lambda: SortOrder(POSITION))

    def __post_init__(self) -> None:
        self.rows = layer_rows(self.doc)
        self.filter = replace(
            self.filter, show_constants=bool(get_setting(SHOW_CONSTANTS_SETTING, False))
        )
        self._matching: list[LayerRow] | None = None
        self._flat: list[LayerRow | tuple[str, int, bool]] | None = None
        self._scopes: dict[str, str] = {}

    def _invalidate(self) -> None:
        self._matching = None
        self._flat = None

    # -------------------------------------------------------------- changes
    def follow(self, event: ChangeEvent) -> bool:
        """Update rows for a document event; True when the list must be redrawn."""
        if event.tensorrt and not (event.added or event.removed or event.renamed):
            pass  # only the TRT-Prec column and the precision filter change
        elif event.source == "load" or event.added or event.removed:
            self.rows = layer_rows(self.doc)
            self._scopes.clear()
        elif event.renamed or event.changed:
            renamed = dict(event.renamed)
            nodes = self.doc.nodes
            updated = []
            for row in self.rows:
                name = renamed.get(row.name, row.name)
                node = nodes.get(name) if name != row.name or name in event.changed else None
                updated.append(layer_row(node, row.position) if node is not None else row)
            self.rows = updated
            for old, new in event.renamed:
                self._scopes.pop(old, None)
                self._scopes.pop(new, None)
        else:
            return False
        self._invalidate()
        return True

    def set_filter(self, flt: LayerFilter) -> None:
        self.filter = flt
        self._invalidate()
        self.page = 0

    def set_show_constants(self, show: bool, remember: bool = True) -> None:
        """Show or hide Constant nodes; `remember` keeps it as the default in user settings."""
        self.set_filter(replace(self.filter, show_constants=show))
        if remember:
            set_setting(SHOW_CONSTANTS_SETTING, bool(show))

    def set_group_by(self, group_by: GroupBy) -> None:
        if group_by not in ("none", "type", "scope"):
            raise EditorError(f"group by {group_by!r}: use 'none', 'type' or 'scope'")
        self.group_by = group_by
        self.expanded.clear()
        self._flat = None
        self.page = 0

    def set_order(self, order: SortOrder) -> None:
        self.order = check_sort(order, LAYER_SORTS)
        self._flat = None
        self.page = 0

    def toggle(self, group: str) -> None:
        self.expanded ^= {group}
        self._flat = None

    # -------------------------------------------------------------- reading
    @property
    def matching(self) -> list[LayerRow]:
        if self._matching is None:
            self._matching = apply_filter(self.doc, self.rows, self.filter)
        return self._matching

    def op_types(self) -> list[str]:
        """Every op type of the model (for the type filter), constants included."""
        return sorted({row.type_key for row in self.rows})

    def precision_choices(self) -> list[str]:
        """The precision filter's choices: no constraint, then TensorRT's layer precisions."""
        return [NO_CONSTRAINT, *PRECISIONS]

    def attribute_names(self) -> list[str]:
        names: set[str] = set()
        for node in self.doc.graph:
            names.update(node.attributes)
        return sorted(names)

    def scope(self, row: LayerRow) -> str:
        found = self._scopes.get(row.name)
        if found is None:
            node = self.doc.nodes.get(row.name)
            found = self._scopes[row.name] = scope_key(node) if node is not None else "/"
        return found

    def _flat_list(self) -> list[LayerRow | tuple[str, int, bool]]:
        """Rows and group headers (key, size, open) in display order; labels come later."""
        if self._flat is not None:
            return self._flat
        rows = self._sorted(self.matching)
        if self.group_by == "none":
            self._flat = list(rows)
            return self._flat
        groups: dict[str, list[LayerRow]] = {}
        for row in rows:
            key = row.type_key if self.group_by == "type" else self.scope(row)
            groups.setdefault(key, []).append(row)
        open_all = bool(self.filter.text.strip() or self.filter.conditions)
        flat: list[LayerRow | tuple[str, int, bool]] = []
        order = self.order

        def group_value(key: str) -> str | int:
            return len(groups[key]) if order.key == "count" else key  # else by title

        for key in order.apply(groups, group_value, lambda key: (key.lower(),)):
            members = groups[key]
            is_open = open_all or key in self.expanded
            flat.append((key, len(members), is_open))
            if is_open:
                flat.extend(members)
        self._flat = flat
        return flat

    def _sorted(self, rows: list[LayerRow]) -> list[LayerRow]:
        """Rows in the chosen order; "count" puts the rows of the most used op types first."""
        order = self.order
        if order == SortOrder(POSITION):
            return rows
        counts: dict[str, int] = {}
        for row in rows:
            counts[row.type_key] = counts.get(row.type_key, 0) + 1

        def value(row: LayerRow) -> str | int:
            if order.key == "count":
                return counts[row.type_key]
            if order.key == "op type":
                return row.type_key
            return row.position if order.key == POSITION else row.name

        return order.apply(rows, value, lambda row: (row.type_key.lower(), row.position))

    def entries(self) -> list[ListEntry]:
        """The current page of the list."""
        flat = self._flat_list()
        pages = max(1, -(-len(flat) // self.page_size))
        self.page = min(max(0, self.page), pages - 1)
        start = self.page * self.page_size
        indent = "    " if self.group_by != "none" else ""
        entries = []
        precisions = self.doc.tensorrt.layer_precisions
        for item in flat[start : start + self.page_size]:
            if isinstance(item, LayerRow):
                precision = precisions.get(item.name)
                label = indent + _row_label(item) + (f"  ·  TRT {precision}" if precision else "")
                entries.append(ListEntry(label, node=item.name, precision=precision))
            else:
                key, size, is_open = item
                marker = "▾" if is_open else "▸"
                entries.append(ListEntry(f"{marker} {key} ({size})", group=key))
        return entries

    @property
    def pages(self) -> int:
        return max(1, -(-len(self._flat_list()) // self.page_size))

    def summary(self) -> str:
        shown = len(self.matching)
        total = len(self.rows)
        hidden = "" if self.filter.show_constants else ", constants hidden"
        return f"{shown:,} of {total:,} layers{hidden}"


def _row_label(row: LayerRow) -> str:
    return f"{row.name}  ·  {row.type_key}"
