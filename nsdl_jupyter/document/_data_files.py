"""What a document knows about the external data files beside its model.

Data files are trusted by identity, never by name: a file is this document's own only while
its device, inode, size and modification time are the ones seen when the model was opened or
last saved. Each tensor's bytes are known to lie at an offset of one inode; a replaced or
modified file makes those positions stale, so the bytes are written again (or the save is
refused), never assumed.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import shutil
import weakref
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx_ir as ir

from nsdl_jupyter._output_guard import models_referencing
from nsdl_jupyter._walk import graphs_in
from nsdl_jupyter.document._file_identity import FileIdentity

# Hidden names a save uses beside the model; a killed save may leave them behind.
STAGING_MARK = ".saving-"
REWRITE_MARK = ".rewrite-"
_STALE = re.compile(r"^\..+\.(?:saving|rewrite)-(\d+)-[0-9a-z_]+$")
_HIDDEN = re.compile(r"^\.(.+)\.rewrite-\d+-[0-9a-f]+$")


@dataclass(frozen=True)
class StoredAt:
    """Where a tensor's bytes are known to be: an offset in one inode of one file."""

    path: Path
    device: int
    inode: int
    offset: int
    length: int


class DataFileBook:
    """Identities of the data files a document read or wrote, and where its tensors lie."""

    def __init__(self) -> None:
        self._identities: dict[Path, FileIdentity] = {}
        # id(tensor) -> (weak reference, where): an entry lives as long as its tensor (the
        # model or the undo history holds it), so undo then save finds bytes already written
        self._stored: dict[int, tuple[weakref.ref[ir.TensorProtocol], StoredAt]] = {}
        self._loaded: list[ir.ExternalTensor] = []
        # the data files the model on disk (as opened or last saved) reads
        self.model_files: set[Path] = set()

    def record_loaded(self, graphs: Iterable[ir.Graph]) -> None:
        """At open (`graphs`: all of the model's): the identity of every data file and each
        external tensor's position, with the bytes mapped now so a later replacement of the
        file cannot change them."""
        for tensor in _external_initializers(graphs):
            path = Path(tensor.path).resolve()
            identity = self._identities.get(path) or FileIdentity.of(path)
            if identity is None:
                continue
            self._identities[path] = identity
            length = tensor.length if tensor.length is not None else tensor.nbytes
            where = StoredAt(path, identity.device, identity.inode, tensor.offset or 0, length)
            self._remember(tensor, where)
            self._loaded.append(tensor)
            self.model_files.add(path)
            pin(tensor)

    def loaded_tensors(self) -> list[ir.ExternalTensor]:
        """The external tensors read at open (the undo history may still hold them)."""
        return list(self._loaded)

    def owns(self, path: Path) -> bool:
        """True when `path` is a file this document read or wrote and nobody changed since."""
        known = self._identities.get(path)
        return known is not None and known == FileIdentity.of(path)

    def position(self, tensor: ir.TensorProtocol, path: Path) -> int | None:
        """The offset where `tensor`'s bytes already lie in `path`, if that is still true."""
        where = self._where(tensor)
        if where is None:
            return None
        if where.path != path or not self.owns(path):
            return None
        identity = self._identities[path]
        if (identity.device, identity.inode) != (where.device, where.inode):
            return None
        return where.offset

    def record_written(
        self, path: Path, placements: Iterable[tuple[ir.TensorProtocol, int, int]]
    ) -> None:
        """After a save: `path` as it is now, and where each tensor was put in it."""
        identity = FileIdentity.of(path)
        if identity is None:
            return
        self._identities[path] = identity
        for tensor, offset, length in placements:
            self._remember(tensor, StoredAt(path, identity.device, identity.inode, offset, length))

    def _remember(self, tensor: ir.TensorProtocol, where: StoredAt) -> None:
        key = id(tensor)
        stored = self._stored

        def forget(_: object) -> None:
            stored.pop(key, None)

        self._stored[key] = (weakref.ref(tensor, forget), where)

    def _where(self, tensor: ir.TensorProtocol) -> StoredAt | None:
        entry = self._stored.get(id(tensor))
        if entry is None or entry[0]() is not tensor:
            return None
        return entry[1]


def external_tensors(model: ir.Model) -> Iterator[ir.ExternalTensor]:
    """Every external tensor of the model: initializers of every graph, subgraphs included."""
    yield from _external_initializers(graphs_in(model.graph))


def _external_initializers(graphs: Iterable[ir.Graph]) -> Iterator[ir.ExternalTensor]:
    for graph in graphs:
        for value in graph.initializers.values():
            if isinstance(value.const_value, ir.ExternalTensor):
                yield value.const_value


def pin(tensor: ir.ExternalTensor, *, force: bool = False) -> None:
    """Map the tensor's file now: the mapping keeps the old inode if the file is replaced.

    Costs no memory until the bytes are read; packed sub-byte types are unpacked into memory
    on mapping, so at open they are left lazy (`force` maps them before a replacement).
    """
    if tensor.raw is not None or (tensor.dtype.bitwidth < 8 and not force):
        return
    with contextlib.suppress(OSError, ValueError):
        np.asarray(tensor)


def hidden_name(path: Path) -> Path:
    """A fresh hidden name beside `path` for a file a save writes before its commit."""
    return path.with_name(f".{path.name}{REWRITE_MARK}{os.getpid()}-{secrets.token_hex(4)}")


def hidden_versions(path: Path) -> list[Path]:
    """Hidden rewrites of `path` (`hidden_name`) left beside it by saves."""
    prefix = f".{path.name}{REWRITE_MARK}"
    try:
        return [
            path.with_name(e.name) for e in os.scandir(path.parent) if e.name.startswith(prefix)
        ]
    except OSError:
        return []


def real_name(location: str) -> str:
    """The data file name behind a hidden rewrite name (a save killed between its commits
    leaves the model naming the hidden file); other names are returned as they are."""
    folder, _, name = location.rpartition("/")
    match = _HIDDEN.match(name)
    if match is None:
        return location
    return f"{folder}/{match.group(1)}" if folder else match.group(1)


def remove_stale_staging(folder: Path) -> None:
    """Remove staging folders and rewrite files left by killed saves (their process is gone)."""
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    for entry in entries:
        match = _STALE.match(entry.name)
        if match is None or _alive(int(match.group(1))):
            continue
        path = Path(entry.path)
        with contextlib.suppress(OSError):
            if entry.is_dir(follow_symlinks=False):
                shutil.rmtree(path)
            elif not models_referencing(folder, path.resolve(), besides=None):
                # a save killed between its two commits leaves the model naming this file
                path.unlink()


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True
