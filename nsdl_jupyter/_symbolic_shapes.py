"""onnxruntime's symbolic shape inference, for the dims onnx's inference loses.

onnx's inference (data propagation on) cannot size a Slice or a Range whose bounds come from a
tensor's shape: the position ids of BERT and DistilBERT (`position_ids[:, :sequence]`) and
Llama's positions (`arange(sequence)`) in TorchScript exports with dynamic axes. Its
`unk__0` spreads to everything after them (added to a batch of 1, a broadcast cannot tell the
size either). onnxruntime's symbolic inference follows that arithmetic. It is slower (1.5 s
on BERT-base against onnx's 0.2 s), so callers ask it only where onnx's left dims open, and
only for models whose inputs name their dims: with static inputs what onnx could not follow
is data (Swin's computed pads), which this cannot follow either.
"""

from __future__ import annotations

import logging
from collections.abc import Collection

import onnx

Dims = list[int | str]  # a number, a dim name, or "" for a dim it could not tell


def symbolic_dims(proto: onnx.ModelProto, names: Collection[str]) -> dict[str, tuple[int, Dims]]:
    """(element type, dims) of the tensors `names` of `proto`'s main graph as onnxruntime's
    symbolic inference finds them; a tensor it cannot shape is left out (all of them when it
    fails: it refuses some operators and domains). `proto` is not modified."""
    from onnxruntime.tools.symbolic_shape_infer import (  # on use: onnxruntime and sympy
        SymbolicShapeInference,
    )

    # it warns for each comparison of dims it cannot decide (Swin: hundreds)
    logger = logging.getLogger(SymbolicShapeInference.__module__)
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        inferred = SymbolicShapeInference.infer_shapes(proto, auto_merge=True)
    except Exception:  # its own asserts and errors of every kind: nothing is learned
        return {}
    finally:
        logger.setLevel(level)
    if inferred is None:  # an opset below 7
        return {}
    wanted = set(names)
    found: dict[str, tuple[int, Dims]] = {}
    for info in [*inferred.graph.value_info, *inferred.graph.output]:
        tensor = info.type.tensor_type
        if info.name in wanted and tensor.HasField("shape"):
            dims: Dims = [
                d.dim_value if d.HasField("dim_value") else d.dim_param for d in tensor.shape.dim
            ]
            found[info.name] = (tensor.elem_type, dims)
    return found
