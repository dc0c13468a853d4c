"""ModelDocument: the one editable model that every widget, transform and profiler uses.

Every edit method validates its arguments first (raising before anything changes), then
builds a `Command` out of primitive edits, applies it through the `History` and emits one
`ChangeEvent`. Undo, redo, the dirty flag and view refreshes all come from that path.
"""

from __future__ import annotations

import difflib
import os
import re
import warnings
from collections import ChainMap
from collections.abc import Callable, Iterable, Iterator, Mapping, MutableMapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, TypeVar, cast

import numpy as np
import onnx
import onnx_ir as ir

from nsdl_jupyter._errors import ArgumentError, input_path, list_argument, text_argument
from nsdl_jupyter._gc import gc_paused
from nsdl_jupyter._output_guard import guard_output
from nsdl_jupyter._walk import graphs_in, nodes_in
from nsdl_jupyter.document import edits as e
from nsdl_jupyter.document._check import (
    Diagnostic,
    SavedWithErrorsWarning,
    check_proto,
    check_snapshot,
)
from nsdl_jupyter.document._companion import (
    CompanionWarning,
    FollowMoves,
    companion_path,
    companion_problem,
    read_companion,
    write_companion,
)
from nsdl_jupyter.document._data_files import DataFileBook, real_name
from nsdl_jupyter.document._data_types import as_data_type
from nsdl_jupyter.document._errors import (
    AttributeEditError,
    DocumentError,
    GraphEditError,
    InitializerError,
    ModelLoadError,
    ModelSaveError,
    UnknownNodeError,
)
from nsdl_jupyter.document._events import ChangeEvent, EventBus
from nsdl_jupyter.document._history import Command, History
from nsdl_jupyter.document._loading import load_model, resolve_inside
from nsdl_jupyter.document._names import check_node_name, check_tensor_name, unique_name
from nsdl_jupyter.document._saving import ExternalLocation, SaveRequest, save_model
from nsdl_jupyter.document._tensor_values import array_from_source, generate_array, to_tensor
from nsdl_jupyter.document._tensorrt import TensorRtProperties
from nsdl_jupyter.ops import (
    ONNX_DOMAINS,
    LiteralSyntaxError,
    UnknownOperatorError,
    attribute_to_python,
    get_schema,
    known_domains,
    parse_literal,
    to_attribute,
)

if TYPE_CHECKING:
    from nsdl_jupyter.document._bodies import BodyDocument, FunctionDocument, OpenBody


@dataclass(frozen=True)
class AttributeListing:
    """A node's attributes as an editor shows them: set values, then the schema defaults."""

    set_values: dict[str, Any]
    defaults: dict[str, Any]
    required: frozenset[str]


