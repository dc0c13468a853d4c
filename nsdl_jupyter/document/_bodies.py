"""Bodies open for editing, each as a document of its own: If/Loop/Scan bodies and local
functions.

`ModelDocument.open_subgraph(node, attribute)` returns a `BodyDocument` and
`ModelDocument.open_function(name, domain)` a `FunctionDocument`: the same editing API on a
copy of the body, with its own undo. The original stays in the model until `confirm()`,
which swaps the edited copy in as one undo step of the parent; `discard()` drops the copy.
While a body is open its parent refuses edits, undo and saves, so the two never disagree.
Bodies nest: a Loop inside an If branch opens from the branch's document.
"""

from __future__ import annotations

from collections import ChainMap
from collections.abc import Mapping, MutableMapping, Sequence
from typing import TYPE_CHECKING, Any, cast

import onnx
import onnx_ir as ir

from nsdl_jupyter._walk import graphs_in, nodes_in
from nsdl_jupyter.document import edits as e
from nsdl_jupyter.document._check import (
    CheckScope,
    check_snapshot,
    function_snapshot,
    inferred_types,
)
from nsdl_jupyter.document._document import ModelDocument, convert_attribute
from nsdl_jupyter.document._errors import DocumentError, GraphEditError, InitializerError
from nsdl_jupyter.document._events import ChangeEvent

if TYPE_CHECKING:
    from pathlib import Path

FunctionKey = tuple[str, str, str]  # (domain, name, overload), as onnx_ir keys model.functions


class OpenBody(ModelDocument):
    """What both kinds of open body share: the parent lock, confirm, discard, no save."""

    def __init__(self, parent: ModelDocument, body: ir.Graph, kind: str, label: str) -> None:
        super().__init__(ir.Model(body, ir_version=parent.model.ir_version))
        self.parent = parent
        self.label = label  # "branch.then_branch", "local::MyBlock"
        self.title = f"the {kind} {label}"
        self._closed = False

    @property
    def root(self) -> ModelDocument:
        """The document of the whole model (a body may sit in a body)."""
        parent = self.parent
        return parent.root if isinstance(parent, OpenBody) else parent

    @property
    def functions(self) -> Mapping[FunctionKey, ir.Function]:
        """The model's local functions, which the body's nodes may call (read-only)."""
        return self.root.functions

    def _function_key(self, name: str, domain: str) -> FunctionKey:
        raise DocumentError(
            f"local functions belong to the model: confirm() or discard() {self.title}, then "
            f"open or delete {domain}::{name} from the model's document"
        )

    def _check_editable(self) -> None:
        if self._closed:
            raise DocumentError(
                f"{self.title} was closed (confirmed or discarded): open it again to edit it"
            )
        super()._check_editable()

    def confirm(self) -> None:
        """Write the edited body back into the parent as one undo step, and close this one."""
        self._check_editable()
        self._close()
        if self.can_undo:  # otherwise nothing was edited: the parent keeps its history
            description = f"edit {self.label}"
            self.parent.apply_edits(description, [self._write_back()], self._event(description))

    def discard(self) -> None:
        """Close the body without changing the parent."""
        self._check_editable()
        self._close()
        for node, index, _value in outer_links(self.graph):
            node.replace_input_with(index, None)  # the copy no longer counts as a user

    def _close(self) -> None:
        self._closed = True
        self.parent._body_closed(self)

    def _write_back(self) -> e.Edit:
        raise NotImplementedError

    def _event(self, description: str) -> ChangeEvent:
        return ChangeEvent(description)

    def save(self, *args: Any, **kwargs: Any) -> Path:
        raise DocumentError("a body is saved with its model: confirm() it, then save the parent")


