"""A TensorRT engine's layer JSON as a graph: time of `open_engine_graph` and of the first
GraphView topology + layout, for synthetic engines of 1,000 to 20,000 layers in the inspector's
format (conv + relu fused layers with reformats between blocks, ONNX Metadata links, name
scopes of 50 blocks). Run: `python bench/bench_engine_graph.py`.
"""

from __future__ import annotations

import json
import time
from typing import Any

from _common import emit_json, fmt_seconds, print_table

from nsdl_jupyter.graph import GraphScene, open_engine_graph

FORMAT = "Channel major FP16 format where channel % 8 == 0"


def synthetic_engine(layers: int) -> dict[str, Any]:
    """`layers` layers in a chain, every tenth a reformat, grouped in 50 blocks."""
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
    return {"Layers": records, "Bindings": ["t0", f"t{layers}"]}


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
    emit_json("engine_graph", results)


if __name__ == "__main__":
    main()