class ModelDocument:
    """An ONNX model open for editing, with undo/redo, change events and safe saving."""

    def __init__(self, model: ir.Model, path: Path | None = None) -> None:
        if not isinstance(model, ir.Model):
            raise ArgumentError(
                f"ModelDocument takes an onnx_ir.Model, not {type(model).__name__}: open a "
                "file with nsdl_jupyter.open_model(path)"
            )
        self._model = model
        self._path = path
        self._history = History()
        self._bus = EventBus()
        self._node_index: dict[str, ir.Node] | None = None
        self._value_index: dict[str, ir.Value] | None = None
        graphs = graphs_in(model.graph)
        self._generated_names = _name_unnamed_nodes(graphs)
        self._external_plan: dict[str, ExternalLocation] = {}
        self._data_files = DataFileBook()
        self._data_files.record_loaded(graphs)
        self.companion: dict[str, Any] = read_companion(path) if path else {}
        self._open_body: OpenBody | None = None
        self.tensorrt = TensorRtProperties(self)
        dropped = self.tensorrt.drop_unknown()
        if dropped:
            warnings.warn(
                f"ignoring TensorRT properties in the companion file that do not fit the model: "
                f"{'; '.join(dropped)}",
                CompanionWarning,
                stacklevel=3,
            )

    # ----------------------------------------------------------------- reading
    @property
    def model(self) -> ir.Model:
        return self._model

    @property
    def graph(self) -> ir.Graph:
        return self._model.graph

    @property
    def path(self) -> Path | None:
        return self._path

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
    def opset_imports(self) -> Mapping[str, int]:
        return MappingProxyType(self.graph.opset_imports)

    @property
    def dirty(self) -> bool:
        return self._history.dirty

    @property
    def can_undo(self) -> bool:
        return self._history.can_undo

    @property
    def can_redo(self) -> bool:
        return self._history.can_redo

    @property
    def undo_description(self) -> str | None:
        return self._history.undo_description

    @property
    def redo_description(self) -> str | None:
        return self._history.redo_description

    def subscribe(self, listener: Callable[[ChangeEvent], None]) -> Callable[[], None]:
        """Call `listener(event)` after every edit, undo, redo and save; returns unsubscribe."""
        return self._bus.subscribe(listener)

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

    def attributes_of(self, node: ir.Node | str) -> AttributeListing:
        """Set values first, then schema defaults of attributes that are not set."""
        target = self.node(node)
        schema = self.schema(target)
        set_values = {name: attribute_to_python(attr) for name, attr in target.attributes.items()}
        defaults: dict[str, Any] = {}
        required: set[str] = set()
        if schema is not None:
            for name, info in schema.attributes.items():
                if info.required:
                    required.add(name)
                elif name not in set_values and info.default is not None:
                    defaults[name] = attribute_to_python(info.default)
        return AttributeListing(set_values, defaults, frozenset(required))

    # ----------------------------------------------------------------- history
    def undo(self) -> bool:
        """Undo the last edit; False when there is nothing to undo."""
        self._check_editable()
        return self._emit(self._history.undo())

    def redo(self) -> bool:
        self._check_editable()
        return self._emit(self._history.redo())

    def _check_editable(self) -> None:
        """Refuse while a body of this model is open: its edits would be lost or disagree."""
        body = self._open_body
        if body is not None:
            raise DocumentError(
                f"{body.title} is open for editing: confirm() or discard() it first"
            )

    # ------------------------------------------------------------------ bodies
    def open_subgraph(self, node: ir.Node | str, attribute: str) -> BodyDocument:
        """Open the body in graph attribute `attribute` of `node` (an If branch, a Loop or
        Scan body) as a `BodyDocument` with the same editing API and its own undo; this
        document refuses edits until the body is confirmed or discarded."""
        from nsdl_jupyter.document._bodies import BodyDocument

        self._check_editable()
        body = BodyDocument(self, self.node(node), attribute)
        self._open_body = body
        return body

    # --------------------------------------------------------- local functions
    @property
    def functions(self) -> Mapping[tuple[str, str, str], ir.Function]:
        """Local functions by (domain, name, overload) (read-only; edit with open_function)."""
        return MappingProxyType(self.model.functions)

    def create_function(
        self,
        name: str,
        domain: str,
        inputs: Sequence[str],
        outputs: Sequence[str],
        *,
        attributes: Mapping[str, Any] | None = None,
        opset: int | None = None,
    ) -> None:
        """Add local function `domain::name` (one undo step; the model then imports `domain`).

        Its body starts valid: each output is an Identity of the first input, to replace in
        `open_function`. `attributes` maps parameter names to defaults (None: no default,
        each instance gives a value). `opset` is the ONNX opset of the body (the model's).
        """
        from nsdl_jupyter.document._bodies import parameter

        key = (text_argument(domain, "domain"), text_argument(name, "function name"), "")
        if domain in ONNX_DOMAINS:
            raise GraphEditError(
                f"function {name!r}: a local function cannot live in the standard ONNX domain "
                f"{domain or 'ai.onnx'!r} (its operators are ONNX's, and importing it again "
                "changes the ONNX opset): give it a custom domain, such as 'local'"
            )
        if not _OP_NAME.fullmatch(name) or not _DOMAIN_NAME.fullmatch(domain):
            raise GraphEditError(
                f"function {domain!r}::{name!r}: name and domain must be identifiers "
                "(the domain may contain '.')"
            )
        if key in self.model.functions:
            raise GraphEditError(f"the model already has a function {domain}::{name}")
        if not inputs or not outputs:
            raise GraphEditError("a function needs at least one input and one output")
        for tensor in [*inputs, *outputs]:
            check_tensor_name(tensor, {})
        if len({*inputs, *outputs}) != len(inputs) + len(outputs):
            raise GraphEditError("function input and output names must all differ")
        params = [parameter(k, v) for k, v in (attributes or {}).items()]
        first = ir.Value(name=inputs[0])
        body_inputs = [first, *(ir.Value(name=n) for n in inputs[1:])]
        nodes = [ir.Node("", "Identity", [first], name=f"{out}_placeholder") for out in outputs]
        for node, out in zip(nodes, outputs, strict=True):
            node.outputs[0].name = out
        body = ir.Graph(
            body_inputs,
            [n.outputs[0] for n in nodes],
            nodes=nodes,
            opset_imports={"": opset or self.graph.opset_imports.get("", 1)},
            name=name,
        )
        function = ir.Function(domain, name, "", graph=body, attributes=params)
        edits: list[e.Edit] = [e.SetMapping(self.model.functions, key, function)]
        if domain not in self.graph.opset_imports:
            edits.append(e.SetMapping(self.graph.opset_imports, domain, 1))
        self.apply_edits(
            f"new function {domain}::{name}", edits, ChangeEvent(f"new function {name}")
        )

    def delete_function(self, name: str, domain: str) -> None:
        """Remove local function `domain::name` (one undo step); its instances stay, as
        custom operators."""
        key = self._function_key(name, domain)
        description = f"delete function {domain}::{name}"
        self.apply_edits(
            description, [e.SetMapping(self.model.functions, key, None)], ChangeEvent(description)
        )

    def open_function(self, name: str, domain: str) -> FunctionDocument:
        """Open local function `domain::name` as a `FunctionDocument` (body and attribute
        parameters, own undo); `confirm()` writes it back as one undo step."""
        from nsdl_jupyter.document._bodies import FunctionDocument

        self._check_editable()
        body = FunctionDocument(self, self._function_key(name, domain))
        self._open_body = body
        return body

    def _function_key(self, name: str, domain: str) -> tuple[str, str, str]:
        key = (domain, name, "")
        if key not in self.model.functions:
            known = [f"{d}::{n}" for d, n, _ in self.model.functions]
            raise GraphEditError(f"no local function {domain}::{name}; the model has {known}")
        return key

    def create_subgraph(
        self, node: ir.Node | str, attribute: str, *, copy_of: str | None = None
    ) -> None:
        """Give graph attribute `attribute` of `node` a new body (one undo step): empty, or a
        copy of the node's body `copy_of`; its name is unique among the model's graphs."""
        target = self.node(node)
        schema = self.schema(target)
        info = schema.attributes.get(attribute) if schema is not None else None
        if schema is not None and (info is None or info.type != ir.AttributeType.GRAPH):
            raise AttributeEditError(f"{target.op_type} has no graph attribute {attribute!r}")
        if copy_of is None:
            body = ir.Graph([], [], nodes=[])
        else:
            source = target.attributes.get(copy_of)
            if source is None or source.type != ir.AttributeType.GRAPH:
                raise AttributeEditError(f"{target.name} has no body {copy_of!r} to copy")
            body = source.as_graph().clone(allow_outer_scope_values=True)
        taken = {g.name for g in graphs_in(self.graph) if g.name}
        body.name = unique_name(f"{target.name}_{attribute}", taken)
        description = f"new body {target.name}.{attribute}"
        self.apply_edits(
            description,
            [e.SetAttr(target, attribute, ir.Attr(attribute, ir.AttributeType.GRAPH, body))],
            ChangeEvent(description, changed=frozenset({target.name or ""}), edges=True),
        )

    def _body_closed(self, body: OpenBody) -> None:
        if self._open_body is body:
            self._open_body = None

    @contextmanager
    def batch(self, description: str) -> Iterator[None]:
        """Edits inside the block form one undo step and one event; any error undoes them all.
        Names created or renamed by earlier edits of the block are visible to later ones."""
        try:
            with self._history.batch(description) as merged:
                yield
        except BaseException:
            self._forget_indexes()  # the block's edits were reverted
            raise
        for event in merged:
            self._emit(event)

    def apply_edits(self, description: str, edits: Sequence[e.Edit], event: ChangeEvent) -> None:
        """Apply primitive edits (`nsdl_jupyter.document.edits`) as one undoable command.

        The extension point for transforms that build their own commands: validate before
        calling (a failing edit reverts those before it and re-raises), and describe what
        changed in `event` so views can update.
        """
        self._check_editable()
        if event.renamed or event.removed:
            removed = event.removed - event.added
            edits = [
                *edits,
                self.tensorrt.follow_edit(renamed=event.renamed, removed=removed),
                FollowMoves(self.companion, event.renamed, removed),
            ]
        command = Command(description, edits, event)
        emitted = self._history.push(command)
        self._forget_indexes(event)  # also inside a batch, where no event is emitted yet
        self._emit(emitted)

    def _emit(self, event: ChangeEvent | None) -> bool:
        if event is None:
            return False
        self._forget_indexes(event)
        self._bus.emit(event)
        return True

    def _forget_indexes(self, event: ChangeEvent | None = None) -> None:
        """Drop the name indexes an edit may have made stale (all of them without `event`)."""
        structural = event is None or (
            event.added or event.removed or event.renamed or event.edges or event.graph_io
        )
        if structural:
            self._node_index = None
            self._value_index = None
        elif event is not None and event.initializers:
            self._value_index = None

    # -------------------------------------------------------------- attributes
    def set_attribute(self, node: ir.Node | str, name: str, value: Any) -> None:
        """Set attribute `name`, checked against the schema. `value` may be literal text."""
        target = self.node(node)
        attr = self._make_attribute(target, name, value)
        self.apply_edits(
            f"set {target.name}.{name}",
            [e.SetAttr(target, name, attr)],
            ChangeEvent(f"set {target.name}.{name}", changed=frozenset({target.name or ""})),
        )

    def set_attributes(self, nodes: Iterable[ir.Node | str], name: str, value: Any) -> None:
        """Set the same attribute on several nodes as one undo step (multi-selection)."""
        targets = [self.node(node) for node in nodes]
        attrs = [self._make_attribute(target, name, value) for target in targets]
        names = frozenset(target.name or "" for target in targets)
        description = f"set {name} on {len(targets)} nodes"
        self.apply_edits(
            description,
            [e.SetAttr(target, name, attr) for target, attr in zip(targets, attrs, strict=True)],
            ChangeEvent(description, changed=names),
        )

    def reset_attribute(self, node: ir.Node | str, name: str) -> None:
        """Remove the set value so the schema default applies again."""
        target = self.node(node)
        schema = self.schema(target)
        info = schema.attributes.get(name) if schema is not None else None
        if info is not None and info.required:
            raise AttributeEditError(
                f"attribute {name!r} of {target.op_type} is required and has no default: "
                "set a value instead"
            )
        if name not in target.attributes:
            if schema is not None and info is None:
                raise AttributeEditError(_unknown_attribute(target, name, schema))
            return
        self.apply_edits(
            f"reset {target.name}.{name}",
            [e.SetAttr(target, name, None)],
            ChangeEvent(f"reset {target.name}.{name}", changed=frozenset({target.name or ""})),
        )

    def _make_attribute(self, node: ir.Node, name: str, value: Any) -> ir.Attr:
        schema = self.schema(node)
        if schema is not None:
            info = schema.attributes.get(name)
            if info is None:
                raise AttributeEditError(_unknown_attribute(node, name, schema))
            attr_type = info.type
        elif name in node.attributes:
            attr_type = node.attributes[name].type
        else:
            attr_type = _guess_attribute_type(value)
        return _convert_attribute(name, value, attr_type)

    # ------------------------------------------------------------------- nodes
    def import_domain(self, domain: str, version: int = 1) -> None:
        """Import operator domain `domain` at `version` (one undo step), so nodes of custom
        operators of that domain (TensorRT plugins, vendor ops) can be added."""
        domain = "" if text_argument(domain, "domain") == "ai.onnx" else domain
        if not _DOMAIN_NAME.fullmatch(domain):
            raise GraphEditError(
                f"domain {domain!r} is not a valid name: use letters, digits, '.', '_' and '-'"
            )
        if isinstance(version, bool) or not isinstance(version, int) or version < 1:
            raise GraphEditError(f"opset version must be an integer >= 1, got {version!r}")
        imported = self.graph.opset_imports.get(domain)
        if imported == version:
            return
        if imported is not None:
            raise GraphEditError(
                f"the model already imports {domain!r} at version {imported}: nodes of that "
                "domain follow it (convert_opset changes the ONNX opset)"
            )
        description = f"import domain {domain} v{version}"
        self.apply_edits(
            description,
            [e.SetMapping(self.graph.opset_imports, domain, version)],
            ChangeEvent(description),
        )

    def remove_domain(self, domain: str) -> None:
        """Stop importing operator domain `domain` (one undo step). Refused while a node or a
        local function uses it; the alias 'ai.onnx' beside the default domain "" always goes
        (the default import covers its nodes)."""
        imports = self.graph.opset_imports
        if domain not in imports:
            raise GraphEditError(
                f"the model does not import {domain!r}; it imports {dict(imports)}"
            )
        alias = domain == "ai.onnx" and "" in imports
        if not alias:
            if domain in ("", "ai.onnx"):
                raise GraphEditError(
                    "the default ONNX domain cannot be removed: a model needs an ONNX opset "
                    "(convert_opset changes its version)"
                )
            users = [n.name for n in nodes_in(self.graph) if n.domain == domain]
            users += [f"{d}::{n}" for d, n, _ in self.model.functions if d == domain]
            if users:
                raise GraphEditError(
                    f"domain {domain!r} is still used by {users[:5]}: remove them first"
                )
        description = f"remove domain {domain or 'ai.onnx'}"
        self.apply_edits(
            description, [e.SetMapping(imports, domain, None)], ChangeEvent(description)
        )

    def add_node(
        self,
        op_type: str,
        domain: str = "",
        *,
        name: str | None = None,
        inputs: Sequence[str | ir.Value | None] = (),
        attributes: Mapping[str, Any] | None = None,
        num_inputs: int | None = None,
        num_outputs: int | None = None,
        after: ir.Node | str | None = None,
    ) -> ir.Node:
        """Add a node; its outputs get names derived from the node name.

        Operators with a schema are checked against it. A custom operator (a domain with no
        known schemas, imported with `import_domain`) takes `num_inputs` input slots (default:
        as many as `inputs`), `num_outputs` outputs (default 1) and any attributes, typed from
        their values.
        """
        text_argument(op_type, "operator type")
        domain = "" if text_argument(domain, "domain") == "ai.onnx" else domain
        if domain not in self.graph.opset_imports:
            hint = (
                "" if domain in known_domains() else f": call doc.import_domain({domain!r}) first"
            )
            raise GraphEditError(
                f"the model does not import domain {domain or 'ai.onnx'!r}{hint}; "
                f"it imports {dict(self.graph.opset_imports)}"
            )
        inputs = list_argument(inputs, "inputs")
        node_name = check_node_name(name, self.nodes) if name is not None else None
        function = self.functions.get((domain, op_type, ""))
        if function is not None:
            return self._add_function_node(
                function,
                node_name=node_name,
                inputs=inputs,
                attributes=attributes,
                num_outputs=num_outputs,
                after=after,
            )
        if domain not in known_domains():
            return self._add_custom_node(
                op_type,
                domain,
                node_name=node_name,
                inputs=inputs,
                attributes=attributes,
                num_inputs=num_inputs,
                num_outputs=num_outputs,
                after=after,
            )
        try:
            schema = get_schema(op_type, domain, self.graph.opset_imports[domain])
        except UnknownOperatorError as error:
            raise GraphEditError(str(error)) from error
        node_name = node_name or unique_name(op_type, self.nodes)
        if num_outputs is None:
            num_outputs = max(schema.min_output, 1)
        if not schema.min_output <= num_outputs <= schema.max_output:
            raise GraphEditError(
                f"{op_type} has {schema.min_output}..{schema.max_output} outputs, not {num_outputs}"
            )
        if len(inputs) > schema.max_input:
            raise GraphEditError(f"{op_type} takes at most {schema.max_input} inputs")
        if num_inputs is not None:
            raise GraphEditError(
                f"{op_type} has a schema, so its inputs follow it: leave num_inputs out"
            )
        gaps = [i for i, src in enumerate(inputs) if src is None and not _may_be_empty(schema, i)]
        if gaps:
            raise GraphEditError(
                f"{op_type} cannot have input(s) {gaps} empty (only optional inputs may be): "
                "pass a tensor for each"
            )
        names = _output_names(schema, node_name, range(num_outputs), self.tensors)
        edits = self._node_edits(
            domain, op_type, node_name, inputs=inputs, output_names=names, after=after
        )
        node = edits[0].node  # type: ignore[attr-defined]
        for attr_name, value in (attributes or {}).items():
            attr = self._make_attribute_for_schema(schema, node, attr_name, value)
            edits.append(e.SetAttr(node, attr_name, attr))
        return self._insert(op_type, node, edits)

    def _add_custom_node(
        self,
        op_type: str,
        domain: str,
        *,
        node_name: str | None,
        inputs: Sequence[str | ir.Value | None],
        attributes: Mapping[str, Any] | None,
        num_inputs: int | None,
        num_outputs: int | None,
        after: ir.Node | str | None,
    ) -> ir.Node:
        if not _OP_NAME.fullmatch(op_type):
            raise GraphEditError(f"operator name {op_type!r} is not an identifier")
        slots = len(inputs) if num_inputs is None else num_inputs
        outputs = 1 if num_outputs is None else num_outputs
        if not 0 <= len(inputs) <= slots or outputs < 1:
            raise GraphEditError(
                f"num_inputs={slots} and num_outputs={outputs} do not fit {len(inputs)} inputs "
                "given: a node needs at least one output and as many slots as inputs"
            )
        node_name = node_name or unique_name(op_type, self.nodes)
        names = [unique_name(f"{node_name}_output_{i}", self.tensors) for i in range(outputs)]
        padded = [*inputs, *([None] * (slots - len(inputs)))]
        edits = self._node_edits(
            domain, op_type, node_name, inputs=padded, output_names=names, after=after
        )
        node = edits[0].node  # type: ignore[attr-defined]
        for attr_name, value in (attributes or {}).items():
            edits.append(e.SetAttr(node, attr_name, convert_attribute(attr_name, value)))
        return self._insert(op_type, node, edits)

    def _add_function_node(
        self,
        function: ir.Function,
        *,
        node_name: str | None,
        inputs: Sequence[str | ir.Value | None],
        attributes: Mapping[str, Any] | None,
        num_outputs: int | None,
        after: ir.Node | str | None,
    ) -> ir.Node:
        """An instance of a local function, checked against its signature."""
        title = f"function {function.domain}::{function.name}"
        if len(inputs) > len(function.inputs):
            raise GraphEditError(f"{title} takes at most {len(function.inputs)} inputs")
        if num_outputs not in {None, len(function.outputs)}:
            raise GraphEditError(f"{title} has {len(function.outputs)} outputs, not {num_outputs}")
        given = dict(attributes or {})
        params = function.attributes
        unknown = sorted(set(given) - set(params))
        missing = [
            n for n, a in params.items() if a.type == ir.AttributeType.UNDEFINED and n not in given
        ]
        if unknown or missing:
            raise AttributeEditError(
                f"{title}: unknown attribute(s) {unknown}, missing {missing} (no default); "
                f"its parameters are {list(params)}"
            )
        node_name = node_name or unique_name(function.name, self.nodes)
        names = [
            unique_name(f"{node_name}_{out.name or i}", self.tensors)
            for i, out in enumerate(function.outputs)
        ]
        edits = self._node_edits(
            function.domain,
            function.name,
            node_name,
            inputs=inputs,
            output_names=names,
            after=after,
        )
        node = edits[0].node  # type: ignore[attr-defined]
        for attr_name, value in given.items():
            declared = params[attr_name].type
            attr_type = None if declared == ir.AttributeType.UNDEFINED else declared
            edits.append(e.SetAttr(node, attr_name, convert_attribute(attr_name, value, attr_type)))
        return self._insert(function.name, node, edits)

    def _node_edits(
        self,
        domain: str,
        op_type: str,
        node_name: str,
        *,
        inputs: Sequence[str | ir.Value | None],
        output_names: Sequence[str],
        after: ir.Node | str | None,
    ) -> list[e.Edit]:
        """Insert a new node (first edit: its InsertNode) and link its inputs."""
        sources = [None if source is None else self._tensor(source) for source in inputs]
        outputs = [ir.Value(name=name) for name in output_names]
        node = ir.Node(domain, op_type, [], outputs=outputs, name=node_name)
        edits: list[e.Edit] = [e.InsertNode(self.graph, node, self._insert_point(after))]
        edits += [e.SetInput(node, i, src) for i, src in enumerate(sources)]
        return edits

    def _insert(self, op_type: str, node: ir.Node, edits: list[e.Edit]) -> ir.Node:
        description = f"add {op_type} {node.name}"
        self.apply_edits(
            description,
            edits,
            ChangeEvent(description, added=frozenset({node.name or ""}), edges=True),
        )
        return node

    def set_output_count(self, node: ir.Node | str, count: int) -> None:
        """Give `node` `count` outputs (a Split into more parts, a variadic output list): new
        outputs are named after the node; outputs dropped must be unused."""
        target = self.node(node)
        schema = self.schema(target)
        low, high = (schema.min_output, schema.max_output) if schema else (1, 2**31 - 1)
        if not low <= count <= high:
            raise GraphEditError(
                f"{target.op_type} {target.name} has {low}..{high} outputs, not {count}"
            )
        outputs = list(target.outputs)
        used = [v.name for v in outputs[count:] if v.uses() or v.is_graph_output()]
        if used:
            raise GraphEditError(
                f"output(s) {used} of {target.name} are still used: disconnect them first"
            )
        if count == len(outputs):
            return
        names = (
            _output_names(schema, target.name or "", range(len(outputs), count), self.tensors)
            if schema is not None
            else [
                unique_name(f"{target.name}_output_{i}", self.tensors)
                for i in range(len(outputs), count)
            ]
        )
        description = f"{target.name}: {len(outputs)} -> {count} outputs"
        self.apply_edits(
            description,
            [e.ResizeOutputs(target, count, names)],
            ChangeEvent(description, changed=frozenset({target.name or ""}), edges=True),
        )

    def _make_attribute_for_schema(
        self, schema: Any, node: ir.Node, name: str, value: Any
    ) -> ir.Attr:
        info = schema.attributes.get(name)
        if info is None:
            raise AttributeEditError(_unknown_attribute(node, name, schema))
        return _convert_attribute(name, value, info.type)

    def _insert_point(self, after: ir.Node | str | None) -> ir.Node | None:
        if after is not None:
            return self.node(after)
        return self.graph.node(len(self.graph) - 1) if len(self.graph) else None

    def remove_node(self, node: ir.Node | str) -> None:
        """Remove a node; its consumers' inputs become empty, graph outputs it fed are dropped."""
        self.remove_nodes([node])

    def remove_nodes(self, nodes: Iterable[ir.Node | str]) -> None:
        """Remove several nodes as one undo step."""
        targets = list(dict.fromkeys(self.node(node) for node in list_argument(nodes, "nodes")))
        doomed = set(targets)
        edits: list[e.Edit] = []
        dropped: list[tuple[int, ir.Graph, ir.Value]] = []  # graph outputs fed by the nodes
        for target in targets:
            graph = _graph_of(target)
            for value in target.outputs:
                for user, index in list(value.uses()):
                    if user not in doomed:
                        edits.append(e.SetInput(user, index, None))
                if value.is_graph_output():
                    dropped += [(p, graph, value) for p in _positions(graph.outputs, value)]
        # last position first, over all the nodes: each removal leaves the earlier ones valid
        for position, graph, value in sorted(dropped, key=lambda d: -d[0]):
            edits.append(e.ListInsert(graph.outputs, position, value, remove=True))
        edits += [e.DetachInputs(target) for target in targets]
        edits += [e.RemoveNode(_graph_of(target), target) for target in targets]
        names = frozenset(target.name or "" for target in targets)
        description = f"remove {', '.join(sorted(names))}"
        self.apply_edits(description, edits, ChangeEvent(description, removed=names, edges=True))

    def rename_node(self, node: ir.Node | str, new_name: str) -> None:
        """Rename a node: unique in its graph and a valid C identifier."""
        target = self.node(node)
        graph = _graph_of(target)
        old = target.name or ""
        if new_name == old:
            return
        siblings = {n.name or "" for n in graph} - {old}
        check_node_name(new_name, siblings)
        description = f"rename {old} to {new_name}"
        self.apply_edits(
            description,
            [e.SetField(target, "name", new_name)],
            ChangeEvent(description, changed=frozenset({new_name}), renamed=((old, new_name),)),
        )

    # ------------------------------------------------------------- connections
    def connect(
        self,
        source: str | ir.Value,
        node: ir.Node | str,
        input_index: int,
        *,
        replace: bool = False,
    ) -> None:
        """Link tensor `source` to input `input_index` of `node` (one link per input)."""
        target = self.node(node)
        value = self._tensor(source)
        self._check_input_slot(target, input_index)
        current = target.inputs[input_index] if input_index < len(target.inputs) else None
        if current is value:
            return
        if current is not None and not replace:
            raise GraphEditError(
                f"input {input_index} of {target.name} is already linked to {current.name!r}: "
                "disconnect it first or pass replace=True"
            )
        if _reaches(target, value.producer()):
            raise GraphEditError(
                f"linking {value.name!r} to {target.name} would create a cycle: "
                f"{target.name} already feeds {value.producer().name}"  # type: ignore[union-attr]
            )
        description = f"connect {value.name} to {target.name}[{input_index}]"
        self.apply_edits(
            description,
            [e.SetInput(target, input_index, value)],
            ChangeEvent(description, changed=frozenset({target.name or ""}), edges=True),
        )

    def disconnect(self, node: ir.Node | str, input_index: int) -> None:
        """Empty input `input_index` of `node`; trailing empty inputs are dropped."""
        target = self.node(node)
        _index(input_index)
        if not 0 <= input_index < len(target.inputs) or target.inputs[input_index] is None:
            raise GraphEditError(f"input {input_index} of {target.name} is not connected")
        edits: list[e.Edit] = [e.SetInput(target, input_index, None)]
        remaining = list(target.inputs)
        remaining[input_index] = None
        keep = len(remaining)
        while keep and remaining[keep - 1] is None:
            keep -= 1
        if keep != len(remaining):
            edits.append(e.TrimInputs(target, keep))
        description = f"disconnect {target.name}[{input_index}]"
        self.apply_edits(
            description,
            edits,
            ChangeEvent(description, changed=frozenset({target.name or ""}), edges=True),
        )

    def _check_input_slot(self, node: ir.Node, index: int) -> None:
        schema = self.schema(node)
        limit = schema.max_input if schema is not None else max(len(node.inputs), index + 1)
        if not 0 <= index < limit:
            raise GraphEditError(
                f"{node.op_type} {node.name} has inputs 0..{limit - 1}; there is no input {index}"
            )
        skipped = range(len(node.inputs), index)
        if schema is not None and any(not _may_be_empty(schema, i) for i in skipped):
            raise GraphEditError(
                f"input {index} of {node.op_type} {node.name} would leave input(s) "
                f"{len(node.inputs)}..{index - 1} empty, which this operator does not allow: "
                f"connect input {len(node.inputs)} (the next free one) instead"
            )

    def _tensor(self, ref: str | ir.Value) -> ir.Value:
        if isinstance(ref, ir.Value):
            return ref
        return _lookup(self.tensors, ref, "tensor", GraphEditError)

    # ------------------------------------------------------- graph inputs/outputs
    def add_graph_input(
        self, name: str, dtype: ir.DataType | str | int, shape: Sequence[int | str | None]
    ) -> ir.Value:
        check_tensor_name(name, self.tensors)
        value = ir.Value(
            name=name, type=ir.TensorType(as_data_type(dtype)), shape=ir.Shape(_dims(shape))
        )
        description = f"add graph input {name}"
        self.apply_edits(
            description,
            [e.ListInsert(self.graph.inputs, len(self.graph.inputs), value)],
            ChangeEvent(description, graph_io=True),
        )
        return value

    def remove_graph_input(self, name: str) -> None:
        """Remove a graph input; nodes that read it get an empty input."""
        value = self._tensor(name)
        if not value.is_graph_input():
            raise GraphEditError(f"{name!r} is not a graph input")
        edits: list[e.Edit] = [e.SetInput(user, index, None) for user, index in value.uses()]
        edits.append(
            e.ListInsert(self.graph.inputs, self.graph.inputs.index(value), value, remove=True)
        )
        edits.append(self.tensorrt.follow_edit(removed_input=name))
        users = frozenset(user.name or "" for user, _ in value.uses())
        description = f"remove graph input {name}"
        self.apply_edits(
            description, edits, ChangeEvent(description, changed=users, edges=True, graph_io=True)
        )

    def add_graph_output(self, tensor: str | ir.Value) -> None:
        value = self._tensor(tensor)
        if value.is_graph_output():
            raise GraphEditError(f"{value.name!r} is already a graph output")
        description = f"add graph output {value.name}"
        self.apply_edits(
            description,
            [e.ListInsert(self.graph.outputs, len(self.graph.outputs), value)],
            ChangeEvent(description, graph_io=True),
        )

    def remove_graph_output(self, name: str) -> None:
        value = self._tensor(name)
        if not value.is_graph_output():
            raise GraphEditError(f"{name!r} is not a graph output")
        edits = [
            e.ListInsert(self.graph.outputs, position, value, remove=True)
            for position in reversed(_positions(self.graph.outputs, value))
        ]
        description = f"remove graph output {name}"
        self.apply_edits(description, edits, ChangeEvent(description, graph_io=True))

    def rename_tensor(self, old: str, new: str) -> None:
        """Rename a tensor (graph input/output, initializer or node output)."""
        value = self._tensor(text_argument(old, "tensor name"))
        if new == old:
            return
        check_tensor_name(new, self.tensors)
        touched = {user.name or "" for user, _ in value.uses()}
        if value.producer() is not None:
            touched.add(value.producer().name or "")  # type: ignore[union-attr]
        description = f"rename tensor {old} to {new}"
        self.apply_edits(
            description,
            [
                e.RenameValue(self.graph, value, new),
                self.tensorrt.follow_edit(renamed_input=(old, new)),
            ],
            ChangeEvent(
                description,
                changed=frozenset(touched),
                edges=True,
                graph_io=value.is_graph_input() or value.is_graph_output(),
                initializers=value.is_initializer(),
            ),
        )

    def set_tensor_type(
        self,
        name: str,
        dtype: ir.DataType | str | int | None = None,
        shape: Sequence[int | str | None] | None = None,
    ) -> None:
        """Change a tensor's dtype and/or shape (e.g. shape=['batch', 3, 224, 224])."""
        value = self._tensor(name)
        if value.is_initializer():
            raise GraphEditError(
                f"{name!r} is an initializer: its type comes from its data; "
                "use convert_initializer or create a new one"
            )
        edits: list[e.Edit] = []
        if dtype is not None:
            edits.append(e.SetField(value, "type", ir.TensorType(as_data_type(dtype))))
        if shape is not None:
            edits.append(e.SetField(value, "shape", ir.Shape(_dims(shape))))
        if not edits:
            return
        users = frozenset(user.name or "" for user, _ in value.uses())
        description = f"change type of {name}"
        self.apply_edits(
            description,
            edits,
            ChangeEvent(description, changed=users, edges=True, graph_io=True),
        )

    # ------------------------------------------------------------ initializers
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
        """Create an initializer from `value` (array, nested list, literal text or a `.npy`
        path) or, with `generate` in ("zeros", "normal", "uniform"), from dtype and shape."""
        check_tensor_name(name, self.tensors)
        data_type = as_data_type(dtype) if dtype is not None else None
        dims = _initializer_dims(shape) if shape is not None else None
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise InitializerError(f"seed must be an int, not {type(seed).__name__}")
        if generate is not None:
            if value is not None:
                raise InitializerError("give either a value or a generate method, not both")
            if data_type is None or dims is None:
                raise InitializerError(f"generate={generate!r} needs a dtype and a shape")
            try:
                array = generate_array(data_type, dims, generate, seed)
            except (ValueError, MemoryError) as error:  # numpy: more than memory can hold
                raise InitializerError(
                    f"cannot make a {data_type.name} tensor of shape {dims}: {error}"
                ) from None
        elif value is None:
            raise InitializerError("give a value (array, list, literal or .npy path) or generate=")
        else:
            array = array_from_source(value, data_type, dims)
        tensor = to_tensor(array, data_type, name)
        initializer = ir.Value(
            name=name,
            type=ir.TensorType(tensor.dtype),
            shape=ir.Shape(tensor.shape.numpy()),
            const_value=tensor,
        )
        description = f"create initializer {name}"
        self.apply_edits(
            description,
            [e.RegisterInitializer(self.graph, initializer)],
            ChangeEvent(description, initializers=True),
        )
        return initializer

    def delete_initializer(self, name: str) -> None:
        """Delete an initializer; every input that used it becomes empty."""
        value = self._initializer(name)
        users = list(value.uses())
        edits: list[e.Edit] = [e.SetInput(user, index, None) for user, index in users]
        if value.is_graph_input():
            edits.append(
                e.ListInsert(self.graph.inputs, self.graph.inputs.index(value), value, remove=True)
            )
        edits.append(e.RegisterInitializer(self.graph, value, remove=True))
        if name in self._external_plan:
            edits.append(e.SetMapping(self._external_plan, name, None))
        description = f"delete initializer {name}"
        self.apply_edits(
            description,
            edits,
            ChangeEvent(
                description,
                changed=frozenset(user.name or "" for user, _ in users),
                edges=bool(users),
                initializers=True,
            ),
        )

    def connect_initializer(self, name: str, node: ir.Node | str, input_index: int) -> None:
        """Link an initializer to a free input of `node`."""
        self._initializer(name)
        self.connect(name, node, input_index)

    def set_external(
        self, name: str, location: str, offset: int | None = None, length: int | None = None
    ) -> None:
        """Store initializer `name` in file `location` (relative to the model) on next save."""
        value = self._initializer(name)
        if self._path is None:
            raise InitializerError(
                "the model has never been saved: save it first so external data has a folder"
            )
        resolve_inside(self._path.parent, location, f"initializer {name!r}")
        if offset is not None and offset < 0:
            raise InitializerError(f"offset must be >= 0, got {offset}")
        nbytes = value.const_value.nbytes  # type: ignore[union-attr]
        if length is not None and length != nbytes:
            raise InitializerError(f"{name!r} has {nbytes} bytes; length {length} does not match")
        description = f"store {name} in {location}"
        self.apply_edits(
            description,
            [e.SetMapping(self._external_plan, name, ExternalLocation(location, offset, length))],
            ChangeEvent(description, initializers=True),
        )

    def external_location(self, name: str) -> ExternalLocation | None:
        """Where an initializer is (or will be) stored outside the model, if anywhere."""
        planned = self._external_plan.get(name)
        if planned is not None:
            return planned
        tensor = self._initializer(name).const_value
        if isinstance(tensor, ir.ExternalTensor):
            return ExternalLocation(str(tensor.location), tensor.offset, tensor.length)
        return None

    def _initializer(self, name: str) -> ir.Value:
        return _lookup(self.graph.initializers, name, "initializer", InitializerError)

    # ------------------------------------------------------------------ checks
    def check(self) -> list[Diagnostic]:
        """Diagnostics from the ONNX checker and strict shape inference, mapped to nodes."""
        try:
            snapshot = self.check_snapshot()
        except Exception as error:  # onnx_ir wraps what it cannot write in its own errors
            cause = error.__cause__ or error
            problem = f"the model cannot be written as ONNX ({type(cause).__name__}: {cause})"
            return [Diagnostic("error", None, problem)]
        return check_proto(snapshot)

    def check_snapshot(self) -> onnx.ModelProto:
        """A read-only proto of the current state for `check_proto` in a worker thread."""
        return check_snapshot(self._model)

    # -------------------------------------------------------------------- save
    def save(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        external_data: str | bool | None = None,
        size_threshold: int = 1024,
        keep_generated_names: bool = False,
        overwrite: bool = False,
        check: bool = True,
        while_syncing: Callable[[onnx.ModelProto], object] | None = None,
    ) -> Path:
        """Write the model atomically (and its companion file); returns the path written.

        `external_data`: a file name (relative to the model) for every initializer of at
        least `size_threshold` bytes; True for `<model>.data`; False to keep everything
        inline; None (default) keeps external data external when the model has some.
        Saved elsewhere than the model's own file, an existing file is replaced only with
        `overwrite=True`, and never one of the model's own files or another model's data or
        companion (OutputPathError, see nsdl_jupyter/_output_guard.py). An existing data
        file that is not this model's is refused unless `overwrite=True`; one that another
        model in the folder reads is never replaced.
        `check`: check the model first; when the check reports errors the model is still
        saved (an editor's save keeps the user's work, even half done, and never drops any of
        it), then a SavedWithErrorsWarning lists them. False for callers that check the
        written file themselves.
        `while_syncing`: called with the written model as a proto whose large initializers
        are typed graph inputs, after its bytes are written and before they are synced to
        disk, so work on the result (onnx's checker) overlaps with the disk.
        """
        self._check_editable()
        target = Path(path) if path is not None else self._path
        if target is None:
            raise ModelSaveError("this model has never been saved: give a path")
        target = target.absolute()
        if self._path is None or target.resolve() != self._path.resolve():  # save as
            guard_output(
                target,
                reading=[self._path],
                overwrite=overwrite,
                writes_model=True,
                what="save path",
            )
        request = SaveRequest(
            target=target,
            source=self._path,
            planned=self._external_plan,
            external_data=self._data_file_name(target, external_data),
            size_threshold=size_threshold,
            overwrite=overwrite,
            while_syncing=while_syncing,
            protected=frozenset(
                companion
                for model_path in {target, self._path}
                if model_path is not None
                for companion in (model_path.resolve(), companion_path(model_path).resolve())
            ),
        )
        self._sort()  # the check sees the order that is written
        errors = [d for d in self.check() if d.severity == "error"] if check else []
        with self._serializable(keep_generated_names):
            save_model(self._model, request, self._data_files)
        self._path = target
        self._history.mark_saved()
        self._write_companion(target)
        self._bus.emit(ChangeEvent(f"saved {target.name}", source="save", dirty=False))
        if errors:
            warnings.warn(SavedWithErrorsWarning(target.name, errors), stacklevel=2)
        return target

    def _data_file_name(self, target: Path, external_data: str | bool | None) -> str | None:
        if external_data is True:
            return f"{target.name}.data"
        if external_data is False:
            return None
        if isinstance(external_data, str):
            return external_data
        locations = [
            real_name(str(value.const_value.location))
            for value in self.graph.initializers.values()
            if isinstance(value.const_value, ir.ExternalTensor)
        ]
        if not locations:
            return None
        if self._path is not None and target == self._path:
            # saved in place: the data stays in the file most of it is in now
            return max(set(locations), key=locations.count)
        return f"{target.name}.data"

    def update_companion(self, key: str, value: Any) -> None:
        """Set view state kept beside the model (layout, collapsed groups); not an edit.
        Refused when the companion could not store it as is (standard JSON; box positions
        finite and on the canvas)."""
        problem = companion_problem(key, value)
        if problem:
            raise DocumentError(f"cannot keep {key!r} beside the model: {problem}")
        self.companion[key] = value

    def _write_companion(self, target: Path) -> None:
        """The companion is view state: failing to write it warns, the model is saved."""
        try:
            write_companion(target, self.companion)
        except (OSError, TypeError, ValueError) as error:
            warnings.warn(
                f"{target.name} was saved, but its view state ({companion_path(target).name}) "
                f"could not be written: {error}",
                CompanionWarning,
                stacklevel=3,
            )

    def _sort(self) -> None:
        """Topological order in the graph and in each local function (a node added to a body
        comes last, whatever it feeds), each with its bodies."""
        graphs = [self.graph, *(function.graph for function in self.model.functions.values())]
        for graph in graphs:
            if not all(_is_topological(inner) for inner in graphs_in(graph)):
                try:
                    graph.sort()  # sorts the bodies too
                except ValueError as error:  # onnx_ir: "Graph contains a cycle"
                    raise ModelSaveError(
                        f"cannot save: {error} ONNX needs an acyclic graph; nothing was "
                        "written: break the cycle (doc.disconnect) and save again"
                    ) from None

    @contextmanager
    def _serializable(self, keep_generated_names: bool = False) -> Iterator[None]:
        """Topological order (ONNX requires it) and original names of unnamed nodes."""
        self._sort()
        restored: list[tuple[ir.Node, str]] = []
        if not keep_generated_names:
            for node, (generated, original) in self._generated_names.items():
                if node.name == generated:
                    restored.append((node, generated))
                    node.name = original
        try:
            yield
        finally:
            for node, generated in restored:
                node.name = generated

    def __repr__(self) -> str:
        where = str(self._path) if self._path else "unsaved"
        star = "*" if self.dirty else ""
        return f"<ModelDocument {where}{star}: {len(self.graph)} nodes>"


