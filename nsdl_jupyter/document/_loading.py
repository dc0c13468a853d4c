"""Opening ONNX files safely: clear errors for corrupt input, external data kept on disk."""

from __future__ import annotations

import math
import mmap
import os
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import onnx
import onnx_ir as ir
from google.protobuf.message import DecodeError

from nsdl_jupyter._errors import input_path
from nsdl_jupyter._walk import all_tensors
from nsdl_jupyter.document._errors import ModelLoadError
from nsdl_jupyter.document._file_identity import FileIdentity
from nsdl_jupyter.document._inline_weights import large_weights, remember_model_file


def load_model(path: str | os.PathLike[str]) -> ir.Model:
    """Read `path` into onnx_ir without reading external weights (they stay memory-mapped).

    Callers that build much more on top (ModelDocument) run it under `gc_paused`.
    """
    return read_model_file(path).to_ir()


@dataclass(frozen=True)
class ModelFile:
    """A model file parsed and checked (header, external data references), before onnx_ir
    builds its model: building it is most of the cost of opening a big file (100,000 nodes:
    about 1.3 s of 1.4), and a view can draw from the protobuf without it."""

    source: Path
    proto: onnx.ModelProto
    identity: FileIdentity
    external: int  # tensors whose bytes live in a data file

    def to_ir(self) -> ir.Model:
        source = self.source
        try:
            model = ir.serde.deserialize_model(self.proto)
            weights = large_weights(model)  # reads each weight's type: may be undefined
        except Exception as error:
            # onnx_ir wraps the cause in "Error calling _deserialize_graph with: <graph name>"
            cause = error.__cause__
            detail = f"{cause} ({error})" if cause is not None else str(error)
            raise ModelLoadError(
                f"{source} could not be read as an ONNX model: {detail}"
            ) from error
        if self.external:  # a walk of every node: only when some tensor reads a data file
            ir.external_data.set_base_dir(model.graph, source.resolve().parent)  # bodies too
        remember_model_file(weights, source.absolute(), self.identity)
        return model


def read_model_file(path: str | os.PathLike[str]) -> ModelFile:
    """The file at `path` parsed and checked; its weights stay on disk (see `ModelFile`)."""
    source = input_path(path, "model file")
    proto, identity = _read_proto(source)
    external = check_external_data(proto, source.resolve().parent, source)
    return ModelFile(source, proto, identity, external)


def read_model_proto(path: str | os.PathLike[str]) -> onnx.ModelProto:
    """The file's ModelProto, checked as `load_model` checks it, external data left unread
    (for readers that need the graph and types, not onnx_ir: node_work)."""
    return _read_proto(input_path(path, "model file"))[0]


def _read_proto(source: Path) -> tuple[onnx.ModelProto, FileIdentity]:
    with open(source, "rb") as handle:
        identity = FileIdentity.of_stat(os.fstat(handle.fileno()))
        try:
            proto = _parse_file(handle)
        except (DecodeError, RuntimeError, ValueError) as error:
            raise ModelLoadError(
                f"{source} is not a readable ONNX model (corrupt or truncated protobuf: {error})"
            ) from error
    check_model_header(proto, source)
    return proto, identity


def _parse_file(handle: BinaryIO) -> onnx.ModelProto:
    """The ModelProto in the file, parsed from a read-only map of it: protobuf copies what it
    keeps, so inline weights are not first copied into a buffer of the file's size too
    (BERT-base: 440 MB, 0.15-0.2 s of a fresh kernel's first drawing)."""
    try:
        mapped = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError):  # an empty file, or one that cannot be mapped (a pipe)
        return _parse(handle.read())
    with mapped, memoryview(mapped) as view:
        return _parse(view)


def _parse(data: bytes | memoryview) -> onnx.ModelProto:
    proto = onnx.ModelProto()
    read = proto.ParseFromString(data)
    if read is not None and read != len(data):  # as onnx.load_from_string checks
        raise DecodeError(f"protobuf decoding read {read} of {len(data)} bytes")
    return proto


def check_model_header(proto: onnx.ModelProto, source: Path) -> None:
    """Protobuf parses many byte strings; a real model has a graph and an opset import."""
    if not proto.HasField("graph") or proto.ir_version <= 0 or not proto.opset_import:
        raise ModelLoadError(
            f"{source} is not an ONNX model: no graph, IR version or opset import found "
            "(is it truncated, or a different file type?)"
        )
    if proto.ir_version > onnx.IR_VERSION:
        raise ModelLoadError(
            f"{source} has IR version {proto.ir_version}, newer than this onnx "
            f"({onnx.__version__}, IR {onnx.IR_VERSION}): upgrade the onnx package"
        )


def check_external_data(proto: onnx.ModelProto, base_dir: Path, source: Path) -> int:
    """Every external data reference must stay inside the model's folder and fit its file.

    Returns how many tensors keep their bytes in a data file.
    """
    sizes: dict[Path, int] = {}
    count = 0
    for tensor in all_tensors(proto):
        if tensor.data_location != onnx.TensorProto.EXTERNAL:
            continue
        count += 1
        info = {entry.key: entry.value for entry in tensor.external_data}
        location = info.get("location", "")
        where = f"{source}: initializer {tensor.name!r}"
        data_path = resolve_inside(base_dir, location, where)
        if data_path not in sizes:
            if not data_path.is_file():
                raise ModelLoadError(f"{where}: external data file {location!r} is missing")
            sizes[data_path] = data_path.stat().st_size
        try:
            offset = int(info.get("offset", "0"))
            length = int(info["length"]) if "length" in info else None
            needed = _stored_bytes(tensor)
        except ValueError as error:
            raise ModelLoadError(f"{where}: bad external data offset/length ({error})") from error
        if length is not None and length < needed:
            raise ModelLoadError(
                f"{where}: external data length {length} is shorter than the {needed} bytes "
                f"its dtype and shape {list(tensor.dims)} need: the model is corrupt"
            )
        end = offset + max(length or 0, needed)
        if offset < 0 or end > sizes[data_path]:
            raise ModelLoadError(
                f"{where}: external data [{offset}, {end}) lies outside {location!r} "
                f"({sizes[data_path]} bytes): the data file does not belong to this model"
            )
    return count


def _stored_bytes(tensor: onnx.TensorProto) -> int:
    """Bytes a tensor's raw data takes, from its dtype and dims."""
    if tensor.data_type == onnx.TensorProto.STRING:
        raise ModelLoadError("string tensors cannot be stored as external data")
    if any(dim < 0 for dim in tensor.dims):
        raise ModelLoadError(f"negative dimension in {list(tensor.dims)}")
    count = int(math.prod(tensor.dims))
    bits: int = ir.DataType(tensor.data_type).bitwidth
    return -(-count * bits // 8)


def resolve_inside(base_dir: Path, location: str, where: str) -> Path:
    """The absolute path of `location`, refusing anything that escapes `base_dir`."""
    if not location:
        raise ModelLoadError(f"{where}: external data has no location")
    if "\x00" in location:
        raise ModelLoadError(
            f"{where}: external data location {location!r} holds a NUL byte, which no file "
            "name can: give a plain relative file name"
        )
    relative = Path(location)
    if relative.is_absolute() or relative.drive:
        raise ModelLoadError(
            f"{where}: external data location {location!r} is absolute; ONNX requires a path "
            "relative to the model's folder"
        )
    resolved = (base_dir / relative).resolve()
    root = base_dir.resolve()
    if resolved != root and root not in resolved.parents:
        raise ModelLoadError(
            f"{where}: external data location {location!r} escapes the model's folder "
            f"{root}; refusing to read or write outside it"
        )
    return resolved
