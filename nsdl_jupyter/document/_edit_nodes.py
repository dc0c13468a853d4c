"""Node edits of `ModelDocument`: attributes, adding, removing and renaming nodes, their
output counts and connections."""

from __future__ import annotations

from collections import ChainMap
from collections.abc import Iterable, Mapping, MutableMapping, Sequence
from typing import Any, cast

import numpy as np
import onnx_ir as ir

from nsdl_jupyter._errors import ArgumentError, list_argument, text_argument
from nsdl_jupyter.document import edits as e
from nsdl_jupyter.document._document_base import _OP_NAME, DocumentBase, _positions
from nsdl_jupyter.document._errors import AttributeEditError, DocumentError, GraphEditError
from nsdl_jupyter.document._events import ChangeEvent
from nsdl_jupyter.document._names import check_node_name, unique_name
from nsdl_jupyter.ops import (
    LiteralSyntaxError,
    UnknownOperatorError,
    get_schema,
    known_domains,
    parse_literal,
    to_attribute,
)


class NodeEdits(DocumentBase):
    """Edits of nodes: each validates first, then applies one undo step."""

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

    def _make_attribute_for_schema(
        self, schema: Any, node: ir.Node, name: str, value: Any
    ) -> ir.Attr:
        info = schema.attributes.get(name)
        if info is None:
            raise AttributeEditError(_unknown_attribute(node, name, schema))
        return _convert_attribute(name, value, info.type)

    # ------------------------------------------------------------------- nodes
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

    def _insert_point(self, after: ir.Node | str | None) -> ir.Node | None:
        if after is not None:
            return self.node(after)
        return self.graph.node(len(self.graph) - 1) if len(self.graph) else None

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

    def connect_initializer(self, name: str, node: ir.Node | str, input_index: int) -> None:
        """Link an initializer to a free input of `node`."""
        self._initializer(name)
        self.connect(name, node, input_index)


def _graph_of(node: ir.Node) -> ir.Graph:
    graph = node.graph
    if not isinstance(graph, ir.Graph):
        raise GraphEditError(f"node {node.name!r} is not in a graph")
    return graph


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


def _index(index: object) -> int:
    """An input or output position: an int (a bool or a float is a mistake, not a slot)."""
    if isinstance(index, bool) or not isinstance(index, int):
        raise ArgumentError(f"an input index is an int, not {type(index).__name__}")
    return index


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