def open_model(path: str | os.PathLike[str]) -> ModelDocument:
    """Open an ONNX file for editing. External weights stay on disk until used."""
    source = input_path(path, "model file").absolute()
    with gc_paused():
        model = load_model(source)
        try:
            return ModelDocument(model, source)
        except (KeyError, AttributeError, TypeError, IndexError, RecursionError) as error:
            # onnx_ir accepts some malformed graphs that naming or indexing then trips over
            raise ModelLoadError(
                f"{source} could not be opened: the model is malformed "
                f"({type(error).__name__}: {error})"
            ) from error


def new_model(opset: int = 21, contrib_ops: bool = False, name: str = "main") -> ModelDocument:
    """An empty model importing ONNX `opset` (and `com.microsoft` contrib ops if asked)."""
    latest = onnx.defs.onnx_opset_version()
    if not isinstance(opset, int) or not 1 <= opset <= latest:
        raise DocumentError(f"opset must be an integer in 1..{latest} (this onnx), got {opset!r}")
    imports = {"": opset}
    if contrib_ops:
        imports["com.microsoft"] = 1
    ir_version = onnx.helper.find_min_ir_version_for(
        [onnx.helper.make_opsetid("", opset)], ignore_unknown=True
    )
    graph = ir.Graph([], [], nodes=[], opset_imports=imports, name=name)
    model = ir.Model(graph, ir_version=max(ir_version, 7), producer_name="nsdl_jupyter")
    return ModelDocument(model)