class BodyDocument(OpenBody):
    """A graph attribute's body (If branch, Loop/Scan body) open for editing."""

    def __init__(self, parent: ModelDocument, node: ir.Node, attribute: str) -> None:
        attr = node.attributes.get(attribute)
        if attr is None or attr.type != ir.AttributeType.GRAPH:
            graphs = [a.name for a in node.attributes.values() if a.type == ir.AttributeType.GRAPH]
            raise GraphEditError(
                f"{node.op_type} {node.name} has no graph attribute {attribute!r}; "
                f"its bodies are: {', '.join(graphs) or 'none'}"
            )
        body = attr.as_graph().clone(allow_outer_scope_values=True)
        # A body imports no opsets of its own (GraphProto has none): edits follow the model's.
        body.opset_imports.update(parent.opset_imports)
        super().__init__(parent, body, "body", f"{node.name}.{attribute}")
        self.owner = node
        self.attribute = attribute

    @property
    def outer_tensors(self) -> Mapping[str, ir.Value]:
        """Tensors of the enclosing scopes a body node may read (outer-scope references)."""
        if isinstance(self.parent, BodyDocument):
            # the nearer scope wins; ChainMap only reads them, so nothing is copied
            nearer = cast("MutableMapping[str, ir.Value]", self.parent.tensors)
            farther = cast("MutableMapping[str, ir.Value]", self.parent.outer_tensors)
            return ChainMap(nearer, farther)
        return self.parent.tensors

    def _tensor(self, ref: str | ir.Value) -> ir.Value:
        if isinstance(ref, str) and ref not in self.tensors:
            value = self.outer_tensors.get(ref)
            if value is not None:
                return value
        return super()._tensor(ref)

    def check_snapshot(self) -> onnx.ModelProto:
        """The body as a model whose inputs include the outer-scope tensors it reads, typed as
        in the enclosing scopes, and with the model's local functions."""
        outer = self.outer_tensors
        names = {value.name or "" for _node, _index, value in outer_links(self.graph)}
        reads = {name: outer[name] for name in names if name in outer}
        return check_snapshot(
            self.model,
            CheckScope(
                outer=reads,
                functions=self.functions,
                outer_types=lambda: inferred_types(self.parent.check_snapshot()),
            ),
        )

    def _write_back(self) -> e.Edit:
        return SwapBody(self.owner, self.attribute, self.graph)

    def _event(self, description: str) -> ChangeEvent:
        return ChangeEvent(description, changed=frozenset({self.owner.name or ""}), edges=True)


class FunctionDocument(OpenBody):
    """A local function's body and attribute parameters open for editing."""

    def __init__(self, parent: ModelDocument, key: FunctionKey) -> None:
        function = parent.model.functions[key]
        body = function.graph.clone()
        super().__init__(parent, body, "function", f"{key[0]}::{key[1]}")
        self.key = key
        self._doc_string = function.doc_string
        self._parameters: dict[str, ir.Attr] = dict(function.attributes)

    @property
    def parameters(self) -> Mapping[str, Any]:
        """Attribute parameters: name -> default value (None: no default, each instance sets
        one)."""
        return {
            name: None if attr.type == ir.AttributeType.UNDEFINED else attr.value
            for name, attr in self._parameters.items()
        }

    def set_parameter(self, name: str, default: Any = None) -> None:
        """Add or change attribute parameter `name` (one undo step); `default=None` leaves it
        without a default, so every instance must give a value."""
        if not name.isidentifier():
            raise GraphEditError(f"parameter name {name!r} is not an identifier")
        self.apply_edits(
            f"parameter {name}",
            [e.SetMapping(self._parameters, name, parameter(name, default))],
            ChangeEvent(f"parameter {name}"),
        )

    def remove_parameter(self, name: str) -> None:
        if name not in self._parameters:
            raise GraphEditError(
                f"{self.title} has no parameter {name!r}: {list(self._parameters)}"
            )
        self.apply_edits(
            f"remove parameter {name}",
            [e.SetMapping(self._parameters, name, None)],
            ChangeEvent(f"remove parameter {name}"),
        )

    def create_initializer(
        self,
        name: str,
        value: object = None,
        *,
        dtype: ir.DataType | str | int | None = None,
        shape: Sequence[int] | None = None,
        generate: str | None = None,
        seed: int = 0,
    ) -> ir.Value:
        """Refused: an ONNX function has no initializers (FunctionProto cannot hold one, so
        saving would drop it and leave the body reading a tensor that does not exist)."""
        raise InitializerError(
            f"{self.title} cannot hold initializer {name!r}: ONNX functions have no "
            f"initializers. Add a Constant node instead: add_node('Constant', "
            f"name={name + '_const'!r}, attributes={{'value': ...}}), or make it an input "
            "of the function"
        )

    def check_snapshot(self) -> onnx.ModelProto:
        """The edited function, with the model's other functions, for `check_proto`."""
        model = self.parent.model
        return function_snapshot(self._function(), model.functions, model.ir_version)

    def _function(self) -> ir.Function:
        domain, name, overload = self.key
        function = ir.Function(
            domain, name, overload, graph=self.graph, attributes=list(self._parameters.values())
        )
        function.doc_string = self._doc_string
        return function

    def _write_back(self) -> e.Edit:
        return e.SetMapping(self.parent.model.functions, self.key, self._function())


def parameter(name: str, default: Any) -> ir.Attr:
    """A function's attribute parameter: its default, or an UNDEFINED attribute without one."""
    if default is None:
        return ir.Attr(name, ir.AttributeType.UNDEFINED, None)
    if isinstance(default, ir.Attr):
        return default
    return convert_attribute(name, default)


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
    for owner in graphs_in(graph):
        inside.update(owner.inputs)
        inside.update(owner.initializers.values())
    nodes = list(nodes_in(graph))
    for node in nodes:
        inside.update(node.outputs)
    return [
        (node, index, value)
        for node in nodes
        for index, value in enumerate(node.inputs)
        if value is not None and value not in inside
    ]
