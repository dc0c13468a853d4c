"""Saving a model: atomic, with optional external data, never breaking a file on disk.

The model's rename is the one commit point. Before it, nothing the model on disk (or any
other model in the folder) reads has changed:
- a data file that does not exist yet is written in a hidden staging folder and moved in;
- a data file of this document's own (same inode, size and mtime as last seen) only grows:
  new or changed tensors are appended after its end, old ranges are never reused;
- a data file that must be rewritten (too much dead space, explicit offsets over old bytes,
  or the previous file of the model being overwritten) is written under a hidden name, the
  model is committed pointing there, the file is linked over its real name and the model
  committed again: at every instant the model on disk reads consistent bytes.
Files that are not this document's own are refused unless they belong to the model being
overwritten (or `overwrite=True`), and a file another model in the folder reads is never
replaced.
"""

from __future__ import annotations

import contextlib
import enum
import itertools
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import onnx
import onnx_ir as ir

from nsdl_jupyter._output_guard import models_referencing, references
from nsdl_jupyter.document._data_files import (
    STAGING_MARK,
    DataFileBook,
    external_tensors,
    hidden_name,
    hidden_versions,
    pin,
    remove_stale_staging,
)
from nsdl_jupyter.document._errors import ModelLoadError, ModelSaveError
from nsdl_jupyter.document._file_identity import FileIdentity
from nsdl_jupyter.document._inline_weights import WeightCopies, remember_model_file
from nsdl_jupyter.document._loading import resolve_inside
from nsdl_jupyter.document._model_bytes import ModelBytes, encode_model

_ALIGNMENT = 64
_PROTOBUF_LIMIT = 2**31 - 1
# An appended data file is compacted once its dead bytes pass both of these.
_COMPACT_MIN_DEAD = 1 << 20


@dataclass(frozen=True)
class ExternalLocation:
    """Where one initializer's bytes go: a file relative to the model, optionally at an offset."""

    location: str
    offset: int | None = None
    length: int | None = None


@dataclass(frozen=True)
class _Placement:
    value: ir.Value
    tensor: ir.TensorProtocol
    offset: int
    length: int
    on_disk: bool  # already at this offset in the file as it is now


class _Mode(enum.Enum):
    CREATE = "create"  # the file does not exist yet
    APPEND = "append"  # this document's own file: new bytes after its end
    REWRITE = "rewrite"  # written afresh, committed through a hidden name


@dataclass
class _DataFile:
    location: str
    path: Path
    mode: _Mode
    placements: list[_Placement]
    size_before: int = 0
    hidden: Path | None = field(default=None)


@dataclass(frozen=True)
class SaveRequest:
    """Everything one save needs besides the model."""

    target: Path
    source: Path | None  # where the document was opened from or last saved
    planned: Mapping[str, ExternalLocation]
    external_data: str | None
    size_threshold: int
    overwrite: bool = False
    protected: frozenset[Path] = frozenset()  # the model files and companions: never data
    # given the written model's structure (`ModelBytes.structure`) once its bytes are written
    # and before they are synced: work that can overlap with the disk
    while_syncing: Callable[[onnx.ModelProto], object] | None = None


def save_model(model: ir.Model, request: SaveRequest, book: DataFileBook) -> None:
    """Write `model` to `request.target` atomically (see the module docstring)."""
    target = request.target
    folder = target.parent
    if not folder.is_dir():
        raise ModelSaveError(f"cannot save to {target}: folder {folder} does not exist")
    if target.is_dir():
        raise ModelSaveError(f"cannot save to {target}: it is a folder; give a file name")
    if not os.access(folder, os.W_OK):
        raise ModelSaveError(f"cannot save to {target}: folder {folder} is not writable")
    remove_stale_staging(folder)
    files = _plan(model.graph, request, book)
    for data_file in files:
        if data_file.mode is _Mode.REWRITE and data_file.path.exists():
            data_file.hidden = hidden_name(data_file.path)
    with WeightCopies() as copies:
        # Serialized before any byte is written: a model over protobuf's limit changes nothing.
        final = _serialize(model, files, folder, copies, hidden=False)
        rewriting = any(f.hidden is not None for f in files)
        first = _serialize(model, files, folder, copies, hidden=True) if rewriting else None
        _write_and_commit(model, book, files, (first, final), request)
    remember_model_file(final.loaded, target.absolute(), FileIdentity.of(target))
    for data_file in files:
        book.record_written(
            data_file.path, [(p.tensor, p.offset, p.length) for p in data_file.placements]
        )
    written = {f.path for f in files}
    if request.source is not None and request.source.resolve() == target.resolve():
        _remove_superseded(model, book, book.model_files - written, target)
    book.model_files = written
    remove_stale_staging(folder)