# --------------------------------------------------------------------- helpers
def _name_unnamed_nodes(graphs: Iterable[ir.Graph]) -> dict[ir.Node, tuple[str, str]]:
    """Give unnamed and duplicate-named nodes unique names; remember (generated, original)."""
    generated: dict[ir.Node, tuple[str, str]] = {}
    for graph in graphs:
        names = [node.name for node in graph]
        unique = set(names)
        if len(unique) == len(names) and "" not in unique and None not in unique:
            continue  # the usual case, in a third of the time of the loop below
        taken: set[str] = set()
        needs_name = []
        for position, node in enumerate(graph):
            if node.name and node.name not in taken:
                taken.add(node.name)
            else:
                needs_name.append((position, node))
        for position, node in needs_name:
            original = node.name or ""
            new = unique_name(f"{node.op_type}_{position}", taken)
            taken.add(new)
            node.name = new
            generated[node] = (new, original)
    return generated


def _graph_of(node: ir.Node) -> ir.Graph:
    graph = node.graph
    if not isinstance(graph, ir.Graph):
        raise GraphEditError(f"node {node.name!r} is not in a graph")
    return graph


def _positions(items: Sequence[ir.Value], value: ir.Value) -> list[int]:
    return [i for i, item in enumerate(items) if item is value]


