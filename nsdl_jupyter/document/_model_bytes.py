"""A model's serialized bytes as pieces, so a weight is copied once on its way to disk.

`ir.to_proto` copies every loaded weight into a new ModelProto, `SerializeToString` copies
the whole model again, and the write copies it a third time (a 500 MB GPT-2 spent more time
copying than transforming). Here the model is serialized with its large initializers left
out, and each of those is serialized on its own, to be written at the place protobuf puts
it: the file is byte for byte what `SerializeToString` of the whole proto gives.
"""

from __future__ import annotations

import contextlib
import errno
import mmap
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import BinaryIO

import numpy as np
import onnx
import onnx_ir as ir

from nsdl_jupyter._tensor_bytes import tensor_bytes
from nsdl_jupyter._weightless import WEIGHT_BYTES, is_weight, typed_input, weight_input
from nsdl_jupyter.document._errors import ModelSaveError

# Initializers at least this big are serialized on their own; smaller ones stay in the proto.
STREAMED_BYTES = 1 << 16
assert STREAMED_BYTES > WEIGHT_BYTES  # a streamed initializer is a weight of `structure`
_WRITEBACK_BYTES = 1 << 20  # written bytes handed to the disk together
_COPY_CHUNK = 1 << 23
# copy_file_range cannot copy these files (other file systems, old kernels): copy by buffer
_NO_KERNEL_COPY = {errno.EXDEV, errno.ENOSYS, errno.EOPNOTSUPP, errno.EINVAL, errno.EBADF}
_LENGTH_DELIMITED = 2
MODEL_GRAPH = 7  # ModelProto.graph
GRAPH_INITIALIZER = 5  # GraphProto.initializer
TENSOR_NAME = 8  # TensorProto.name
_TENSOR_RAW_DATA = 9  # TensorProto.raw_data
Wire = bytes | mmap.mmap  # serialized protobuf to read fields from


@dataclass(frozen=True)
class FileRange:
    """`length` bytes at `offset` of an open file: a piece copied file to file."""

    fd: int
    offset: int
    length: int

    def __len__(self) -> int:
        return self.length

    def copy_to(self, fd: int, at: int) -> None:
        """Copy the bytes into `fd` at offset `at`: in the kernel where the OS can
        (copy_file_range), else through a bounded buffer."""
        copy = getattr(os, "copy_file_range", None)
        done = 0
        while done < self.length:
            count = self.length - done
            if copy is not None:
                try:
                    moved = copy(self.fd, fd, count, self.offset + done, at + done)
                except OSError as error:
                    if error.errno not in _NO_KERNEL_COPY:
                        raise
                    copy = None
                    continue
            else:
                chunk = os.pread(self.fd, min(count, _COPY_CHUNK), self.offset + done)
                moved = os.pwrite(fd, chunk, at + done) if chunk else 0
            if moved == 0:
                raise OSError(errno.EIO, "the model file the weights are copied from is shorter")
            done += moved

    def read(self) -> bytes:
        return b"".join(
            os.pread(self.fd, min(self.length - at, _COPY_CHUNK), self.offset + at)
            for at in range(0, self.length, _COPY_CHUNK)
        )


# Called with a loaded weight about to be written whole: where the same bytes can be
# copied from, if anywhere.
CopySource = Callable[["ir.serde.TensorProtoTensor"], FileRange | None]


@dataclass(frozen=True)
class ModelBytes:
    """A serialized model: its pieces in file order and their total size."""

    pieces: list[bytes | FileRange]
    size: int
    # what `structure` is made of: the proto without initializers, the streamed and external
    # initializers as typed inputs, the others serialized
    head: onnx.ModelProto
    weightless: list[onnx.ValueInfoProto | bytes]
    # the loaded weights written whole: the file written holds them as the source did
    loaded: list[ir.serde.TensorProtoTensor]

    def write_to(self, handle: BinaryIO) -> None:
        """Write the pieces, handing every `_WRITEBACK_BYTES` written to the disk at once:
        the fsync after it waits for the last of them, not for the whole file (a fifth of
        the 20 ms that writing and syncing a 21 MB model took here)."""
        start = offset = handle.tell()
        for piece in self.pieces:
            if isinstance(piece, FileRange):
                handle.flush()
                piece.copy_to(handle.fileno(), offset)
                handle.seek(offset + len(piece))
            else:
                handle.write(piece)
            offset += len(piece)
            if offset - start >= _WRITEBACK_BYTES:
                _start_writeback(handle, start, offset)
                start = offset

    def join(self) -> bytes:
        return b"".join(p.read() if isinstance(p, FileRange) else p for p in self.pieces)

    def structure(self) -> onnx.ModelProto:
        """The model as written, weightless (`nsdl_jupyter._weightless`'s rule and typed
        inputs), for onnx's checker: no weight is copied, and the checker cannot follow a
        relative data file from memory. Made from the proto the file was written from, so
        no second pass over the model; call it once."""
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


