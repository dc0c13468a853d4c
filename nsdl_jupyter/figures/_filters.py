"""What the views show of a report: which per-layer time (GPU or host) and whether the
non-compute rows (copies, layout reorders, shape-only ops) are hidden.

The list of non-compute operations lives here and nowhere else.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import pandas as pd

from nsdl_jupyter.figures._errors import FigureError
from nsdl_jupyter.profiling import INPUT_COPY, OUTPUT_COPY

if TYPE_CHECKING:
    from nsdl_jupyter.profiling import ProfileReport

# Copies between host and GPU that the GPU timing puts before or after every node.
COPY_LAYERS = frozenset({INPUT_COPY, OUTPUT_COPY})
# Ops that only copy, reorder the layout of, or reinterpret the shape of a tensor (onnxruntime
# op types; TensorRT layer types "Reformat" and "NoOp").
NON_COMPUTE_OP_TYPES = frozenset(
    {
        # copies and layout reorders
        "MemcpyFromHost",
        "MemcpyToHost",
        "Memcpy",
        "ReorderInput",
        "ReorderOutput",
        "Reformat",
        "NoOp",
        # shape-only
        "Shape",
        "Size",
        "Reshape",
        "Squeeze",
        "Unsqueeze",
        "Flatten",
        "Identity",
        "Constant",
    }
)
# A Gather whose data input is an integer vector (or scalar) gathers from a shape.
_SHAPE_GATHER = re.compile(r"^\s*u?int(?:32|64)\[[^\],]*\]")
TIMES = ("gpu", "host")


def non_compute_mask(layers: pd.DataFrame) -> pd.Series:
    """True for the rows of `layers` (a report's layers or timeline events) that compute
    nothing: copies (`Memcpy*`, the input/output copy rows), layout reorders (`ReorderInput`,
    `ReorderOutput`, TensorRT `Reformat`, rows onnxruntime inserted), shape-only ops and a
    Gather on a shape."""
    op_type = layers["op_type"].astype(str)
    mask = op_type.isin(NON_COMPUTE_OP_TYPES) | op_type.str.startswith("Memcpy")
    mask |= layers["name"].astype(str).isin(COPY_LAYERS)
    if "mapped_as" in layers:
        mask |= layers["mapped_as"].astype(str) == "inserted"
    if "input_shapes" in layers:
        gathers = op_type == "Gather"
        mask |= gathers & layers["input_shapes"].astype(str).str.match(_SHAPE_GATHER)
    return mask.astype(bool)


def hidden_layer_names(report: ProfileReport) -> set[str]:
    """Names of the report's non-compute layers."""
    layers = report.layers
    return set(layers.loc[non_compute_mask(layers), "name"].astype(str))


def compute_only(report: ProfileReport) -> ProfileReport:
    """The report without its non-compute rows (layers, timeline events, kernels); shares
    stay those of the whole report (`share`, and `gpu_ms_share` of GPU time), so hiding rows
    does not change the numbers of the others. `metadata["hidden_non_compute"]` counts the
    layers hidden."""
    from nsdl_jupyter.profiling import ProfileReport

    hidden = hidden_layer_names(report)
    layers = report.layers
    if report.has_gpu_times:
        layers = layers.assign(gpu_ms_share=time_shares(report, "gpu_ms"))
    events = report.timeline_events
    keep_events = ~(events["name"].isin(hidden) | non_compute_mask(events))

    def drop(frame: pd.DataFrame) -> pd.DataFrame:
        if "layer" not in frame:
            return frame
        return frame[~frame["layer"].astype(str).isin(hidden | COPY_LAYERS)]

    return ProfileReport(
        layers[~layers["name"].isin(hidden)],
        latencies_ms=report.latencies_ms,
        timeline_events=events[keep_events],
        metadata={**report.metadata, "hidden_non_compute": len(hidden)},
        kernels=drop(report.kernels).reset_index(drop=True),
        kernel_timeline=drop(report.kernel_timeline).reset_index(drop=True),
        gpu_metrics=report.gpu_metrics,
    )


def shown(report: ProfileReport, hide_non_compute: bool) -> ProfileReport:
    return compute_only(report) if hide_non_compute else report


def time_column(report: ProfileReport, times: str | None = None) -> str:
    """The per-layer time column for `times`: 'gpu' (kernel time, `gpu_ms`), 'host' (the
    profiler's `mean_ms`) or None (GPU when the report has it)."""
    if times is None:
        return report.time_column
    if times == "host":
        return "mean_ms"
    if times == "gpu":
        if not report.has_gpu_times:
            timing = (report.metadata.get("gpu") or {}).get("timing") or {}
            why = timing.get("message") or "the run had no GPU timing"
            raise FigureError(f"times='gpu': this report has no per-layer GPU times ({why})")
        return "gpu_ms"
    raise FigureError(f"times={times!r}: use 'gpu', 'host' or None (GPU when the report has it)")


def time_label(report: ProfileReport, column: str) -> str:
    """What the times in `column` are, for titles and axis labels."""
    if column == "gpu_ms":
        return "GPU kernel time"
    if column in ("mean_ms", "median_ms") and report.source == "onnxruntime":
        return "host time" if column == "mean_ms" else "host median time"
    return column.removesuffix("_ms").replace("_", " ") + " time"


def time_shares(report: ProfileReport, column: str) -> pd.Series:
    """Each layer's share of the report's summed `column` (0..1): the `share` column for
    `mean_ms`, the share of the whole report kept by `compute_only` for others."""
    if column == "mean_ms":
        return report.layers["share"]
    if f"{column}_share" in report.layers:
        return report.layers[f"{column}_share"]
    values = report.layers[column]
    total = float(values.sum(skipna=True))
    return values / total if total > 0 else values * 0.0
