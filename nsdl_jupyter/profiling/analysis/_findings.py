"""What to do: a short ranked table of findings, each pointing at ONNX nodes and carrying the
measurements behind it (the shape of Nsight Compute's rule results plus TREx's mitigation).

Rules (each skips itself when the report lacks what it needs: no advice without a measurement):
- `host_copies`: input/output copies between host and GPU (rows of memcpy kind). Removing
  them (I/O binding) saves their whole time.
- `fp32_tensor_cores`: GEMM/Conv/attention layers computing in float32 (on the FFMA roof, or
  the tf32 one where the runtime allows TF32) while the GPU has a faster roof (tf32, fp16,
  bf16); the gain is the time at the fastest roof (bytes halved for 16-bit types) against the
  measured time. The tensor-pipe activity Nsight Compute measured is in the evidence.
- `elementwise_chain`: two or more memory-bound elementwise/normalisation/softmax layers in a
  row, each its own kernel. A fused kernel moves only the chain's border tensors: gain =
  1 - border bytes / bytes the layers move now, at the bandwidth they reach now.
- `launch_latency`: latency-bound layers whose kernels are tiny (< `tiny_kernel_us`), which
  launch overhead dominates: CUDA graphs or a larger batch. Gain: ncu's template estimate,
  100 - max(compute %, memory %).
- `below_roof`: other layers below `below_roof_pct` of their roof; gain 1 - pct_of_roof.

Rules that need the roofs (`fp32_tensor_cores`, `below_roof`) are left out without peaks;
`bound` from Nsight Compute counters still feeds `elementwise_chain` and `launch_latency`.
Every local gain is weighted by the layer's share of GPU time (`est_speedup_pct` is a global
estimate: the share of the whole run's GPU time saved, as ncu's GLOBAL speedups). Rows are
ranked by it; rows past the `keep` first or beyond `cumulative` of the summed estimate are
rolled into one "others" row (HTA's kernel roll-up).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from nsdl_jupyter.profiling.analysis._node_work import NodeWork
from nsdl_jupyter.profiling.analysis._roofline import border_bytes, consumers, measured_pct

FINDING_COLUMNS = [
    "nodes",
    "rule_id",
    "title",
    "severity",
    "message",
    "evidence",
    "est_speedup_pct",
    "speedup_scope",
    "local_speedup_pct",
    "focus_metric",
    "focus_value",
    "mitigation",
]
_FUSIBLE = frozenset({"elementwise", "normalization", "softmax"})
_TENSOR_CORE_KINDS = frozenset({"gemm", "conv", "attention"})
_SIXTEEN_BIT = ("float16", "bfloat16")


def findings(
    table: pd.DataFrame,
    work: NodeWork | None,
    metadata: Mapping[str, Any],
    *,
    tiny_kernel_us: float = 10.0,
    below_roof_pct: float = 30.0,
    keep: int = 10,
    cumulative: float = 0.95,
) -> pd.DataFrame:
    """Ranked findings from a `roofline_table` (and the model's work, for fusion chains)."""
    peaks = table.attrs.get("peaks")
    rows: list[dict[str, Any]] = []
    rows += _host_copies(table, metadata)
    used: set[str] = set()
    if peaks is not None:
        rows += _fp32(table, peaks, used)
    if work is not None:
        rows += _chains(table, work, used)
    rows += _launch(table, tiny_kernel_us, used)
    if peaks is not None:
        rows += _below_roof(table, below_roof_pct, used)
    frame = pd.DataFrame(rows, columns=FINDING_COLUMNS)
    frame.attrs["note"] = table.attrs.get("note", "")
    if frame.empty:
        return frame
    frame = frame.sort_values("est_speedup_pct", ascending=False, kind="stable")
    return _roll_up(frame.reset_index(drop=True), keep, cumulative)


def _severity(global_pct: float) -> str:
    return "high" if global_pct >= 5 else "medium" if global_pct >= 1 else "low"


def _finding(  # noqa: PLR0917 - the fields of one finding, in column order
    nodes: list[str], rule_id: str, title: str, message: str, evidence: dict[str, Any],
    global_pct: float, local_pct: float, focus: tuple[str, float], mitigation: str,
) -> dict[str, Any]:  # fmt: skip
    return {
        "nodes": nodes,
        "rule_id": rule_id,
        "title": title,
        "severity": _severity(global_pct),
        "message": message,
        "evidence": evidence,
        "est_speedup_pct": round(global_pct, 3),
        "speedup_scope": "global",
        "local_speedup_pct": round(local_pct, 3),
        "focus_metric": focus[0],
        "focus_value": focus[1],
        "mitigation": mitigation,
    }


def _nodes(rows: pd.DataFrame) -> list[str]:
    return list(dict.fromkeys(n for nodes in rows["onnx_nodes"] for n in nodes))


def _host_copies(table: pd.DataFrame, metadata: Mapping[str, Any]) -> list[dict[str, Any]]:
    copies = table[table["kind"] == "host copy"]
    if copies.empty:
        return []
    share = float(copies["share"].sum())
    ms = float(copies["time_ms"].sum())
    nbytes = float(copies["bytes"].sum())
    text = (
        f"{len(copies)} host<->GPU copies take {ms:.3f} ms per inference, {share:.1%} of GPU "
        "time"
        + (f", moving {nbytes / 1e6:.1f} MB" if math.isfinite(nbytes) else "")
        + "; profiling with io_binding=True removes them"
    )
    return [_finding(
        _nodes(copies), "host_copies", "Host copies", text,
        {"copy_ms": ms, "gpu_time_share": share, "bytes": nbytes, "layers": list(copies["name"])},
        100 * share, 100.0, ("copy_ms", ms),
        "keep inputs and outputs on the GPU: profile_ort(..., io_binding=True), and onnxruntime "
        "IOBinding (bind_input/bind_output on device buffers) in the application",
    )]  # fmt: skip


def _fp32(table: pd.DataFrame, peaks: Mapping[str, Any], used: set[str]) -> list[dict[str, Any]]:
    flops_peaks: Mapping[str, float] = peaks["flops_per_s"]
    bandwidth = float(peaks["bytes_per_s"])
    rows = []
    candidates = table[
        (table["dtype"] == "float32") & table["roof_dtype"].isin(["float32", "tf32"])
        & table["kind"].isin(_TENSOR_CORE_KINDS) & (table["flops"] > 0)
    ]  # fmt: skip
    for _, row in candidates.iterrows():
        roof = str(row["roof_dtype"])
        better = ("tf32", *_SIXTEEN_BIT) if roof == "float32" else _SIXTEEN_BIT
        faster = {k: flops_peaks[k] for k in better if k in flops_peaks}
        if not faster:
            continue
        best = max(faster, key=lambda k: faster[k])
        scale = 0.5 if best in _SIXTEEN_BIT else 1.0
        ideal_s = max(row["flops"] / faster[best], row["bytes"] * scale / bandwidth)
        local = max(0.0, 1.0 - ideal_s / (row["time_ms"] / 1e3))
        if local <= 0:
            continue
        used.add(row["name"])
        evidence = {
            "time_ms": row["time_ms"], "flops": row["flops"], "bytes": row["bytes"],
            "achieved_flops_per_s": row["achieved_flops_per_s"], "roof_dtype": roof,
            f"{roof}_peak": flops_peaks[roof], f"{best}_peak": faster[best],
        }  # fmt: skip
        tensor = float(row["tensor_active_pct"])
        measured = ""
        if math.isfinite(tensor):
            evidence["tensor_active_pct"] = tensor
            measured = f", tensor pipe {tensor:.0f}% active (ncu)"
        allow = "" if roof == "tf32" else ", or allow TF32 (onnxruntime CUDA option use_tf32=1)"
        rows.append(_finding(
            list(row["onnx_nodes"]), "fp32_tensor_cores", "FP32 GEMM/Conv: 16-bit Tensor Cores",
            f"{row['op_type']} '{row['name']}' computes in float32 at "
            f"{row['achieved_flops_per_s'] / 1e12:.1f} TFLOP/s ({row['compute_pct']:.0f}% of the "
            f"{roof} peak{measured}); at the {best} roof ({faster[best] / 1e12:.0f} TFLOP/s) it "
            f"would take {ideal_s * 1e3:.4f} ms instead of {row['time_ms']:.4f} ms",
            evidence, 100 * local * row["share"], 100 * local, ("compute_pct", row["compute_pct"]),
            "run it on Tensor Cores in 16 bits: convert the model to fp16 (nj.convert_to_fp16) "
            f"or bf16 (TensorRT --fp16/--bf16){allow}",
        ))  # fmt: skip
    return rows


def _chains(table: pd.DataFrame, work: NodeWork, used: set[str]) -> list[dict[str, Any]]:
    """Runs of memory-bound fusible layers linked producer -> single consumer."""
    eligible = table[
        table["kind"].isin(_FUSIBLE) & (table["bound"] == "memory")
        | table["kind"].isin(_FUSIBLE) & (table["bound"] == "latency")
    ]
    if len(eligible) < 2:
        return []
    node_layer = {n: name for name, nodes in zip(eligible["name"], eligible["onnx_nodes"],
                                                 strict=True) for n in nodes}  # fmt: skip
    index = {name: i for i, name in enumerate(work.frame["name"])}
    readers: dict[str, set[str]] = {}
    for i, reads in enumerate(work.reads):
        for tensor in reads:
            readers.setdefault(tensor, set()).add(str(work.frame["name"].iat[i]))
    following: dict[str, set[str]] = {}
    leading: dict[str, set[str]] = {}
    for name, nodes in zip(eligible["name"], eligible["onnx_nodes"], strict=True):
        for node in nodes:
            for tensor in work.writes[index[node]] if node in index else []:
                for reader in readers.get(tensor, set()):
                    layer = node_layer.get(reader)
                    if layer is not None and layer != name:
                        following.setdefault(name, set()).add(layer)
                        leading.setdefault(layer, set()).add(name)
    by_name = eligible.set_index("name")
    rows, seen = [], set[str]()
    for name in eligible["name"]:
        if name in seen or (
            len(leading.get(name, set())) == 1 and _single(leading[name], following)
        ):
            continue
        chain = [name]
        while len(following.get(chain[-1], set())) == 1:
            nxt = next(iter(following[chain[-1]]))
            if nxt in chain or len(leading.get(nxt, set())) != 1:
                break
            chain.append(nxt)
        seen.update(chain)
        if len(chain) < 2:
            continue
        part = by_name.loc[chain]
        nodes = [index[n] for nodes in part["onnx_nodes"] for n in nodes if n in index]
        fused = border_bytes(work, nodes, consumers(work))
        now = float(part["bytes"].sum())
        if not (math.isfinite(fused) and now > 0):
            continue
        local = max(0.0, 1.0 - fused / now)
        share = float(part["share"].sum())
        used.update(chain)
        rows.append(_finding(
            _nodes(part.reset_index()), "elementwise_chain", "Unfused elementwise chain",
            f"{len(chain)} memory-bound layers in a row ({' -> '.join(part['op_type'])}) move "
            f"{now / 1e6:.1f} MB in {part['time_ms'].sum():.4f} ms; one fused kernel would move "
            f"{fused / 1e6:.1f} MB",
            {"layers": chain, "time_ms": float(part["time_ms"].sum()), "bytes_now": now,
             "bytes_fused": fused, "memory_pct": list(part["memory_pct"].round(1))},
            100 * local * share, 100 * local, ("bytes_now", now),
            "fuse them: onnxruntime graph optimizations (ORT_ENABLE_ALL), a fused contrib op "
            "(BiasGelu, SkipLayerNormalization), TensorRT, or torch.compile before export",
        ))  # fmt: skip
    return rows


def _single(previous: set[str], following: Mapping[str, set[str]]) -> bool:
    """The one layer before is followed only by this one: the chain starts earlier."""
    (before,) = previous
    return len(following.get(before, set())) == 1


def _launch(table: pd.DataFrame, tiny_us: float, used: set[str]) -> list[dict[str, Any]]:
    tiny = table[
        (table["bound"] == "latency") & (table["kernel_us"] < tiny_us) & ~table["name"].isin(used)
    ]
    if tiny.empty:
        return []
    local = 100.0 - _reached(tiny).clip(upper=100.0)
    gain = float((local * tiny["share"]).sum())
    ms = float(tiny["time_ms"].sum())
    kernels = float(tiny["kernels"].sum())
    used.update(tiny["name"])
    return [_finding(
        _nodes(tiny), "launch_latency", "Tiny kernels (launch latency)",
        f"{len(tiny)} layers run {kernels:.0f} kernels of under {tiny_us:g} us each "
        f"({ms:.3f} ms, {tiny['share'].sum():.1%} of GPU time) reaching neither roof",
        {"layers": len(tiny), "kernels": kernels, "time_ms": ms,
         "median_kernel_us": float(tiny["kernel_us"].median())},
        gain, float((local * tiny["share"]).sum() / max(tiny["share"].sum(), 1e-12)),
        ("kernel_us", float(tiny["kernel_us"].median())),
        "remove launch gaps with CUDA graphs (onnxruntime CUDA provider option "
        "enable_cuda_graph=1 with I/O binding) or give each kernel more work (a larger batch)",
    )]  # fmt: skip


def _reached(rows: pd.DataFrame) -> pd.Series:
    """The larger of compute % and memory % per row, from the source that decided `bound`."""
    ncu_compute, ncu_memory = measured_pct(rows)
    measured = pd.Series(np.fmax(ncu_compute, ncu_memory), index=rows.index)
    analytic = rows[["compute_pct", "memory_pct"]].max(axis=1)
    return measured.where(rows["bound_source"] == "ncu", analytic)


def _below_roof(table: pd.DataFrame, pct: float, used: set[str]) -> list[dict[str, Any]]:
    low = table[
        (table["pct_of_roof"] < pct) & ~table["name"].isin(used) & (table["kind"] != "host copy")
    ]
    rows = []
    for _, row in low.iterrows():
        local = 100.0 - float(row["pct_of_roof"])
        rows.append(_finding(
            list(row["onnx_nodes"]), "below_roof", "Far below its roof",
            f"{row['op_type']} '{row['name']}' reaches {row['pct_of_roof']:.0f}% of its "
            f"{row['roof_dtype']} roof at {row['intensity']:.2f} FLOP/byte ({row['bound']}-bound, "
            f"{row['time_ms']:.4f} ms)",
            {"time_ms": row["time_ms"], "intensity": row["intensity"],
             "compute_pct": row["compute_pct"], "memory_pct": row["memory_pct"],
             "kernels": row["kernels"]},
            local * row["share"], local, ("pct_of_roof", row["pct_of_roof"]),
            "check its kernels with Nsight Compute (counters=True); try another layout, "
            "padding channels to a multiple of 8, or a TensorRT build",
        ))  # fmt: skip
    return rows


def _roll_up(frame: pd.DataFrame, keep: int, cumulative: float) -> pd.DataFrame:
    total = float(frame["est_speedup_pct"].sum())
    if len(frame) <= keep or total <= 0:
        return frame
    running = frame["est_speedup_pct"].cumsum() / total
    past = (running.shift(fill_value=0.0) >= cumulative) | (frame.index >= keep)
    rest = frame[past]
    if len(rest) < 2:
        return frame
    gain = float(rest["est_speedup_pct"].sum())
    others = _finding(
        [n for nodes in rest["nodes"] for n in nodes], "others", f"{len(rest)} smaller findings",
        f"{len(rest)} findings of {rest['est_speedup_pct'].max():.2f}% or less each",
        {"rules": rest["rule_id"].value_counts().to_dict()},
        gain, math.nan, ("est_speedup_pct", gain), "see findings(keep=...) for each",
    )  # fmt: skip
    return pd.concat([frame[~past], pd.DataFrame([others])], ignore_index=True)