def _remove_superseded(
    model: ir.Model, book: DataFileBook, candidates: set[Path], target: Path
) -> None:
    """After an in-place save: delete the data files the model no longer reads, when they
    are this document's own and no other model in the folder reads them."""
    doomed = [
        path
        for path in sorted(candidates)
        if book.owns(path) and not models_referencing(path.parent, path, besides=target)
    ]
    _pin_before_replacing(model, book, doomed)
    for path in doomed:
        path.unlink(missing_ok=True)


def _write_and_commit(
    model: ir.Model,
    book: DataFileBook,
    files: Sequence[_DataFile],
    models: tuple[ModelBytes | None, ModelBytes],
    request: SaveRequest,
) -> None:
    """Data files first, then the model (twice when a data file is rewritten in place)."""
    first, final = models
    target = request.target
    rewrites = [f for f in files if f.hidden is not None]
    try:
        staging = Path(
            tempfile.mkdtemp(
                prefix=f".{target.name}{STAGING_MARK}{os.getpid()}-", dir=target.parent
            )
        )
    except OSError as error:
        raise ModelSaveError(f"cannot save to {target}: {error}") from error
    committed = False
    try:
        for data_file in files:
            if data_file.mode is _Mode.APPEND:
                _append(data_file)
            else:
                _write_data_file(staging / data_file.location, data_file.placements)
        _pin_before_replacing(model, book, [f.path for f in rewrites])
        for data_file in files:
            if data_file.mode is not _Mode.APPEND:
                destination = data_file.hidden or data_file.path
                destination.parent.mkdir(parents=True, exist_ok=True)
                os.replace(staging / data_file.location, destination)
        if first is not None:
            _commit(first, staging, target)
            committed = True
            for data_file in rewrites:
                assert data_file.hidden is not None
                _copy_over(data_file.hidden, data_file.path)
        _commit(final, staging, target, request.while_syncing)
        committed = True
        for data_file in rewrites:
            assert data_file.hidden is not None
            data_file.hidden.unlink(missing_ok=True)
    except OSError as error:
        if not committed:
            _undo_appends(files)
        raise ModelSaveError(f"cannot save to {target}: {error}") from error
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _plan(graph: ir.Graph, request: SaveRequest, book: DataFileBook) -> list[_DataFile]:
    """Decide each external initializer's file and byte range, and how each file is written."""
    folder = request.target.parent
    wanted: dict[str, list[tuple[ir.Value, ExternalLocation]]] = {}
    for name, value in graph.initializers.items():
        tensor = value.const_value
        if tensor is None:
            continue
        spec = request.planned.get(name)
        if tensor.dtype == ir.DataType.STRING:
            if spec is not None:
                raise ModelSaveError(
                    f"initializer {name!r} holds strings, which ONNX cannot store as external "
                    f"data: remove its external location (doc.set_external) or change its dtype"
                )
            continue
        big = isinstance(tensor, ir.ExternalTensor) or tensor.nbytes >= request.size_threshold
        if spec is None and request.external_data is not None and big:
            spec = ExternalLocation(request.external_data)
        if spec is not None:
            wanted.setdefault(spec.location, []).append((value, spec))

    files = []
    for location, entries in wanted.items():
        path = _data_path(folder, location, request)
        files.append(_plan_file(location, path, entries, request, book))
    return files


def _data_path(folder: Path, location: str, request: SaveRequest) -> Path:
    try:
        path = resolve_inside(folder, location, f"external data {location!r}")
    except ModelLoadError as error:
        raise ModelSaveError(str(error)) from None
    if path in request.protected or path == request.target.resolve():
        raise ModelSaveError(
            f"external data location {location!r} is the model file or its companion: "
            f"choose another name, e.g. {request.target.name + '.data'!r}"
        )
    if path.is_dir():
        raise ModelSaveError(f"external data location {location!r} is a folder: give a file name")
    return path


