"""Primitive reversible edits of an onnx_ir graph (public: for `ModelDocument.apply_edits`).

Every user-level command of the document is a sequence of these primitives. Each primitive
captures what it needs to restore the previous state when it is applied, so `revert` after
`apply` leaves the graph exactly as it was (node order, attribute order, input slots).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import MutableSequence, Sequence
from typing import Any

import onnx_ir as ir

from nsdl_jupyter.document._errors import GraphEditError


class Edit(ABC):
    """One reversible change. `apply` then `revert` is the identity."""

    @abstractmethod
    def apply(self) -> None: ...

    @abstractmethod
    def revert(self) -> None: ...


class SetAttr(Edit):
    """Set (or with `attr=None` remove) one attribute, keeping the attribute order on revert."""

    def __init__(self, node: ir.Node, name: str, attr: ir.Attr | None) -> None:
        self.node, self.name, self.attr = node, name, attr
        self._before: list[tuple[str, ir.Attr]] = []

    def apply(self) -> None:
        attributes = self.node.attributes
        self._before = list(attributes.items())
        if self.attr is None:
            attributes.pop(self.name, None)
        else:
            attributes[self.name] = self.attr

    def revert(self) -> None:
        attributes = self.node.attributes
        attributes.clear()
        attributes.update(self._before)


class SetInput(Edit):
    """Point input slot `index` of `node` at `value` (None = empty), growing the slots if needed."""

    def __init__(self, node: ir.Node, index: int, value: ir.Value | None) -> None:
        self.node, self.index, self.value = node, index, value
        self._old_count = 0
        self._old_value: ir.Value | None = None

    def apply(self) -> None:
        self._old_count = len(self.node.inputs)
        if self.index >= self._old_count:
            self.node.resize_inputs(self.index + 1)
        self._old_value = self.node.inputs[self.index]
        self.node.replace_input_with(self.index, self.value)

    def revert(self) -> None:
        self.node.replace_input_with(self.index, self._old_value)
        if len(self.node.inputs) != self._old_count:
            self.node.resize_inputs(self._old_count)


class DetachInputs(Edit):
    """Clear every input of a node being removed, so its producers lose the use."""

    def __init__(self, node: ir.Node) -> None:
        self._edits = [SetInput(node, i, None) for i in range(len(node.inputs))]

    def apply(self) -> None:
        for edit in self._edits:
            edit.apply()

    def revert(self) -> None:
        for edit in reversed(self._edits):
            edit.revert()


class TrimInputs(Edit):
    """Drop trailing empty input slots (a disconnected last optional input)."""

    def __init__(self, node: ir.Node, count: int) -> None:
        self.node, self.count = node, count
        self._old_count = 0

    def apply(self) -> None:
        self._old_count = len(self.node.inputs)
        self.node.resize_inputs(self.count)

    def revert(self) -> None:
        self.node.resize_inputs(self._old_count)


class ResizeOutputs(Edit):
    """Grow or shrink a node's outputs (Split, TopK-like variadic outputs); grown outputs get
    `names`. Outputs dropped must have no users; revert re-attaches the same value objects."""

    def __init__(self, node: ir.Node, count: int, names: Sequence[str] = ()) -> None:
        self.node, self.count, self.names = node, count, tuple(names)
        self._old: tuple[ir.Value, ...] = ()

    def apply(self) -> None:
        self._old = tuple(self.node.outputs)
        self.node.resize_outputs(self.count)
        for value, name in zip(self.node.outputs[len(self._old) :], self.names, strict=False):
            value.name = name

    def revert(self) -> None:
        if self.count > len(self._old):
            self.node.resize_outputs(len(self._old))
            return
        # onnx_ir's resize_outputs detaches dropped values for good; undo must bring the same
        # objects back (their names and types), so restore the producer links it cleared.
        self.node._outputs = self._old
        for index, value in enumerate(self._old):
            value._producer, value._index = self.node, index


class InsertNode(Edit):
    """Insert `node` into `graph` after `after` (None = at the front)."""

    def __init__(self, graph: ir.Graph, node: ir.Node, after: ir.Node | None) -> None:
        self.graph, self.node, self.after = graph, node, after

    def apply(self) -> None:
        if self.after is not None:
            self.graph.insert_after(self.after, self.node)
        elif len(self.graph):
            self.graph.insert_before(self.graph.node(0), self.node)
        else:
            self.graph.append(self.node)

    def revert(self) -> None:
        self.graph.remove(self.node)


class RemoveNode(Edit):
    """Remove a node whose outputs have no users left (callers disconnect them first)."""

    def __init__(self, graph: ir.Graph, node: ir.Node) -> None:
        self.graph, self.node = graph, node
        self._inputs: tuple[ir.Value | None, ...] = ()
        self._after: ir.Node | None = None

    def apply(self) -> None:
        self._after = _previous_node(self.graph, self.node)
        self._inputs = tuple(self.node.inputs)
        # Graph.remove detaches the node from its inputs' use lists; remember them for revert.
        self.graph.remove(self.node, safe=True)

    def revert(self) -> None:
        InsertNode(self.graph, self.node, self._after).apply()
        for index, value in enumerate(self._inputs):
            if self.node.inputs[index] is not value:
                self.node.replace_input_with(index, value)


def _previous_node(graph: ir.Graph, node: ir.Node) -> ir.Node | None:
    previous = None
    for candidate in graph:
        if candidate is node:
            return previous
        previous = candidate
    raise GraphEditError(f"node {node.name!r} is not in graph {graph.name!r}")


class SetField(Edit):
    """Set one attribute of a Python object (node/value name, value type, shape, ...)."""

    def __init__(self, target: object, field: str, value: Any) -> None:
        self.target, self.field, self.value = target, field, value
        self._old: Any = None

    def apply(self) -> None:
        self._old = getattr(self.target, self.field)
        setattr(self.target, self.field, self.value)

    def revert(self) -> None:
        setattr(self.target, self.field, self._old)


class ListInsert(Edit):
    """Insert into (or with `remove=True` remove from) a list such as graph.inputs/outputs."""

    def __init__(self, items: MutableSequence[Any], index: int, item: Any, *, remove: bool = False):
        self.items, self.index, self.item, self.remove = items, index, item, remove

    # pop, not del: onnx_ir's graph input/output lists clear a value's graph link only in pop
    # (del left `is_graph_output()` true after undoing add_graph_output).
    def apply(self) -> None:
        if self.remove:
            self.items.pop(self.index)
        else:
            self.items.insert(self.index, self.item)

    def revert(self) -> None:
        if self.remove:
            self.items.insert(self.index, self.item)
        else:
            self.items.pop(self.index)


class RegisterInitializer(Edit):
    """Add (or with `remove=True` remove) an initializer of the graph, keeping its position."""

    def __init__(self, graph: ir.Graph, value: ir.Value, *, remove: bool = False) -> None:
        self.graph, self.value, self.remove = graph, value, remove
        self._order: list[str] = []

    def apply(self) -> None:
        initializers = self.graph.initializers
        self._order = list(initializers)
        if self.remove:
            assert self.value.name is not None
            initializers.pop(self.value.name)
        else:
            self.graph.register_initializer(self.value)

    def revert(self) -> None:
        initializers = self.graph.initializers
        values = {name: initializers[name] for name in initializers}
        if self.remove:
            assert self.value.name is not None
            values[self.value.name] = self.value
        initializers.clear()
        for name in self._order:
            initializers.add(values[name])


class RenameValue(Edit):
    """Rename a tensor; an initializer keeps its place in the initializer list."""

    def __init__(self, graph: ir.Graph, value: ir.Value, new_name: str) -> None:
        self.graph, self.value, self.new_name = graph, value, new_name
        self._old_name = value.name or ""

    def apply(self) -> None:
        self._rename(self._old_name, self.new_name)

    def revert(self) -> None:
        self._rename(self.new_name, self._old_name)

    def _rename(self, old: str, new: str) -> None:
        initializers = self.graph.initializers
        order = list(initializers) if self.value.is_initializer() else None
        self.value.name = new
        if order is not None and list(initializers) != order:
            # onnx_ir re-inserts a renamed initializer at the end; put it back in place.
            values = dict(initializers)
            initializers.clear()
            for name in order:
                initializers.add(values[new if name == old else name])


class SetMapping(Edit):
    """Set (or with `value=None` delete) one key of a dict such as metadata_props."""

    def __init__(self, mapping: dict[Any, Any], key: Any, value: Any) -> None:
        self.mapping, self.key, self.value = mapping, key, value
        self._had = False
        self._old: Any = None

    def apply(self) -> None:
        self._had = self.key in self.mapping
        self._old = self.mapping.get(self.key)
        if self.value is None:
            self.mapping.pop(self.key, None)
        else:
            self.mapping[self.key] = self.value

    def revert(self) -> None:
        if self._had:
            self.mapping[self.key] = self._old
        else:
            self.mapping.pop(self.key, None)
