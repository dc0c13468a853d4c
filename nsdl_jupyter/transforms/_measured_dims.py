"""Dims no inference can tell, measured by running the model once.

A size computed from data (torchvision's detection transform resizes by a float scale of the
image size) is beyond onnx's shape inference and onnxruntime's symbolic inference alike. A part
cut after it gets inputs of unknown size; a profile's random inputs then make up sizes that do
not fit together (SSDlite320 from its first feature map on: "31 by 36"). Running the source
once with the profiler's own random inputs shows the dims those inputs lead to. It costs a run
of the source in a child process, so callers ask only where some dims are open.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

import onnx_ir as ir

from nsdl_jupyter._errors import first_line
from nsdl_jupyter._isolated import ChildRaisedError, IsolatedRunError, run_isolated
from nsdl_jupyter._measure_child import MeasureJob, measure_in_child
from nsdl_jupyter._runner_files import ORT_RUNNER
from nsdl_jupyter.transforms._shapes import input_dim_names, open_values
from nsdl_jupyter.transforms._validate import child_memory_limit
from nsdl_jupyter.transforms._working_copy import TransformError

_RUN_TIMEOUT_S = 600.0


def checked_dim_sizes(dim_sizes: object) -> dict[str, int]:
    """`dim_sizes` as a dict of dim names to sizes (integers >= 1, as a profile takes them);
    TransformError otherwise, before any work."""
    if not isinstance(dim_sizes, Mapping):
        raise TransformError(
            f"dim_sizes takes a dict of dim names to sizes ({{'batch': 1}}), not {dim_sizes!r}"
        )
    for dim, size in dim_sizes.items():
        if not isinstance(dim, str) or isinstance(size, bool) or not isinstance(size, int):
            raise TransformError(f"dim_sizes[{dim!r}]={size!r}: name a dim, give an integer")
        if size < 1:
            raise TransformError(f"dim_sizes[{dim!r}]={size}: a dimension size is at least 1")
    return dict(dim_sizes)


def measure_dims(
    model: ir.Model, values: Sequence[ir.Value], dim_sizes: Mapping[str, int], seed: int = 0
) -> list[ir.Value]:
    """Give the open dims of `values` (see `open_values`; graph inputs aside) the sizes one
    onnxruntime run of `model` shows, fed as a profile feeds it (random values, free input
    dims from `dim_sizes`, else 1); the values shaped. `model` is otherwise left as it was;
    TransformError when the run fails."""
    wanted = [v for v in open_values(model, values) if not v.is_graph_input()]
    if not wanted:
        return []
    names = tuple(v.name or "" for v in wanted)
    with tempfile.TemporaryDirectory(prefix="nsdl-measure-") as folder:
        path = Path(folder) / "source.onnx"
        _save_with_outputs(model, wanted, path)
        job = MeasureJob(str(path), names, str(ORT_RUNNER), dict(dim_sizes), seed)
        try:
            shapes = run_isolated(
                measure_in_child, job, timeout=_RUN_TIMEOUT_S, memory_limit=child_memory_limit(path)
            )
        except (ChildRaisedError, IsolatedRunError) as error:
            sizes = ", ".join(f"{k}={v}" for k, v in dim_sizes.items()) or "every free dim 1"
            raise TransformError(
                f"no inference can tell the dims of {list(names)}, and onnxruntime could not "
                f"run the source model to measure them (random inputs, {sizes}): "
                f"{first_line(error)}. Cut where the shapes are known, or give dim_sizes the "
                "model runs at"
            ) from None
    named = input_dim_names(model)
    for value in wanted:
        value.shape = _measured_shape(value.shape, shapes[value.name or ""], named)
    return wanted


def _save_with_outputs(model: ir.Model, values: Sequence[ir.Value], path: Path) -> None:
    """Save `model` with `values` among its outputs, weights beside it; the model's own
    outputs are put back whatever happens."""
    outputs = model.graph.outputs
    before = list(outputs)
    outputs.extend(v for v in values if v not in before)
    try:
        ir.save(model, path, external_data=path.name + ".data")
    finally:
        outputs.clear()
        outputs.extend(before)


def _measured_shape(current: ir.Shape | None, measured: list[int], named: set[str]) -> ir.Shape:
    """`current` with each open dim replaced by its measured size (a number or a graph input's
    dim name stays: the profile sizes those)."""
    if current is None or len(current) != len(measured):
        return ir.Shape(measured)
    return ir.Shape(
        [
            dim if isinstance(dim, int) or dim.value in named else size
            for dim, size in zip(current, measured, strict=True)
        ]
    )