def _plan_file(
    location: str,
    path: Path,
    entries: Sequence[tuple[ir.Value, ExternalLocation]],
    request: SaveRequest,
    book: DataFileBook,
) -> _DataFile:
    size = path.stat().st_size if path.exists() else 0
    if not path.exists():
        mode = _Mode.CREATE
    elif book.owns(path):
        mode = _Mode.APPEND
    else:
        _check_may_replace(path, location, request)
        mode = _Mode.REWRITE
    if mode is _Mode.APPEND:
        placements = _layout(entries, book, path, start=size)
        if placements is not None and not _too_sparse(placements, size):
            return _DataFile(location, path, mode, placements, size_before=size)
        if models_referencing(path.parent, path, besides=request.target):
            if placements is not None:  # shared with another model: keep appending
                return _DataFile(location, path, mode, placements, size_before=size)
            raise ModelSaveError(
                f"explicit offsets in {location!r} would overwrite bytes that other models in "
                f"the folder read: choose offsets past its end ({size}) or another file"
            )
        mode = _Mode.REWRITE
    placements = _layout(entries, None, path, start=0)
    assert placements is not None
    return _DataFile(location, path, mode, placements)


def _check_may_replace(path: Path, location: str, request: SaveRequest) -> None:
    """A file that is not the document's own may be replaced only when it belongs to the
    model being overwritten (or `overwrite=True`), and never when another model reads it."""
    target = request.target
    # the model being overwritten reads it (or read its rewrite when a save was killed)
    ours = target.is_file() and any(
        references(target, candidate) for candidate in [path, *hidden_versions(path)]
    )
    if not ours and not request.overwrite:
        raise ModelSaveError(
            f"{location!r} already exists in {path.parent} and is not this model's data file "
            f"(it may be another model's weights): choose another external_data name, or pass "
            f"overwrite=True to replace it"
        )
    others = models_referencing(path.parent, path, besides=target)
    if others:
        names = ", ".join(p.name for p in others[:3])
        raise ModelSaveError(
            f"{location!r} is the external data of {names}: replacing it would break "
            f"{'that model' if len(others) == 1 else 'those models'}; choose another "
            f"external_data name"
        )


