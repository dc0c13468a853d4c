"""Element types of every tensor of a model, including where ONNX shape inference is blind.

ONNX shape inference stops at operators it does not know (onnxruntime contrib ops of a fused
BERT) and never types the inside of model-local functions. The transforms need a dtype for
every tensor, so this module propagates dtypes node by node: declared types first, then rules
for operators whose output type comes from an attribute (Cast, Constant, ...), then the
operator schema's type constraints (`T` bound by the inputs), recursing into subgraphs and
into function bodies with the dtypes of each call site.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import onnx_ir as ir

from nsdl_jupyter.ops import OpSchemaInfo, UnknownOperatorError, get_schema

FunctionId = tuple[str, str, str]
DtypeMap = dict[ir.Value, ir.DataType | None]

_TYPE_STRINGS = {
    "float": ir.DataType.FLOAT,
    "float16": ir.DataType.FLOAT16,
    "bfloat16": ir.DataType.BFLOAT16,
    "double": ir.DataType.DOUBLE,
    "int8": ir.DataType.INT8,
    "int16": ir.DataType.INT16,
    "int32": ir.DataType.INT32,
    "int64": ir.DataType.INT64,
    "uint8": ir.DataType.UINT8,
    "uint16": ir.DataType.UINT16,
    "uint32": ir.DataType.UINT32,
    "uint64": ir.DataType.UINT64,
    "bool": ir.DataType.BOOL,
    "string": ir.DataType.STRING,
    "complex64": ir.DataType.COMPLEX64,
    "complex128": ir.DataType.COMPLEX128,
}


def parse_tensor_type(type_str: str) -> ir.DataType | None:
    """``tensor(float16)`` -> FLOAT16; sequences, maps and unknown names -> None."""
    if not (type_str.startswith("tensor(") and type_str.endswith(")")):
        return None
    return _TYPE_STRINGS.get(type_str[len("tensor(") : -1])


def tensor_dtype(value: ir.Value) -> ir.DataType | None:
    """The element type of a tensor value; None for sequences, maps, optionals or unknown."""
    if isinstance(value.type, ir.TensorType):
        return value.type.dtype
    if value.type is None and value.const_value is not None:
        return value.const_value.dtype
    return None


def node_opset(node: ir.Node, imports: Mapping[str, int]) -> int | None:
    if node.version is not None:
        return node.version
    domain = "" if node.domain == "ai.onnx" else node.domain
    return imports.get(domain)


def node_schema(node: ir.Node, imports: Mapping[str, int]) -> OpSchemaInfo | None:
    """The schema of a node for its opset, None for unknown operators and local functions."""
    opset = node_opset(node, imports)
    if opset is None:
        return None
    try:
        return get_schema(node.op_type, node.domain, opset, allow_deprecated=True)
    except UnknownOperatorError:
        return None


def formal_index(schema: OpSchemaInfo, index: int, outputs: bool = False) -> int | None:
    """Which formal parameter an actual input (or output) index maps to (variadic last)."""
    formals = schema.outputs if outputs else schema.inputs
    if not formals:
        return None
    if index < len(formals):
        return index
    if formals[-1].option == "variadic":
        return len(formals) - 1
    return None


def attribute_dtype(attr: ir.Attr) -> ir.DataType | None:
    """The dtype a Constant-like attribute produces."""
    if attr.type == ir.AttributeType.TENSOR:
        # a reference (`value=@t` in a function body) has no tensor until the call
        return None if attr.is_ref() else attr.as_tensor().dtype
    return {
        ir.AttributeType.FLOAT: ir.DataType.FLOAT,
        ir.AttributeType.FLOATS: ir.DataType.FLOAT,
        ir.AttributeType.INT: ir.DataType.INT64,
        ir.AttributeType.INTS: ir.DataType.INT64,
        ir.AttributeType.STRING: ir.DataType.STRING,
        ir.AttributeType.STRINGS: ir.DataType.STRING,
    }.get(attr.type)


def _int_attr(node: ir.Node, name: str) -> int | None:
    attr = node.attributes.get(name)
    if attr is None or attr.type != ir.AttributeType.INT:
        return None
    return attr.as_int()


@dataclass
class DtypeInference:
    """Dtypes of all values of a model (main graph, subgraphs and function bodies).

    `dtypes` maps each value to its dtype (None when it cannot be told). `call_signatures`
    records, per local function, the input dtypes seen at its call sites.
    """

    model: ir.Model
    dtypes: DtypeMap = field(default_factory=dict)
    call_signatures: dict[FunctionId, set[tuple[ir.DataType | None, ...]]] = field(
        default_factory=dict
    )
    _function_outputs: dict[
        tuple[FunctionId, tuple[ir.DataType | None, ...]], list[ir.DataType | None]
    ] = field(default_factory=dict)
    _active: set[FunctionId] = field(default_factory=set)

    def run(self) -> DtypeInference:
        graph = self.model.graph
        for value in [*graph.inputs, *graph.initializers.values()]:
            self.dtypes[value] = tensor_dtype(value)
        self.infer_nodes(graph, graph.opset_imports)
        return self

    def of(self, value: ir.Value | None) -> ir.DataType | None:
        if value is None:
            return None
        if value in self.dtypes:
            return self.dtypes[value]
        return tensor_dtype(value)

    def infer_nodes(self, nodes: Iterable[ir.Node], imports: Mapping[str, int]) -> None:
        for node in nodes:
            computed = self.output_dtypes(node, imports)
            for value, dtype in zip(node.outputs, computed, strict=False):
                declared = tensor_dtype(value)
                self.dtypes[value] = declared if declared is not None else dtype

    def function_body(
        self, function: ir.Function, inputs: Sequence[ir.DataType | None]
    ) -> list[ir.DataType | None]:
        """Type the body of `function` for one call signature; returns its output dtypes."""
        key = (function.identifier(), tuple(inputs))
        if key in self._function_outputs:
            return self._function_outputs[key]
        if function.identifier() in self._active:
            return [None] * len(function.outputs)  # recursive functions: give up
        self._active.add(function.identifier())
        try:
            for value, dtype in zip(function.inputs, inputs, strict=False):
                self.dtypes[value] = dtype
            self.infer_nodes(function, function.opset_imports)
            result = [self.of(value) for value in function.outputs]
        finally:
            self._active.discard(function.identifier())
        self._function_outputs[key] = result
        return result

    def output_dtypes(self, node: ir.Node, imports: Mapping[str, int]) -> list[ir.DataType | None]:
        inputs = [self.of(value) for value in node.inputs]
        special = self._special(node, inputs, imports)
        if special is not None:
            return special
        function = self.model.functions.get(node.op_identifier())
        if function is not None:
            self.call_signatures.setdefault(function.identifier(), set()).add(tuple(inputs))
            return self.function_body(function, inputs)
        schema = node_schema(node, imports)
        if schema is None:
            return [None] * len(node.outputs)
        return schema_output_dtypes(schema, inputs, len(node.outputs))

    def _special(
        self,
        node: ir.Node,
        inputs: list[ir.DataType | None],
        imports: Mapping[str, int],
    ) -> list[ir.DataType | None] | None:
        if node.domain not in ("", "ai.onnx"):
            return None
        op = node.op_type
        attrs = node.attributes
        if op == "Cast":
            to = _int_attr(node, "to")
            return [ir.DataType(to) if to is not None else None]
        if op == "CastLike":
            return [inputs[1] if len(inputs) > 1 else None]
        if op == "Constant":
            for attr in attrs.values():
                return [attribute_dtype(attr)]
            return [None]
        if op == "ConstantOfShape":
            value = attrs.get("value")
            return [attribute_dtype(value) if value is not None else ir.DataType.FLOAT]
        if op in ("Shape", "Size"):
            return [ir.DataType.INT64]
        if op in ("RandomNormal", "RandomUniform"):
            dtype = _int_attr(node, "dtype")
            return [ir.DataType(dtype) if dtype is not None else ir.DataType.FLOAT]
        if op in ("RandomNormalLike", "RandomUniformLike", "EyeLike", "Bernoulli"):
            dtype = _int_attr(node, "dtype")
            return [ir.DataType(dtype) if dtype is not None else (inputs[0] if inputs else None)]
        if op == "Multinomial":
            dtype = _int_attr(node, "dtype")
            return [ir.DataType(dtype) if dtype is not None else ir.DataType.INT32]
        if op == "QuantizeLinear":
            if len(inputs) > 2 and inputs[2] is not None:
                return [inputs[2]]
            dtype = _int_attr(node, "output_dtype")
            return [ir.DataType(dtype) if dtype else ir.DataType.UINT8]
        if op in ("If", "Loop", "Scan"):
            return self._control_flow(node, inputs, imports)
        return None

    def _control_flow(
        self, node: ir.Node, inputs: list[ir.DataType | None], imports: Mapping[str, int]
    ) -> list[ir.DataType | None]:
        if node.op_type == "If":
            results: list[ir.DataType | None] = [None] * len(node.outputs)
            for branch in ("then_branch", "else_branch"):
                attr = node.attributes.get(branch)
                if attr is None:
                    continue
                graph = attr.as_graph()
                self.infer_nodes(graph, imports)
                for i, value in enumerate(graph.outputs[: len(results)]):
                    results[i] = results[i] or self.of(value)
            return results
        attr = node.attributes.get("body")
        if attr is None:
            return [None] * len(node.outputs)
        body = attr.as_graph()
        if node.op_type == "Loop":
            # body inputs: iteration number, condition, loop-carried values (= node inputs 2..)
            formal_types = [ir.DataType.INT64, ir.DataType.BOOL, *inputs[2:]]
            outputs = body.outputs[1:]
        else:
            formal_types = list(inputs)  # Scan: state values then scan inputs (sliced)
            outputs = list(body.outputs)
        for value, dtype in zip(body.inputs, formal_types, strict=False):
            declared = tensor_dtype(value)
            self.dtypes[value] = declared if declared is not None else dtype
        self.infer_nodes(body, imports)
        return [self.of(value) for value in outputs][: len(node.outputs)]


def schema_output_dtypes(
    schema: OpSchemaInfo, inputs: Sequence[ir.DataType | None], count: int
) -> list[ir.DataType | None]:
    """Output dtypes from type constraints: a parameter `T` takes the dtype of its inputs."""
    bound: dict[str, ir.DataType] = {}
    for index, dtype in enumerate(inputs):
        formal = formal_index(schema, index)
        if formal is None or dtype is None:
            continue
        type_str = schema.inputs[formal].type_str
        if type_str in schema.type_constraints:
            bound.setdefault(type_str, dtype)
    results: list[ir.DataType | None] = []
    for index in range(count):
        formal = formal_index(schema, index, outputs=True)
        if formal is None:
            results.append(None)
            continue
        type_str = schema.outputs[formal].type_str
        if type_str in bound:
            results.append(bound[type_str])
        elif type_str in schema.type_constraints:
            allowed = schema.type_constraints[type_str]
            results.append(parse_tensor_type(allowed[0]) if len(allowed) == 1 else None)
        else:
            results.append(parse_tensor_type(type_str))
    return results
