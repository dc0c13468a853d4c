"""BERT encoders built in code, shaped like a TorchScript export of Hugging Face `BertModel`.

The graph has what a real export has: embedding Gathers, the extended attention mask, per
layer the Q/K/V MatMul+Add, dynamic-shape Reshape subgraphs (Shape/Gather/Unsqueeze/Concat),
scaled-dot-product attention with Softmax, GELU through Erf, LayerNormalization (decomposed
below opset 17) and the pooler (Gather + Gemm + Tanh). BERT-base comes to about 1,000 nodes.
"""

from __future__ import annotations

import math

import numpy as np
import onnx

from nsdl_jupyter.examples._errors import ExampleError
from nsdl_jupyter.examples._graph_builder import Dim, GraphBuilder, check_opset

_FLOAT = onnx.TensorProto.FLOAT
_INT64 = onnx.TensorProto.INT64
_WEIGHT_STD = 0.02  # BERT's initializer_range


class _BertBuilder(GraphBuilder):
    def __init__(self, seed: int, opset: int) -> None:
        super().__init__(seed)
        self.opset = opset

    def linear(self, scope: str, x: str, param: str, fan: tuple[int, int]) -> str:
        """`x @ W + b` as the exporter writes nn.Linear on a 3-D input: MatMul then Add."""
        weight = self.normal(None, fan, _WEIGHT_STD)
        bias = self.normal(f"{param}.bias", (fan[1],), _WEIGHT_STD)
        y = self.op("MatMul", scope, x, weight)
        return self.op("Add", scope, bias, y)

    def layer_norm(self, scope: str, x: str, param: str, hidden: int) -> str:
        gamma = self.initializer(f"{param}.weight", np.ones(hidden, dtype=np.float32))
        beta = self.initializer(f"{param}.bias", np.zeros(hidden, dtype=np.float32))
        if self.opset >= 17:
            return self.op("LayerNormalization", scope, x, gamma, beta, axis=-1, epsilon=1e-12)
        # Before opset 17 the exporter spells LayerNorm out (ReduceMean takes axes as attribute).
        mean = self.op("ReduceMean", scope, x, axes=[-1])
        centered = self.op("Sub", scope, x, mean)
        squared = self.op("Pow", scope, centered, self.constant(scope, 2.0))
        variance = self.op("ReduceMean", scope, squared, axes=[-1])
        shifted = self.op("Add", scope, variance, self.constant(scope, 1e-12))
        normed = self.op("Div", scope, centered, self.op("Sqrt", scope, shifted))
        return self.op("Add", scope, self.op("Mul", scope, normed, gamma), beta)

    def dynamic_reshape(self, scope: str, x: str, tail: list[int]) -> str:
        """`x.view(x.size(0), x.size(1), *tail)` with the Shape/Gather/Concat a trace gives."""
        dims = []
        for axis in (0, 1):
            shape = self.op("Shape", scope, x)
            dim = self.op("Gather", scope, shape, self.constant(scope, np.int64(axis)), axis=0)
            dims.append(self.op("Unsqueeze", scope, dim, self.constant(scope, np.array([0]))))
        rest = self.initializer(None, np.array(tail, dtype=np.int64))
        target = self.op("Concat", scope, *dims, rest, axis=0)
        return self.op("Reshape", scope, x, target)


def _encoder_layer(
    b: _BertBuilder, index: int, h: str, mask: str, *, hidden: int, heads: int
) -> str:
    scope = f"/encoder/layer.{index}"
    param = f"encoder.layer.{index}"
    head_dim = hidden // heads
    att = f"{scope}/attention/self"
    q = b.linear(f"{att}/query", h, f"{param}.attention.self.query", (hidden, hidden))
    k = b.linear(f"{att}/key", h, f"{param}.attention.self.key", (hidden, hidden))
    v = b.linear(f"{att}/value", h, f"{param}.attention.self.value", (hidden, hidden))
    q = b.op("Transpose", att, b.dynamic_reshape(att, q, [heads, head_dim]), perm=[0, 2, 1, 3])
    k = b.op("Transpose", att, b.dynamic_reshape(att, k, [heads, head_dim]), perm=[0, 2, 3, 1])
    v = b.op("Transpose", att, b.dynamic_reshape(att, v, [heads, head_dim]), perm=[0, 2, 1, 3])
    scores = b.op("MatMul", att, q, k)
    scores = b.op("Div", att, scores, b.constant(att, math.sqrt(head_dim)))
    scores = b.op("Add", att, scores, mask)
    probs = b.op("Softmax", att, scores, axis=-1)
    context = b.op("Transpose", att, b.op("MatMul", att, probs, v), perm=[0, 2, 1, 3])
    context = b.dynamic_reshape(att, context, [hidden])

    out = f"{scope}/attention/output"
    y = b.linear(f"{out}/dense", context, f"{param}.attention.output.dense", (hidden, hidden))
    y = b.op("Add", out, y, h)
    attended = b.layer_norm(f"{out}/LayerNorm", y, f"{param}.attention.output.LayerNorm", hidden)

    inter = f"{scope}/intermediate"
    y = b.linear(f"{inter}/dense", attended, f"{param}.intermediate.dense", (hidden, 4 * hidden))
    act = f"{inter}/intermediate_act_fn"  # GELU: x * 0.5 * (1 + erf(x / sqrt 2))
    erf = b.op("Erf", act, b.op("Div", act, y, b.constant(act, math.sqrt(2.0))))
    gelu = b.op("Mul", act, y, b.op("Add", act, erf, b.constant(act, 1.0)))
    gelu = b.op("Mul", act, gelu, b.constant(act, 0.5))

    out = f"{scope}/output"
    y = b.linear(f"{out}/dense", gelu, f"{param}.output.dense", (4 * hidden, hidden))
    y = b.op("Add", out, y, attended)
    return b.layer_norm(f"{out}/LayerNorm", y, f"{param}.output.LayerNorm", hidden)


