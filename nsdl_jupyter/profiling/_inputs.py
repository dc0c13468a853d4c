"""Input feeds for a profile: checks on random-input sizes, and the input folder reader.

An input folder holds one serialized `onnx.TensorProto` per graph input, named after the
input (`<name>.pb`, with '/', '\\' and ':' written as '_'), or any `.pb` file whose TensorProto
`name` is the input's name (the layout of ONNX test data sets). Everything is checked here, in
the kernel, before a child process starts; the runner then gets one `.npz` file.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnx_ir as ir
from onnx import numpy_helper

from nsdl_jupyter.profiling._errors import InputFolderError, ProfileSettingsError
from nsdl_jupyter.profiling._model_source import GraphInput


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


def _read_tensor(path: Path) -> onnx.TensorProto:
    tensor = onnx.TensorProto()
    try:
        tensor.ParseFromString(path.read_bytes())
    except Exception as exc:  # protobuf raises DecodeError and others
        raise InputFolderError(
            f"{path} is not a serialized onnx.TensorProto ({exc}); write it with "
            "onnx.numpy_helper.from_array(array, name).SerializeToString()"
        ) from exc
    return tensor


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
    by_tensor_name: dict[str, Path] | None = None
    arrays: dict[str, np.ndarray] = {}
    for spec in inputs:
        expected = folder / input_file_name(spec.name)
        path: Path | None = expected if expected.is_file() else None
        if path is None:
            if by_tensor_name is None:
                by_tensor_name = {}
                for f in files:
                    try:
                        by_tensor_name.setdefault(_read_tensor(f).name, f)
                    except InputFolderError:
                        continue
            path = by_tensor_name.get(spec.name)
        if path is None:
            found = ", ".join(f.name for f in files) or "no .pb files"
            raise InputFolderError(
                f"input folder {folder} has no tensor for input {spec.name!r}: expected "
                f"{expected.name} (a serialized onnx.TensorProto); found: {found}"
            )
        tensor = _read_tensor(path)
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
        arrays[spec.name] = numpy_helper.to_array(tensor)
    return arrays


def write_npz(arrays: dict[str, np.ndarray], path: Path) -> Path:
    with path.open("wb") as f:
        np.savez(f, **arrays)  # type: ignore[arg-type]
    return path
