"""Type checking: the ONNX checker and strict shape inference, reported per node.

The main graph, an open body (its outer-scope reads become typed inputs of the snapshot) and
an open local function (checked as a function: its inputs have no types) are checked the same
way. Calls of local functions are checked against the function's signature; nodes of custom
domains that call no local function are custom operators (warnings).
"""

from __future__ import annotations

import json
import re
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

import onnx
import onnx_ir as ir

from nsdl_jupyter._errors import first_line
from nsdl_jupyter._weightless import weightless_proto
from nsdl_jupyter.document._check_messages import explain
from nsdl_jupyter.ops import ONNX_DOMAINS, is_custom_operator

if TYPE_CHECKING:
    from google.protobuf.internal.containers import RepeatedCompositeFieldContainer

Severity = Literal["error", "warning", "info"]
FunctionKey = tuple[str, str, str]  # (domain, name, overload), as onnx_ir keys model.functions

_NODE_IN_MESSAGE = re.compile(r"node name: ([^)]*)\)|Node \(([^)]*)\)|node \"?([^\" ]+)\"? ")
_NODE_IN_CHECKER_MESSAGE = re.compile(r"(?:Name|name): (\S+) OpType")
# Marks a snapshot whose subject is a local function (the first of proto.functions), not the graph.
_CHECKED_FUNCTION = "nsdl_jupyter.checked_function"


@dataclass(frozen=True)
class Diagnostic:
    """One finding: `node` is the node's name in the main graph, or None for the whole model."""

    severity: Severity
    node: str | None
    message: str
    source: Literal["checker", "shape_inference"] = "checker"


class SavedWithErrorsWarning(UserWarning):
    """The model was saved (nothing of it is lost) while its check reports errors: the
    file may not load in a runtime. `diagnostics` holds the errors."""

    def __init__(self, target: str, diagnostics: Sequence[Diagnostic]) -> None:
        self.diagnostics = list(diagnostics)
        shown = "; ".join(
            f"{d.node}: {d.message}" if d.node else d.message for d in self.diagnostics[:3]
        )
        more = f" (and {len(self.diagnostics) - 3} more)" if len(self.diagnostics) > 3 else ""
        super().__init__(
            f"{target} was saved with {len(self.diagnostics)} check error(s), so runtimes may "
            f"refuse it: {shown}{more}. doc.check() lists them; fix them and save again"
        )


@dataclass(frozen=True)
class CheckScope:
    """What an open body sees from outside it: the outer-scope tensors it reads, by name, and
    the model's local functions (a body's own model has none)."""

    outer: Mapping[str, ir.Value] = field(default_factory=dict)
    functions: Mapping[FunctionKey, ir.Function] = field(default_factory=dict)
    # Types of outer tensors that carry none (intermediate values of the parent), computed
    # only when one is needed: it runs shape inference on the parent.
    outer_types: Callable[[], Mapping[str, onnx.TypeProto]] | None = None


def inferred_types(proto: onnx.ModelProto) -> dict[str, onnx.TypeProto]:
    """Types of the main graph's tensors after lenient shape inference (none if it fails)."""
    try:
        inferred = onnx.shape_inference.infer_shapes(proto)
    except (onnx.shape_inference.InferenceError, onnx.checker.ValidationError):
        inferred = proto
    graph = inferred.graph
    return {
        info.name: info.type
        for info in (*graph.input, *graph.value_info, *graph.output)
        if info.type.WhichOneof("value") is not None
    }


def check_snapshot(model: ir.Model, scope: CheckScope | None = None) -> onnx.ModelProto:
    """The model as a proto for checking, built without changing the model.

    Safe off the kernel's thread (it only reads), so a panel can check big models in a worker.
    Weights are typed graph inputs (`nsdl_jupyter._weightless`): checking needs their types,
    not their bytes. Node names are those of the document (generated ones included), so
    diagnostics name what the views show. A body's outer-scope reads (`scope.outer`) join
    the same way.
    """
    scope = scope or CheckScope(functions=model.functions)
    proto = weightless_proto(
        model.graph,
        ir_version=model.ir_version,
        functions=scope.functions.values(),
        outer=scope.outer.values(),
    )
    _type_outer_inputs(proto.graph, scope)
    return proto


def _type_outer_inputs(graph: onnx.GraphProto, scope: CheckScope) -> None:
    """Give outer-scope inputs that carry no type the one inference finds in the parent."""
    untyped = [
        info
        for info in graph.input
        if info.name in scope.outer and info.type.WhichOneof("value") is None
    ]
    if not untyped or scope.outer_types is None:
        return
    types = scope.outer_types()
    for info in untyped:
        if info.name in types:
            info.type.CopyFrom(types[info.name])


