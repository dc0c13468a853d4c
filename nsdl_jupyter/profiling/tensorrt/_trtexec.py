"""Import trtexec's JSON exports (`--exportProfile`, `--exportLayerInfo`, `--exportTimes`).

TensorRT fuses ONNX nodes into layers and names a layer after what it fused
("features.0.0.weight + QuantizeLinear_8 + Conv_12 + PWN(Clip_16)"); from TensorRT 10 on, a
detailed layer export also carries a `Metadata` field ("[ONNX Layer: /conv1/Conv]..."). Both
are read back into the ONNX node names of each layer (`onnx_nodes`), so a TensorRT report can be
laid over the graph and compared with an onnxruntime report. The exports are untrusted input:
anything malformed in them raises TrtexecFormatError naming the file.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from nsdl_jupyter._errors import ArgumentError
from nsdl_jupyter.graph import precision_of, trt_layer_nodes
from nsdl_jupyter.profiling._errors import TrtexecFormatError
from nsdl_jupyter.profiling._files import malformed_as, read_json, readable_file
from nsdl_jupyter.profiling._model_source import model_source
from nsdl_jupyter.profiling._report import ProfileReport, now_iso, recorded_path

TRT_TIME_NOTE = (
    "Per-layer times from trtexec --exportProfile (a profiling pass that times each layer; "
    "fused layers cover several ONNX nodes). End-to-end figures from --exportTimes."
)

PathLike = str | os.PathLike[str]
_NON_COMPUTE = frozenset({"Reformat", "NoOp"})


def _shapes(bindings: Any) -> str:
    if not isinstance(bindings, list):
        return ""
    parts = []
    for b in bindings:
        if isinstance(b, Mapping):
            dims = ",".join(str(d) for d in b.get("Dimensions", []))
            prec = precision_of(str(b.get("Format/Datatype", "")))
            parts.append(f"{prec.lower() or '?'}[{dims}]")
    return ", ".join(parts)


def _formats(tensors: Any) -> str:
    """The output formats of a layer ("Row major linear FP32; ...")."""
    if not isinstance(tensors, list):
        return ""
    return "; ".join(str(t.get("Format/Datatype", "")) for t in tensors if isinstance(t, Mapping))


def is_non_compute(name: str, op_type: str) -> bool:
    """A layer TensorRT inserted that moves or reshapes data only (reformats, no-ops)."""
    return op_type in _NON_COMPUTE or name.startswith("Reformatting CopyNode")


def _read_json(path: PathLike, what: str, kind: type = object) -> Any:
    """The JSON of one export, checked to be a `kind` (list or Mapping) at the top."""
    data = read_json(path, TrtexecFormatError, f"a trtexec {what}")
    if not isinstance(data, kind):
        want = "list" if kind is list else "object"
        raise TrtexecFormatError(
            f"{path} is not a trtexec {what}: its JSON is a {type(data).__name__}, not a {want}"
        )
    return data


def _profile_rows(data: list[Any]) -> tuple[list[dict[str, Any]], int | None]:
    count = None
    rows = []
    for record in data:
        if not isinstance(record, Mapping):
            continue
        if "name" not in record:
            if "count" in record:
                count = int(record["count"])
            continue
        rows.append(dict(record))
    return rows, count


def _layer_info(data: Any, path: PathLike) -> list[dict[str, Any]]:
    layers = data.get("Layers", []) if isinstance(data, Mapping) else data
    if not isinstance(layers, list):
        raise TrtexecFormatError(
            f"{path} is not a trtexec --exportLayerInfo file: 'Layers' is not a list"
        )
    out = []
    for layer in layers:
        if isinstance(layer, str):  # exports without --profilingVerbosity=detailed
            out.append({"Name": layer})
        elif isinstance(layer, Mapping):
            out.append(dict(layer))
    return out


def _sibling(path: Path | None, old: str, new: str) -> Path | None:
    if path is None or not path.name.endswith(old):
        return None
    candidate = path.with_name(path.name[: -len(old)] + new)
    return candidate if candidate.is_file() else None


def load_trtexec(
    profile: PathLike | None = None,
    layer_info: PathLike | None = None,
    times: PathLike | None = None,
    *,
    run_metadata: PathLike | None = None,
    model: Any = None,
    name: str | None = None,
    full_paths: bool = False,
    hide_non_compute: bool = False,
) -> ProfileReport:
    """A ProfileReport from trtexec exports; at least one of the three files is needed.

    `profile`: `--exportProfile` (per-layer times; `count`/`medianMs` optional, as in older
    TensorRT); `layer_info`: `--exportLayerInfo` (layer types, precisions, shapes, tactics);
    `times`: `--exportTimes` (end-to-end per inference). `run_metadata` (trtexec's
    `*.profile.metadata.json`, found beside the profile when not given) adds the device and the
    run options. `model` (path, ModelProto, ModelDocument) restricts `onnx_nodes` to real nodes.
    The metadata records file names only unless `full_paths` (absolute paths) is set.
    `hide_non_compute` leaves out the reformat and no-op layers TensorRT inserted (their
    count and time are kept in the metadata as `hidden_non_compute`).
    """
    if profile is None and layer_info is None and times is None:
        raise ArgumentError(
            "load_trtexec needs profile=, layer_info= or times= (trtexec JSON exports)"
        )
    profile_path = readable_file(profile, "trtexec profile") if profile is not None else None
    if layer_info is not None:
        layer_info = readable_file(layer_info, "trtexec layer info")
    if times is not None:
        times = readable_file(times, "trtexec times")
    graph_nodes = model_source(model).node_names if model is not None else None

    files = ", ".join(str(p) for p in (profile, layer_info, times) if p is not None)
    with malformed_as(TrtexecFormatError, f"trtexec export {files}"):
        return _load(
            profile_path,
            layer_info,
            times,
            run_metadata=run_metadata,
            graph_nodes=graph_nodes,
            name=name,
            full_paths=full_paths,
            hide_non_compute=hide_non_compute,
        )


def _load(
    profile_path: Path | None,
    layer_info: PathLike | None,
    times: PathLike | None,
    *,
    run_metadata: PathLike | None,
    graph_nodes: set[str] | None,
    name: str | None,
    full_paths: bool,
    hide_non_compute: bool,
) -> ProfileReport:
    rows: list[dict[str, Any]] = []
    count = None
    if profile_path is not None:
        rows, count = _profile_rows(_read_json(profile_path, "--exportProfile file", list))
    info = []
    if layer_info is not None:
        info = _layer_info(_read_json(layer_info, "--exportLayerInfo file"), layer_info)
    info_by_name = {str(layer.get("Name", "")): layer for layer in info}
    if not rows:  # layer info only: layers without times
        rows = [{"name": n} for n in info_by_name]

    records = [_layer_record(row, info_by_name, graph_nodes) for row in rows]
    hidden = [r for r in records if hide_non_compute and is_non_compute(r["name"], r["op_type"])]
    records = [r for r in records if not any(r is h for h in hidden)]
    layers = pd.DataFrame.from_records(records) if records else pd.DataFrame({"name": []})
    if len(layers):
        total = layers["mean_ms"].sum(min_count=1)
        layers["share"] = layers["mean_ms"] / total if total and total > 0 else np.nan
        durations = layers["mean_ms"].fillna(0.0).to_numpy()
        layers["start_ms"] = np.cumsum(durations) - durations
    timeline = None
    if len(layers):
        timeline = layers[
            [
                "name",
                "op_type",
                "provider",
                "precision",
                "start_ms",
                "input_shapes",
                "output_shapes",
            ]
        ].copy()
        timeline["duration_ms"] = layers["mean_ms"].fillna(0.0)
        timeline["self_ms"] = timeline["duration_ms"]
        timeline["depth"] = 0

    latencies: list[float] = []
    if times is not None:
        for record in _read_json(times, "--exportTimes file", list):
            if isinstance(record, Mapping):
                value = record.get("latencyMs", record.get("computeMs"))
                if value is not None:
                    latencies.append(float(value))

    metadata: dict[str, Any] = {
        "source": "trtexec",
        "runtime": "TensorRT",
        "provider": "TensorRT",
        "iterations": count if count is not None else (len(latencies) or None),
        "model_name": name or _model_name(profile_path or Path(layer_info or times or "model")),
        "profile_path": recorded_path(profile_path, full_paths=full_paths),
        "layer_info_path": recorded_path(layer_info, full_paths=full_paths),
        "times_path": recorded_path(times, full_paths=full_paths),
        "created": now_iso(),
        "latency_source": "trtexec --exportTimes" if latencies else "none",
        "timing_note": TRT_TIME_NOTE,
        "timeline_note": "trtexec exports no per-layer start times: layers are drawn back to "
        "back in engine order with their mean durations",
    }
    if hide_non_compute:
        metadata["hidden_non_compute"] = {
            "layers": len(hidden),
            "mean_ms": float(np.nansum([h["mean_ms"] for h in hidden])),
        }
    metadata.update(_run_metadata(profile_path, run_metadata, have_latencies=bool(latencies)))
    return ProfileReport(
        layers, latencies_ms=latencies, timeline_events=timeline, metadata=metadata
    )


def _layer_record(
    row: Mapping[str, Any],
    info_by_name: Mapping[str, Mapping[str, Any]],
    graph_nodes: set[str] | None,
) -> dict[str, Any]:
    """One layers row from a profile record and the layer's detailed information."""
    layer_name = str(row["name"])
    detail = info_by_name.get(layer_name, {})
    outputs = detail.get("Outputs")
    precision = ""
    if isinstance(outputs, list) and outputs and isinstance(outputs[0], Mapping):
        precision = precision_of(str(outputs[0].get("Format/Datatype", "")))

    def number(key: str) -> float:
        value = row.get(key)
        return float(value) if value is not None else np.nan

    return {
        "name": layer_name,
        "op_type": str(detail.get("LayerType", detail.get("ParameterType", ""))),
        "provider": "TensorRT",
        "precision": precision,
        "calls": 1.0,
        "mean_ms": number("averageMs"),
        "median_ms": number("medianMs"),
        "total_ms": number("timeMs"),
        "input_shapes": _shapes(detail.get("Inputs")),
        "output_shapes": _shapes(detail.get("Outputs")),
        "tactic": str(detail.get("TacticName", detail.get("TacticValue", ""))),
        "formats": _formats(detail.get("Outputs")),
        "onnx_nodes": trt_layer_nodes(
            layer_name, str(detail.get("Metadata") or "") or None, graph_nodes
        ),
    }


