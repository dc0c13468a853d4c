"""DocumentBase: the state and the lookups that `ModelDocument` and its edit families share.

`ModelDocument` (`_document.py`) is one class assembled from edit families, each a module:
`_edit_nodes` (attributes, nodes, connections), `_edit_tensors` (graph inputs and outputs,
tensors, initializers) and `_edit_functions` (new bodies, local functions, domains). Each
family builds on this base, so every attribute and lookup it uses is declared once, where
mypy sees it.
"""

from __future__ import annotations

import difflib
import re
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any, TypeVar

import onnx_ir as ir

from nsdl_jupyter._errors import text_argument
from nsdl_jupyter.document import edits as e
from nsdl_jupyter.document._errors import (
    DocumentError,
    GraphEditError,
    InitializerError,
    UnknownNodeError,
)
from nsdl_jupyter.document._events import ChangeEvent
from nsdl_jupyter.document._saving import ExternalLocation
from nsdl_jupyter.document._tensorrt import TensorRtProperties
from nsdl_jupyter.ops import UnknownOperatorError, get_schema


class DocumentBase(ABC):
    """The model, its name indexes and what the edit families read; `ModelDocument` sets
    them up and applies the edits."""

    _built: ir.Model | None  # None until a file opened without its model builds it
    _path: Path | None
    _node_index: dict[str, ir.Node] | None
    _value_index: dict[str, ir.Value] | None
    _external_plan: dict[str, ExternalLocation]
    tensorrt: TensorRtProperties

    @property
    def _model(self) -> ir.Model:
        model = self._built
        return model if model is not None else self._build()

    @abstractmethod
    def _build(self) -> ir.Model:
        """Build the model of a file opened without it (see `ModelDocument._build`)."""

    # ----------------------------------------------------------------- reading
    @property
    def model(self) -> ir.Model:
        return self._model

    @property
    def graph(self) -> ir.Graph:
        return self._model.graph

    @property
    def nodes(self) -> Mapping[str, ir.Node]:
        """Nodes of the main graph by name (read-only view; edit through the methods)."""
        if self._node_index is None:
            self._node_index = {node.name or "": node for node in self.graph}
        return MappingProxyType(self._node_index)

    @property
    def tensors(self) -> Mapping[str, ir.Value]:
        """Every named tensor of the main graph: inputs, initializers and node outputs."""
        if self._value_index is None:
            index: dict[str, ir.Value] = {}
            for value in self.graph.inputs:
                index[value.name or ""] = value
            for name, value in self.graph.initializers.items():
                index[name] = value
            for node in self.graph:
                for value in node.outputs:
                    if value.name:
                        index[value.name] = value
            self._value_index = index
        return MappingProxyType(self._value_index)

    @property
    def functions(self) -> Mapping[tuple[str, str, str], ir.Function]:
        """Local functions by (domain, name, overload) (read-only; edit with open_function)."""
        return MappingProxyType(self.model.functions)

    def node(self, ref: ir.Node | str) -> ir.Node:
        """The node for a name of the main graph (or the node itself, from any graph)."""
        if isinstance(ref, ir.Node):
            if ref.graph is None:
                raise GraphEditError(f"node {ref.name!r} is not part of this model any more")
            return ref
        return _lookup(self.nodes, text_argument(ref, "node name"), "node", UnknownNodeError)

    def schema(self, node: ir.Node | str) -> Any:
        """The operator schema (`nsdl_jupyter.ops.OpSchemaInfo`) of a node, None if unknown."""
        target = self.node(node)
        try:
            # Opened models may use operator versions removed since; still show their schema.
            return get_schema(
                target.op_type, target.domain, self._opset_for(target), allow_deprecated=True
            )
        except UnknownOperatorError:
            return None

    def _opset_for(self, node: ir.Node) -> int:
        if node.version is not None:
            return node.version
        domain = "" if node.domain == "ai.onnx" else node.domain
        imports = self.graph.opset_imports
        if domain not in imports:
            raise GraphEditError(f"the model does not import domain {domain!r} of {node.name}")
        return imports[domain]

    def _tensor(self, ref: str | ir.Value) -> ir.Value:
        if isinstance(ref, ir.Value):
            return ref
        return _lookup(self.tensors, ref, "tensor", GraphEditError)

    def _initializer(self, name: str) -> ir.Value:
        return _lookup(self.graph.initializers, name, "initializer", InitializerError)

    @abstractmethod
    def apply_edits(self, description: str, edits: Sequence[e.Edit], event: ChangeEvent) -> None:
        """Apply primitive edits as one undoable command (see `ModelDocument.apply_edits`)."""


_T = TypeVar("_T")
_OP_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")  # custom operators and local functions


def _positions(items: Sequence[ir.Value], value: ir.Value) -> list[int]:
    return [i for i, item in enumerate(items) if item is value]


def _lookup(items: Mapping[str, _T], name: str, kind: str, error: type[DocumentError]) -> _T:
    """`items[name]`, or an error that suggests close names."""
    found = items.get(name)
    if found is None:
        raise error(f"no {kind} named {name!r} in the main graph{_close(name, items)}")
    return found


def _close(name: str, names: Iterable[str]) -> str:
    matches = difflib.get_close_matches(name, list(names), n=3)
    return f" (did you mean {', '.join(map(repr, matches))}?)" if matches else ""
