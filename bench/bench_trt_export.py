"""TensorRT engine export: wall time of `nj.export_engine` and TensorRT's own build time, for a
first build and a rebuild of the same model with the same cache folder, per installed backend.

On a machine without a GPU this measures TensorRT-RTX (it builds on the CPU and has no timing
cache, so a rebuild is not expected to be faster); with full TensorRT on a GPU the rebuild
reads the timing cache the first build wrote. Run: `python bench/bench_trt_export.py`.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from _common import emit_json, fmt_seconds, print_table

import nsdl_jupyter as nj
from nsdl_jupyter.examples import resnet18, small_transformer
from nsdl_jupyter.profiling import trt_backends


def main() -> None:
    found = trt_backends()
    backends = [name for name in ("tensorrt", "tensorrt_rtx") if "version" in found[name]]
    models = {
        "small_transformer": small_transformer(),
        "resnet18_224": resnet18(),
    }
    rows = []
    results: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="nsdl-bench-trt-") as folder:
        for backend in backends:
            cache = Path(folder) / f"cache-{backend}"
            for name, model in models.items():
                for run in ("first", "rebuild"):
                    t0 = time.perf_counter()
                    built = nj.export_engine(
                        model,
                        Path(folder) / f"{name}.engine",
                        backend=backend,
                        cache_dir=str(cache),
                        inferred_batch_size=1,
                    )
                    wall = time.perf_counter() - t0
                    key = f"{backend}/{name}/{run}"
                    results[key] = {"wall_s": wall, "build_s": built.build_s}
                    rows.append(
                        {
                            "backend": f"{backend} {built.version}",
                            "model": name,
                            "run": run,
                            "wall": fmt_seconds(wall),
                            "TensorRT build": fmt_seconds(built.build_s),
                            "timing cache": "used" if built.timing_cache.get("used") else "none",
                            "engine MB": f"{built.engine_bytes / 1e6:.1f}",
                        }
                    )
    print_table("export_engine", rows)
    emit_json("trt_export", results)


if __name__ == "__main__":
    main()
