"""A model's serialized bytes as pieces, so a weight is copied once on its way to disk.

`ir.to_proto` copies every loaded weight into a new ModelProto, `SerializeToString` copies
the whole model again, and the write copies it a third time (a 500 MB GPT-2 spent more time
copying than transforming). Here the model is serialized with its large initializers left
out, and each of those is serialized on its own, to be written at the place protobuf puts
it: the file is byte for byte what `SerializeToString` of the whole proto gives.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import BinaryIO

import numpy as np
import onnx
import onnx_ir as ir

from nsdl_jupyter.document._errors import ModelSaveError

# Initializers at least this big are serialized on their own; smaller ones stay in the proto.
_STREAMED_BYTES = 1 << 16
_WRITEBACK_BYTES = 1 << 20  # written bytes handed to the disk together
_LENGTH_DELIMITED = 2
_MODEL_GRAPH = 7  # ModelProto.graph
_GRAPH_INITIALIZER = 5  # GraphProto.initializer
_TENSOR_RAW_DATA = 9  # TensorProto.raw_data


@dataclass(frozen=True)
class ModelBytes:
    """A serialized model: its pieces in file order and their total size."""

    pieces: list[bytes]
    size: int
    # what `structure` is made of: the proto without initializers, the streamed and external
    # initializers as typed inputs, the others serialized
    head: onnx.ModelProto
    weightless: list[onnx.ValueInfoProto | bytes]

    def write_to(self, handle: BinaryIO) -> None:
        """Write the pieces, handing every `_WRITEBACK_BYTES` written to the disk at once:
        the fsync after it waits for the last of them, not for the whole file (a fifth of
        the 20 ms that writing and syncing a 21 MB model took here)."""
        start = offset = handle.tell()
        for piece in self.pieces:
            handle.write(piece)
            offset += len(piece)
            if offset - start >= _WRITEBACK_BYTES:
                _start_writeback(handle, start, offset)
                start = offset

    def join(self) -> bytes:
        return b"".join(self.pieces)

    def structure(self) -> onnx.ModelProto:
        """The model as written, for onnx's checker and shape inference: the main graph's
        large and external initializers are graph inputs of their type (no weight is
        copied; the checker cannot follow a relative data file from memory). Made from the
        proto the file was written from, so no second pass over the model; call it once."""
        graph = self.head.graph
        for entry in self.weightless:
            if isinstance(entry, bytes):
                graph.initializer.add().ParseFromString(entry)
            else:
                graph.input.append(entry)
        return self.head


def _start_writeback(handle: BinaryIO, start: int, end: int) -> None:
    """Start writing bytes [start, end) of `handle`'s file to disk, without waiting: Linux
    starts writeback of the range's dirty pages on POSIX_FADV_DONTNEED (a page that is
    already clean may leave the page cache; nothing is lost)."""
    advise = getattr(os, "posix_fadvise", None)
    if advise is None:
        return
    handle.flush()
    with contextlib.suppress(OSError):  # only a hint: the fsync after it writes everything
        advise(handle.fileno(), start, end - start, os.POSIX_FADV_DONTNEED)


def encode_model(model: ir.Model) -> ModelBytes:
    """Serialize `model` for a file (large initializers as pieces of their own)."""
    with _weights_aside(model.graph) as aside:
        proto = ir.to_proto(model)
    _drop_initializer_value_info(proto.graph)
    weights: list[list[bytes]] = []
    weightless: list[onnx.ValueInfoProto | bytes] = []
    for tensor_proto in proto.graph.initializer:
        value = aside.get(tensor_proto.name)
        if value is not None:
            weights.append(_weight_pieces(value))
            tensor = value.const_value
            assert tensor is not None
            weightless.append(_typed_input(value.name, tensor.dtype, tensor.shape.numpy()))
            continue
        weights.append([tensor_proto.SerializeToString()])
        if tensor_proto.data_location == onnx.TensorProto.EXTERNAL:
            dtype = ir.DataType(tensor_proto.data_type)
            weightless.append(_typed_input(tensor_proto.name, dtype, tuple(tensor_proto.dims)))
        else:
            weightless.append(weights[-1][0])
    del proto.graph.initializer[:]
    pieces = _with_initializers(proto.SerializeToString(), weights)
    return ModelBytes(pieces, sum(len(p) for p in pieces), proto, weightless)


def _typed_input(
    name: str | None, dtype: ir.DataType, dims: tuple[int, ...]
) -> onnx.ValueInfoProto:
    return onnx.helper.make_tensor_value_info(name or "", dtype.value, dims)


def _drop_initializer_value_info(graph: onnx.GraphProto) -> None:
    """onnx_ir records initializer types as value_info; the initializer already says them."""
    initializers = {tensor.name for tensor in graph.initializer}
    kept = [info for info in graph.value_info if info.name not in initializers]
    if len(kept) != len(graph.value_info):
        del graph.value_info[:]
        graph.value_info.extend(kept)


@contextmanager
def _weights_aside(graph: ir.Graph) -> Iterator[dict[str, ir.Value]]:
    """While the proto is built, large initializers hold an empty tensor of the same name."""
    aside: dict[str, ir.Value] = {}
    held: list[tuple[ir.Value, ir.TensorProtocol]] = []
    try:
        for name, value in graph.initializers.items():
            tensor = value.const_value
            if tensor is None or not _streamable(tensor) or tensor.nbytes < _STREAMED_BYTES:
                continue
            aside[name] = value
            held.append((value, tensor))
            value.const_value = ir.Tensor(np.zeros(0, dtype=np.uint8), name=name)
        yield aside
    finally:
        for value, tensor in held:
            value.const_value = tensor


def _streamable(tensor: ir.TensorProtocol) -> bool:
    """Tensors whose serialization is known here: exactly what onnx_ir would write."""
    if tensor.metadata_props:
        return False
    if isinstance(tensor, ir.serde.TensorProtoTensor):
        # onnx_ir checks 6-bit float data before copying the proto
        return tensor.dtype not in (ir.DataType.FLOAT6E2M3, ir.DataType.FLOAT6E3M2)
    return type(tensor) is ir.Tensor and tensor.dtype != ir.DataType.STRING


def _weight_pieces(value: ir.Value) -> list[bytes]:
    """One initializer's TensorProto as pieces (a computed tensor's data a piece of its own,
    so it is not copied into a proto first)."""
    tensor = value.const_value
    assert tensor is not None
    if isinstance(tensor, ir.serde.TensorProtoTensor):
        tensor.name = value.name  # as onnx_ir's serializer does, just before it copies
        # one copy; upb's ByteSize would serialize it once more just to count
        return [tensor.raw.SerializeToString()]
    header = onnx.TensorProto(
        name=value.name, data_type=tensor.dtype.value, dims=tensor.shape.numpy()
    )
    if tensor.doc_string:
        header.doc_string = tensor.doc_string
    data = header.SerializeToString()
    raw = tensor.tobytes()
    split = _insertion_point(data, _TENSOR_RAW_DATA)
    return [data[:split], _key(_TENSOR_RAW_DATA) + _varint(len(raw)), raw, data[split:]]


def _with_initializers(head: bytes, weights: list[list[bytes]]) -> list[bytes]:
    """`head` (a model without initializers) with `weights` as its graph's initializers."""
    if not weights:
        return [head]
    entries: list[bytes] = []
    for pieces in weights:
        size = sum(len(p) for p in pieces)
        entries += [_key(_GRAPH_INITIALIZER) + _varint(size), *pieces]
    added = sum(len(p) for p in entries)
    span = _field_span(head, _MODEL_GRAPH)
    if span is None:  # the graph held initializers only
        at = _insertion_point(head, _MODEL_GRAPH)
        opening = head[:at] + _key(_MODEL_GRAPH) + _varint(added)
        pieces = [opening, *entries, head[at:]]
    else:
        key_start, start, end = span
        at = start + _insertion_point(head[start:end], _GRAPH_INITIALIZER)
        opening = head[:key_start] + _key(_MODEL_GRAPH) + _varint(end - start + added)
        pieces = [opening + head[start:at], *entries, head[at:]]
    return pieces


