"""Extract part of a model as a standalone, valid model.

- `extract_subgraph`: the nodes between named tensors of the main graph.
- `extract_body`: the body of an If/Loop/Scan node (any graph attribute, also inside a
  local function); tensors it reads from enclosing graphs become inputs (or initializers
  when they are constant).
- `extract_function`: a model-local function, typed from one of its call sites (or from
  `input_types`), with attribute parameters resolved from that call site or the defaults.

Names are checked and every error says how to fix it before any work is done.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterable, Mapping, Sequence

import onnx_ir as ir

from nsdl_jupyter._errors import list_argument
from nsdl_jupyter._walk import nodes_in, subgraphs
from nsdl_jupyter.transforms._dtypes import DtypeInference, tensor_dtype
from nsdl_jupyter.transforms._measured_dims import checked_dim_sizes, measure_dims
from nsdl_jupyter.transforms._passes import TransformPass, register, transform_file
from nsdl_jupyter.transforms._shapes import infer_shapes, relate_dims
from nsdl_jupyter.transforms._status import TransformStatus
from nsdl_jupyter.transforms._working_copy import (
    ModelSource,
    TransformError,
    check_output_path,
    data_type,
)

TypeSpec = tuple["ir.DataType | str | int", Sequence["int | str | None"] | None]


def _close(name: str, names: Iterable[str]) -> str:
    matches = difflib.get_close_matches(name, list(names), n=3)
    return f" (did you mean {', '.join(map(repr, matches))}?)" if matches else ""


def _values_by_name(graph: ir.Graph) -> dict[str, ir.Value]:
    values: dict[str, ir.Value] = {}
    for value in [*graph.inputs, *graph.initializers.values()]:
        values[value.name or ""] = value
    for node in graph:
        for value in node.outputs:
            if value.name:
                values[value.name] = value
    return values


def _outer_references(graph: ir.Graph) -> list[ir.Value]:
    """Values used inside `graph` (at any depth) that are defined outside it."""
    defined: set[ir.Value] = set()
    found: dict[ir.Value, None] = {}

    def visit(current: ir.Graph) -> None:
        defined.update(current.inputs)
        defined.update(current.initializers.values())
        for node in current:
            for value in node.inputs:
                if value is not None and value not in defined:
                    found[value] = None
            for subgraph in subgraphs(node):
                visit(subgraph)
            defined.update(node.outputs)

    visit(graph)
    for value in graph.outputs:
        if value not in defined:
            found[value] = None
    return [value for value in found if value not in defined]


def _used_functions(model: ir.Model, graph: ir.Graph) -> dict[ir.OperatorIdentifier, ir.Function]:
    """Local functions called from `graph`, transitively."""
    used: dict[ir.OperatorIdentifier, ir.Function] = {}
    stack: list[Iterable[ir.Node]] = [nodes_in(graph)]
    while stack:
        for node in stack.pop():
            function = model.functions.get(node.op_identifier())
            if function is not None and node.op_identifier() not in used:
                used[node.op_identifier()] = function
                stack.append(nodes_in(function))
    return used


def _standalone(source: ir.Model, graph: ir.Graph, imports: Mapping[str, int]) -> ir.Model:
    imports = dict(imports)  # may be the very dict cleared below
    graph.opset_imports.clear()
    graph.opset_imports.update(imports)
    if "" not in graph.opset_imports and "" in source.graph.opset_imports:
        graph.opset_imports[""] = source.graph.opset_imports[""]
    return ir.Model(
        graph,
        ir_version=source.ir_version,
        producer_name="nsdl_jupyter",
        functions=list(_used_functions(source, graph).values()),
    )


def _finish(model: ir.Model, status: TransformStatus) -> ir.Model:
    """The extracted model typed, shape-inferred and described in `status`."""
    _fill_types(model)
    infer_shapes(model)
    untyped = [v.name for v in [*model.graph.inputs, *model.graph.outputs] if v.type is None]
    if untyped:
        raise TransformError(
            f"cannot tell the types of {untyped}: run shape inference on the source model or "
            "give the types (input_types=...)"
        )
    status.count("nodes", sum(1 for _ in nodes_in(model.graph)))
    status.count("inputs", len(model.graph.inputs))
    status.count("outputs", len(model.graph.outputs))
    status.count("initializers", len(model.graph.initializers))
    status.info(
        "inputs: " + ", ".join(v.name or "" for v in model.graph.inputs)
        if model.graph.inputs
        else "inputs: none"
    )
    status.info("outputs: " + ", ".join(v.name or "" for v in model.graph.outputs))
    return model


class _ExtractPass(TransformPass):
    """An extraction: a new model made of part of the source (checked on its own)."""

    replaces_model = True
    compare_with_source = False


def _fill_types(model: ir.Model) -> None:
    """Element types where onnx inference cannot reach (after contrib ops, in bodies)."""
    inference = DtypeInference(model).run()
    for value, dtype in inference.dtypes.items():
        if value.type is None and dtype is not None:
            value.type = ir.TensorType(dtype)


# ----------------------------------------------------------------- subgraph
def extract_subgraph(
    model: ModelSource,
    output: str | os.PathLike[str],
    inputs: Sequence[str] = (),
    outputs: Sequence[str] = (),
    *,
    dim_sizes: Mapping[str, int] | None = None,
    overwrite: bool = False,
) -> TransformStatus:
    """Write the part of the main graph that computes `outputs` from `inputs` as a model.

    `inputs` are tensor names where the cut is made (they become graph inputs); constant
    tensors (initializers) on the way are carried along. Every graph input an output depends
    on must be listed. With `dim_sizes` (a profile's sizes for the model's free input dims,
    others 1), cut tensors whose dims no inference can tell get the dims one run of the
    model at those sizes shows (static), so the part runs on random inputs.
    """
    if isinstance(inputs, str) or isinstance(outputs, str):
        raise TransformError("inputs and outputs take lists of tensor names, not a str")
    inputs, outputs = list_argument(inputs, "inputs"), list_argument(outputs, "outputs")
    if not outputs:
        raise TransformError("give at least one output tensor name (outputs=[...])")
    target = check_output_path(output)
    extract = ExtractSubgraphPass(inputs, outputs, dim_sizes=dim_sizes)
    return transform_file(extract, model, target, overwrite=overwrite)


@register("extract_subgraph", "the nodes between named tensors of the main graph, as a model")
class ExtractSubgraphPass(_ExtractPass):
    """The part of the main graph that computes `outputs` from `inputs` (open dims of the
    cut measured at `dim_sizes` when given: see `extract_subgraph`)."""

    operation = "extract_subgraph"

    def __init__(
        self,
        inputs: Sequence[str] = (),
        outputs: Sequence[str] = (),
        *,
        dim_sizes: Mapping[str, int] | None = None,
        status: TransformStatus | None = None,
    ) -> None:
        super().__init__(status=status)
        if isinstance(inputs, str) or isinstance(outputs, str):
            raise TransformError("inputs and outputs take lists of tensor names, not a str")
        if not outputs:
            raise TransformError("give at least one output tensor name (outputs=[...])")
        self.inputs, self.outputs = list(inputs), list(outputs)
        self.dim_sizes = checked_dim_sizes(dim_sizes) if dim_sizes is not None else None

    def apply(self, model: ir.Model) -> ir.Model:
        return _extract_subgraph(model, self.inputs, self.outputs, self.dim_sizes, self.status)


def _extract_subgraph(
    source: ir.Model,
    inputs: list[str],
    outputs: list[str],
    dim_sizes: Mapping[str, int] | None,
    status: TransformStatus,
) -> ir.Model:
    graph = source.graph
    by_name = _values_by_name(graph)
    for name in [*inputs, *outputs]:
        if name not in by_name:
            raise TransformError(
                f"no tensor named {name!r} in the main graph{_close(name, by_name)}"
            )
    cut = {by_name[name] for name in inputs}
    _check_bounded(graph, cut, [by_name[name] for name in outputs])
    infer_shapes(source)
    _fill_types(source)
    for name in inputs:
        if by_name[name].type is None:
            raise TransformError(
                f"the type of tensor {name!r} is unknown (shape inference cannot reach it): "
                "cut at a tensor whose type is known"
            )
    # the new inputs' dims in the source's own names, so the part is sized as the whole is
    cut_values = [by_name[name] for name in inputs]
    relate_dims(source, cut_values)
    if dim_sizes is not None:
        for value in measure_dims(source, cut_values, dim_sizes):
            status.info(f"{value.name}: dims {value.shape} measured in a run of the model")
    extracted = ir.convenience.extract(graph, list(inputs), list(outputs))
    assert isinstance(extracted, ir.Graph)
    extracted.name = f"{graph.name or 'graph'}_extract"
    return _finish(_standalone(source, extracted, graph.opset_imports), status)


def _check_bounded(graph: ir.Graph, cut: set[ir.Value], outputs: list[ir.Value]) -> None:
    """Every path from an output backwards must end at the cut or at a constant."""
    seen: set[ir.Value] = set()
    stack = list(outputs)
    while stack:
        value = stack.pop()
        if value in seen or value in cut:
            continue
        seen.add(value)
        if value.is_initializer() and not value.is_graph_input():
            continue
        producer = value.producer()
        if producer is None:
            raise TransformError(
                f"the outputs depend on graph input {value.name!r}, which is not among "
                f"inputs: add it to inputs (or cut after it)"
            )
        stack.extend(v for v in producer.inputs if v is not None)
        for subgraph in subgraphs(producer):
            stack.extend(_outer_references(subgraph))


_SHAPE_READERS = frozenset({"Shape", "Size"})  # read a tensor's shape, never its values


def carried_nodes(nodes: Iterable[ir.Node]) -> set[ir.Node]:
    """`nodes` plus the helpers they read from outside: Constant nodes, initializer aliases
    (Identity of a weight) and arithmetic on nothing but constants and tensor shapes, so
    that an extraction computes those inside and only real activations become its inputs
    (a Shape node comes along; the tensor it measures is then the input)."""
    chosen = set(nodes)
    helper: dict[ir.Node, bool] = {}

    def is_helper(node: ir.Node) -> bool:
        # iterative post-order: helper chains in real exports run hundreds of nodes deep
        stack = [node]
        while stack:
            current = stack[-1]
            if current in helper:
                stack.pop()
                continue
            pending = [
                p
                for p in _helper_producers(current)
                if p not in helper and p not in chosen and p is not current
            ]
            if pending:
                stack.extend(pending)
                continue
            stack.pop()
            helper[current] = _reads_only_constants(current, helper)
        return helper[node]

    carried = set(chosen)
    stack = [v for n in chosen for v in n.inputs if v is not None]
    while stack:
        value = stack.pop()
        producer = value.producer()
        if producer is None or producer in carried or producer.graph is not value.graph:
            continue
        if is_helper(producer):
            carried.add(producer)
            stack.extend(v for v in producer.inputs if v is not None)
    return carried


def _helper_producers(node: ir.Node) -> list[ir.Node]:
    """Producers whose helper status decides whether `node` is one."""
    if node.op_type in _SHAPE_READERS or not _plain(node):
        return []
    return [
        p
        for v in node.inputs
        if v is not None and not _is_constant_value(v)
        for p in [v.producer()]
        if p is not None
    ]


def _plain(node: ir.Node) -> bool:
    """A standard operator without subgraphs (a body may read anything)."""
    return node.domain in ("", "ai.onnx") and not any(True for _ in subgraphs(node))


def _is_constant_value(value: ir.Value) -> bool:
    return (value.is_initializer() and not value.is_graph_input()) or value.const_value is not None


def _reads_only_constants(node: ir.Node, helper: Mapping[ir.Node, bool]) -> bool:
    if not _plain(node):
        return False
    if node.op_type == "Constant" or node.op_type in _SHAPE_READERS:
        return True
    if not node.inputs:
        return False  # RandomNormal and kin: values each run, not constants
    for value in node.inputs:
        if value is None or _is_constant_value(value):
            continue
        producer = value.producer()
        if producer is None or not helper.get(producer, False):
            return False
    return True


# --------------------------------------------------------------------- body
def extract_body(
    model: ModelSource,
    output: str | os.PathLike[str],
    node: str = "",
    attribute: str = "body",
    *,
    overwrite: bool = False,
) -> TransformStatus:
    """Write the graph attribute `attribute` ("body", "then_branch", "else_branch") of the
    node named `node` (in any graph of the model, or in a local function's body: then typed
    from the function's call site) as a standalone model."""
    if not node:
        raise TransformError("give the name of the If/Loop/Scan node (node='...')")
    target = check_output_path(output)
    return transform_file(ExtractBodyPass(node, attribute), model, target, overwrite=overwrite)


@register("extract_body", "the body of an If/Loop/Scan node, as a model")
class ExtractBodyPass(_ExtractPass):
    """The graph attribute `attribute` of the node named `node` (in any graph)."""

    operation = "extract_body"

    def __init__(
        self, node: str = "", attribute: str = "body", *, status: TransformStatus | None = None
    ) -> None:
        super().__init__(status=status)
        if not node:
            raise TransformError("give the name of the If/Loop/Scan node (node='...')")
        self.node, self.attribute = node, attribute

    def apply(self, model: ir.Model) -> ir.Model:
        return _extract_body(model, self.node, self.attribute, self.status)


def _extract_body(source: ir.Model, node: str, attribute: str, status: TransformStatus) -> ir.Model:
    function = _function_holding(source, node)
    if function is not None:
        # first the function as a model, typed from a call site, so the tensors its body
        # reads from the function get types; then the body from that model
        status.info(f"{node} is in local function {function.domain}::{function.name}")
        spec = ExtractFunctionPass(
            function.name, domain=function.domain, overload=function.overload, status=status
        )
        source = _function_model(source, spec)
    owner = _find_node(source, node)
    graph_attrs = [
        name for name, attr in owner.attributes.items() if attr.type == ir.AttributeType.GRAPH
    ]
    if attribute not in graph_attrs:
        raise TransformError(
            f"node {node!r} ({owner.op_type}) has no graph attribute {attribute!r}; "
            f"its graph attributes are: {graph_attrs or 'none'}"
        )
    infer_shapes(source)
    _fill_types(source)
    body = owner.attributes[attribute].as_graph()
    _type_formal_inputs(owner, body)
    inner_nodes = set(nodes_in(body))
    for value in _outer_references(body):
        replacement = _detached_copy(value)
        users = [(user, index) for user, index in value.uses() if user in inner_nodes]
        for user, index in users:
            user.replace_input_with(index, replacement)
        for position, out in enumerate(body.outputs):
            if out is value:
                body.outputs[position] = replacement
        if replacement.const_value is not None:
            body.register_initializer(replacement)
            status.info(f"constant {value.name} from the enclosing graph became an initializer")
        else:
            body.inputs.append(replacement)
            status.info(f"{value.name} from the enclosing graph became an input")
    # detach the body from its node: the attribute now holds an empty graph
    owner.attributes[attribute] = ir.AttrGraph(attribute, ir.Graph([], [], nodes=[]))
    body.name = body.name or f"{node}_{attribute}"
    return _finish(_standalone(source, body, source.graph.opset_imports), status)


def _function_holding(model: ir.Model, name: str) -> ir.Function | None:
    """The local function whose body holds node `name` when the main graph has none."""
    if any(n.name == name for n in nodes_in(model.graph)):
        return None
    holding = [f for f in model.functions.values() if any(n.name == name for n in nodes_in(f))]
    if len(holding) > 1:
        keys = [f"{f.domain}::{f.name}" for f in holding]
        raise TransformError(
            f"functions {keys} all hold a node named {name!r}: extract the function first "
            "(extract_function), then the body from that model"
        )
    return holding[0] if holding else None


def _find_node(model: ir.Model, name: str) -> ir.Node:
    found = [n for n in nodes_in(model.graph) if n.name == name]
    if not found:
        graphs = [model.graph, *(f.graph for f in model.functions.values())]
        names = [n.name or "" for g in graphs for n in nodes_in(g)]
        raise TransformError(f"no node named {name!r} in the model{_close(name, names)}")
    if len(found) > 1:
        raise TransformError(
            f"{len(found)} nodes are named {name!r} (in different subgraphs): rename them first"
        )
    return found[0]


def _detached_copy(value: ir.Value) -> ir.Value:
    """A fresh value standing for `value`; constant when `value` is an initializer or the
    output of a Constant node."""
    from nsdl_jupyter.transforms._sanitize import constant_value

    const = value.const_value if value.is_initializer() and not value.is_graph_input() else None
    producer = value.producer()
    if const is None and producer is not None and producer.op_type == "Constant":
        array = constant_value(producer)
        const = ir.tensor(array, name=value.name) if array is not None else None
    return ir.Value(
        name=value.name,
        type=value.type,
        shape=value.shape.copy() if value.shape is not None else None,
        const_value=const,
    )


def _type_formal_inputs(owner: ir.Node, body: ir.Graph) -> None:
    """Loop/Scan bodies often leave their formal inputs untyped: type them from the node."""
    if owner.op_type == "Loop":
        sources: list[tuple[ir.DataType | None, ir.Shape | None]] = [
            (ir.DataType.INT64, ir.Shape([])),
            (ir.DataType.BOOL, ir.Shape([])),
        ]
        sources += [
            (tensor_dtype(v) if v is not None else None, v.shape if v is not None else None)
            for v in owner.inputs[2:]
        ]
    elif owner.op_type == "Scan":
        sources = [(tensor_dtype(v) if v is not None else None, None) for v in owner.inputs]
    else:
        return
    for value, (dtype, shape) in zip(body.inputs, sources, strict=False):
        if value.type is None and dtype is not None:
            value.type = ir.TensorType(dtype)
        if value.shape is None and shape is not None:
            value.shape = shape.copy()


# ----------------------------------------------------------------- function
def extract_function(
    model: ModelSource,
    output: str | os.PathLike[str],
    name: str = "",
    *,
    domain: str | None = None,
    overload: str = "",
    input_types: Mapping[str, TypeSpec] | None = None,
    overwrite: bool = False,
) -> TransformStatus:
    """Write the model-local function `domain::name` as a standalone model.

    Input types come from the first call site, or from `input_types` ({input: (dtype,
    shape)}), which wins. Attribute parameters take the call site's values, else defaults.
    """
    if not name:
        raise TransformError("give the function's name (name='...')")
    target = check_output_path(output)
    extract = ExtractFunctionPass(name, domain=domain, overload=overload, input_types=input_types)
    return transform_file(extract, model, target, overwrite=overwrite)


@register("extract_function", "a model-local function, as a model")
class ExtractFunctionPass(_ExtractPass):
    """The model-local function `domain::name`, typed from a call site or `input_types`."""

    operation = "extract_function"

    def __init__(
        self,
        name: str = "",
        *,
        domain: str | None = None,
        overload: str = "",
        input_types: Mapping[str, TypeSpec] | None = None,
        status: TransformStatus | None = None,
    ) -> None:
        super().__init__(status=status)
        if not name:
            raise TransformError("give the function's name (name='...')")
        self.name, self.domain, self.overload = name, domain, overload
        self.input_types = dict(input_types or {})

    def apply(self, model: ir.Model) -> ir.Model:
        return _extract_function(model, self)


def _extract_function(source: ir.Model, spec: ExtractFunctionPass) -> ir.Model:
    return _finish(_function_model(source, spec), spec.status)


def _function_model(source: ir.Model, spec: ExtractFunctionPass) -> ir.Model:
    """The function `spec` names as the main graph of a model, typed, not yet checked."""
    name, given, status = spec.name, spec.input_types, spec.status
    function = _find_function(source, name, spec.domain, spec.overload)
    infer_shapes(source)
    _fill_types(source)
    call = next(
        (n for n in nodes_in(source.graph) if n.op_identifier() == function.identifier()),
        None,
    )
    formal_names = [v.name or "" for v in function.inputs]
    unknown = sorted(set(given) - set(formal_names))
    if unknown:
        raise TransformError(
            f"input_types names {unknown} are not inputs of {name}: its inputs are {formal_names}"
        )
    for index, formal in enumerate(function.inputs):
        if formal.name in given:
            dtype, shape = given[formal.name or ""]
            formal.type = ir.TensorType(data_type(dtype))
            formal.shape = ir.Shape(list(shape)) if shape is not None else None
        elif call is not None and index < len(call.inputs) and call.inputs[index] is not None:
            actual = call.inputs[index]
            assert actual is not None
            formal.type = actual.type
            formal.shape = actual.shape.copy() if actual.shape is not None else None
        else:
            raise TransformError(
                f"function {name} has no call site that gives the type of input "
                f"{formal.name!r}: pass input_types={{{formal.name!r}: (dtype, shape)}}"
            )
    if call is not None:
        status.info(f"types and attributes taken from call site {call.name}")
    _resolve_attribute_parameters(function, call)
    graph = function.graph
    del source.functions[function.identifier()]
    graph.name = function.name
    return _standalone(source, graph, function.opset_imports)


def _find_function(model: ir.Model, name: str, domain: str | None, overload: str) -> ir.Function:
    matches = [
        f
        for f in model.functions.values()
        if f.name == name and (domain is None or f.domain == domain) and f.overload == overload
    ]
    if not matches:
        available = [f"{f.domain}::{f.name}" for f in model.functions.values()]
        raise TransformError(
            f"no local function {name!r}"
            + (f" in domain {domain!r}" if domain is not None else "")
            + f"; the model has: {available or 'none'}"
        )
    if len(matches) > 1:
        domains = sorted(f.domain for f in matches)
        raise TransformError(f"function {name!r} exists in domains {domains}: give domain=...")
    return matches[0]


def _resolve_attribute_parameters(function: ir.Function, call: ir.Node | None) -> None:
    """Replace `ref_attr_name` references in the body with concrete values."""
    defaults = dict(function.attributes)
    given = dict(call.attributes) if call is not None else {}
    for node in nodes_in(function):
        for attr_name, attr in list(node.attributes.items()):
            if not attr.is_ref() or attr.ref_attr_name is None:
                continue
            source = given.get(attr.ref_attr_name) or defaults.get(attr.ref_attr_name)
            if source is None or source.is_ref() or source.value is None:
                del node.attributes[attr_name]
                continue
            node.attributes[attr_name] = ir.Attr(attr_name, source.type, source.value)