def function_snapshot(
    function: ir.Function, functions: Mapping[FunctionKey, ir.Function], ir_version: int
) -> onnx.ModelProto:
    """A proto for checking local function `function` (with the model's other `functions`,
    which its body may call); `check_proto` checks the function, not the empty graph."""
    proto = onnx.ModelProto(ir_version=ir_version)
    for domain, version in function.opset_imports.items():
        proto.opset_import.add(domain=domain, version=version)
    proto.graph.name = f"{function.domain}.{function.name}"
    ir.serde.serialize_function_into(proto.functions.add(), from_=function)
    for key, other in functions.items():
        if key != function.identifier():
            ir.serde.serialize_function_into(proto.functions.add(), from_=other)
    proto.metadata_props.add(key=_CHECKED_FUNCTION, value=json.dumps(function.identifier()))
    return proto


def check_proto(proto: onnx.ModelProto) -> list[Diagnostic]:
    """The checks on a snapshot: ONNX checker per node, then strict shape inference.

    A node so broken that even lenient inference stops (a missing required input) is
    reported on that node instead of failing the whole check.
    """
    subject = _checked_function(proto)
    if subject is not None:
        return _function_diagnostics(proto, subject)
    _sort_graphs(proto.graph)
    nodes = proto.graph.node
    functions = _functions(proto)
    gaps = (
        _domain_diagnostics(proto)
        + _custom_operators(nodes, functions)
        + _call_diagnostics(nodes, functions)
        + _gap_diagnostics(nodes, _opsets(proto.opset_import))
        + _untyped_custom_outputs(proto, functions)
    )
    undefined = _undefined_reads(proto.graph)
    if undefined:  # the checker would stop at the first, naming no node
        return gaps + undefined
    try:
        # Types of new graph outputs are often unknown until inferred; the checker demands them.
        inferred = onnx.shape_inference.infer_shapes(proto)
    except (onnx.shape_inference.InferenceError, onnx.checker.ValidationError) as error:
        message = first_line(str(error), None)
        node = _node_named_in(message, nodes)
        found = _graph_node_diagnostics(proto, functions)
        if not any(d.node == node for d in found):
            found.append(Diagnostic("error", node, message, "shape_inference"))
        return gaps + found
    diagnostics = gaps + _checker_diagnostics(inferred, functions)
    if any(d.severity == "error" for d in diagnostics):
        return diagnostics
    return diagnostics + _inference_diagnostics(inferred, functions)


Nodes = Sequence[onnx.NodeProto]
Functions = Mapping[FunctionKey, onnx.FunctionProto]


def _functions(proto: onnx.ModelProto) -> dict[FunctionKey, onnx.FunctionProto]:
    return {(f.domain, f.name, f.overload): f for f in proto.functions}


def _opsets(entries: Iterable[onnx.OperatorSetIdProto]) -> dict[str, int]:
    return {entry.domain: entry.version for entry in entries}


def _key(node: onnx.NodeProto) -> FunctionKey:
    return (node.domain, node.op_type, node.overload)


def _is_custom(node: onnx.NodeProto, functions: Functions) -> bool:
    return is_custom_operator(node.domain, node.op_type, node.overload, functions)


def _has_schema(node: onnx.NodeProto, functions: Functions) -> bool:
    """False for custom operators and local-function calls (checked on their own)."""
    return not _is_custom(node, functions) and _key(node) not in functions


def _domain_diagnostics(proto: onnx.ModelProto) -> list[Diagnostic]:
    """What the ONNX checker lets pass and runtimes misread: the default domain imported
    twice ("" and its alias "ai.onnx": onnxruntime keeps one version for every ONNX node),
    and local functions in a standard ONNX domain (their calls resolve to ONNX operators)."""
    found = []
    opsets = _opsets(proto.opset_import)
    if "" in opsets and "ai.onnx" in opsets:
        found.append(
            Diagnostic(
                "error",
                None,
                f"the model imports the default ONNX domain twice ('' at {opsets['']} and its "
                f"alias 'ai.onnx' at {opsets['ai.onnx']}): runtimes use one version for every "
                "ONNX node; remove the alias with doc.remove_domain('ai.onnx')",
            )
        )
    for function in proto.functions:
        if function.domain in ONNX_DOMAINS:
            label = function.domain or "ai.onnx"
            found.append(
                Diagnostic(
                    "error",
                    None,
                    f"local function {label}::{function.name} is in the standard ONNX domain "
                    f"{label!r}, whose operators are ONNX's: delete it and create it again in "
                    "a custom domain (such as 'local')",
                )
            )
    return found


