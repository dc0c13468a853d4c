"""Input feeds for a profile: checks on random-input sizes, and the input folder reader.

An input folder holds one serialized `onnx.TensorProto` per graph input, named after the
input (`<name>.pb`, with '/', '\\' and ':' written as '_'), or any `.pb` file whose TensorProto
`name` is the input's name (the layout of ONNX test data sets). Everything is checked here, in
the kernel, before a child process starts; the runner then gets one `.npz` file. The folder is
untrusted: regular files only, sizes checked before reading, external data kept inside it.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np
import onnx
import onnx_ir as ir
from onnx import numpy_helper

from nsdl_jupyter.document import ModelLoadError, resolve_inside
from nsdl_jupyter.profiling._errors import InputFolderError, ProfileSettingsError
from nsdl_jupyter.profiling._files import open_regular
from nsdl_jupyter.profiling._model_source import GraphInput

# Bounds on an input file when the model fixes its shape: the widest encoding of an element
# (complex128, or an int64 as a 10-byte varint) plus room for the proto's name and dims.
_MAX_BYTES_PER_ELEMENT = 16
_PROTO_OVERHEAD = 64 << 10


def input_file_name(input_name: str) -> str:
    """The file name an input's tensor is expected under."""
    return "".join("_" if c in "/\\:" else c for c in input_name) + ".pb"


def check_dim_sizes(dim_sizes: dict[str, int], free_dims: set[str]) -> None:
    unknown = sorted(set(dim_sizes) - free_dims)
    if unknown:
        valid = ", ".join(sorted(free_dims)) or "none (every input dimension is fixed)"
        raise ProfileSettingsError(
            f"dim_sizes names {unknown}, which no model input has; its free dimensions: {valid}"
        )


def _byte_limit(spec: GraphInput) -> int | None:
    """The most bytes a TensorProto for `spec` can take; None when free dims or strings leave
    it open (the file is still only read up to its own size)."""
    if spec.dtype is None or spec.dtype == ir.DataType.STRING or spec.dims is None:
        return None
    count = 1
    for dim in spec.dims:
        if not isinstance(dim, int):
            return None
        count *= dim
    return count * _MAX_BYTES_PER_ELEMENT + _PROTO_OVERHEAD + 4 * len(spec.name)


def _read_regular(path: Path, max_bytes: int | None, what: str) -> bytes:
    """The bytes of a regular file (a FIFO or a link to /dev/zero is refused, never read)."""
    try:
        with open_regular(path, InputFolderError) as handle:
            size = os.fstat(handle.fileno()).st_size
            if max_bytes is not None and size > max_bytes:
                raise InputFolderError(
                    f"{path} is {size} bytes, more than {what} can take ({max_bytes} bytes): "
                    "is it the right file?"
                )
            return handle.read(size)  # bounded even if the file grows meanwhile
    except OSError as exc:
        raise InputFolderError(f"{path} cannot be read ({exc})") from exc


def _read_tensor(path: Path, max_bytes: int | None = None) -> onnx.TensorProto:
    data = _read_regular(path, max_bytes, "a tensor for its input")
    tensor = onnx.TensorProto()
    try:
        tensor.ParseFromString(data)
    except Exception as exc:  # protobuf raises DecodeError and others
        raise InputFolderError(
            f"{path} is not a serialized onnx.TensorProto ({exc}); write it with "
            "onnx.numpy_helper.from_array(array, name).SerializeToString()"
        ) from exc
    return tensor


def _load_external(tensor: onnx.TensorProto, path: Path, folder: Path) -> None:
    """Read an external tensor's bytes into it: the location must stay inside the folder."""
    where = f"{path.name} (input {tensor.name!r})"
    info = {entry.key: entry.value for entry in tensor.external_data}
    try:
        data_path = resolve_inside(folder, info.get("location", ""), where)
    except ModelLoadError as exc:
        raise InputFolderError(
            f"{exc} (external data of an input tensor is read from the input folder {folder})"
        ) from exc
    try:
        dtype = ir.DataType(tensor.data_type)
        count = math.prod(tensor.dims)
        needed = math.ceil(count * dtype.itemsize)
        offset = int(info.get("offset", "0"))
        length = int(info["length"]) if "length" in info else needed
    except (TypeError, ValueError) as exc:  # STRING has no itemsize; bad offset text
        raise InputFolderError(f"{where}: unusable external data ({exc})") from exc
    if offset < 0 or length != needed or count < 0:
        raise InputFolderError(
            f"{where}: external data of {length} bytes at offset {offset} does not fit shape "
            f"{list(tensor.dims)} ({needed} bytes)"
        )
    data = _read_regular(data_path, offset + needed, "this tensor's data file")
    if len(data) < offset + needed:
        raise InputFolderError(
            f"{where}: external data file {data_path.name} holds {len(data)} bytes; the tensor "
            f"needs [{offset}, {offset + needed})"
        )
    tensor.raw_data = data[offset : offset + needed]
    del tensor.external_data[:]
    tensor.data_location = onnx.TensorProto.DEFAULT


