"""Work per ONNX node: FLOPs and bytes moved, from the shapes and dtypes of the model.

`node_work(model, inputs)` gives one row per node of the main graph. Counting conventions:
- FLOPs, not multiply-accumulates: one multiply-add is 2 FLOPs (a Conv or MatMul of M MACs is
  2·M FLOPs; nvidia's roofline charts and ncu count the same way, TREx's "MACs" are half).
- Elementwise ops count FLOPs per output element from `ELEMENTWISE_FLOPS` (one per arithmetic
  step; a transcendental function such as exp or erf counts one, as the GPU's special-function
  unit evaluates it in one instruction); Softmax 5 per element (max, subtract, exp, sum,
  divide), LayerNormalization 8, RMS norms 4, BatchNormalization 2 (a folded scale and shift).
- Bytes are the smallest traffic the node needs: every distinct tensor it reads once, every
  tensor it writes once. Views (Reshape, Squeeze, Unsqueeze, Flatten, Identity, Dropout at
  inference) move no data: 0 bytes; Shape, Size and Constant neither. Gather and Slice read
  only the rows they keep. Data movement (Transpose, Concat, Gather, Slice, Cast, Pad...) is
  0 FLOPs.
- Weights (initializers and Constant outputs) are counted once, on the first node that reads
  them, in `weight_bytes` (and in `bytes_read`); a later reader notes it.
- Dynamic dims come from `inputs`; a free dim nobody sets is 1, as the profiler feeds it.
- What cannot be counted says so in `status`, with NaN, never a silent zero: "unknown op"
  (FLOPs NaN; bytes still from the shapes), "unknown shape", "not counted (body)" (If, Loop,
  Scan and calls of the model's local functions: their bodies are not summed).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx
import onnx_ir as ir
import pandas as pd

from nsdl_jupyter._gc import gc_paused
from nsdl_jupyter._symbolic_shapes import symbolic_dims
from nsdl_jupyter.profiling._errors import ProfileSettingsError
from nsdl_jupyter.profiling.analysis._graph_facts import (
    GraphFacts,
    NodeFacts,
    StatedDims,
    Value,
    graph_facts,
)

WORK_COLUMNS = [
    "name",
    "op_type",
    "domain",
    "kind",
    "flops",
    "bytes_read",
    "bytes_written",
    "bytes",
    "weight_bytes",
    "intensity",
    "dtype",
    "status",
    "note",
]

Dims = tuple[int | None, ...]


class _Tensor:
    """Element type and dims of a value (None: unknown), with its size worked out once."""

    __slots__ = ("dims", "dtype", "known", "nbytes", "size")

    def __init__(self, dtype: ir.DataType | None, dims: Dims | None) -> None:
        self.dtype = dtype
        self.dims = dims
        self.known = dims is not None and None not in dims
        self.size = math.prod(dims) if self.known and dims is not None else 0  # type: ignore[arg-type]
        self.nbytes = (
            self.size * float(dtype.itemsize)
            if self.known and dtype is not None and dtype != ir.DataType.STRING
            else math.nan
        )

    def __repr__(self) -> str:
        return f"_Tensor({self.dtype}, {self.dims})"


_UNKNOWN = _Tensor(None, None)

# FLOPs per output element of elementwise ops (see the module docstring).
ELEMENTWISE_FLOPS: dict[str, float] = {
    **dict.fromkeys(
        ["Add", "Sub", "Mul", "Div", "Pow", "Max", "Min", "Mod", "Mean", "Sum", "PRelu"], 1.0
    ),
    **dict.fromkeys(
        ["Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "And", "Or", "Xor"], 1.0
    ),
    **dict.fromkeys(["BitShift", "BitwiseAnd", "BitwiseOr", "BitwiseXor", "BitwiseNot"], 1.0),
    **dict.fromkeys(["Relu", "Neg", "Abs", "Sign", "Not", "Floor", "Ceil", "Round"], 1.0),
    **dict.fromkeys(["Exp", "Log", "Sqrt", "Reciprocal", "Erf", "Tanh", "Sin", "Cos"], 1.0),
    **dict.fromkeys(["Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh"], 1.0),
    **dict.fromkeys(["Atanh", "IsNaN", "IsInf", "Where", "Clip", "LeakyRelu", "Shrink"], 1.0),
    "Sigmoid": 3.0,  # exp, add, divide
    "HardSigmoid": 2.0,
    "HardSwish": 3.0,
    "Elu": 3.0,
    "Selu": 4.0,
    "Celu": 4.0,
    "ThresholdedRelu": 1.0,
    "Softplus": 3.0,
    "Softsign": 3.0,
    "Mish": 5.0,
    "Gelu": 5.0,  # x * 0.5 * (1 + erf(x / sqrt(2)))
    "FastGelu": 8.0,  # the tanh approximation
    "BiasGelu": 6.0,
    "QuickGelu": 4.0,
    "BiasAdd": 2.0,
    "Swish": 4.0,
    "QuantizeLinear": 2.0,
    "DequantizeLinear": 2.0,
    "DynamicQuantizeLinear": 4.0,
    "RotaryEmbedding": 3.0,
    "BiasSplitGelu": 6.0,
}
# FLOPs per element of normalisations (over the normalised tensor).
_NORM_FLOPS = {
    "BatchNormalization": 2.0,
    "LayerNormalization": 8.0,
    "InstanceNormalization": 8.0,
    "GroupNormalization": 8.0,
    "MeanVarianceNormalization": 7.0,
    "LpNormalization": 3.0,
    "SimplifiedLayerNormalization": 4.0,
    "RMSNormalization": 4.0,
    "SkipLayerNormalization": 9.0,  # + the skip add
    "SkipSimplifiedLayerNormalization": 5.0,
    "SkipGroupNorm": 9.0,
    "EmbedLayerNormalization": 10.0,  # + word, position (and segment) embedding adds
    "LRN": 5.0,
}
_REDUCE_FLOPS = {
    **dict.fromkeys(["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd"], 1.0),
    **dict.fromkeys(["ReduceL1", "ArgMax", "ArgMin", "GlobalAveragePool", "GlobalMaxPool"], 1.0),
    **dict.fromkeys(["ReduceL2", "ReduceSumSquare", "ReduceLogSum", "GlobalLpPool"], 2.0),
    "ReduceLogSumExp": 3.0,
    "CumSum": 1.0,
}
_SOFTMAX_FLOPS = {"Softmax": 5.0, "LogSoftmax": 5.0, "Hardmax": 2.0, "BiasSoftmax": 6.0}
# No data moves: the output is the input under another shape (or a constant, or metadata).
_VIEWS = frozenset(
    {"Reshape", "Squeeze", "Unsqueeze", "Flatten", "Identity", "Dropout", "Shape", "Size"}
)
_DATA_MOVEMENT = frozenset(
    {
        "Transpose",
        "Concat",
        "Split",
        "Expand",
        "Tile",
        "Pad",
        "Cast",
        "CastLike",
        "DepthToSpace",
        "SpaceToDepth",
        "ScatterND",
        "ScatterElements",
        "Scatter",
        "OneHot",
        "Trilu",
        "ReverseSequence",
        "Compress",
        "NonZero",
        "Memcpy",
        "MemcpyFromHost",
        "MemcpyToHost",
        "TopK",
        "Unique",
        "SplitToSequence",
        "ConcatFromSequence",
        "MaxUnpool",
        "GridSample",
        "RoiAlign",
    }
)
# Read only the part of their data input they output (plus their indices).
_PARTIAL_READS = frozenset({"Gather", "GatherElements", "GatherND", "Slice"})
# Write their output from (tiny) shape inputs only.
_GENERATORS = frozenset(
    {"ConstantOfShape", "Range", "EyeLike", "RandomNormal", "RandomUniform", "Multinomial"}
    | {"RandomNormalLike", "RandomUniformLike", "Bernoulli"}
)
_CONTROL_FLOW = frozenset({"If", "Loop", "Scan", "SequenceMap"})
_CONV = frozenset({"Conv", "ConvInteger", "QLinearConv", "NhwcConv", "FusedConv"})
_MATMUL = frozenset({"MatMul", "MatMulInteger", "QLinearMatMul", "FusedMatMul"})
_DTYPE_NAMES = {ir.DataType.FLOAT: "float32", ir.DataType.DOUBLE: "float64"}


def dtype_name(dtype: ir.DataType | None) -> str:
    """numpy-style name of an ONNX element type: float32, float16, bfloat16, int8..."""
    if dtype is None:
        return ""
    return _DTYPE_NAMES.get(dtype, dtype.name.lower())


@dataclass
class _Row:
    kind: str
    flops: float
    dtype: str = ""
    status: str = "ok"
    notes: list[str] = field(default_factory=list)


class _UnknownShape(Exception):  # noqa: N818 - a signal inside this module, never raised out
    """A tensor a formula needs has no static shape."""


@dataclass
class _Node:
    node: NodeFacts
    ins: list[_Tensor | None]  # None: an optional input left out
    outs: list[_Tensor]
    read: list[_Tensor]  # the distinct tensors read, in `read_names` order

    def input(self, index: int) -> _Tensor:
        tensor = self.ins[index] if index < len(self.ins) else None
        if tensor is None or not tensor.known:
            raise _UnknownShape(index)
        return tensor

    def has_input(self, index: int) -> bool:
        return index < len(self.ins) and self.ins[index] is not None

    def dims(self, index: int) -> tuple[int, ...]:
        return tuple(int(d or 0) for d in self.input(index).dims or ())

    @property
    def out(self) -> _Tensor:
        if not self.outs or not self.outs[0].known:
            raise _UnknownShape("output")
        return self.outs[0]

    def attr_int(self, name: str, default: int) -> int:
        return self.node.attr_int(name, default)

    def attr_ints(self, name: str) -> list[int]:
        return self.node.attr_ints(name)

    def attr_float(self, name: str, default: float) -> float:
        return self.node.attr_float(name, default)


# ---- FLOP formulas -------------------------------------------------------------------------


def _conv(n: _Node) -> float:
    """2 · output elements · (C_in/groups · kernel) from the weight [C_out, C_in/g, k...]; the
    strides, pads and dilations are in the output shape; + one add per output for a bias."""
    weight_index = 3 if n.node.op_type == "QLinearConv" else 1
    weight = n.dims(weight_index)
    out = n.out.size
    flops = 2.0 * out * math.prod(weight[1:])
    bias_index = 8 if n.node.op_type == "QLinearConv" else 2
    if n.node.op_type != "ConvInteger" and n.has_input(bias_index):
        flops += out
    if n.node.op_type == "FusedConv":  # Conv + activation (and optional Z add)
        flops += out * (2 if n.has_input(3) else 1)
    return flops


def _conv_transpose(n: _Node) -> float:
    """Each input element scatters into C_out/g · kernel outputs: 2 · input elements ·
    prod(weight[1:]) for a weight [C_in, C_out/g, k...]; + one add per output for a bias."""
    weight = n.dims(1)
    flops = 2.0 * n.input(0).size * math.prod(weight[1:])
    if n.has_input(2):
        flops += n.out.size
    return flops


def _matmul(n: _Node) -> float:
    """2 · output elements · K (broadcast batch dims are in the output shape)."""
    op = n.node.op_type
    a = n.dims(0)
    k = a[-2] if op == "FusedMatMul" and n.attr_int("transA", 0) and len(a) > 1 else a[-1]
    flops = 2.0 * n.out.size * k
    if op == "FusedMatMul" and n.attr_float("alpha", 1.0) != 1.0:
        flops += n.out.size
    return flops


def _gemm(n: _Node) -> float:
    """2·M·N·K (K from A and transA), + an add per output for C, + a multiply per output for
    alpha != 1 and for beta != 1."""
    a = n.dims(0)
    k = a[0] if n.attr_int("transA", 0) else a[-1]
    out = n.out.size
    flops = 2.0 * out * k
    if n.attr_float("alpha", 1.0) != 1.0:
        flops += out
    if n.has_input(2):
        flops += out * (2 if n.attr_float("beta", 1.0) != 1.0 else 1)
    return flops


def _matmul_nbits(n: _Node) -> float:
    return 2.0 * n.out.size * n.attr_int("K", n.dims(0)[-1])


def _attention_core(  # noqa: PLR0917 - the sizes of one attention, in formula order
    batch_rows: float, heads: int, q_len: int, kv_len: int, qk: int, v: int
) -> float:
    """Scores (2·S·L·d_qk), softmax (5 per score) and context (2·S·L·d_v) over all heads;
    `batch_rows` is the batch size, `qk`/`v` the summed head sizes (heads · head size)."""
    scores = q_len * kv_len
    return batch_rows * (2.0 * scores * qk + 5.0 * scores * heads + 2.0 * scores * v)


def _ms_attention(n: _Node) -> float:
    """com.microsoft Attention: the packed QKV projection (input [B,S,Hin] x weights [Hin,
    Hq+Hk+Hv] + bias), then scaled dot-product attention over past + current keys."""
    batch, seq, hidden_in = n.dims(0)
    cols = n.dims(1)[-1]
    sizes = n.attr_ints("qkv_hidden_sizes") or [cols // 3] * 3
    heads = n.attr_int("num_heads", 1)
    past = n.dims(4)[3] if n.has_input(4) else 0
    projection = 2.0 * batch * seq * hidden_in * cols + (
        batch * seq * cols if n.has_input(2) else 0
    )
    return projection + _attention_core(batch, heads, seq, seq + past, sizes[1], sizes[2])


def _mha(n: _Node) -> float:
    """com.microsoft MultiHeadAttention: query [B,S,D]; key/value [B,L,D] or [B,N,L,H], or
    packed in the query ([B,S,N,3,H]); past keys [B,N,P,H] add P to L."""
    heads = n.attr_int("num_heads", 1)
    query = n.dims(0)
    if len(query) == 5:  # packed QKV
        batch, seq, _, _, head = query
        qk = v = heads * head
        kv_len = seq
    else:
        batch, seq, qk = query[0], query[1], query[-1]
        key = n.dims(1) if n.has_input(1) else query
        value = n.dims(2) if n.has_input(2) else key
        kv_len = key[2] if len(key) == 4 else key[1]
        v = value[1] * value[3] if len(value) == 4 else value[-1]
    if n.has_input(6):
        kv_len += n.dims(6)[2]
    flops = _attention_core(batch, heads, seq, kv_len, qk, v)
    if n.has_input(3):  # bias of q, k and v
        flops += batch * seq * (2 * qk + v)
    return flops


def _gqa(n: _Node) -> float:
    """com.microsoft GroupQueryAttention: query [B,S,D] attends to past ([B,Nkv,P,H]) and
    current keys; kv heads shared by groups of query heads (same FLOPs per query head)."""
    batch, seq, hidden = n.dims(0)
    heads = n.attr_int("num_heads", 1)
    past = n.dims(3)[2] if n.has_input(3) else 0
    return _attention_core(batch, heads, seq, seq + past, hidden, hidden)


def _onnx_attention(n: _Node) -> float:
    """ONNX Attention (opset 23): Q [B,Nq,S,H] or [B,S,Nq·H]; K, V likewise with L keys."""
    q, k, v = n.dims(0), n.dims(1), n.dims(2)
    if len(q) == 4:
        batch, heads, seq, head = q
        qk = heads * head
        kv_len, v_size = k[2], heads * v[3]
    else:
        batch, seq, qk = q
        heads = n.attr_int("q_num_heads", 1)
        kv_heads = max(1, n.attr_int("kv_num_heads", heads))
        kv_len, v_size = k[1], v[2] * heads // kv_heads
    if n.has_input(4):
        kv_len += n.dims(4)[2]
    return _attention_core(batch, heads, seq, kv_len, qk, v_size)


def _einsum(n: _Node) -> float:
    """2 · product of every index's size for two operands (the loop nest of the contraction);
    one operand: its elements."""
    equation = (n.node.attr_string("equation") or "").replace(" ", "")
    if not equation:
        raise _UnknownShape("no equation")
    operands = equation.split("->")[0].split(",")
    if "..." in equation:
        raise _UnknownShape("ellipsis")
    sizes: dict[str, int] = {}
    for index, letters in enumerate(operands):
        for letter, size in zip(letters, n.dims(index), strict=False):
            sizes[letter] = max(sizes.get(letter, 1), size)
    if len(operands) == 1:
        return float(n.input(0).size)
    return 2.0 * (len(operands) - 1) * math.prod(sizes.values())


def _pool(n: _Node) -> float:
    """Output elements · kernel size (one compare or add per window element)."""
    kernel = n.attr_ints("kernel_shape")
    factor = 2.0 if n.node.op_type == "LpPool" else 1.0
    return factor * n.out.size * math.prod(kernel or [1])


def _elementwise(n: _Node) -> float:
    per = ELEMENTWISE_FLOPS[n.node.op_type]
    inputs = sum(1 for t in n.ins if t is not None)
    if n.node.op_type in ("Sum", "Mean", "Max", "Min") and inputs > 2:
        per *= inputs - 1
    return per * n.out.size


def _normalisation(n: _Node) -> float:
    flops = _NORM_FLOPS[n.node.op_type] * n.input(0).size
    if n.node.op_type.startswith("Skip") and n.has_input(4):
        flops += n.input(0).size  # bias
    return flops


def _reduction(n: _Node) -> float:
    return _REDUCE_FLOPS[n.node.op_type] * n.input(0).size


def _softmax(n: _Node) -> float:
    return _SOFTMAX_FLOPS[n.node.op_type] * n.input(0).size


def _resize(n: _Node) -> float:
    """Nearest: 0 FLOPs (a gather); linear: 3 per output per resized axis (two weights, one
    add); cubic: 8 per output per resized axis."""
    text = n.node.attr_string("mode") or "nearest"
    per_axis = {"nearest": 0.0, "linear": 3.0, "cubic": 8.0}.get(text, 3.0)
    src = n.dims(0)
    dst = n.out.dims or ()
    axes = sum(1 for a, b in zip(src, dst, strict=False) if a != b) or 1
    return per_axis * axes * n.out.size


_FLOPS: dict[str, tuple[str, Callable[[_Node], float]]] = {
    **dict.fromkeys(_CONV, ("conv", _conv)),
    "ConvTranspose": ("conv", _conv_transpose),
    **dict.fromkeys(_MATMUL, ("gemm", _matmul)),
    "Gemm": ("gemm", _gemm),
    "MatMulNBits": ("gemm", _matmul_nbits),
    "Attention": ("attention", _onnx_attention),
    "MultiHeadAttention": ("attention", _mha),
    "GroupQueryAttention": ("attention", _gqa),
    "Einsum": ("gemm", _einsum),
    **dict.fromkeys(["MaxPool", "AveragePool", "LpPool"], ("pooling", _pool)),
    **dict.fromkeys(
        ["GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool"], ("pooling", _reduction)
    ),
    **dict.fromkeys(ELEMENTWISE_FLOPS, ("elementwise", _elementwise)),
    **dict.fromkeys(_NORM_FLOPS, ("normalization", _normalisation)),
    **dict.fromkeys(
        set(_REDUCE_FLOPS) - {"GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool"},
        ("reduction", _reduction),
    ),
    **dict.fromkeys(_SOFTMAX_FLOPS, ("softmax", _softmax)),
    "Resize": ("data movement", _resize),
    "Upsample": ("data movement", _resize),
}
_MS_ATTENTION: dict[str, tuple[str, Callable[[_Node], float]]] = {
    "Attention": ("attention", _ms_attention)
}


# ---- the table -----------------------------------------------------------------------------


def node_work(model: Any, inputs: Mapping[str, Any] | None = None) -> pd.DataFrame:
    """FLOPs and bytes moved per node of the model's main graph, from shapes and dtypes.

    `model`: a path, an onnx.ModelProto, an onnx_ir.Model or a ModelDocument (never modified).
    `inputs`: graph input name -> shape (a sequence of ints), numpy array (its shape), or
    `{"shape": [...]}` (a profile report's `metadata["inputs"]`); a shape given replaces the
    model's, static dims included, and the other values' shapes are inferred again. A free
    dim not given is 1 (as the profiler feeds it). Counts are FLOPs, not MACs (a multiply-add
    is 2 FLOPs); see this module's docstring for the conventions.

    Columns: name, op_type, domain, kind (gemm, conv, attention, normalization, reduction,
    pooling, elementwise, softmax, data movement, view, control flow, unknown), flops,
    bytes_read, bytes_written, bytes (their sum), weight_bytes (weights first read here,
    included in bytes_read), intensity (FLOP/byte), dtype (of the first input), status ("ok",
    "unknown op", "unknown shape", "not counted (body)") and note. `attrs["inputs"]` holds the
    input shapes used.
    """
    return work_table(model, inputs).frame


@dataclass
class NodeWork:
    """`node_work`'s frame plus what a fused layer's border traffic needs: per node the
    tensors it reads and writes, and their bytes."""

    frame: pd.DataFrame
    reads: list[list[str]]
    writes: list[list[str]]
    tensor_bytes: dict[str, float]
    weights: frozenset[str]
    views: frozenset[str]  # names of nodes that move no data
    graph_inputs: tuple[str, ...] = ()  # fed by the host (not initializers)
    graph_outputs: tuple[str, ...] = ()


def work_table(model: Any, inputs: Mapping[str, Any] | None = None) -> NodeWork:
    """`node_work` with the tensor lists kept (for `roofline_table`)."""
    with gc_paused():  # a few objects per node, all kept to the end: collections find nothing
        return _work_table(graph_facts(model), inputs)


def _work_table(facts: GraphFacts, inputs: Mapping[str, Any] | None) -> NodeWork:
    shapes_used = _input_shapes(facts, inputs)
    tensors = _tensors(facts, shapes_used)
    weights = set(facts.initializers)
    weights.update(
        out
        for node in facts.nodes
        if node.op_type == "Constant" and node.domain in ("", "ai.onnx")
        for out in node.outputs
    )
    roots: dict[str, str] = {}  # a view of a weight (TorchScript's Identity) -> the weight
    seen_weights: dict[str, str] = {}
    columns: dict[str, list[Any]] = {c: [] for c in WORK_COLUMNS}
    reads: list[list[str]] = []
    writes: list[list[str]] = []
    views: set[str] = set()
    for node in facts.nodes:
        names = node.inputs
        ins = [None if name is None else tensors.get(name, _UNKNOWN) for name in names]
        outs = [tensors.get(name, _UNKNOWN) for name in node.outputs]
        read_names = list(dict.fromkeys(name for name in names if name is not None))
        n = _Node(node, ins, outs, [tensors.get(name, _UNKNOWN) for name in read_names])
        row = _count(n, facts.functions)
        written = [name for name in node.outputs if name]
        read, wrote, weight = _bytes(n, row, read_names, weights, seen_weights, roots)
        if row.kind == "view":
            views.add(node.name)
            source = names[0] if names else None
            if source is not None and source in weights:
                for out in written:
                    weights.add(out)
                    roots[out] = roots.get(source, source)
        total = read + wrote
        values = (
            node.name, node.op_type, node.domain, row.kind, row.flops, read, wrote, total,
            weight, row.flops / total if total > 0 else math.nan,
            row.dtype or _first_dtype(ins, outs), row.status, "; ".join(row.notes),
        )  # fmt: skip
        for column, value in zip(WORK_COLUMNS, values, strict=True):
            columns[column].append(value)
        reads.append(read_names)
        writes.append(written)
    frame = pd.DataFrame(columns, columns=WORK_COLUMNS)
    for column in ("flops", "bytes_read", "bytes_written", "bytes", "weight_bytes", "intensity"):
        frame[column] = frame[column].astype("float64")
    frame.attrs["inputs"] = {k: list(v) for k, v in shapes_used.items()}
    frame.attrs["units"] = "FLOPs (a multiply-add is 2), bytes"
    sizes = {name: t.nbytes for name, t in tensors.items()}
    return NodeWork(
        frame, reads, writes, sizes, frozenset(weights), frozenset(views),
        tuple(shapes_used), tuple(facts.outputs),
    )  # fmt: skip


def _first_dtype(ins: Sequence[_Tensor | None], outs: Sequence[_Tensor]) -> str:
    for tensor in [*ins, *outs]:
        if tensor is not None and tensor.dtype is not None:
            return dtype_name(tensor.dtype)
    return ""


def _count(n: _Node, functions: set[tuple[str, str]]) -> _Row:
    """The node's kind and FLOPs (NaN with a status when it cannot be counted)."""
    op, domain = n.node.op_type, n.node.domain
    if (domain, op) in functions:
        note = f"calls the local function {domain}:{op}; its body is not summed"
        return _Row("control flow", math.nan, status="not counted (body)", notes=[note])
    if op in _CONTROL_FLOW and domain in ("", "ai.onnx"):
        return _Row("control flow", math.nan, status="not counted (body)",
                    notes=[f"{op}: its subgraph bodies are not summed"])  # fmt: skip
    if op in _VIEWS or op == "Constant":
        note = "constant: no work at run time" if op == "Constant" else "view: no data moved"
        if op in ("Shape", "Size"):
            note = "reads only the shape: no data moved"
        row = _Row("view", 0.0, notes=[note])
        if op in ("Reshape", "Flatten") and n.ins and n.ins[0] is not None and n.outs:
            before, after = n.ins[0], n.outs[0]
            if before.known and after.known and before.size != after.size:
                row.status = "unknown shape"
                row.notes.append(
                    f"the model fixes this output's shape ({after.size} elements) but the input "
                    f"holds {before.size}: these inputs change a dim the model hard-codes, so "
                    "the nodes after it are counted at the model's own shapes"
                )
        return row
    if op in _DATA_MOVEMENT or op in _PARTIAL_READS or op in _GENERATORS:
        return _Row("data movement", 0.0)
    found: tuple[str, Callable[[_Node], float]] | None = None
    if domain == "com.microsoft":
        found = _MS_ATTENTION.get(op)
    found = found or _FLOPS.get(op)
    if found is None:
        note = f"no FLOP formula for {domain + ':' if domain else ''}{op}"
        return _Row("unknown", math.nan, status="unknown op", notes=[note])
    kind, formula = found
    try:
        flops = float(formula(n))
    except (_UnknownShape, KeyError, IndexError, ValueError) as why:
        return _Row(kind, math.nan, status="unknown shape",
                    notes=[f"no static shape for what {op} needs ({why})"])  # fmt: skip
    dtype = ""
    if op in ("MatMulInteger", "ConvInteger", "QLinearMatMul", "QLinearConv"):
        dtype = dtype_name(n.ins[0].dtype if n.ins and n.ins[0] is not None else None)
    return _Row(kind, flops, dtype=dtype)


def _bytes(  # noqa: PLR0917 - private, called once with the loop's state
    n: _Node,
    row: _Row,
    read_names: list[str],
    weights: set[str],
    seen: dict[str, str],
    roots: Mapping[str, str],
) -> tuple[float, float, float]:
    """(bytes read, bytes written, weight bytes first read here) of one node."""
    if row.kind == "view":
        return 0.0, 0.0, 0.0
    op = n.node.op_type
    written = sum(t.nbytes for t in n.outs)
    by_name = dict(zip(read_names, n.read, strict=True))
    if op in _GENERATORS:
        return 0.0, written, 0.0
    read = 0.0
    weight = 0.0
    for index, name in enumerate(read_names):
        size = by_name[name].nbytes
        if op in _PARTIAL_READS and index == 0:
            size = min(size, written)  # only the rows (or slice) kept
            if name in weights:
                weight += size
            read += size
            continue
        if name in weights:
            root = roots.get(name, name)
            first = seen.setdefault(root, n.node.name)
            if first != n.node.name:
                row.notes.append(f"weight {root} counted at {first}")
                continue
            weight += size
        read += size
    if (math.isnan(read) or math.isnan(written)) and row.status == "ok":
        row.status = "unknown shape"
        row.notes.append("some tensors have no static shape: bytes unknown")
    return read, written, weight


# ---- shapes --------------------------------------------------------------------------------


def _input_shapes(
    facts: GraphFacts, inputs: Mapping[str, Any] | None
) -> dict[str, tuple[int, ...]]:
    """Every graph input's shape: from `inputs`, else the model's with free dims at 1."""
    given = dict(inputs or {})
    names = [v.name for v in facts.inputs]
    unknown = sorted(set(given) - set(names))
    if unknown:
        raise ProfileSettingsError(
            f"inputs names {unknown}, which the model does not have: its inputs are {names}"
        )
    shapes: dict[str, tuple[int, ...]] = {}
    for value in facts.inputs:
        if value.name in given:
            shapes[value.name] = _shape_of(value.name, given[value.name])
            if value.dims is not None and len(value.dims) != len(shapes[value.name]):
                raise ProfileSettingsError(
                    f"inputs[{value.name!r}] has {len(shapes[value.name])} dims, the model's "
                    f"input has {len(value.dims)} ({_shown(value.dims)}): give a shape of that "
                    "rank"
                )
        elif value.dims is not None:
            shapes[value.name] = tuple(d if isinstance(d, int) else 1 for d in value.dims)
    return shapes


def _shown(dims: StatedDims) -> str:
    return "[" + ",".join("?" if d is None else str(d) for d in dims) + "]"


def _shape_of(name: str, given: Any) -> tuple[int, ...]:
    if isinstance(given, np.ndarray):
        return tuple(int(d) for d in given.shape)
    if isinstance(given, Mapping) and "shape" in given:
        given = given["shape"]
    if isinstance(given, (list, tuple)) and all(
        isinstance(d, (int, np.integer)) and not isinstance(d, bool) and d >= 0 for d in given
    ):
        return tuple(int(d) for d in given)
    raise ProfileSettingsError(
        f"inputs[{name!r}] = {given!r:.80}: give a shape (a list of non-negative ints) or an array"
    )


def _static(value: Value) -> bool:
    return value.dims is not None and all(isinstance(d, int) for d in value.dims)


def _tensors(facts: GraphFacts, shapes: Mapping[str, tuple[int, ...]]) -> dict[str, _Tensor]:
    """Name -> dtype and dims of every value of the main graph, inferred where the model lacks
    a static shape or `shapes` changes an input's."""
    symbols, restated = _symbols(facts, shapes)
    values = list(facts.stated.values())
    found: dict[str, _Tensor] = {}
    if symbols or restated or not all(_static(v) and v.dtype is not None for v in values):
        found = _inferred(facts, shapes, symbols, keep_known=not restated)
    for name, (dtype, dims) in facts.initializers.items():
        found[name] = _Tensor(dtype, dims)
    for value in [*facts.inputs, *values]:
        name = value.name
        if name in found and found[name].known:
            continue
        if name in shapes:
            found[name] = _Tensor(value.dtype, shapes[name])
        elif not restated and value.dims is not None:
            found[name] = _Tensor(value.dtype, _dims(value.dims, symbols))
    for node in facts.nodes:  # Constant outputs: their value's shape
        if node.op_type == "Constant" and node.outputs and node.outputs[0] not in found:
            typed = node.constant_type()
            if typed is not None:
                found[node.outputs[0]] = _Tensor(*typed)
    return found


def _symbols(
    facts: GraphFacts, shapes: Mapping[str, tuple[int, ...]]
) -> tuple[dict[str, int], bool]:
    """The sizes the inputs give the model's named dims ('batch' -> 8), and whether a static
    input dim was restated (then the model's other static shapes may be stale)."""
    symbols: dict[str, int] = {}
    restated = False
    for value in facts.inputs:
        given = shapes.get(value.name)
        if given is None or value.dims is None:
            continue
        for dim, size in zip(value.dims, given, strict=False):
            if isinstance(dim, int):
                restated |= dim != size
            elif dim is not None:
                symbols[dim] = size
            else:
                symbols[f"?{len(symbols)}"] = size  # an unnamed free dim: inference needed
    return symbols, restated


def _dims(dims: StatedDims, symbols: Mapping[str, int]) -> Dims:
    return tuple(d if isinstance(d, int) else symbols.get(d) if d else None for d in dims)


def _inferred(
    facts: GraphFacts,
    shapes: Mapping[str, tuple[int, ...]],
    symbols: Mapping[str, int],
    *,
    keep_known: bool,
) -> dict[str, _Tensor]:
    """onnx shape inference (non-strict, data propagation) on a weightless copy whose inputs
    have `shapes` and whose named dims are set from `symbols`; without `keep_known`, the
    model's own value_info is dropped first (its dims were for other input shapes)."""
    proto = facts.weightless()
    for info in proto.graph.input:
        if info.name in shapes:
            stated = info.type.tensor_type.shape
            stated.ClearField("dim")
            for size in shapes[info.name]:
                stated.dim.add().dim_value = size
    if keep_known:
        for info in [*proto.graph.value_info, *proto.graph.output]:
            for dim in info.type.tensor_type.shape.dim:
                if dim.HasField("dim_param") and dim.dim_param in symbols:
                    dim.dim_value = symbols[dim.dim_param]
    else:
        proto.graph.ClearField("value_info")
        for info in proto.graph.output:
            info.type.tensor_type.ClearField("shape")
    try:
        inferred = onnx.shape_inference.infer_shapes(
            proto, check_type=False, strict_mode=False, data_prop=True
        )
    except Exception:  # onnx raises its own types; values stay unknown and say so
        inferred = proto
    found: dict[str, _Tensor] = {}
    graph = inferred.graph
    for info in [*graph.input, *graph.value_info, *graph.output]:
        tensor = info.type.tensor_type
        if not info.type.HasField("tensor_type"):
            continue
        dtype = ir.DataType(tensor.elem_type) if tensor.elem_type else None
        dims: Dims | None = None
        if tensor.HasField("shape"):
            dims = tuple(d.dim_value if d.dim_value or not d.dim_param else None
                         for d in tensor.shape.dim)  # fmt: skip
        found[info.name] = _Tensor(dtype, dims)
    if any(not name.startswith("?") for name in symbols):  # inputs with named dims
        _fill_from_symbolic(facts, proto, found)
    return found


def _fill_from_symbolic(
    facts: GraphFacts, proto: onnx.ModelProto, found: dict[str, _Tensor]
) -> None:
    """Static shapes from onnxruntime's symbolic inference for the node outputs onnx's left
    open (a TorchScript BERT with batch 1: everything after its position ids' Slice)."""
    open_outputs = {
        out
        for node in facts.nodes
        for out in node.outputs
        if out and not (out in found and found[out].known)
    }
    if not open_outputs:
        return
    for name, (elem_type, dims) in symbolic_dims(proto, open_outputs).items():
        if all(isinstance(dim, int) for dim in dims):
            known = found.get(name)
            dtype = known.dtype if known is not None and known.dtype is not None else None
            if dtype is None and elem_type:
                dtype = ir.DataType(elem_type)
            found[name] = _Tensor(dtype, tuple(int(dim) for dim in dims))
