"""Model variants of a sweep: one file per (batch, precision), made by the project's own
transforms (`fix_dims`, `convert_to_fp16`) and kept under the cache folder by content hash,
so the next sweep of the same model reuses them."""

from __future__ import annotations

import hashlib
import json
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import onnx_ir as ir

from nsdl_jupyter._version import __version__
from nsdl_jupyter.profiling import model_source
from nsdl_jupyter.sweeps._errors import SweepSettingsError
from nsdl_jupyter.transforms import TransformError, batch_dims, convert_to_fp16, fix_dims

_CHUNK = 1 << 20


@dataclass(frozen=True)
class SourceModel:
    """The swept model as a file in the cache: its name, content hash and free batch dims."""

    name: str
    path: Path
    sha256: str
    batch_dims: tuple[str, ...]
    external_data: bool = False


def _hash_files(paths: list[Path]) -> str:
    digest = hashlib.sha256()
    for path in paths:
        with open(path, "rb") as handle:
            while chunk := handle.read(_CHUNK):
                digest.update(chunk)
    return digest.hexdigest()


def source_model(model: Any, folder: Path) -> SourceModel:
    """`model` (path, ModelProto, onnx_ir.Model, ModelDocument) hashed by its content and kept
    in `folder` as `<sha256>.onnx` (a file with external data stays where it is)."""
    source = model_source(model)
    data: dict[str, Path] = {}
    if source.path is not None:
        data = source.data_files(source.path)
        path = source.path
        sha = _hash_files([path, *sorted(data.values())])
    else:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="nsdl-sweep-", dir=folder) as stage:
            written = Path(stage) / "model.onnx"
            try:
                ir.save(source.model, written)
            except ValueError as error:  # protobuf's 2 GB limit
                raise SweepSettingsError(
                    f"the model {source.name} is too big for one file ({error}): save it with "
                    "external data first (ModelDocument.save) and sweep the saved file"
                ) from error
            sha = _hash_files([written])
            path = folder / f"{sha}.onnx"
            if not path.is_file():
                written.replace(path)
    external = source.path is not None and bool(data)
    return SourceModel(source.name, path, sha, tuple(batch_dims(source.model)), external)


def variant_id(source: SourceModel, batch: int | None, precision: str) -> str:
    """The content identity of a variant: the source's hash and what was done to it."""
    spec = {"model": source.sha256, "batch": batch, "precision": precision, "nsdl": __version__}
    return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()


def make_variant(source: SourceModel, batch: int | None, precision: str, folder: Path) -> Path:
    """The file of `source` at `batch` (None: as exported) and `precision`; made once."""
    if batch is None and precision == "fp32":
        return source.path
    if batch is not None and not source.batch_dims:
        raise SweepSettingsError(
            f"batch={batch}: the model {source.name} has no free first input dimension (it "
            "was exported for one batch size); export it with a dynamic batch axis, or leave "
            "batch out of the grid"
        )
    if source.external_data:
        raise SweepSettingsError(
            f"batch and fp16 variants of {source.name} are not made yet: it keeps its weights in "
            "external data files; sweep its batch/precision variants as separate files, or "
            "leave batch and fp16 out of the grid"
        )
    path = folder / f"{variant_id(source, batch, precision)}.onnx"
    if path.is_file():
        return path
    folder.mkdir(parents=True, exist_ok=True)
    current = source.path
    with tempfile.TemporaryDirectory(prefix="nsdl-variant-", dir=folder) as stage:
        try:
            if batch is not None:
                fixed = Path(stage) / "batch.onnx"
                fix_dims(current, fixed, batch=batch)
                current = fixed
            if precision == "fp16":
                half = Path(stage) / "fp16.onnx"
                convert_to_fp16(current, half)
                current = half
        except TransformError as error:
            raise SweepSettingsError(
                f"cannot make the variant batch={batch}, precision={precision} of "
                f"{source.name}: {error}"
            ) from error
        Path(current).replace(path)
    return path