def _output_names(
    schema: Any, node_name: str, indices: Iterable[int], taken: Mapping[str, Any]
) -> list[str]:
    """Fresh names of outputs `indices` of a node: `<node>_<formal>` (`_<index>` when variadic)."""
    names: list[str] = []
    for index in indices:
        formals = schema.outputs
        formal = formals[min(index, len(formals) - 1)] if formals else None
        stem = f"{node_name}_{formal.name if formal else 'output'}"
        if formal is not None and formal.option == "variadic":
            stem = f"{stem}_{index}"
        # ChainMap only reads `taken` (no copy of the model's tensor names per output)
        either = ChainMap(dict.fromkeys(names), cast("MutableMapping[str, Any]", taken))
        names.append(unique_name(stem, either))
    return names


def _may_be_empty(schema: Any, index: int) -> bool:
    """Whether input `index` may stay empty: only optional inputs, never a variadic's slots."""
    formals = schema.inputs
    formal = formals[min(index, len(formals) - 1)] if formals else None
    return formal is not None and formal.option == "optional" and index < len(formals)


def _reaches(start: ir.Node, goal: ir.Node | None) -> bool:
    """True if `goal` is `start` or downstream of it (linking would close a cycle)."""
    if goal is None:
        return False
    seen = {start}
    stack = [start]
    while stack:
        current = stack.pop()
        if current is goal:
            return True
        for output in current.outputs:
            for user, _ in output.uses():
                if user not in seen:
                    seen.add(user)
                    stack.append(user)
    return False


