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
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from nsdl_jupyter._errors import ArgumentError
from nsdl_jupyter.profiling._errors import TrtexecFormatError
from nsdl_jupyter.profiling._files import malformed_as, read_json
from nsdl_jupyter.profiling._model_source import model_source
from nsdl_jupyter.profiling._report import ProfileReport, now_iso, recorded_path

_ONNX_LAYER = re.compile(r"\[ONNX Layer: ([^\]\x1f]+)\]")
_FOREIGN = re.compile(r"^\{?ForeignNode\[(.*)\]\}?$")
_TENSOR_SUFFIXES = (".weight", ".bias", ".scale", ".zero_point", "_scale", "_zero_point")
_INSERTED_PREFIXES = ("copied_squeeze_after_", "unsqueeze_node_after_", "squeeze_after_")
TRT_TIME_NOTE = (
    "Per-layer times from trtexec --exportProfile (a profiling pass that times each layer; "
    "fused layers cover several ONNX nodes). End-to-end figures from --exportTimes."
)

PathLike = str | os.PathLike[str]


def _split_top_level(text: str, separators: tuple[str, ...]) -> list[str]:
    """Split on separators that are outside parentheses/brackets."""
    parts: list[str] = []
    depth = 0
    start = 0
    i = 0
    while i < len(text):
        ch = text[i]
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth = max(depth - 1, 0)
        elif depth == 0:
            for sep in separators:
                if text.startswith(sep, i):
                    parts.append(text[start:i])
                    i += len(sep)
                    start = i
                    break
            else:
                i += 1
                continue
            continue
        i += 1
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def _tokens(name: str) -> list[str]:
    """The pieces a fused layer name is made of, PWN(...) and ForeignNode[...] unwrapped."""
    if name.startswith("Reformatting CopyNode"):
        return []  # a layout conversion TensorRT inserted: no ONNX node of its own
    out: list[str] = []
    for part in _split_top_level(name, (" + ",)):
        foreign = _FOREIGN.match(part)
        if foreign:
            out.extend(t.strip() for t in foreign.group(1).split("...") if t.strip())
        elif part.startswith("PWN(") and part.endswith(")"):
            out.extend(_tokens_inner(part[4:-1]))
        else:
            out.append(part)
    return out


def _tokens_inner(text: str) -> list[str]:
    found: list[str] = []
    for piece in _split_top_level(text, (", ", " + ", ",")):
        if piece.startswith("PWN(") and piece.endswith(")"):
            found.extend(_tokens_inner(piece[4:-1]))
        else:
            found.append(piece)
    return found


def trt_layer_nodes(
    layer_name: str, metadata: str | None = None, graph_nodes: set[str] | None = None
) -> list[str]:
    """ONNX node names a TensorRT layer covers, from its Metadata or its fused name.

    With `graph_nodes` (the model's node names) only real nodes are kept; without, tokens that
    name tensors (weights, biases) or nodes TensorRT inserted are dropped.
    """
    if metadata:
        named = _ONNX_LAYER.findall(metadata)
        if named:
            return [n for n in named if graph_nodes is None or n in graph_nodes]
    tokens = _tokens(layer_name)
    if graph_nodes is not None:
        return [t for t in tokens if t in graph_nodes]
    return [
        t
        for t in tokens
        if "(Unnamed Layer*" not in t
        and not t.endswith(_TENSOR_SUFFIXES)
        and not t.startswith(_INSERTED_PREFIXES)
    ]


def _precision(datatype: str) -> str:
    text = datatype.lower()
    for needle, label in (
        ("int8", "INT8"),
        ("fp8", "FP8"),
        ("int4", "INT4"),
        ("bf16", "BF16"),
        ("fp16", "FP16"),
        ("half", "FP16"),
        ("fp32", "FP32"),
        ("float", "FP32"),
        ("int32", "INT32"),
        ("int64", "INT64"),
        ("bool", "BOOL"),
    ):
        if needle in text:
            return label
    return ""


def _shapes(bindings: Any) -> str:
    if not isinstance(bindings, list):
        return ""
    parts = []
    for b in bindings:
        if isinstance(b, Mapping):
            dims = ",".join(str(d) for d in b.get("Dimensions", []))
            prec = _precision(str(b.get("Format/Datatype", "")))
            parts.append(f"{prec.lower() or '?'}[{dims}]")
    return ", ".join(parts)


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
) -> ProfileReport:
    """A ProfileReport from trtexec exports; at least one of the three files is needed.

    `profile`: `--exportProfile` (per-layer times; `count`/`medianMs` optional, as in older
    TensorRT); `layer_info`: `--exportLayerInfo` (layer types, precisions, shapes, tactics);
    `times`: `--exportTimes` (end-to-end per inference). `run_metadata` (trtexec's
    `*.profile.metadata.json`, found beside the profile when not given) adds the device and the
    run options. `model` (path, ModelProto, ModelDocument) restricts `onnx_nodes` to real nodes.
    The metadata records file names only unless `full_paths` (absolute paths) is set.
    """
    if profile is None and layer_info is None and times is None:
        raise ArgumentError(
            "load_trtexec needs profile=, layer_info= or times= (trtexec JSON exports)"
        )
    profile_path = Path(profile) if profile is not None else None
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
        precision = _precision(str(outputs[0].get("Format/Datatype", "")))

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
