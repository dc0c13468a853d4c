"""State of the LayerPalette: the operators the model can use, grouped and searchable, and
adding one as a new node with a generated unique name."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import onnx_ir as ir

from nsdl_jupyter.document import DocumentError, ModelDocument, UnknownNodeError
from nsdl_jupyter.editors._errors import EditorError
from nsdl_jupyter.editors._sorting import SortOrder, check_sort
from nsdl_jupyter.ops import (
    OpSchemaInfo,
    UnknownOperatorError,
    get_schema,
    known_domains,
    latest_opset,
    list_operators,
)

GroupBy = Literal["category", "domain", "name"]
GROUPINGS: tuple[GroupBy, ...] = ("category", "domain", "name")
FUNCTIONS = "local functions"  # the category of the model's local functions
PALETTE_SORTS = ("name", "category", "domain", "count")  # count: nodes of the model using it
BY_NAME = SortOrder("name")


@dataclass(frozen=True)
class PaletteEntry:
    op_type: str
    domain: str  # "" for the default ONNX domain
    category: str
    since_version: int
    summary: str
    function: bool = False  # a local function of the model, not a schema

    @property
    def key(self) -> str:
        """``Conv`` or ``com.microsoft::Attention``: unique across the palette."""
        return f"{self.domain}::{self.op_type}" if self.domain else self.op_type

    @property
    def domain_label(self) -> str:
        return self.domain or "ai.onnx"


def _entry(schema: OpSchemaInfo) -> PaletteEntry:
    summary = schema.doc.strip().split(". ")[0][:160] if schema.doc else ""
    return PaletteEntry(schema.name, schema.domain, schema.category, schema.since_version, summary)


def _function_entry(function: ir.Function) -> PaletteEntry:
    inputs = ", ".join(v.name or "" for v in function.inputs)
    outputs = ", ".join(v.name or "" for v in function.outputs)
    summary = f"local function ({inputs}) → ({outputs})"
    return PaletteEntry(function.name, function.domain, FUNCTIONS, 0, summary, function=True)


class PaletteIndex:
    """Every operator of the imported opsets (deprecated ones left out), and the model's
    local functions."""

    def __init__(
        self, opset_imports: Mapping[str, int], functions: Iterable[ir.Function] = ()
    ) -> None:
        self.entries = [_entry(s) for s in list_operators(dict(opset_imports))]
        self.entries += [_function_entry(f) for f in functions]
        self._by_key = {e.key: e for e in self.entries}

    def __len__(self) -> int:
        return len(self.entries)

    def get(self, key: str) -> PaletteEntry | None:
        return self._by_key.get(key)

    def filtered(self, text: str = "") -> list[PaletteEntry]:
        """Entries whose name, domain or category contains `text` (case-insensitive)."""
        needle = text.strip().lower()
        if not needle:
            return list(self.entries)
        return [
            e
            for e in self.entries
            if needle in e.op_type.lower()
            or needle in e.key.lower()
            or needle in e.category.lower()
        ]

    def groups(
        self,
        by: GroupBy = "category",
        text: str = "",
        order: SortOrder = BY_NAME,
        counts: Mapping[str, int] | None = None,
    ) -> list[tuple[str, list[PaletteEntry]]]:
        """(group title, entries in `order`) for the entries matching `text`; groups follow
        the same order (by title, or by their total count). `counts`: nodes per entry key."""
        if by not in GROUPINGS:
            raise EditorError(f"group by {by!r}: use one of {', '.join(GROUPINGS)}")
        check_sort(order, PALETTE_SORTS)
        used = counts or {}
        grouped: dict[str, list[PaletteEntry]] = {}
        for entry in self.filtered(text):
            if by == "category":
                title = entry.category
            elif by == "domain":
                title = entry.domain_label
            else:
                title = entry.op_type[:1].upper()
            grouped.setdefault(title, []).append(entry)

        def value(entry: PaletteEntry) -> str | int:
            if order.key == "count":
                return used.get(entry.key, 0)
            if order.key == "category":
                return entry.category
            return entry.domain_label if order.key == "domain" else entry.op_type

        def by_name(entry: PaletteEntry) -> tuple[str, str]:
            return (entry.op_type.lower(), entry.domain)

        def group_value(item: tuple[str, list[PaletteEntry]]) -> str | int:
            if order.key == "count":
                return sum(used.get(e.key, 0) for e in item[1])
            return item[0]

        ordered = [(title, order.apply(items, value, by_name)) for title, items in grouped.items()]
        return order.apply(ordered, group_value, lambda item: (item[0].lower(),))

    def search(self, text: str, limit: int = 20) -> list[PaletteEntry]:
        """Quick-add ranking (`rank_keys`) over the entries."""
        return [self._by_key[key] for key in rank_keys(list(self._by_key), text, limit)]


def rank_keys(keys: Sequence[str], text: str, limit: int = 20) -> list[str]:
    """Quick-add ranking of palette keys: exact name, then name prefix, then word start
    (``norm`` -> LayerNormalization), then substring; ties: the default domain first, then
    shorter names, then A→Z. The canvas's quick add ranks the same way in the browser
    (js/src/graph_view/suggest.ts; js/test/quick_add_ranking.json holds the cases both pass)."""
    needle = text.strip().lower()
    if not needle:
        return []
    scored = []
    for key in keys:
        domain, _, op_type = key.rpartition("::")
        name = op_type.lower()
        lowered = key.lower()
        if needle in (name, lowered):
            rank = 0
        elif name.startswith(needle) or lowered.startswith(needle):
            rank = 1
        elif _word_start(op_type, needle):
            rank = 2
        elif needle in lowered:
            rank = 3
        else:
            continue
        scored.append((rank, domain != "", len(name), name, key))
    scored.sort(key=lambda item: item[:4])
    return [item[4] for item in scored[:limit]]


def entry_for_text(
    index: PaletteIndex, text: str, opset_imports: Mapping[str, int]
) -> tuple[PaletteEntry | None, str | None]:
    """Quick add's reading of typed text: the exact operator, else the best match, else why not
    (an exact name from a newer opset or another domain is explained, never swapped for a
    look-alike)."""
    entry = index.get(text.strip())
    if entry is not None:
        return entry, None
    reason = explain_missing(text, opset_imports)
    found = [] if reason else index.search(text)
    if not found:
        return None, reason or f"no operator matches {text.strip()!r}"
    return found[0], None


def explain_missing(text: str, opset_imports: Mapping[str, int]) -> str | None:
    """Why `text`, the exact name of an operator, is not in these opsets, and what to do
    (None when no known opset or domain has an operator of that name)."""
    needle = text.strip().lower()
    imported = {("" if d == "ai.onnx" else d): v for d, v in opset_imports.items()}
    for domain in known_domains():
        newest = latest_opset(domain)
        for schema in list_operators({domain: newest}):
            if needle not in {schema.name.lower(), _entry(schema).key.lower()}:
                continue
            label = domain or "ai.onnx"
            if domain not in imported:
                return (
                    f"{schema.name} belongs to domain {label}, which this model does not "
                    f"import: import it first (doc.import_domain({label!r}, {newest}))"
                )
            first = next(
                v for v in range(imported[domain] + 1, newest + 1) if _has(schema, domain, v)
            )
            return (
                f"{schema.name} needs opset {first} of {label}; this model imports opset "
                f"{imported[domain]}: convert it first (nj.convert_opset(model, output, {first}))"
            )
    return None


def _has(schema: OpSchemaInfo, domain: str, version: int) -> bool:
    try:
        get_schema(schema.name, domain, version)
    except UnknownOperatorError:
        return False
    return True


def _word_start(op_type: str, needle: str) -> bool:
    """``norm`` matches LayerNormalization at its capital letter."""
    return any(
        op_type[i:].lower().startswith(needle)
        for i, char in enumerate(op_type)
        if i and char.isupper()
    )


def operator_counts(doc: ModelDocument) -> dict[str, int]:
    """Nodes per palette key (``Conv``, ``com.microsoft::Attention``) in the main graph."""
    counts: dict[str, int] = {}
    for node in doc.graph:
        domain = "" if node.domain in ("", "ai.onnx") else node.domain
        key = f"{domain}::{node.op_type}" if domain else node.op_type
        counts[key] = counts.get(key, 0) + 1
    return counts


def add_operator(
    doc: ModelDocument,
    entry: PaletteEntry,
    *,
    link_from: Sequence[str] = (),
) -> tuple[str | None, str | None]:
    """Add a node for `entry` with a generated unique name: (node name, None) or (None, error).

    With `link_from` (the selected node), the new node's first input reads that node's first
    output and it is placed right after it in the graph.
    """
    try:
        inputs: list[str] = []
        after = None
        if link_from:
            source = doc.nodes.get(link_from[0])
            if source is None:
                raise UnknownNodeError(f"no node named {link_from[0]!r} to link from")
            function = doc.functions.get((entry.domain, entry.op_type, ""))
            takes_inputs = (
                len(function.inputs)
                if function is not None
                else get_schema(
                    entry.op_type, entry.domain, doc.opset_imports.get(entry.domain)
                ).max_input
            )
            if takes_inputs and source.outputs and source.outputs[0].name:
                inputs = [source.outputs[0].name]
            after = source.name
        node = doc.add_node(entry.op_type, entry.domain, inputs=inputs, after=after)
    except (DocumentError, UnknownOperatorError) as error:
        return None, str(error)
    return node.name, None