def _is_topological(graph: ir.Graph) -> bool:
    produced = {id(v) for v in graph.inputs} | {id(v) for v in graph.initializers.values()}
    nodes = set()
    for node in graph:
        nodes.add(id(node))
    seen: set[int] = set()
    for node in graph:
        for value in node.inputs:
            if value is None or id(value) in produced:
                continue
            producer = value.producer()
            if producer is not None and id(producer) in nodes and id(producer) not in seen:
                return False
        seen.add(id(node))
    return True


def _dims(shape: Sequence[int | str | None]) -> list[int | str | None]:
    dims: list[int | str | None] = []
    for dim in list_argument(shape, "shape dims"):
        if isinstance(dim, str) and dim.isdigit():
            dims.append(int(dim))
        elif dim is None or isinstance(dim, (int, str)):
            if isinstance(dim, int) and dim < 0:
                raise DocumentError(f"dimension {dim} is negative: use a name for a free dimension")
            if isinstance(dim, int) and dim > _MAX_DIM:
                raise DocumentError("a dimension is over the int64 range of ONNX shapes")
            dims.append(dim)
        else:
            raise DocumentError(f"dimension {dim!r} must be an int, a name or None")
    return dims


def _guess_attribute_type(value: Any) -> ir.AttributeType:
    """For operators without a schema: the type the value looks like."""
    if isinstance(value, str):
        try:
            value = parse_literal(value)
        except LiteralSyntaxError:
            return ir.AttributeType.STRING
    if isinstance(value, bool | int | np.integer):
        return ir.AttributeType.INT
    if isinstance(value, float | np.floating):
        return ir.AttributeType.FLOAT
    if isinstance(value, str):
        return ir.AttributeType.STRING
    if isinstance(value, np.ndarray):
        return ir.AttributeType.TENSOR
    if isinstance(value, list | tuple):
        if all(isinstance(item, bool | int) for item in value):
            return ir.AttributeType.INTS
        if all(isinstance(item, int | float) for item in value):
            return ir.AttributeType.FLOATS
        if all(isinstance(item, str) for item in value):
            return ir.AttributeType.STRINGS
        return ir.AttributeType.TENSOR
    raise DocumentError(f"cannot tell which attribute type {value!r} should have")


