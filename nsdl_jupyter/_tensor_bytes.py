"""A tensor's size in bytes, cheaply for the tensors read from a model file."""

from __future__ import annotations

import math
from functools import lru_cache

import onnx_ir as ir


def tensor_bytes(tensor: ir.TensorProtocol) -> int:
    """`tensor.nbytes`. onnx_ir builds a Shape for a tensor read from a protobuf each time it
    is asked, and a pass asks for every initializer several times (300 calls, 1 ms of a 25 ms
    sanitize of ViT-tiny): here its dims are read from the protobuf directly. A string
    tensor (onnx_ir gives it no size) counts the bytes of its strings."""
    if isinstance(tensor, ir.serde.TensorProtoTensor):
        bits = _bitwidth(tensor.raw.data_type)
        if bits is not None:
            return math.ceil(math.prod(tensor.raw.dims) * bits / 8)  # type: ignore[no-any-return]
        if tensor.raw.data_type == ir.DataType.STRING:
            return sum(len(text) for text in tensor.raw.string_data)
    elif tensor.dtype == ir.DataType.STRING:  # onnx_ir has no size for strings: their bytes
        return sum(len(text) for text in tensor.numpy().reshape(-1))
    return tensor.nbytes


@lru_cache(maxsize=64)
def _bitwidth(data_type: int) -> int | None:
    try:
        return ir.DataType(data_type).bitwidth
    except (TypeError, ValueError):  # strings and unknown types have none
        return None