def encode_model(model: ir.Model, copy_source: CopySource | None = None) -> ModelBytes:
    """Serialize `model` for a file (large initializers as pieces of their own, copied from
    the file they were read from where `copy_source` finds them unchanged there)."""
    with _weights_aside(model.graph) as aside:
        proto = ir.to_proto(model)
    _drop_initializer_value_info(proto.graph)
    weights: list[list[bytes | FileRange]] = []
    weightless: list[onnx.ValueInfoProto | bytes] = []
    loaded: list[ir.serde.TensorProtoTensor] = []
    for tensor_proto in proto.graph.initializer:
        value = aside.get(tensor_proto.name)
        if value is not None:  # streamed: always a weight (STREAMED_BYTES > WEIGHT_BYTES)
            weights.append(_weight_pieces(value, copy_source))
            tensor = value.const_value
            if isinstance(tensor, ir.serde.TensorProtoTensor):
                loaded.append(tensor)
            assert tensor is not None
            weightless.append(weight_input(value))
            continue
        serialized = tensor_proto.SerializeToString()
        weights.append([serialized])
        if is_weight(tensor_proto):
            weightless.append(
                typed_input(tensor_proto.name, tensor_proto.data_type, tensor_proto.dims)
            )
        else:
            weightless.append(serialized)
    del proto.graph.initializer[:]
    pieces = _with_initializers(proto.SerializeToString(), weights)
    return ModelBytes(pieces, sum(len(p) for p in pieces), proto, weightless, loaded)


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
            if tensor is None or not _streamable(tensor) or tensor_bytes(tensor) < STREAMED_BYTES:
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


def _weight_pieces(value: ir.Value, copy_source: CopySource | None) -> list[bytes | FileRange]:
    """One initializer's TensorProto as pieces (a computed tensor's data a piece of its own,
    so it is not copied into a proto first)."""
    tensor = value.const_value
    assert tensor is not None
    if isinstance(tensor, ir.serde.TensorProtoTensor):
        tensor.name = value.name  # as onnx_ir's serializer does, just before it copies
        found = copy_source(tensor) if copy_source is not None else None
        # one copy; upb's ByteSize would serialize it once more just to count
        return [found if found is not None else tensor.raw.SerializeToString()]
    header = onnx.TensorProto(
        name=value.name, data_type=tensor.dtype.value, dims=tensor.shape.numpy()
    )
    if tensor.doc_string:
        header.doc_string = tensor.doc_string
    data = header.SerializeToString()
    raw = tensor.tobytes()
    split = _insertion_point(data, _TENSOR_RAW_DATA)
    return [data[:split], _key(_TENSOR_RAW_DATA) + _varint(len(raw)), raw, data[split:]]


def _with_initializers(
    head: bytes, weights: list[list[bytes | FileRange]]
) -> list[bytes | FileRange]:
    """`head` (a model without initializers) with `weights` as its graph's initializers."""
    if not weights:
        return [head]
    entries: list[bytes | FileRange] = []
    for pieces in weights:
        size = sum(len(p) for p in pieces)
        entries += [_key(GRAPH_INITIALIZER) + _varint(size), *pieces]
    added = sum(len(p) for p in entries)
    span = field_span(head, MODEL_GRAPH)
    if span is None:  # the graph held initializers only
        at = _insertion_point(head, MODEL_GRAPH)
        opening = head[:at] + _key(MODEL_GRAPH) + _varint(added)
        pieces = [opening, *entries, head[at:]]
    else:
        key_start, start, end = span
        at = start + _insertion_point(head[start:end], GRAPH_INITIALIZER)
        opening = head[:key_start] + _key(MODEL_GRAPH) + _varint(end - start + added)
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


def _read_varint(data: Wire, at: int) -> tuple[int, int]:
    number, shift = 0, 0
    while True:
        byte = data[at]
        at += 1
        number |= (byte & 0x7F) << shift
        if byte < 0x80:
            return number, at
        shift += 7


def fields(data: Wire, at: int = 0, stop: int | None = None) -> Iterator[tuple[int, int, int, int]]:
    """(field number, key start, value start, end) of each top-level field of the message in
    `data[at:stop]` (offsets into `data`)."""
    stop = len(data) if stop is None else stop
    while at < stop:
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
        if end > stop:
            raise ModelSaveError("a protobuf field runs past the end of its message")
        yield key >> 3, key_start, at, end
        at = end


def field_span(data: Wire, number: int) -> tuple[int, int, int] | None:
    """(key start, value start, end) of the field `number` (a singular message)."""
    for found, key_start, start, end in fields(data):
        if found == number:
            return key_start, start, end
    return None


def _insertion_point(data: bytes, number: int) -> int:
    """Where protobuf writes field `number`: before the first field with a higher number."""
    for found, key_start, _, _ in fields(data):
        if found > number:
            return key_start
    return len(data)
