"""Unchanged weights copied file to file when a model is saved.

The file a model was read from already holds each weight's serialized bytes, yet every save
serialized them again: a copy through Python into fresh memory, then a second one into the
file. A large weight read from a model file remembers that file and the file's identity
(device, inode, size, mtime) at the time; a save finds the weight's TensorProto in the file
by walking the protobuf framing (headers only, through a memory map) and copies its bytes
in the kernel. A file that is no longer the one read, a renamed weight and a name the file
holds twice fall back to serializing.
"""

from __future__ import annotations

import contextlib
import mmap
import os
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

import onnx_ir as ir

from nsdl_jupyter._tensor_bytes import tensor_bytes
from nsdl_jupyter.document._errors import ModelSaveError
from nsdl_jupyter.document._file_identity import FileIdentity
from nsdl_jupyter.document._model_bytes import (
    GRAPH_INITIALIZER,
    MODEL_GRAPH,
    STREAMED_BYTES,
    TENSOR_NAME,
    FileRange,
    field_span,
    fields,
)

_READ_FROM = "nsdl_jupyter.read_from"  # a weight's meta: the _ReadFrom it came from


@dataclass(frozen=True)
class _ReadFrom:
    """A weight's TensorProto is the initializer `name` of the model file `path`."""

    path: Path
    identity: FileIdentity
    name: str


def remember_model_file(
    tensors: list[ir.serde.TensorProtoTensor], path: Path, identity: FileIdentity | None
) -> None:
    """`tensors` (weights at least `STREAMED_BYTES` big) are, as they are now, the main
    graph's initializers of the model file `path`, which has `identity`."""
    if identity is None:
        return
    for tensor in tensors:
        tensor.meta[_READ_FROM] = _ReadFrom(path, identity, tensor.name or "")


def large_weights(model: ir.Model) -> list[ir.serde.TensorProtoTensor]:
    """The main graph's weights that a save writes whole from their loaded protobuf."""
    return [
        tensor
        for value in model.graph.initializers.values()
        if isinstance(tensor := value.const_value, ir.serde.TensorProtoTensor)
        and tensor_bytes(tensor) >= STREAMED_BYTES
    ]


class WeightCopies:
    """Where one save can copy loaded weights from: each model file opened once, checked
    against its identity, and closed when the save is done (a context manager)."""

    def __init__(self) -> None:
        self._files: dict[tuple[Path, FileIdentity], _OpenModelFile | None] = {}

    def __call__(self, tensor: ir.serde.TensorProtoTensor) -> FileRange | None:
        read_from = tensor.meta.get(_READ_FROM)
        if not isinstance(read_from, _ReadFrom) or tensor.name != read_from.name:
            return None
        key = (read_from.path, read_from.identity)
        if key not in self._files:
            self._files[key] = _OpenModelFile.open(*key)
        opened = self._files[key]
        if opened is None:
            return None
        span = opened.initializers.get(read_from.name)
        return None if span is None else FileRange(opened.fd, *span)

    def close(self) -> None:
        for opened in self._files.values():
            if opened is not None:
                os.close(opened.fd)
        self._files.clear()

    def __enter__(self) -> WeightCopies:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()


@dataclass(frozen=True)
class _OpenModelFile:
    fd: int
    initializers: dict[str, tuple[int, int]]  # name -> (offset, length) of its TensorProto

    @classmethod
    def open(cls, path: Path, identity: FileIdentity) -> _OpenModelFile | None:
        """The file, if it is still the one read (None when it is gone or changed)."""
        if not hasattr(os, "pread"):
            return None
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        except OSError:
            return None
        try:
            if FileIdentity.of_stat(os.fstat(fd)) == identity and identity.size > 0:
                with mmap.mmap(fd, 0, access=mmap.ACCESS_READ) as data:
                    return cls(fd, _initializer_spans(data))
        except (OSError, ValueError, IndexError, ModelSaveError):
            pass  # the file was parsed when read: this is another file now
        os.close(fd)
        return None


def _initializer_spans(data: mmap.mmap) -> dict[str, tuple[int, int]]:
    """(offset, length) of each main-graph initializer's TensorProto, by name; a name held
    twice is left out."""
    graph = field_span(data, MODEL_GRAPH)
    if graph is None:
        return {}
    spans: dict[str, tuple[int, int]] = {}
    twice: set[str] = set()
    for number, _, start, end in fields(data, graph[1], graph[2]):
        if number != GRAPH_INITIALIZER:
            continue
        name = _tensor_name(data, start, end)
        if name in spans:
            twice.add(name)
        spans[name] = (start, end - start)
    for name in twice:
        del spans[name]
    return spans


def _tensor_name(data: mmap.mmap, start: int, end: int) -> str:
    for number, _, value_start, value_end in fields(data, start, end):
        if number == TENSOR_NAME:
            with contextlib.suppress(UnicodeDecodeError):
                return data[value_start:value_end].decode()
            break
        if number > TENSOR_NAME:
            break
    return ""