def convert_attribute(name: str, value: Any, attr_type: ir.AttributeType | None = None) -> ir.Attr:
    """`value` (Python or literal text) as attribute `name` of `attr_type`, or of the type the
    value looks like (for operators and function parameters without a declared type)."""
    return _convert_attribute(name, value, attr_type or _guess_attribute_type(value))


def _convert_attribute(name: str, value: Any, attr_type: ir.AttributeType) -> ir.Attr:
    try:
        result: ir.Attr = to_attribute(name, value, attr_type)
    except ValueError as error:
        raise AttributeEditError(str(error)) from error
    return result


def _unknown_attribute(node: ir.Node, name: str, schema: Any) -> str:
    known = ", ".join(sorted(schema.attributes)) or "none"
    return f"{node.op_type} has no attribute {name!r}; its attributes are: {known}"


_T = TypeVar("_T")
_MAX_DIM = 2**63 - 1  # ONNX dims are int64


def _initializer_dims(shape: Sequence[int]) -> tuple[int, ...]:
    dims = _dims(shape)
    if not all(isinstance(d, int) for d in dims):
        raise InitializerError(f"an initializer's shape is whole numbers >= 0, not {dims}")
    return tuple(cast("list[int]", dims))


def _index(index: object) -> int:
    """An input or output position: an int (a bool or a float is a mistake, not a slot)."""
    if isinstance(index, bool) or not isinstance(index, int):
        raise ArgumentError(f"an input index is an int, not {type(index).__name__}")
    return index


_DOMAIN_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-]*")
_OP_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _lookup(items: Mapping[str, _T], name: str, kind: str, error: type[DocumentError]) -> _T:
    """`items[name]`, or an error that suggests close names."""
    found = items.get(name)
    if found is None:
        raise error(f"no {kind} named {name!r} in the main graph{_close(name, items)}")
    return found


def _close(name: str, names: Iterable[str]) -> str:
    matches = difflib.get_close_matches(name, list(names), n=3)
    return f" (did you mean {', '.join(map(repr, matches))}?)" if matches else ""