def _custom_operators(nodes: Nodes, functions: Functions) -> list[Diagnostic]:
    """Nodes of domains with no schemas here (TensorRT plugins, vendor ops) that call no local
    function: a warning each."""
    return [
        Diagnostic(
            "warning",
            node.name,
            f"{node.domain}::{node.op_type} is a custom operator: its inputs, outputs and "
            "attributes are not checked here, and the runtime needs its plugin or library",
        )
        for node in nodes
        if _is_custom(node, functions)
    ]


def _call_diagnostics(nodes: Nodes, functions: Functions) -> list[Diagnostic]:
    """Calls of local functions against the function's signature (the ONNX checker does not
    compare them): too many inputs or outputs are errors; attributes the function does not
    declare, or declared ones without a default that the call leaves out, are warnings."""
    found = []
    for node in nodes:
        function = functions.get(_key(node))
        if function is None:
            continue
        title = f"{node.name} calls local function {node.domain}::{node.op_type}"
        for what, given, formal in (
            ("inputs", node.input, function.input),
            ("outputs", node.output, function.output),
        ):
            if len(given) > len(formal):
                found.append(
                    Diagnostic(
                        "error",
                        node.name,
                        f"{title} with {len(given)} {what}, but it has {len(formal)} "
                        f"({', '.join(formal)}): remove the extra {what}",
                    )
                )
        declared = [*function.attribute, *(a.name for a in function.attribute_proto)]
        given_attrs = {a.name for a in node.attribute}
        unknown = sorted(given_attrs - set(declared))
        missing = [name for name in function.attribute if name not in given_attrs]
        if unknown or missing:
            found.append(
                Diagnostic(
                    "warning",
                    node.name,
                    f"{title}: attribute(s) {unknown} are not parameters of the function "
                    f"(ignored), {missing} have no default and no value here (the body's "
                    f"references to them get none); its parameters are {declared}",
                )
            )
    return found


def _untyped_custom_outputs(proto: onnx.ModelProto, functions: Functions) -> list[Diagnostic]:
    """Graph outputs of custom operators whose type nothing can infer: a warning on the node
    (the checker's "Unrecognized type value case" names no node); they leave the checked copy."""
    producers = {name: node for node in proto.graph.node for name in node.output}
    found, kept = [], []
    for output in proto.graph.output:
        node = producers.get(output.name)
        if (
            output.type.WhichOneof("value") is None
            and node
            and node.domain not in ONNX_DOMAINS
            and _key(node) not in functions  # inference reads the function's body
        ):
            found.append(
                Diagnostic(
                    "warning",
                    node.name,
                    f"graph output {output.name!r} of {node.domain} operator {node.op_type} has "
                    f"no type (no schema to infer it): set one with "
                    f"doc.set_tensor_type({output.name!r}, ...)",
                )
            )
        else:
            kept.append(output)
    if found:
        del proto.graph.output[:]
        proto.graph.output.extend(kept)
    return found


def _gap_diagnostics(nodes: Nodes, opsets: Mapping[str, int]) -> list[Diagnostic]:
    """Empty inputs inside a variadic list (`Concat(a, '', b)`): the ONNX checker lets them
    pass, onnxruntime refuses the model."""
    found = []
    for node in nodes:
        if "" not in node.input:
            continue
        try:
            schema = onnx.defs.get_schema(node.op_type, opsets.get(node.domain, 1), node.domain)
        except onnx.defs.SchemaError:
            continue
        formals = schema.inputs
        variadic = (
            bool(formals)
            and formals[-1].option == onnx.defs.OpSchema.FormalParameterOption.Variadic
        )
        if not variadic:
            continue  # gaps in single inputs: the checker reports them
        first = len(formals) - 1
        holes = [i for i, name in enumerate(node.input) if i >= first and not name]
        if holes:
            found.append(
                Diagnostic(
                    "error",
                    node.name,
                    f"{node.op_type} {node.name} has empty variadic input(s) {holes}: "
                    "connect a tensor there or remove the gap (variadic inputs cannot be empty)",
                )
            )
    return found


def _subgraphs(node: onnx.NodeProto) -> Iterator[onnx.GraphProto]:
    for attr in node.attribute:
        if attr.type == onnx.AttributeProto.GRAPH:
            yield attr.g
        elif attr.type == onnx.AttributeProto.GRAPHS:
            yield from attr.graphs


