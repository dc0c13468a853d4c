"""A TensorRT engine's layer JSON as a graph: time of `open_engine_graph` and of the first
GraphView topology + layout, for synthetic engines of 1,000 to 20,000 layers in the inspector's
format (conv + relu fused layers with reformats between blocks, ONNX Metadata links, name
scopes of 50 blocks). Then 20,000 layers whose names are all the same (`x`, as an untrusted
or careless export may have): de-duplicating the names must stay linear (goal <= 2 s, like the
unique names). Run: `python bench/bench_engine_graph.py`.
"""

from __future__ import annotations

import json
import time
from typing import Any

from _common import emit_json, fmt_seconds, print_table

from nsdl_jupyter.graph import GraphScene, open_engine_graph

FORMAT = "Channel major FP16 format where channel % 8 == 0"


def synthetic_engine(layers: int, same_name: str | None = None) -> dict[str, Any]:
    """`layers` layers in a chain, every tenth a reformat, grouped in 50 blocks; with
    `same_name`, every layer is named that."""
    records = []
    for i in range(layers):
        block = f"/blocks.{i * 50 // layers}"
        tensor_in, tensor_out = f"t{i}", f"t{i + 1}"
        common = {
            "Inputs": [
                {"Name": tensor_in, "Dimensions": [1, 64, 56, 56], "Format/Datatype": FORMAT}
            ],
            "Outputs": [
                {"Name": tensor_out, "Dimensions": [1, 64, 56, 56], "Format/Datatype": FORMAT}
            ],
            "TacticValue": "0x0000000000000001",
        }
        if i % 10 == 9:
            records.append(
                {
                    "Name": f"Reformatting CopyNode for {tensor_out}",
                    "LayerType": "Reformat",
                    **common,
                }
            )
            continue
        conv, relu = f"{block}/conv{i}/Conv", f"{block}/relu{i}/Relu"
        records.append(
            {
                "Name": f"{conv} + {relu}",
                "LayerType": "CaskConvolution",
                "ParameterType": "Convolution",
                "Kernel": [3, 3],
                "Weights": {"Type": "Half", "Count": 36864},
                "TacticName": "sm80_xmma_fprop_implicit_gemm_f16f16_f16f16_f16_nhwckrsc_nhwc",
                "Metadata": f"[ONNX Layer: {conv}]\x1f[ONNX Layer: {relu}]",
                **common,
            }
        )
    if same_name is not None:
        for record in records:
            record["Name"] = same_name
    return {"Layers": records, "Bindings": ["t0", f"t{layers}"]}


def time_open(text: str) -> tuple[float, float]:
    """(wall, CPU) seconds of one open: the CPU time stays meaningful on a shared machine."""
    t0, c0 = time.perf_counter(), time.process_time()
    open_engine_graph(text)
    return time.perf_counter() - t0, time.process_time() - c0


def names_case() -> tuple[list[dict[str, Any]], dict[str, dict[str, float]]]:
    """20,000 layers with unique names, all named `x` with tensors, all `x` as bare names."""
    rows = []
    results: dict[str, dict[str, float]] = {}
    cases = {
        "unique names": json.dumps(synthetic_engine(20_000)),
        "all named x": json.dumps(synthetic_engine(20_000, same_name="x")),
        "all named x, names only": json.dumps({"Layers": ["x"] * 20_000}),
    }
    for case, text in cases.items():
        seconds, cpu = time_open(text)
        rows.append(
            {
                "20,000 layers": case,
                "json MB": f"{len(text) / 1e6:.2f}",
                "open_engine_graph": fmt_seconds(seconds),
                "CPU": fmt_seconds(cpu),
                "goal": "<= 2 s",
            }
        )
        results[case] = {"open_s": seconds, "cpu_s": cpu, "json_bytes": len(text)}
    return rows, results


def main() -> None:
    rows = []
    results: dict[str, dict[str, float]] = {}
    for layers in (1_000, 5_000, 20_000):
        text = json.dumps(synthetic_engine(layers))
        t0 = time.perf_counter()
        engine = open_engine_graph(text)
        opened = time.perf_counter() - t0
        t0 = time.perf_counter()
        scene = GraphScene(engine.graph)
        scene.topology_bytes()
        scene.layout_bytes()
        drawn = time.perf_counter() - t0
        rows.append(
            {
                "layers": layers,
                "json MB": f"{len(text) / 1e6:.1f}",
                "open_engine_graph": fmt_seconds(opened),
                "first draw (topology + layout)": fmt_seconds(drawn),
            }
        )
        results[str(layers)] = {"open_s": opened, "first_draw_s": drawn, "json_bytes": len(text)}
    print_table("Engine layer JSON -> graph", rows)
    name_rows, name_results = names_case()
    print_table("Duplicate layer names (linear de-duplication)", name_rows)
    emit_json("engine_graph", {**results, "names_20000": name_results})


if __name__ == "__main__":
    main()
