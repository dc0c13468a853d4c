"""Saving a model: atomic, with optional external data, never breaking the file on disk.

Layout of a save: every data file and the model are first written into a temporary folder
beside the target, then renamed over their final names (data files first, the model last).
Tensors already stored in a data file at the target keep their offsets, so re-saving after an
attribute edit rewrites no weights.
"""

from __future__ import annotations

import itertools
import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
import onnx_ir as ir

from nsdl_jupyter.document._errors import ModelSaveError
from nsdl_jupyter.document._loading import resolve_inside

_ALIGNMENT = 64
_PROTOBUF_LIMIT = 2**31 - 1


@dataclass(frozen=True)
class ExternalLocation:
    """Where one initializer's bytes go: a file relative to the model, optionally at an offset."""

    location: str
    offset: int | None = None
    length: int | None = None


@dataclass(frozen=True)
class _Placement:
    value: ir.Value
    offset: int
    length: int


def save_model(
    model: ir.Model,
    target: Path,
    *,
    planned: Mapping[str, ExternalLocation],
    external_data: str | None,
    size_threshold: int,
    known_external: Iterable[ir.ExternalTensor] = (),
) -> None:
    """Write `model` to `target` atomically.

    `planned` maps initializer names to explicit external locations; `external_data` names a
    file for every other initializer of at least `size_threshold` bytes or already stored
    externally (None keeps them inline).
    """
    folder = target.parent
    if not folder.is_dir():
        raise ModelSaveError(f"cannot save to {target}: folder {folder} does not exist")
    if target.is_dir():
        raise ModelSaveError(f"cannot save to {target}: it is a folder; give a file name")
    if not os.access(folder, os.W_OK):
        raise ModelSaveError(f"cannot save to {target}: folder {folder} is not writable")

    files = _plan_files(model.graph, folder, planned, external_data, size_threshold)
    try:
        staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.saving-", dir=folder))
    except OSError as error:
        raise ModelSaveError(f"cannot save to {target}: {error}") from error
    try:
        to_write = {
            location: placements
            for location, placements in files.items()
            if not _already_on_disk(folder / location, placements)
        }
        for location, placements in to_write.items():
            _write_data_file(staging / location, placements)
        with _external_references(model.graph, files, folder):
            proto = ir.to_proto(model)
        _drop_initializer_value_info(proto.graph)
        data = proto.SerializeToString()
        if len(data) > _PROTOBUF_LIMIT:
            raise ModelSaveError(
                f"the model is {len(data) / 2**30:.1f} GiB, over protobuf's 2 GiB limit: save "
                "with external_data='<name>.data' to keep the weights in a separate file"
            )
        staged_model = staging / target.name
        staged_model.write_bytes(data)
        _fsync(staged_model)
        _pin_replaced_files(
            [*_external_tensors(model.graph), *known_external],
            {(folder / location).resolve() for location in to_write},
        )
        for location in to_write:
            final = folder / location
            final.parent.mkdir(parents=True, exist_ok=True)
            os.replace(staging / location, final)
        os.replace(staged_model, target)
    except ModelSaveError:
        raise
    except OSError as error:
        raise ModelSaveError(f"cannot save to {target}: {error}") from error
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _plan_files(
    graph: ir.Graph,
    folder: Path,
    planned: Mapping[str, ExternalLocation],
    external_data: str | None,
    size_threshold: int,
) -> dict[str, list[_Placement]]:
    """Decide the byte range of every external initializer, keeping existing offsets."""
    wanted: dict[str, list[tuple[ir.Value, ExternalLocation]]] = {}
    for name, value in graph.initializers.items():
        tensor = value.const_value
        if tensor is None:
            continue
        spec = planned.get(name)
        big = tensor.nbytes >= size_threshold or isinstance(tensor, ir.ExternalTensor)
        if spec is None and external_data is not None and big:
            spec = ExternalLocation(external_data)
        if spec is not None:
            resolve_inside(folder, spec.location, f"initializer {name!r}")
            wanted.setdefault(spec.location, []).append((value, spec))

    files: dict[str, list[_Placement]] = {}
    for location, entries in wanted.items():
        path = (folder / location).resolve()
        placements: list[_Placement] = []
        free: list[tuple[ir.Value, int]] = []
        for value, spec in entries:
            tensor = value.const_value
            assert tensor is not None
            length = tensor.nbytes
            if spec.length is not None and spec.length != length:
                raise ModelSaveError(
                    f"initializer {value.name!r} has {length} bytes but its external length is "
                    f"set to {spec.length}: fix the length or leave it unset"
                )
            offset = spec.offset
            if (
                offset is None
                and isinstance(tensor, ir.ExternalTensor)
                and Path(tensor.path).resolve() == path
            ):
                offset = tensor.offset
            if offset is None:
                free.append((value, length))
            else:
                placements.append(_Placement(value, offset, length))
        end = max((p.offset + p.length for p in placements), default=0)
        for value, length in free:
            end = -(-end // _ALIGNMENT) * _ALIGNMENT
            placements.append(_Placement(value, end, length))
            end += length
        placements.sort(key=lambda p: p.offset)
        for before, after in itertools.pairwise(placements):
            if before.offset + before.length > after.offset:
                raise ModelSaveError(
                    f"external data of {before.value.name!r} and {after.value.name!r} overlap in "
                    f"{location!r}: choose other offsets"
                )
        files[location] = placements
    return files


def _already_on_disk(path: Path, placements: list[_Placement]) -> bool:
    """True when the file holds exactly these tensors at these offsets (nothing to rewrite)."""
    if not path.is_file():
        return False
    resolved = path.resolve()
    for placement in placements:
        tensor = placement.value.const_value
        if not (
            isinstance(tensor, ir.ExternalTensor)
            and Path(tensor.path).resolve() == resolved
            and (tensor.offset or 0) == placement.offset
        ):
            return False
    return True


def _write_data_file(path: Path, placements: list[_Placement]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as handle:
        for placement in placements:
            tensor = placement.value.const_value
            assert tensor is not None
            handle.seek(placement.offset)
            handle.write(tensor.tobytes())
        handle.flush()
        os.fsync(handle.fileno())


@contextmanager
def _external_references(
    graph: ir.Graph, files: Mapping[str, list[_Placement]], folder: Path
) -> Iterator[None]:
    """Point initializers at their final external location while the proto is built;
    external tensors that are to be stored inline are read into memory for that time."""
    originals: list[tuple[ir.Value, ir.TensorProtocol | None]] = []
    placed = {id(p.value) for placements in files.values() for p in placements}
    try:
        for value in graph.initializers.values():
            tensor = value.const_value
            if isinstance(tensor, ir.ExternalTensor) and id(value) not in placed:
                originals.append((value, tensor))
                value.const_value = ir.Tensor(tensor.numpy(), name=value.name)
        for location, placements in files.items():
            for placement in placements:
                value = placement.value
                tensor = value.const_value
                assert tensor is not None
                originals.append((value, tensor))
                value.const_value = ir.ExternalTensor(
                    location,
                    placement.offset,
                    placement.length,
                    tensor.dtype,
                    shape=ir.Shape(tensor.shape.numpy()),
                    name=value.name or "",
                    base_dir=folder,
                )
        yield
    finally:
        for value, tensor in originals:
            value.const_value = tensor


def _pin_replaced_files(tensors: Iterable[ir.ExternalTensor], replaced: set[Path]) -> None:
    """Memory-map tensors whose data file is about to be replaced, so they keep the old bytes.

    A mapping holds the old file's inode open after the rename; this costs no memory until
    the bytes are read, and keeps undo of later edits correct.
    """
    if not replaced:
        return
    for tensor in tensors:
        if Path(tensor.path).resolve() in replaced:
            np.asarray(tensor)  # maps the file now


def _external_tensors(graph: ir.Graph) -> Iterator[ir.ExternalTensor]:
    for value in graph.initializers.values():
        if isinstance(value.const_value, ir.ExternalTensor):
            yield value.const_value


def _fsync(path: Path) -> None:
    with open(path, "rb") as handle:
        os.fsync(handle.fileno())


def _drop_initializer_value_info(graph: onnx.GraphProto) -> None:
    """onnx_ir records initializer types as value_info; the initializer already says them."""
    initializers = {tensor.name for tensor in graph.initializer}
    kept = [info for info in graph.value_info if info.name not in initializers]
    if len(kept) != len(graph.value_info):
        del graph.value_info[:]
        graph.value_info.extend(kept)