def _to_array(tensor: onnx.TensorProto, path: Path, folder: Path) -> np.ndarray:
    if tensor.data_location == onnx.TensorProto.EXTERNAL:
        _load_external(tensor, path, folder)
    try:
        return numpy_helper.to_array(tensor)
    except Exception as exc:  # numpy/onnx raise ValueError, TypeError, UnicodeDecodeError...
        raise InputFolderError(
            f"{path.name} for input {tensor.name!r}: its data cannot be read as a tensor of "
            f"shape {list(tensor.dims)} ({type(exc).__name__}: {exc})"
        ) from exc


def _dtype_name(elem_type: int) -> str:
    try:
        return str(ir.DataType(elem_type).name).lower()
    except ValueError:
        return f"type {elem_type}"


def load_input_folder(folder: Path, inputs: list[GraphInput]) -> dict[str, np.ndarray]:
    """Arrays for every input, checked against the model; InputFolderError names the input."""
    folder = Path(folder)
    if not folder.is_dir():
        raise InputFolderError(f"input folder {folder} does not exist or is not a folder")
    files = sorted(folder.glob("*.pb"))
    limits = [_byte_limit(spec) for spec in inputs]
    known = [limit for limit in limits if limit is not None]
    scan_limit = max(known) if known and len(known) == len(limits) else None
    by_tensor_name: dict[str, Path] | None = None
    arrays: dict[str, np.ndarray] = {}
    for spec, limit in zip(inputs, limits, strict=True):
        expected = folder / input_file_name(spec.name)
        path: Path | None = expected if os.path.lexists(expected) else None
        if path is None:
            if by_tensor_name is None:
                by_tensor_name = {}
                for f in files:
                    try:  # FIFOs, devices and files too big for any input are skipped
                        by_tensor_name.setdefault(_read_tensor(f, scan_limit).name, f)
                    except InputFolderError:
                        continue
            path = by_tensor_name.get(spec.name)
        if path is None:
            found = ", ".join(f.name for f in files) or "no .pb files"
            raise InputFolderError(
                f"input folder {folder} has no tensor for input {spec.name!r}: expected "
                f"{expected.name} (a serialized onnx.TensorProto); found: {found}"
            )
        tensor = _read_tensor(path, limit)
        if spec.dtype is not None and tensor.data_type != int(spec.dtype):
            raise InputFolderError(
                f"{path.name} for input {spec.name!r} holds {_dtype_name(tensor.data_type)} "
                f"but the model expects {spec.dtype.name.lower()}"
            )
        dims = list(tensor.dims)
        if spec.dims is not None:
            if len(dims) != len(spec.dims):
                raise InputFolderError(
                    f"{path.name} for input {spec.name!r} has shape {dims} (rank {len(dims)}) "
                    f"but the model expects rank {len(spec.dims)}: {list(spec.dims)}"
                )
            for have, want in zip(dims, spec.dims, strict=True):
                if isinstance(want, int) and want != have:
                    raise InputFolderError(
                        f"{path.name} for input {spec.name!r} has shape {dims} but the model "
                        f"expects {list(spec.dims)}"
                    )
        arrays[spec.name] = _to_array(tensor, path, folder)
    return arrays


def write_npz(arrays: dict[str, np.ndarray], path: Path) -> dict[str, str]:
    """Write the feeds without pickles; returns {string input: key of its UTF-8 bytes}.

    A string input is stored as its elements' byte lengths (under the input's name) plus one
    uint8 array of the concatenated UTF-8 bytes; the runner rebuilds the strings from both.
    """
    stored: dict[str, np.ndarray] = {}
    strings: dict[str, str] = {}
    for name, array in arrays.items():
        if array.dtype != object and array.dtype.kind != "U":
            stored[name] = array
            continue
        encoded = [str(v).encode("utf-8") for v in array.ravel()]
        key = f"strings_{len(strings)}"
        while key in arrays or key in stored:  # never the name of an input
            key += "_"
        stored[name] = np.asarray([len(b) for b in encoded], np.int64).reshape(array.shape)
        stored[key] = np.frombuffer(b"".join(encoded), np.uint8)
        strings[name] = key
    with path.open("wb") as f:
        np.savez(f, **stored)  # type: ignore[arg-type]
    return strings