# ------------------------------------------------------------ wire format
def _varint(number: int) -> bytes:
    out = bytearray()
    while number > 0x7F:
        out.append(number & 0x7F | 0x80)
        number >>= 7
    out.append(number)
    return bytes(out)


def _key(field: int) -> bytes:
    return _varint(field << 3 | _LENGTH_DELIMITED)


def _read_varint(data: bytes, at: int) -> tuple[int, int]:
    number, shift = 0, 0
    while True:
        byte = data[at]
        at += 1
        number |= (byte & 0x7F) << shift
        if byte < 0x80:
            return number, at
        shift += 7


def _fields(data: bytes) -> Iterator[tuple[int, int, int, int]]:
    """(field number, key start, value start, end) of each top-level field of a message."""
    at = 0
    while at < len(data):
        key_start = at
        key, at = _read_varint(data, at)
        wire = key & 7
        if wire == 0:
            _, end = _read_varint(data, at)
        elif wire == 1:
            end = at + 8
        elif wire == _LENGTH_DELIMITED:
            length, at = _read_varint(data, at)
            end = at + length
        elif wire == 5:
            end = at + 4
        else:  # groups: no ONNX message has one
            raise ModelSaveError(f"unexpected protobuf wire type {wire} while writing the model")
        yield key >> 3, key_start, at, end
        at = end


def _field_span(data: bytes, number: int) -> tuple[int, int, int] | None:
    """(key start, value start, end) of the field `number` (a singular message)."""
    for field, key_start, start, end in _fields(data):
        if field == number:
            return key_start, start, end
    return None


def _insertion_point(data: bytes, number: int) -> int:
    """Where protobuf writes field `number`: before the first field with a higher number."""
    for field, key_start, _, _ in _fields(data):
        if field > number:
            return key_start
    return len(data)