def _layout(
    entries: Sequence[tuple[ir.Value, ExternalLocation]],
    book: DataFileBook | None,
    path: Path,
    *,
    start: int,
) -> list[_Placement] | None:
    """Byte ranges for `entries`; with a `book`, bytes already in the file stay where they are
    and new ones go after `start`. None when an explicit offset would reuse old bytes."""
    placements: list[_Placement] = []
    free: list[tuple[ir.Value, ir.TensorProtocol, int]] = []
    for value, spec in entries:
        tensor = value.const_value
        assert tensor is not None
        length = tensor.nbytes
        if spec.length is not None and spec.length != length:
            raise ModelSaveError(
                f"initializer {value.name!r} has {length} bytes but its external length is "
                f"set to {spec.length}: fix the length or leave it unset"
            )
        existing = book.position(tensor, path) if book is not None else None
        if existing is not None and spec.offset in (None, existing):
            placements.append(_Placement(value, tensor, existing, length, on_disk=True))
        elif spec.offset is not None:
            if book is not None and spec.offset < start:
                return None
            placements.append(_Placement(value, tensor, spec.offset, length, on_disk=False))
        else:
            free.append((value, tensor, length))
    end = max([start, *(p.offset + p.length for p in placements)])
    for value, tensor, length in free:
        end = -(-end // _ALIGNMENT) * _ALIGNMENT
        placements.append(_Placement(value, tensor, end, length, on_disk=False))
        end += length
    placements.sort(key=lambda p: p.offset)
    for before, after in itertools.pairwise(placements):
        if before.offset + before.length > after.offset:
            raise ModelSaveError(
                f"external data of {before.value.name!r} and {after.value.name!r} overlap in "
                f"{path.name!r}: choose other offsets"
            )
    return placements


def _too_sparse(placements: Sequence[_Placement], size: int) -> bool:
    """True when an appended file would be mostly dead bytes (then it is rewritten)."""
    end = max([size, *(p.offset + p.length for p in placements)])
    live = sum(p.length for p in placements)
    dead = end - live
    return dead >= _COMPACT_MIN_DEAD and dead > live


def _append(data_file: _DataFile) -> None:
    with open(data_file.path, "r+b") as handle:
        for placement in data_file.placements:
            if placement.on_disk:
                continue
            handle.seek(placement.offset)
            handle.write(placement.tensor.tobytes())
        handle.flush()
        os.fsync(handle.fileno())


def _undo_appends(files: Sequence[_DataFile]) -> None:
    """A save that failed before its commit leaves appended files as they were."""
    for data_file in files:
        if data_file.mode is _Mode.APPEND:
            with contextlib.suppress(OSError):  # else only dead bytes after the end remain
                os.truncate(data_file.path, data_file.size_before)


def _write_data_file(path: Path, placements: Sequence[_Placement]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as handle:
        for placement in placements:
            handle.seek(placement.offset)
            handle.write(placement.tensor.tobytes())
        handle.flush()
        os.fsync(handle.fileno())


def _commit(
    data: ModelBytes,
    staging: Path,
    target: Path,
    while_syncing: Callable[[onnx.ModelProto], object] | None = None,
) -> None:
    staged = staging / target.name
    with open(staged, "wb") as handle:
        data.write_to(handle)
        handle.flush()
        if while_syncing is not None:  # the disk writes back what it was handed meanwhile
            while_syncing(data.structure())
        os.fsync(handle.fileno())
    os.replace(staged, target)
    _fsync_folder(target.parent)


def _copy_over(source: Path, destination: Path) -> None:
    """Make `destination` hold `source`'s bytes, atomically; `source` stays.

    A copy, not a hard link: onnx refuses data files with several links (a defence against
    hard-link attacks), so a model must never name a linked file, even for an instant.
    """
    temporary = hidden_name(destination)
    with open(source, "rb") as reader, open(temporary, "wb") as writer:
        shutil.copyfileobj(reader, writer, 1 << 24)
        writer.flush()
        os.fsync(writer.fileno())
    os.replace(temporary, destination)


def _fsync_folder(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # not every file system syncs folders
    finally:
        os.close(fd)


def _pin_before_replacing(model: ir.Model, book: DataFileBook, replaced: Sequence[Path]) -> None:
    """Tensors read from a file about to be replaced keep the old bytes (undo needs them)."""
    if not replaced:
        return
    doomed = set(replaced)
    for tensor in [*external_tensors(model), *book.loaded_tensors()]:
        if Path(tensor.path).resolve() in doomed:
            pin(tensor, force=True)


def _serialize(
    model: ir.Model,
    files: Sequence[_DataFile],
    folder: Path,
    copies: WeightCopies,
    *,
    hidden: bool,
) -> ModelBytes:
    try:
        with _external_references(model, files, folder, hidden=hidden):
            encoded = encode_model(model, copies)
    except Exception as error:  # onnx_ir wraps what it cannot write in its own errors
        cause = error.__cause__ or error
        raise ModelSaveError(
            f"the model cannot be written as ONNX ({type(cause).__name__}: {cause}); "
            "nothing was written: fix the model (doc.check() lists its problems)"
        ) from error
    if encoded.size > _PROTOBUF_LIMIT:
        raise ModelSaveError(
            f"the model is {encoded.size / 2**30:.1f} GiB, over protobuf's 2 GiB limit: save "
            "with external_data='<name>.data' to keep the weights in a separate file"
        )
    return encoded


@contextmanager
def _external_references(
    model: ir.Model, files: Sequence[_DataFile], folder: Path, *, hidden: bool
) -> Iterator[None]:
    """Point initializers at their final external location while the proto is built;
    external tensors that are to be stored inline are read into memory for that time."""
    originals: list[tuple[ir.Value, ir.TensorProtocol | None]] = []
    placed = {id(p.value) for data_file in files for p in data_file.placements}
    try:
        for graph in model.graphs():
            for value in graph.initializers.values():
                tensor = value.const_value
                if isinstance(tensor, ir.ExternalTensor) and id(value) not in placed:
                    originals.append((value, tensor))
                    value.const_value = ir.Tensor(tensor.numpy(), name=value.name)
        for data_file in files:
            written = data_file.hidden if hidden and data_file.hidden else data_file.path
            location = os.path.relpath(written, folder.resolve())
            for placement in data_file.placements:
                value = placement.value
                originals.append((value, placement.tensor))
                value.const_value = ir.ExternalTensor(
                    location,
                    placement.offset,
                    placement.length,
                    placement.tensor.dtype,
                    shape=ir.Shape(placement.tensor.shape.numpy()),
                    name=value.name or "",
                    base_dir=folder,
                )
        yield
    finally:
        for value, tensor in originals:
            value.const_value = tensor
