"""Work per ONNX node (`nj.node_work`): seconds for a 20,000-node network-shaped model (its
shapes inferred, as for a TorchScript export without value_info), the same with the dims
already stated (a dynamo export), and BERT-base at batch 8 x 128 (inferred again from the
inputs); and the 20k model already in memory as onnx_ir (a ModelDocument's case). A file or
ModelProto is read from the protobuf itself (no onnx_ir round trip: 4.9-5.6 s before, on
this machine under load). Goal from issue 24: a 20k-node model in 1 s or less.

    python bench/bench_node_work.py [--nodes 20000]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import onnx
import onnx_ir as ir
from _common import emit_json, fmt_seconds, median_seconds, print_table

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from nsdl_jupyter.examples import synthetic_dag
from nsdl_jupyter.profiling import node_work
from tests import real_exports


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    bare = synthetic_dag(args.nodes)
    typed = onnx.shape_inference.infer_shapes(bare)
    loaded = ir.serde.deserialize_model(typed)  # a document's model: already in memory
    bert = real_exports.FOLDER / "bert_base_dynamo.onnx"
    batch = {"input_ids": [8, 128], "attention_mask": [8, 128]}
    cases = {
        f"synthetic {args.nodes} nodes, shapes inferred": lambda: node_work(bare),
        f"synthetic {args.nodes} nodes, shapes stated": lambda: node_work(typed),
        f"synthetic {args.nodes} nodes, onnx_ir model": lambda: node_work(loaded),
        "bert_base_dynamo, 8 x 128 (file)": lambda: node_work(bert, batch),
    }
    rows, results = [], {}
    for label, run in cases.items():
        seconds = median_seconds(run, repeat=args.repeat)
        frame = run()
        rows.append({"case": label, "nodes": len(frame), "seconds": fmt_seconds(seconds),
                     "unknown": int((frame["status"] != "ok").sum())})  # fmt: skip
        results[label] = seconds
    print_table("node_work", rows)
    emit_json("node_work", {
        "nodes": args.nodes,
        "synthetic_inferred_s": results[f"synthetic {args.nodes} nodes, shapes inferred"],
        "synthetic_stated_s": results[f"synthetic {args.nodes} nodes, shapes stated"],
        "synthetic_ir_model_s": results[f"synthetic {args.nodes} nodes, onnx_ir model"],
        "bert_base_8x128_s": results["bert_base_dynamo, 8 x 128 (file)"],
    })  # fmt: skip


if __name__ == "__main__":
    main()