def _run_metadata(
    profile_path: Path | None, run_metadata: PathLike | None, *, have_latencies: bool
) -> dict[str, Any]:
    """Device, run and build options from trtexec's metadata files (beside the profile)."""
    metadata: dict[str, Any] = {}
    meta_path = (
        Path(run_metadata)
        if run_metadata is not None
        else _sibling(profile_path, ".profile.json", ".profile.metadata.json")
    )
    if meta_path is not None:
        run = _read_json(meta_path, "profile metadata file", Mapping)
        device = run.get("device_information", {})
        metadata["device"] = device.get("Selected Device")
        metadata["compute_capability"] = device.get("Compute Capability")
        metadata["inference_options"] = run.get("inference_options")
        summary = run.get("performance_summary", {})
        metadata["throughput_qps"] = summary.get("Throughput")
        if not have_latencies and isinstance(summary.get("Latency"), list):
            metadata["latency_summary_ms"] = dict(
                zip(
                    ["min", "max", "mean", "median", "p90", "p95", "p99"],
                    summary["Latency"],
                    strict=False,
                )
            )
    build_path = _sibling(profile_path, ".profile.json", ".build.metadata.json")
    if build_path is not None:
        build = _read_json(build_path, "build metadata file", Mapping)
        metadata["build_options"] = build.get("build_options")
    return metadata


def _model_name(path: Path) -> str:
    name = path.name
    for suffix in (
        ".profile.json",
        ".graph.json",
        ".timing.json",
        ".json",
        ".engine",
        ".plan",
        ".onnx",
    ):
        name = name.removesuffix(suffix)
    return name
