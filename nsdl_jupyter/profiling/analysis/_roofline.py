"""Roofline per layer: achieved FLOP/s and bytes/s of each profiled layer against the GPU's
measured peaks, and whether it is compute-, memory- or latency-bound.

The peaks live in `report.metadata["peaks"]` (written by the GPU micro-benchmark that runs
with the profile, or passed as `peaks=`), in this shape:

    {
        "gpu": "NVIDIA H200",                 # name of the GPU measured (text)
        "sm_clock_mhz": 1980,                 # SM clock during the measurement (number)
        "flops_per_s": {                      # attainable FLOP/s per compute dtype
            "float32": 6.0e13,                #   keys: dtype names as node_work writes them
            "tf32": 3.9e14,                   #   (float32, float16, bfloat16, int8, float64,
            "float16": 7.0e14,                #   float8e4m3fn...) plus "tf32"; any subset
            "bfloat16": 7.0e14,
        },
        "bytes_per_s": 4.2e12,                # attainable device-memory bandwidth
        # optional: "source" (how measured), "measured" (ISO time) - carried, not read
    }

A layer's work is the work of the ONNX nodes it ran (`onnx_nodes`: one for an unfused node,
several for a fused onnxruntime node or a TensorRT layer), from `work_table` on the model:
FLOPs summed (a node two layers share is split between them), bytes at the group's border
(tensors read from outside it, weights, tensors it writes that are read outside it). Rows
onnxruntime inserted (`mapped_as == "inserted"`: layout reorders) have no work of their own;
host copies have bytes and no roof (their bound is "host copy"). A TensorRT layer whose
`precision` is narrower than the model's float dtype moves proportionally fewer bytes.

`bound` follows Nsight Compute's speed-of-light rule (SOLBottleneck): with compute % and
memory % the achieved fractions of the peak compute and bandwidth, a layer below
`latency_pct` (60) on both is "latency" (it reaches neither roof: tiny grids, launch
overhead, dependent waits); otherwise the larger side names it ("compute" or "memory").
Where the layer has Nsight Compute counters (`profile_ort(..., counters=True)`), the measured
throughputs decide (compute: the larger of SM throughput and tensor-pipe activity; memory:
DRAM throughput), else the analytic fractions above; `bound_source` says which ("ncu",
"roofline", or "" when nothing decided).

`roof_dtype` is the roof a layer is measured against: the TensorRT layer's precision, else
the dtype its nodes compute in, except that a float32 GEMM/Conv/attention layer is measured
against the tf32 roof where the runtime may run it on TF32 tensor cores: onnxruntime's CUDA
provider unless its options say `use_tf32=0` (its default is 1), TensorRT unless its settings
say `tf32=False`; for a runtime the report does not name, when it ran faster than float32
FFMA can.

Without usable peaks (none measured, or `{"available": False, "message": ...}` when the
micro-benchmark failed) the roof columns are NaN, `bound` is decided by counters alone or
left "", and `attrs["note"]` says why.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from nsdl_jupyter.profiling._errors import ProfileSettingsError
from nsdl_jupyter.profiling.analysis._node_work import NodeWork, work_table
from nsdl_jupyter.profiling.gpu._kernels import INPUT_COPY, OUTPUT_COPY

LATENCY_PCT = 60.0  # ncu SOLBottleneck: both throughputs below this -> latency issue
TF32_MARGIN = 1.05  # an fp32 layer above the fp32 peak by this factor ran on TF32 tensor cores
PRECISION_DTYPES = {
    "FP32": "float32",
    "TF32": "tf32",
    "FP16": "float16",
    "HALF": "float16",
    "BF16": "bfloat16",
    "INT8": "int8",
    "FP8": "float8e4m3fn",
    "INT4": "int4",
}
_ITEMSIZE: dict[str, float] = {"float64": 8, "float32": 4, "tf32": 4, "float16": 2}
_ITEMSIZE.update({"bfloat16": 2, "int8": 1})
_ITEMSIZE.update({"float8e4m3fn": 1, "int4": 0.5})
COUNTER_COLUMNS = ("sm_throughput_pct", "dram_throughput_pct", "tensor_active_pct")
# The rates against the roofs, computed once the layer rows are known (`_roofs`).
_ROOF_COLUMNS = [
    "achieved_flops_per_s",
    "achieved_bytes_per_s",
    "peak_flops_per_s",
    "peak_bytes_per_s",
    "roof_flops_per_s",
    "compute_pct",
    "memory_pct",
    "pct_of_roof",
]
ROOFLINE_COLUMNS = [
    "name",
    "op_type",
    "onnx_nodes",
    "time_ms",
    "share",
    "kernels",
    "kernel_us",
    "flops",
    "bytes",
    "intensity",
    "dtype",
    "roof_dtype",
    *_ROOF_COLUMNS,
    *COUNTER_COLUMNS,
    "bound",
    "bound_source",
    "kind",
    "work_status",
]
_RATE_COLUMNS = {"intensity", *_ROOF_COLUMNS, "bound", "bound_source"}
_TENSOR_CORE_KINDS = frozenset({"gemm", "conv", "attention"})


def check_peaks(peaks: Any) -> dict[str, Any]:
    """`peaks` as a dict, or ProfileSettingsError naming what is wrong with it."""
    hint = (
        "peaks must be {'gpu': str, 'sm_clock_mhz': number, 'flops_per_s': {dtype: FLOP/s}, "
        "'bytes_per_s': number} (see nsdl_jupyter.profiling.analysis._roofline)"
    )
    if not isinstance(peaks, Mapping):
        raise ProfileSettingsError(f"peaks is a {type(peaks).__name__}: {hint}")
    flops = peaks.get("flops_per_s")
    bandwidth = peaks.get("bytes_per_s")
    if (
        not isinstance(flops, Mapping)
        or not all(_positive(v) for v in flops.values())
        or not _positive(bandwidth)
    ):
        raise ProfileSettingsError(f"peaks {dict(peaks)!r:.200}: {hint}")
    return {**peaks, "flops_per_s": {str(k): float(v) for k, v in flops.items()},
            "bytes_per_s": float(bandwidth)}  # type: ignore[arg-type]  # fmt: skip


def _positive(value: Any) -> bool:
    return (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value > 0
    )


def report_peaks(
    metadata: Mapping[str, Any], peaks: Any = None
) -> tuple[dict[str, Any] | None, str]:
    """The peaks to use (`peaks` when given, else the report's `metadata["peaks"]`) and, when
    there are none, a note saying why; a failed measurement (`available: False`) is no peaks."""
    if peaks is None:
        peaks = metadata.get("peaks")
    if peaks is None:
        return None, (
            "no roofs: the report has no measured peaks (a CUDA profile measures them; or "
            "pass peaks=)"
        )
    if isinstance(peaks, Mapping) and peaks.get("available") is False:
        why = str(peaks.get("message") or "no message")
        return None, f"no roofs: measuring the GPU's peaks failed ({why})"
    return check_peaks(peaks), ""


def tf32_allowed(metadata: Mapping[str, Any]) -> bool | None:
    """Whether the runtime may run float32 GEMM/Conv on TF32 tensor cores: onnxruntime's CUDA
    provider (option use_tf32, default 1), TensorRT (setting tf32, default True); None when
    the report names neither."""
    settings = metadata.get("settings")
    settings = settings if isinstance(settings, Mapping) else {}
    runtime = str(metadata.get("runtime", "")).lower()
    if runtime == "tensorrt":
        return _flag(settings.get("tf32", True))
    if runtime == "onnxruntime":
        provider = str(metadata.get("provider") or settings.get("provider") or "")
        if "Tensorrt" in provider:
            return True
        if "CUDA" not in provider:
            return False
        options = settings.get("provider_options")
        options = options if isinstance(options, Mapping) else {}
        return _flag(options.get("use_tf32", 1))
    return None


def _flag(value: Any) -> bool:
    return str(value).strip().lower() not in ("0", "false", "no", "off", "")


def roofline_table(
    layers: pd.DataFrame,
    time_column: str,
    metadata: Mapping[str, Any],
    model: Any = None,
    *,
    inputs: Mapping[str, Any] | None = None,
    peaks: Any = None,
    latency_pct: float = LATENCY_PCT,
    work: NodeWork | None = None,
) -> pd.DataFrame:
    """One row per layer with time: its work, achieved rates, roof and `bound` (see the module
    docstring). `model` defaults to `metadata["model_path"]`; `inputs` to the profile's input
    shapes (`metadata["inputs"]`). `attrs` holds the peaks used (None without any)."""
    if work is None:
        work = work_table(model_for(model, metadata), inputs or profile_inputs(metadata))
    used, note = report_peaks(metadata, peaks)
    table = _layer_work(layers, time_column, work)
    seconds = table["time_ms"] / 1e3
    with np.errstate(divide="ignore", invalid="ignore"):
        table["achieved_flops_per_s"] = table["flops"] / seconds
        table["achieved_bytes_per_s"] = table["bytes"] / seconds
        table["intensity"] = table["flops"] / table["bytes"].where(table["bytes"] > 0)
    _roofs(table, used, tf32_allowed(metadata))
    _decide_bound(table, latency_pct, has_peaks=used is not None)
    table.attrs["peaks"] = used
    table.attrs["note"] = note
    table.attrs["time_column"] = time_column
    table.attrs["inputs"] = work.frame.attrs.get("inputs", {})
    return table[ROOFLINE_COLUMNS]


def model_for(model: Any, metadata: Mapping[str, Any]) -> Any:
    if model is not None:
        return model
    path = metadata.get("model_path")
    if not path:
        raise ProfileSettingsError(
            "the roofline needs the model the report profiled: pass model= (a path, a "
            "ModelProto, an onnx_ir.Model or a ModelDocument)"
        )
    from pathlib import Path

    if not Path(str(path)).is_file():
        raise ProfileSettingsError(
            f"the report's model {path!r} is not a file here: pass model= (the .onnx it profiled)"
        )
    return path


def profile_inputs(metadata: Mapping[str, Any]) -> dict[str, Any] | None:
    recorded = metadata.get("inputs")
    if not isinstance(recorded, Mapping):
        return None
    return {str(k): v for k, v in recorded.items() if isinstance(v, Mapping) and "shape" in v}


def _layer_work(layers: pd.DataFrame, time_column: str, work: NodeWork) -> pd.DataFrame:
    frame = work.frame
    index = {name: i for i, name in enumerate(frame["name"])}
    mapped = layers.get("mapped_as", pd.Series([""] * len(layers))).astype(str).tolist()
    covering: dict[str, int] = {}
    for nodes, kind in zip(layers["onnx_nodes"], mapped, strict=True):
        if kind != "inserted":
            for node in nodes:
                covering[node] = covering.get(node, 0) + 1
    readers = consumers(work)
    precisions = layers.get("precision", pd.Series([""] * len(layers))).astype(str).tolist()
    counters = {
        c: pd.to_numeric(layers[c], errors="coerce").to_numpy(dtype=float)
        if c in layers else np.full(len(layers), math.nan)
        for c in COUNTER_COLUMNS
    }  # fmt: skip
    rows = []
    total = float(np.nansum(layers[time_column]))
    for row, (name, op_type, nodes, kind, ms, precision) in enumerate(
        zip(
            layers["name"],
            layers["op_type"],
            layers["onnx_nodes"],
            mapped,
            layers[time_column],
            precisions,
            strict=True,
        )
    ):
        if not (isinstance(ms, float) and ms > 0):
            continue
        kernels = float(layers["kernels"].iat[row]) if "kernels" in layers else math.nan
        found = [index[n] for n in nodes if n in index]
        flops, nbytes, dtype, group_kind, status = _group(
            work, found, covering, readers, name, op_type, kind
        )
        roof_dtype = PRECISION_DTYPES.get(precision.strip().upper(), "") or dtype
        if (
            roof_dtype in _ITEMSIZE
            and dtype in _ITEMSIZE
            and _ITEMSIZE[roof_dtype] < _ITEMSIZE[dtype]
        ):
            nbytes *= _ITEMSIZE[roof_dtype] / _ITEMSIZE[dtype]
        rows.append({
            "name": name, "op_type": op_type, "onnx_nodes": list(nodes), "time_ms": ms,
            "share": ms / total if total > 0 else math.nan, "kernels": kernels,
            "kernel_us": ms * 1e3 / kernels if kernels and kernels > 0 else math.nan,
            "flops": flops, "bytes": nbytes, "dtype": dtype, "roof_dtype": roof_dtype,
            "kind": group_kind, "work_status": status,
            **{c: float(counters[c][row]) for c in COUNTER_COLUMNS},
        })  # fmt: skip
    return pd.DataFrame(rows, columns=[c for c in ROOFLINE_COLUMNS if c not in _RATE_COLUMNS])


def consumers(work: NodeWork) -> dict[str, set[int]]:
    found: dict[str, set[int]] = {}
    for i, names in enumerate(work.reads):
        for tensor in names:
            found.setdefault(tensor, set()).add(i)
    return found


def _group(  # noqa: PLR0917 - private, one layer row's fields
    work: NodeWork,
    found: list[int],
    covering: Mapping[str, int],
    consumers: Mapping[str, set[int]],
    name: str,
    op_type: str,
    mapped_as: str,
) -> tuple[float, float, str, str, str]:
    """(flops, bytes, dtype, kind, status) of the nodes a layer covers."""
    frame = work.frame
    if name in (INPUT_COPY, OUTPUT_COPY) or op_type.startswith("Memcpy"):
        moved = work.graph_outputs if name == OUTPUT_COPY else work.graph_inputs
        nbytes = sum(work.tensor_bytes.get(t, math.nan) for t in moved)
        return 0.0, nbytes if name in (INPUT_COPY, OUTPUT_COPY) else math.nan, "", "host copy", "ok"
    if mapped_as == "inserted" or not found:
        return math.nan, math.nan, "", "inserted", "no ONNX node of its own"
    nodes = frame.iloc[found]
    shares = np.array([1.0 / max(1, covering.get(n, 1)) for n in nodes["name"]])
    flops = float(np.sum(nodes["flops"].to_numpy() * shares))
    statuses = sorted(set(nodes["status"]) - {"ok"})
    heavy = nodes.iloc[int(np.nanargmax(nodes["flops"].fillna(-1.0).to_numpy()))]
    kinds = [k for k in nodes["kind"] if k != "view"]
    kind = str(heavy["kind"]) if kinds else "view"
    if len(found) == 1:
        nbytes = float(nodes["bytes"].iat[0])
    else:
        nbytes = border_bytes(work, found, consumers) * float(shares.min())
    return flops, nbytes, str(heavy["dtype"]), kind, ", ".join(statuses) or "ok"


def border_bytes(work: NodeWork, found: list[int], consumers: Mapping[str, set[int]]) -> float:
    """Bytes a fused group moves: tensors it reads from outside (weights as counted per node),
    and tensors it writes that a node outside it (or the graph's output) reads."""
    group = set(found)
    frame = work.frame
    if all(frame["kind"].iat[i] == "view" for i in found):
        return 0.0
    produced = {t for i in found for t in work.writes[i]}
    total = float(np.nansum(frame["weight_bytes"].to_numpy()[found]))
    outside_reads = {t for i in found for t in work.reads[i]} - produced - work.weights
    total += sum(work.tensor_bytes.get(t, math.nan) for t in outside_reads)
    for tensor in produced:
        readers = consumers.get(tensor, set())
        if not readers or readers - group:
            total += work.tensor_bytes.get(tensor, math.nan)
    return total


def _roofs(
    table: pd.DataFrame,
    peaks: Mapping[str, Any] | None,
    tf32: bool | None,
) -> None:
    """Roof dtype, peak, roof at the layer's intensity, compute %, memory %, % of roof."""
    if peaks is None:
        for column in ("peak_flops_per_s", "peak_bytes_per_s", "roof_flops_per_s"):
            table[column] = math.nan
        table["compute_pct"] = table["memory_pct"] = table["pct_of_roof"] = math.nan
        return
    flops_peaks: Mapping[str, float] = peaks["flops_per_s"]
    bandwidth = float(peaks["bytes_per_s"])
    dtypes = table["roof_dtype"].astype(str).tolist()
    achieved = table["achieved_flops_per_s"].to_numpy(dtype=float)
    fp32 = flops_peaks.get("float32", math.nan)
    for i, (dtype, kind) in enumerate(zip(dtypes, table["kind"], strict=True)):
        if dtype != "float32" or "tf32" not in flops_peaks:
            continue
        if tf32 is None:  # runtime unknown: TF32 only when faster than FFMA can go
            if achieved[i] > TF32_MARGIN * fp32:
                dtypes[i] = "tf32"
        elif tf32 and kind in _TENSOR_CORE_KINDS:
            dtypes[i] = "tf32"
    table["roof_dtype"] = dtypes
    peak = np.array([flops_peaks.get(d, math.nan) for d in dtypes], dtype=float)
    table["peak_flops_per_s"] = peak
    table["peak_bytes_per_s"] = bandwidth
    intensity = table["intensity"].to_numpy(dtype=float)
    table["roof_flops_per_s"] = np.minimum(peak, intensity * bandwidth)
    compute = 100.0 * achieved / peak
    memory = 100.0 * table["achieved_bytes_per_s"].to_numpy(dtype=float) / bandwidth
    flops = table["flops"].to_numpy(dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        pct = np.where(
            flops > 0, 100.0 * achieved / table["roof_flops_per_s"].to_numpy(dtype=float), memory
        )
    copy = (table["kind"] == "host copy").to_numpy()  # the host link has no device roof
    table["compute_pct"] = np.where(copy, math.nan, np.where(flops > 0, compute, 0.0))
    table["memory_pct"] = np.where(copy, math.nan, memory)
    table["pct_of_roof"] = np.where(copy, math.nan, pct)


def measured_pct(table: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """(compute %, memory %) per row from Nsight Compute: the larger of SM throughput and
    tensor-pipe activity, and DRAM throughput; NaN where the layer has no counters."""
    sm = table["sm_throughput_pct"].to_numpy(dtype=float)
    tensor = table["tensor_active_pct"].to_numpy(dtype=float)
    compute = np.where(np.isnan(tensor), sm, np.fmax(sm, tensor))
    return compute, table["dram_throughput_pct"].to_numpy(dtype=float)


def _decide_bound(table: pd.DataFrame, latency_pct: float, *, has_peaks: bool) -> None:
    """`bound` by the SOL rule on the counters where the layer has them, else on the roofline
    fractions ("unknown" where the work is unknown, "" without peaks); `bound_source` says
    which decided."""
    ncu_compute, ncu_memory = measured_pct(table)
    bound, source = [], []
    rows = zip(table["kind"], table["compute_pct"], table["memory_pct"], ncu_compute,
               ncu_memory, strict=True)  # fmt: skip
    for kind, analytic_c, analytic_m, nc, nm in rows:
        if kind == "host copy":
            bound.append("host copy")
            source.append("")
            continue
        measured = not (math.isnan(nc) or math.isnan(nm))
        c, m = (nc, nm) if measured else (analytic_c, analytic_m)
        by = "ncu" if measured else "roofline"
        if math.isnan(c) or math.isnan(m):
            bound.append("unknown" if has_peaks else "")
            source.append("")
        elif max(c, m) < latency_pct:
            bound.append("latency")
            source.append(by)
        else:
            bound.append("compute" if c >= m else "memory")
            source.append(by)
    table["bound"] = bound
    table["bound_source"] = source
