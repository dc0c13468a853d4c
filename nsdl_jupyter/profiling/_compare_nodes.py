"""Comparison of two reports per ONNX node, for runtimes that name their layers differently
(onnxruntime rows are nodes, TensorRT layers fuse several: "/conv1/Conv + /relu/Relu").

Rows of either report that share an ONNX node join one unit (a union-find over the
`onnx_nodes` of both), so each unit is the smallest group of ONNX nodes both runtimes time as
a whole; rows that name no ONNX node (reformatting copies) stay units of their own.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from nsdl_jupyter.profiling._report import ProfileReport


def compare_by_onnx_node(a: ProfileReport, b: ProfileReport, column: str) -> pd.DataFrame:
    """One row per unit of ONNX nodes: its nodes, the layers of a and of b that ran them, the
    summed time of each, delta (b - a) and speed-up (a / b); largest |delta| first."""
    parent: dict[str, str] = {}

    def find(key: str) -> str:
        parent.setdefault(key, key)
        while parent[key] != key:
            parent[key] = parent[parent[key]]
            key = parent[key]
        return key

    sides = {"a": a.layers, "b": b.layers}
    for side, layers in sides.items():
        for index, nodes in enumerate(layers["onnx_nodes"]):
            row = find(f"{side}:{index}")
            for node in nodes:
                parent[find(f"n:{node}")] = row

    units: dict[str, dict[str, Any]] = {}
    order = 0
    for side in ("b", "a"):  # engine order first: TensorRT's layers read top to bottom
        layers = sides[side]
        for index, (name, op_type, nodes, ms) in enumerate(
            zip(layers["name"], layers["op_type"], layers["onnx_nodes"], layers[column],
                strict=True)
        ):  # fmt: skip
            unit = units.setdefault(
                find(f"{side}:{index}"),
                {"order": (order := order + 1), "nodes": [], "a": [], "b": [], "ms_a": [],
                 "ms_b": [], "op_a": [], "op_b": []},
            )  # fmt: skip
            unit["nodes"] += [n for n in nodes if n not in unit["nodes"]]
            unit[side].append(str(name))
            unit[f"ms_{side}"].append(float(ms))
            unit[f"op_{side}"].append(str(op_type))

    col_a, col_b = f"{column}_a", f"{column}_b"
    rows = []
    for unit in sorted(units.values(), key=lambda u: u["order"]):
        time_a = _total(unit["ms_a"])
        time_b = _total(unit["ms_b"])
        rows.append(
            {
                "name": " + ".join(unit["nodes"]) or " | ".join(unit["a"] or unit["b"]),
                "op_type": " + ".join(dict.fromkeys(unit["op_a"] or unit["op_b"])),
                col_a: time_a,
                col_b: time_b,
                "delta_ms": time_b - time_a,
                "speedup": time_a / time_b if time_b else math.nan,
                "onnx_nodes": unit["nodes"],
                "layers_a": unit["a"],
                "layers_b": unit["b"],
            }
        )
    table = pd.DataFrame(
        rows,
        columns=["name", "op_type", col_a, col_b, "delta_ms", "speedup", "onnx_nodes",
                 "layers_a", "layers_b"],
    )  # fmt: skip
    table = table.reindex(table["delta_ms"].abs().sort_values(ascending=False).index)
    return table.reset_index(drop=True)


def _total(times: list[float]) -> float:
    """Summed time of a unit's rows on one side; NaN where that side ran none of it."""
    return float(np.nansum(times)) if times else math.nan