def _undefined_reads(graph: onnx.GraphProto) -> list[Diagnostic]:
    """Nodes (at any depth) reading a tensor that no earlier node of their graph produces and
    no enclosing scope defines: an error on the node of `graph` that holds them."""
    found = []
    visible = {i.name for i in graph.input} | {i.name for i in graph.initializer} | {""}
    for node in graph.node:
        for reader, name, body in _reads_outside(node, visible, ""):
            where = f" (in {node.name}.{body})" if body else ""
            found.append(
                Diagnostic(
                    "error",
                    node.name,
                    f"{reader.op_type} {reader.name}{where} reads {name!r}, which no earlier "
                    "node produces and no enclosing graph defines: connect an existing tensor",
                )
            )
        visible.update(node.output)
    return found


def _reads_outside(
    node: onnx.NodeProto, visible: set[str], body: str
) -> Iterator[tuple[onnx.NodeProto, str, str]]:
    """(reader, name, body) for each read of `node` and of the nodes of its bodies that
    `visible` lacks; `body` names the outermost body the reader is in ("" for `node`)."""
    for name in node.input:
        if name not in visible:
            yield node, name, body
    for attr in node.attribute:
        graphs = [attr.g] if attr.type == onnx.AttributeProto.GRAPH else list(attr.graphs)
        for graph in graphs:
            inside = visible | {i.name for i in graph.input} | {i.name for i in graph.initializer}
            for inner in graph.node:
                yield from _reads_outside(inner, inside, body or attr.name)
                inside |= set(inner.output)


def _sort_graphs(graph: onnx.GraphProto) -> None:
    """Sort `graph` and every body inside it (names from enclosing scopes count as there)."""
    available = {i.name for i in graph.input} | {i.name for i in graph.initializer}
    _sort_topologically(graph.node, available)
    for node in graph.node:
        for body in _subgraphs(node):
            _sort_graphs(body)


def _sort_topologically(
    nodes: RepeatedCompositeFieldContainer[onnx.NodeProto], available: set[str]
) -> None:
    """Order nodes so each comes after its producers (ONNX requires it; edits may not keep it).

    Only producers among `nodes` order them: other names are inputs, initializers or tensors
    of an enclosing scope."""
    available = available | {""}
    produced_by: dict[str, int] = {}
    for index, node in enumerate(nodes):
        for name in node.output:
            produced_by[name] = index
    seen = set(available)
    for node in nodes:
        if any(name not in seen and name in produced_by for name in node.input):
            break
        seen.update(node.output)
    else:
        return
    listed = list(nodes)
    waiting = [
        {produced_by[n] for n in node.input if n in produced_by and n not in available}
        for node in listed
    ]
    users: dict[int, list[int]] = {}
    for index, needs in enumerate(waiting):
        for producer in needs:
            users.setdefault(producer, []).append(index)
    ready = deque(i for i, needs in enumerate(waiting) if not needs)
    order: list[int] = []
    while ready:
        current = ready.popleft()
        order.append(current)
        for user in users.get(current, ()):
            waiting[user].discard(current)
            if not waiting[user]:
                ready.append(user)
    placed = set(order)
    order += [i for i in range(len(listed)) if i not in placed]  # a cycle: keep the rest as is
    copies = [onnx.NodeProto() for _ in listed]
    for copy, index in zip(copies, order, strict=True):
        copy.CopyFrom(listed[index])
    del nodes[:]
    nodes.extend(copies)


def _checker_diagnostics(proto: onnx.ModelProto, functions: Functions) -> list[Diagnostic]:
    try:
        onnx.checker.check_model(proto)
    except onnx.checker.ValidationError as error:
        model_message = first_line(str(error), None)
    else:
        return []
    found = _graph_node_diagnostics(proto, functions)
    if found:
        return found
    return [Diagnostic("error", _node_named_in(model_message, proto.graph.node), model_message)]


def _context(ir_version: int, opsets: Mapping[str, int]) -> onnx.checker.C.CheckerContext:
    context = onnx.checker.C.CheckerContext()
    context.ir_version = ir_version
    context.opset_imports = dict(opsets)
    return context


def _graph_node_diagnostics(proto: onnx.ModelProto, functions: Functions) -> list[Diagnostic]:
    graph = proto.graph
    context = _context(proto.ir_version, _opsets(proto.opset_import))
    available = {i.name for i in graph.input} | {i.name for i in graph.initializer}
    return _node_diagnostics(graph.node, available, context, functions)


