"""ModelDocument benchmarks: open, edit+undo and save, against plain onnx.

- open time and peak RSS of `nj.open_model` vs `onnx.load`, each measured in a fresh child
  process (median of --repeat runs), for a ~20,000-node synthetic DAG and BERT-base
  (random weights, built in code); goal: within 1.5x of onnx.load;
- median latency of `doc.set_attribute` + `doc.undo()` on the 20,000-node model; goal < 1 ms;
- save time: `doc.save` vs `onnx.save`;
- external data (BERT-base weights in `<model>.data`): open time and RSS (weights mapped,
  not read), and saves in place after an attribute edit (no weight bytes written), after
  replacing a 90 MB tensor (appended: old bytes are never overwritten), undo, and an FP16
  conversion of every tensor (the file is compacted once dead bytes outweigh live ones),
  with the data file size after each, against one `onnx.save` with external data.

    python bench/bench_document.py [--repeat 5] [--nodes 20000] [--no-bert]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import onnx
from _common import (
    emit_json,
    fmt_bytes,
    fmt_seconds,
    median_in_child,
    median_seconds,
    print_table,
)

import nsdl_jupyter as nj
from nsdl_jupyter.examples import save_example

OPEN_GOAL = 1.5  # open within 1.5x of onnx.load
EDIT_GOAL = 1e-3  # set_attribute + undo under 1 ms


# Both children import the same modules and open a 1-node model first, so lazy imports
# land in the setup and "RSS added" is what the big model itself costs.
_SETUP = "import onnx, nsdl_jupyter as nj\nonnx.load(tiny)\nnj.open_model(tiny)"


def bench_open(name: str, path: Path, tiny: Path, repeat: int) -> dict[str, Any]:
    env = {"path": str(path), "tiny": str(tiny)}
    plain = median_in_child("m = onnx.load(path)", setup=_SETUP, env=env, repeat=repeat)
    doc = median_in_child("doc = nj.open_model(path)", setup=_SETUP, env=env, repeat=repeat)
    return {
        "model": name,
        "file_bytes": path.stat().st_size,
        "onnx_load_s": plain.seconds,
        "open_model_s": doc.seconds,
        "time_ratio": doc.seconds / plain.seconds,
        "onnx_load_peak_rss": plain.peak_rss,
        "open_model_peak_rss": doc.peak_rss,
        "onnx_load_rss_added": plain.peak_over_setup,
        "open_model_rss_added": doc.peak_over_setup,
        "rss_added_ratio": doc.peak_over_setup / max(plain.peak_over_setup, 2**20),
    }


def bench_edit(path: Path, iterations: int) -> dict[str, Any]:
    doc = nj.open_model(path)
    node = next(n for n in doc.graph if n.op_type == "Concat")  # has an `axis` attribute
    for _ in range(50):  # warm up
        doc.set_attribute(node, "axis", 0)
        doc.undo()
    samples = []
    for _ in range(iterations):
        start = time.perf_counter_ns()
        doc.set_attribute(node, "axis", 0)
        doc.undo()
        samples.append((time.perf_counter_ns() - start) / 1e9)
    samples.sort()
    return {
        "nodes": len(doc.graph),
        "iterations": iterations,
        "median_s": statistics.median(samples),
        "p90_s": samples[int(0.9 * (len(samples) - 1))],
    }


def bench_save(name: str, path: Path, work: Path, repeat: int) -> dict[str, Any]:
    proto = onnx.load(path)
    doc = nj.open_model(path)
    plain = median_seconds(lambda: onnx.save(proto, work / f"{name}.onnx_save.onnx"), repeat=repeat)
    saved = median_seconds(lambda: doc.save(work / f"{name}.doc_save.onnx"), repeat=repeat)
    return {"model": name, "onnx_save_s": plain, "doc_save_s": saved, "ratio": saved / plain}


def bench_external(path: Path, work: Path, tiny: Path, repeat: int) -> dict[str, Any]:
    """Saves of a model whose weights live in an external data file."""
    import numpy as np
    import onnx_ir as ir

    from nsdl_jupyter.transforms import convert_tensors, replace_initializer_value

    folder = work / "external"
    folder.mkdir()
    model = folder / "m.onnx"
    proto = onnx.load(str(path))  # onnx.save moves the weights out of it: timed once
    start = time.perf_counter()
    onnx.save(proto, str(folder / "plain.onnx"), save_as_external_data=True, location="p.data")
    plain = time.perf_counter() - start
    del proto
    nj.open_model(path).save(model, external_data=True)
    data = folder / "m.onnx.data"
    env = {"path": str(model), "tiny": str(tiny)}
    opened = median_in_child("doc = nj.open_model(path)", setup=_SETUP, env=env, repeat=repeat)
    doc = nj.open_model(model)
    biggest = max(doc.graph.initializers.values(), key=lambda v: v.const_value.nbytes)
    name, shape = biggest.name or "", tuple(biggest.const_value.shape.numpy())
    rows = []

    def save(step: str) -> None:
        start = time.perf_counter()
        doc.save()
        rows.append(
            {
                "step": step,
                "seconds": time.perf_counter() - start,
                "data_bytes": data.stat().st_size,
            }
        )

    doc.rename_node(next(iter(doc.nodes)), "renamed_for_bench")
    save("attribute edit (no weights written)")
    for round_ in range(1, 4):
        replace_initializer_value(doc, name, np.full(shape, round_, np.float32))
        save(f"replace {name} ({round_})")
    doc.undo()
    save("undo, save (bytes already there)")
    convert_tensors(doc, lambda ref: ref.dtype == ir.DataType.FLOAT, "float16")
    save("every float tensor to float16 (dead > live: compacted)")
    doc.undo()
    save("undo the float16 conversion")
    return {
        "onnx_save_external_s": plain,
        "open_model_s": opened.seconds,
        "open_model_rss_added": opened.peak_over_setup,
        "tensor": name,
        "tensor_bytes": biggest.const_value.nbytes,
        "saves": rows,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="runs per median (default 5)")
    parser.add_argument("--nodes", type=int, default=20_000, help="synthetic model size")
    parser.add_argument("--iterations", type=int, default=2000, help="set+undo samples")
    parser.add_argument("--no-bert", action="store_true", help="skip BERT-base (440 MB)")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="nsdl-bench-") as folder:
        work = Path(folder)
        models = {
            f"synthetic_{args.nodes}": save_example(
                "synthetic_dag", work / "synthetic.onnx", num_nodes=args.nodes
            )
        }
        if not args.no_bert:
            models["bert_base"] = save_example("bert_base", work / "bert_base.onnx")

        tiny = save_example("synthetic_dag", work / "tiny.onnx", num_nodes=1)
        opens = [bench_open(name, path, tiny, args.repeat) for name, path in models.items()]
        edit = bench_edit(models[f"synthetic_{args.nodes}"], args.iterations)
        saves = [bench_save(name, path, work, args.repeat) for name, path in models.items()]
        external = (
            None if args.no_bert else bench_external(models["bert_base"], work, tiny, args.repeat)
        )

    print_table(
        f"open (fresh process each, median of {args.repeat}; RSS added = peak - after imports)",
        [
            {
                "model": o["model"],
                "file": fmt_bytes(o["file_bytes"]),
                "onnx.load": fmt_seconds(o["onnx_load_s"]),
                "open_model": fmt_seconds(o["open_model_s"]),
                "time x": f"{o['time_ratio']:.2f}",
                "onnx.load RSS+": fmt_bytes(o["onnx_load_rss_added"]),
                "open_model RSS+": fmt_bytes(o["open_model_rss_added"]),
                "RSS x": f"{o['rss_added_ratio']:.2f}",
                f"goal <= {OPEN_GOAL}x": "met"
                if max(o["time_ratio"], o["rss_added_ratio"]) <= OPEN_GOAL
                else "MISSED",
            }
            for o in opens
        ],
    )
    print_table(
        f"set_attribute + undo ({edit['nodes']} nodes, {edit['iterations']} samples)",
        [
            {
                "median": fmt_seconds(edit["median_s"]),
                "p90": fmt_seconds(edit["p90_s"]),
                "goal < 1 ms": "met" if edit["median_s"] < EDIT_GOAL else "MISSED",
            }
        ],
    )
    print_table(
        f"save (median of {args.repeat})",
        [
            {
                "model": s["model"],
                "onnx.save": fmt_seconds(s["onnx_save_s"]),
                "doc.save": fmt_seconds(s["doc_save_s"]),
                "x": f"{s['ratio']:.2f}",
            }
            for s in saves
        ],
    )
    if external is not None:
        print_table(
            f"external data, BERT-base: open {fmt_seconds(external['open_model_s'])} with "
            f"{fmt_bytes(external['open_model_rss_added'])} RSS added; onnx.save with external "
            f"data {fmt_seconds(external['onnx_save_external_s'])}",
            [
                {
                    "save in place after": r["step"],
                    "seconds": fmt_seconds(r["seconds"]),
                    "data file": fmt_bytes(r["data_bytes"]),
                }
                for r in external["saves"]
            ],
        )
    print()
    emit_json(
        "document",
        {"repeat": args.repeat, "open": opens, "edit": edit, "save": saves, "external": external},
    )


if __name__ == "__main__":
    main()