def _extended_mask(b: _BertBuilder, mask: str) -> str:
    """(1 - mask[:, None, None, :]) * float32.min, the additive mask HF builds."""
    x = b.op("Unsqueeze", "", mask, b.constant("", np.array([1])))
    x = b.op("Unsqueeze", "", x, b.constant("", np.array([2])))
    x = b.op("Cast", "", x, to=_FLOAT)
    x = b.op("Sub", "", b.constant("", 1.0), x)
    return b.op("Mul", "", x, b.constant("", float(np.finfo(np.float32).min)))


def _embeddings(
    b: _BertBuilder, input_ids: str, token_type_ids: str, *, hidden: int, vocab: int, positions: int
) -> str:
    scope = "/embeddings"
    words = b.normal("embeddings.word_embeddings.weight", (vocab, hidden), _WEIGHT_STD)
    types = b.normal("embeddings.token_type_embeddings.weight", (2, hidden), _WEIGHT_STD)
    table = b.normal("embeddings.position_embeddings.weight", (positions, hidden), _WEIGHT_STD)
    ids = b.initializer("embeddings.position_ids", np.arange(positions, dtype=np.int64)[None])
    x = b.op("Gather", f"{scope}/word_embeddings", words, input_ids, axis=0)
    x = b.op(
        "Add", scope, x, b.op("Gather", f"{scope}/token_type_embeddings", types, token_type_ids)
    )
    shape = b.op("Shape", scope, input_ids)
    length = b.op("Gather", scope, shape, b.constant(scope, np.int64(1)), axis=0)
    end = b.op("Unsqueeze", scope, length, b.constant(scope, np.array([0])))
    start, axes = b.constant(scope, np.array([0])), b.constant(scope, np.array([1]))
    position_ids = b.op("Slice", scope, ids, start, end, axes)
    x = b.op("Add", scope, x, b.op("Gather", f"{scope}/position_embeddings", table, position_ids))
    return b.layer_norm(f"{scope}/LayerNorm", x, "embeddings.LayerNorm", hidden)


def bert_base(
    layers: int = 12,
    *,
    hidden: int = 768,
    heads: int = 12,
    seq: int = 128,
    vocab: int = 30522,
    opset: int = 17,
    batch: Dim = "batch_size",
    max_positions: int = 512,
    seed: int = 0,
) -> onnx.ModelProto:
    """A BERT encoder (BERT-base by default: ~1,000 nodes, 110 M random weights).

    Inputs `input_ids`, `attention_mask`, `token_type_ids` (int64 [batch, seq]); outputs
    `last_hidden_state` [batch, seq, hidden] and `pooler_output` [batch, hidden].
    """
    check_opset("bert_base", opset, 13)
    if hidden % heads:
        raise ExampleError(f"bert_base: hidden={hidden} must be a multiple of heads={heads}")
    if seq > max_positions:
        raise ExampleError(f"bert_base: seq={seq} exceeds max_positions={max_positions}; raise it")
    b = _BertBuilder(seed, opset)
    input_ids = b.input("input_ids", _INT64, (batch, seq))
    attention_mask = b.input("attention_mask", _INT64, (batch, seq))
    token_type_ids = b.input("token_type_ids", _INT64, (batch, seq))
    mask = _extended_mask(b, attention_mask)
    h = _embeddings(
        b, input_ids, token_type_ids, hidden=hidden, vocab=vocab, positions=max_positions
    )
    for index in range(layers):
        h = _encoder_layer(b, index, h, mask, hidden=hidden, heads=heads)
    # the last LayerNorm's output is the graph output, named as HF exports name it
    h = b.nodes[-1].output[0] = "last_hidden_state"
    first = b.op("Gather", "/pooler", h, b.constant("/pooler", np.int64(0)), axis=1)
    weight = b.normal("pooler.dense.weight", (hidden, hidden), _WEIGHT_STD)
    bias = b.normal("pooler.dense.bias", (hidden,), _WEIGHT_STD)
    pooled = b.op("Gemm", "/pooler/dense", first, weight, bias, alpha=1.0, beta=1.0, transB=1)
    b.op("Tanh", "/pooler/activation", pooled, output_name="pooler_output")
    b.output("last_hidden_state", _FLOAT, (batch, seq, hidden))
    b.output("pooler_output", _FLOAT, (batch, hidden))
    return b.model("bert", opset)


def small_transformer(
    layers: int = 2,
    *,
    hidden: int = 64,
    heads: int = 4,
    seq: int = 16,
    vocab: int = 1000,
    opset: int = 17,
    batch: Dim = "batch_size",
    seed: int = 0,
) -> onnx.ModelProto:
    """A 2-layer BERT with tiny dimensions (~170 nodes, <1 MB): quick tests and notebooks."""
    return bert_base(
        layers,
        hidden=hidden,
        heads=heads,
        seq=seq,
        vocab=vocab,
        opset=opset,
        batch=batch,
        max_positions=max(seq, 64),
        seed=seed,
    )
