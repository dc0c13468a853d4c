"""The private copy a modification works on, and how its result is written.

A modification never touches its source: a path is loaded fresh, a ModelDocument is
serialized as it is now (unsaved edits included) and read back as an independent model.
The result is written through a throwaway ModelDocument so it gets the document's atomic
save, its external-data handling and the original names of nodes that had none.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Union

import onnx
import onnx_ir as ir

from nsdl_jupyter._errors import NsdlError
from nsdl_jupyter._output_guard import guard_output, output_path
from nsdl_jupyter._tensor_bytes import tensor_bytes
from nsdl_jupyter._walk import graphs_in

if TYPE_CHECKING:
    from nsdl_jupyter.document import ModelDocument

from nsdl_jupyter.document import UnknownDataTypeError, as_data_type
from nsdl_jupyter.transforms._status import TransformStatus

ModelSource = Union[str, "os.PathLike[str]", "ModelDocument", onnx.ModelProto, ir.Model]

# Above this many bytes of weights the output keeps them in `<output>.data` (protobuf's 2 GiB
# limit applies to the whole file).
_EXTERNAL_DATA_BYTES = 1_800_000_000


class TransformError(NsdlError, ValueError):
    """A modification cannot start: a bad argument, a missing file or an unknown name."""


def data_type(dtype: ir.DataType | str | int) -> ir.DataType:
    """The document's dtype parsing, with a TransformError for an unknown name."""
    try:
        return as_data_type(dtype)
    except UnknownDataTypeError as error:
        raise TransformError(str(error)) from None


@dataclass
class WorkingCopy:
    """An independent model to modify, and the document that will save it."""

    document: ModelDocument
    source_path: Path | None

    @property
    def model(self) -> ir.Model:
        return self.document.model

    def save(
        self,
        output: Path,
        status: TransformStatus | None = None,
        source: ModelSource | None = None,
        *,
        overwrite: bool = False,
    ) -> Path:
        """Write the model atomically (its weights in `<output>.data` when too big for one
        file). With `status`: onnx's checker (with strict type inference) runs on what was
        written while the disk syncs it; a failure is a status warning, or only a log line
        when `source` (the unmodified model) fails too. `overwrite`: as in ModelDocument.save."""
        external = _weight_bytes(self.model) > _EXTERNAL_DATA_BYTES
        problems: list[str | None] = []

        def check(written: onnx.ModelProto) -> None:
            problems.append(_checker_problem(written))

        saved = self.document.save(
            output,
            external_data=True if external else None,
            overwrite=overwrite,
            check=False,  # onnx's checker runs on what was written, reported in `status`
            while_syncing=None if status is None else check,
        )
        if status is not None:
            _report_checker(problems[0], status, source)
        return saved


def check_output_path(output: str | os.PathLike[str]) -> Path:
    """The absolute output path, checked before any work is done."""
    if output is None or str(output) == "":
        raise TransformError("give an output path for the modified model, e.g. 'model_fp16.onnx'")
    path = output_path(output).expanduser().absolute()
    if path.is_dir():
        raise TransformError(f"output {path} is a folder: give a file name such as model.onnx")
    if not path.parent.is_dir():
        raise TransformError(f"output folder {path.parent} does not exist: create it first")
    if not os.access(path.parent, os.W_OK):
        raise TransformError(f"output folder {path.parent} is not writable")
    return path


def guard_result_path(
    output: str | os.PathLike[str], model: ModelSource, *, overwrite: bool
) -> Path:
    """`check_output_path`, then the output guard: the result never replaces `model`'s own
    files or another model's data, and an existing file only with `overwrite=True`."""
    from nsdl_jupyter.document import ModelDocument

    target = check_output_path(output)
    source = model.path if isinstance(model, ModelDocument) else model
    reading = [source] if isinstance(source, (str, os.PathLike)) else []
    return guard_output(target, reading=reading, overwrite=overwrite, writes_model=True)


def working_copy(model: ModelSource) -> WorkingCopy:
    """Load `model` (a path, a ModelDocument, an onnx.ModelProto or an onnx_ir.Model) as a
    private copy."""
    from nsdl_jupyter.document import ModelDocument, open_model

    if isinstance(model, ModelDocument):
        return WorkingCopy(ModelDocument(_independent_copy(model.model)), model.path)
    if isinstance(model, onnx.ModelProto):
        return WorkingCopy(ModelDocument(ir.serde.deserialize_model(model)), None)
    if isinstance(model, ir.Model):
        return WorkingCopy(ModelDocument(_independent_copy(model)), None)
    if isinstance(model, (str, os.PathLike)):
        path = Path(model).expanduser().absolute()
        if not path.is_file():
            raise TransformError(f"model file {path} does not exist")
        document = open_model(path)
        document.companion.clear()  # layout of the source does not describe the result
        return WorkingCopy(document, path)
    raise TransformError(
        f"model must be a path, a ModelDocument, an onnx.ModelProto or an onnx_ir.Model, "
        f"not {type(model).__name__}"
    )


def _independent_copy(model: ir.Model) -> ir.Model:
    """A copy sharing no object with `model` whose external tensors read the same files (a
    proto keeps their location but not the folder it is relative to)."""
    copy = ir.serde.deserialize_model(ir.serde.serialize_model(model))
    for graph, twin_graph in zip(graphs_in(model.graph), graphs_in(copy.graph), strict=True):
        twins = twin_graph.initializers
        for name, value in graph.initializers.items():
            tensor, twin = value.const_value, twins[name].const_value
            if isinstance(tensor, ir.ExternalTensor) and isinstance(twin, ir.ExternalTensor):
                twin.base_dir = tensor.base_dir
    return copy


def _weight_bytes(model: ir.Model) -> int:
    total = 0
    for graph in graphs_in(model.graph):
        for value in graph.initializers.values():
            tensor = value.const_value
            if tensor is not None:
                total += tensor_bytes(tensor)
    return total


def _report_checker(
    problem: str | None, status: TransformStatus, source: ModelSource | None
) -> None:
    if problem is None:
        return
    if source is not None and _source_problem(source) is not None:
        status.info(f"onnx's checker rejects the source model too: {problem}")
        return
    status.warn(f"the result does not pass onnx's checker: {problem}")


def _source_problem(source: ModelSource) -> str | None:
    if isinstance(source, (str, os.PathLike)):
        return _checker_problem(Path(source))
    if isinstance(source, onnx.ModelProto):
        return _checker_problem(source)
    return _checker_problem(ir.serde.serialize_model(working_copy(source).model))


def _checker_problem(model: Path | onnx.ModelProto) -> str | None:
    try:
        onnx.checker.check_model(str(model) if isinstance(model, Path) else model, full_check=True)
    except Exception as error:  # the checker raises several unrelated types
        text = str(error).strip()
        return text.splitlines()[0] if text else repr(error)
    return None
