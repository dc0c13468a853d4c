"""Bodies of If/Loop/Scan nodes open for editing, each as a document of its own.

`ModelDocument.open_subgraph(node, attribute)` returns a `BodyDocument`: the same editing API
on a copy of the body, with its own undo. The original body stays attached to the node until
`confirm()`, which swaps in the edited copy as one undo step of the parent; `discard()` drops
the copy. While a body is open its parent refuses edits, undo and saves, so the two can never
disagree. Bodies nest: a Loop inside an If branch opens from the branch's document.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import onnx_ir as ir

from nsdl_jupyter.document import edits as e
from nsdl_jupyter.document._document import ModelDocument, all_graphs
from nsdl_jupyter.document._errors import DocumentError, GraphEditError
from nsdl_jupyter.document._events import ChangeEvent

if TYPE_CHECKING:
    from pathlib import Path


class BodyDocument(ModelDocument):
    """A graph attribute's body open for editing; `confirm()` or `discard()` closes it."""

    def __init__(self, parent: ModelDocument, node: ir.Node, attribute: str) -> None:
        attr = node.attributes.get(attribute)
        if attr is None or attr.type != ir.AttributeType.GRAPH:
            graphs = [a.name for a in node.attributes.values() if a.type == ir.AttributeType.GRAPH]
            raise GraphEditError(
                f"{node.op_type} {node.name} has no graph attribute {attribute!r}; "
                f"its bodies are: {', '.join(graphs) or 'none'}"
            )
        original = attr.as_graph()
        body = original.clone(allow_outer_scope_values=True)
        # A body imports no opsets of its own: edits inside follow the model's.
        body.opset_imports.update(parent.opset_imports)
        super().__init__(ir.Model(body, ir_version=parent.model.ir_version))
        self.parent = parent
        self.owner = node
        self.attribute = attribute
        self._closed = False

    @property
    def outer_tensors(self) -> Mapping[str, ir.Value]:
        """Tensors of the enclosing scopes a body node may read (outer-scope references)."""
        outer = dict(self.parent.tensors)
        if isinstance(self.parent, BodyDocument):
            outer = {**self.parent.outer_tensors, **outer}
        return outer

    def _tensor(self, ref: str | ir.Value) -> ir.Value:
        if isinstance(ref, str) and ref not in self.tensors and ref in self.outer_tensors:
            return self.outer_tensors[ref]
        return super()._tensor(ref)

    def _check_editable(self) -> None:
        if self._closed:
            raise DocumentError(
                f"the body {self.owner.name}.{self.attribute} was closed (confirmed or "
                "discarded): open it again with open_subgraph"
            )
        super()._check_editable()

    def confirm(self) -> None:
        """Write the edited body back into the parent as one undo step, and close this one."""
        self._check_editable()
        self._close()
        if not self.can_undo:
            return  # nothing was edited: the parent keeps its body and its history
        body = self.graph  # keeps the model's opsets: a body's own are never saved (GraphProto)
        description = f"edit {self.owner.name}.{self.attribute}"
        self.parent.apply_edits(
            description,
            [SwapBody(self.owner, self.attribute, body)],
            ChangeEvent(description, changed=frozenset({self.owner.name or ""}), edges=True),
        )

    def discard(self) -> None:
        """Close the body without changing the parent."""
        self._check_editable()
        self._close()
        for node, index, _value in outer_links(self.graph):
            node.replace_input_with(index, None)  # the copy no longer counts as a user

    def _close(self) -> None:
        self._closed = True
        self.parent._body_closed(self)

    def save(self, *args: Any, **kwargs: Any) -> Path:
        raise DocumentError("a body is saved with its model: confirm() it, then save the parent")


class SwapBody(e.Edit):
    """Replace the body in graph attribute `attribute` of `node` by `body`.

    A body's nodes are users of the outer-scope values they read; a body that leaves the node
    must stop counting as their user (or the parent would see uses that no longer exist, and
    refuse to remove a node nothing reads), and must count again when an undo brings it back.
    """

    def __init__(self, node: ir.Node, attribute: str, body: ir.Graph) -> None:
        self.node, self.attribute, self.body = node, attribute, body
        self._old = node.attributes[attribute]
        self._links: dict[int, list[tuple[ir.Node, int, ir.Value]]] = {}  # by id of the graph

    def apply(self) -> None:
        self._swap(self._old.as_graph(), self.body)
        self.node.attributes[self.attribute] = ir.Attr(
            self.attribute, ir.AttributeType.GRAPH, self.body
        )

    def revert(self) -> None:
        self._swap(self.body, self._old.as_graph())
        self.node.attributes[self.attribute] = self._old

    def _swap(self, leaving: ir.Graph, coming: ir.Graph) -> None:
        self._links[id(leaving)] = outer_links(leaving)
        for node, index, _value in self._links[id(leaving)]:
            node.replace_input_with(index, None)
        for node, index, value in self._links.get(id(coming), ()):
            node.replace_input_with(index, value)


def outer_links(graph: ir.Graph) -> list[tuple[ir.Node, int, ir.Value]]:
    """(node, input index, value) for every input of a node of `graph` (at any depth) that
    reads a value defined outside it."""
    inside: set[ir.Value] = set()
    for owner in all_graphs(graph):
        inside.update(owner.inputs)
        inside.update(owner.initializers.values())
    nodes = list(ir.traversal.RecursiveGraphIterator(graph))
    for node in nodes:
        inside.update(node.outputs)
    return [
        (node, index, value)
        for node in nodes
        for index, value in enumerate(node.inputs)
        if value is not None and value not in inside
    ]
