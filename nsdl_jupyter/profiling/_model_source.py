"""Turn what the user passes as `model` into a file the runner can load, plus its inputs.

Accepted: a path, an `onnx.ModelProto`, an `onnx_ir.Model`, or a ModelDocument. Documents are
always written to the job's work directory with the names the document shows (generated names
included), so the trace's node names match the graph the user sees, unsaved edits included.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import onnx
import onnx_ir as ir

from nsdl_jupyter._errors import ArgumentError, input_path
from nsdl_jupyter.document import external_tensors, load_model


@dataclass(frozen=True)
class GraphInput:
    """A graph input that needs a feed: its name, element type and dims (int, name or None)."""

    name: str
    dtype: ir.DataType | None
    dims: tuple[int | str | None, ...] | None


@dataclass(frozen=True)
class ModelSource:
    name: str
    path: Path | None  # the file, when the model already is one
    model: ir.Model
    origin: Path | None = None  # the file it was read from (a document's too): outputs spare it

    @property
    def node_names(self) -> set[str]:
        return {node.name for node in self.model.graph if node.name}

    @property
    def io_nodes(self) -> tuple[list[str], list[str]]:
        """The nodes that read the graph's inputs, and those that write its outputs."""
        graph = self.model.graph
        readers = [
            user.name or ""
            for value in graph.inputs
            if value.name not in graph.initializers
            for user, _ in value.uses()
        ]
        writers = [
            node.name or ""
            for node in (value.producer() for value in graph.outputs)
            if node is not None
        ]
        return list(dict.fromkeys(readers)), list(dict.fromkeys(writers))

    @property
    def inputs(self) -> list[GraphInput]:
        initializers = set(self.model.graph.initializers)
        found = []
        for value in self.model.graph.inputs:
            if value.name in initializers:
                continue
            dims = None
            if value.shape is not None:
                dims = tuple(
                    d
                    if isinstance(d, int)
                    else (d.value if isinstance(d, ir.SymbolicDim) else None)
                    for d in value.shape
                )
            found.append(GraphInput(str(value.name), value.dtype, dims))
        return found

    @property
    def free_dims(self) -> set[str]:
        return {d for i in self.inputs for d in (i.dims or ()) if isinstance(d, str)}

    def data_files(self, written: Path) -> dict[str, Path]:
        """The external data files the model file `written` (from `write`) refers to, by
        their relative locations: a remote target places them beside the model."""
        if self.path is None:  # written by `write` with this one data file
            data = written.with_name("model.onnx.data")
            return {data.name: data} if data.is_file() else {}
        return {
            str(tensor.location): Path(tensor.base_dir) / tensor.location
            for tensor in external_tensors(self.model)
        }

    def write(self, workdir: Path) -> Path:
        """The model as a file the runner can open (the original file when there is one)."""
        if self.path is not None:
            return self.path
        target = workdir / "model.onnx"
        ir.save(self.model, target, external_data="model.onnx.data", size_threshold_bytes=1 << 20)
        return target


def _is_document(obj: Any) -> bool:
    return hasattr(obj, "model") and hasattr(obj, "subscribe") and hasattr(obj, "dirty")


def model_source(model: Any) -> ModelSource:
    """Resolve `model`; raises ArgumentError for anything that is not a model, MissingFileError
    for a path no file is at (a folder, a NUL byte, an empty name), ModelLoadError for
    a file that is not a readable ONNX model (as `open_model`)."""
    if isinstance(model, (str, os.PathLike)):
        path = input_path(os.path.expanduser(model), "model file").resolve()
        return ModelSource(path.name.removesuffix(".onnx"), path, load_model(path), path)
    if isinstance(model, onnx.ModelProto):
        name = model.graph.name or "model"
        return ModelSource(name, None, ir.serde.deserialize_model(model))
    if isinstance(model, ir.Model):
        return ModelSource(model.graph.name or "model", None, model)
    if _is_document(model):
        doc_path = getattr(model, "path", None)
        ir_model = model.model
        doc_name = Path(doc_path).name.removesuffix(".onnx") if doc_path else ""
        origin = Path(doc_path) if doc_path else None
        return ModelSource(doc_name or ir_model.graph.name or "model", None, ir_model, origin)
    raise ArgumentError(
        f"cannot profile a {type(model).__name__}: pass a path to an .onnx file, an "
        "onnx.ModelProto, an onnx_ir.Model or a ModelDocument (nsdl_jupyter.open_model)"
    )