def _node_diagnostics(
    nodes: Nodes,
    available: set[str],
    context: onnx.checker.C.CheckerContext,
    functions: Functions,
) -> list[Diagnostic]:
    """The checker on each node with a schema; `available` names what the first node sees."""
    visible = set(available)
    found = []
    for node in nodes:
        if _has_schema(node, functions):
            try:
                _check_node(node, visible, context)
            except onnx.checker.ValidationError as error:
                foreign = node.domain not in ONNX_DOMAINS
                found.append(
                    Diagnostic(
                        "warning" if foreign else "error",
                        node.name,
                        (
                            f"{node.domain} operator {node.op_type} has no ONNX schema; "
                            "onnxruntime checks it when the model runs"
                        )
                        if foreign
                        else _in_schema_words(node, context, first_line(str(error), None)),
                    )
                )
        visible.update(node.output)
    return found


def _in_schema_words(
    node: onnx.NodeProto, context: onnx.checker.C.CheckerContext, message: str
) -> str:
    opset = dict(context.opset_imports).get(node.domain or "", 0)
    return explain(node.op_type, node.domain, opset, message) if opset else message


def _check_node(
    node: onnx.NodeProto, visible: set[str], context: onnx.checker.C.CheckerContext
) -> None:
    """`check_node`, or for a node with bodies a graph of that node alone whose inputs are
    the visible tensors it and its bodies read: bodies may read any tensor of an enclosing
    scope, and the checker's lexical scope cannot be filled from Python."""
    if not any(True for _ in _subgraphs(node)):
        onnx.checker.check_node(node, context, onnx.checker.C.LexicalScopeContext())
        return
    reads = sorted(name for name in _names_read(node) if name in visible)
    placeholder = onnx.TypeProto(
        tensor_type=onnx.TypeProto.Tensor(
            elem_type=onnx.TensorProto.FLOAT, shape=onnx.TensorShapeProto()
        )
    )
    probe = onnx.GraphProto(
        name=f"{node.name or node.op_type}_probe",
        node=[node],
        input=[onnx.ValueInfoProto(name=name, type=placeholder) for name in reads],
    )
    onnx.checker.check_graph(probe, context)


def _names_read(node: onnx.NodeProto) -> set[str]:
    """Every tensor name `node` and the nodes of its bodies (at any depth) read."""
    names = set(node.input)
    for body in _subgraphs(node):
        for inner in body.node:
            names |= _names_read(inner)
    return names


def _inference_diagnostics(proto: onnx.ModelProto, functions: Functions) -> list[Diagnostic]:
    try:
        onnx.shape_inference.infer_shapes(proto, check_type=True, strict_mode=True, data_prop=True)
    except (onnx.shape_inference.InferenceError, onnx.checker.ValidationError) as error:
        message = first_line(str(error), None)
        node = next(
            (n for n in proto.graph.node if n.name == _node_named_in(message, proto.graph.node)),
            None,
        )
        # nodes inside a local function are ONNX nodes: an error in a call is the function's
        foreign = (
            node is not None and node.domain not in ONNX_DOMAINS and _key(node) not in functions
        )
        return [
            Diagnostic(
                "warning" if foreign else "error",
                node.name if node else None,
                message,
                "shape_inference",
            )
        ]
    return []


def _checked_function(proto: onnx.ModelProto) -> onnx.FunctionProto | None:
    """The function a `function_snapshot` is about, or None for a snapshot of a graph."""
    if not any(entry.key == _CHECKED_FUNCTION for entry in proto.metadata_props):
        return None
    subject: onnx.FunctionProto = proto.functions[0]
    return subject


def _function_diagnostics(proto: onnx.ModelProto, function: onnx.FunctionProto) -> list[Diagnostic]:
    """A local function's body: the checker on the function and on each of its nodes. Its
    inputs have no types (each call gives them), so shape inference runs at call sites."""
    _sort_topologically(function.node, set(function.input))
    functions = _functions(proto)
    nodes = function.node
    opsets = _opsets(function.opset_import)
    found = (
        _custom_operators(nodes, functions)
        + _call_diagnostics(nodes, functions)
        + _gap_diagnostics(nodes, opsets)
    )
    context = _context(proto.ir_version, opsets)
    try:
        onnx.checker.check_function(function, context)
    except onnx.checker.ValidationError as error:
        message = first_line(str(error), None)
        per_node = _node_diagnostics(nodes, set(function.input), context, functions)
        found += per_node or [Diagnostic("error", _node_named_in(message, nodes), message)]
    return found


def _node_named_in(message: str, nodes: Nodes) -> str | None:
    names = {node.name for node in nodes}
    for pattern in (_NODE_IN_MESSAGE, _NODE_IN_CHECKER_MESSAGE):
        for match in pattern.finditer(message):
            candidate: str = next(group for group in match.groups() if group is not None)
            for part in (candidate, *candidate.split(",")):
                cleaned = part.strip().strip("\"'")
                if cleaned in names:
                    return cleaned
    return None
