"""scripts/cache_bytecode.py (run by setup.sh) leaves current bytecode for every module a first
view imports, so a kernel started with PYTHONDONTWRITEBYTECODE set compiles none of them."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parent.parent

COUNT_COMPILES = """
import sys, importlib._bootstrap_external as external
compiled = []
source_to_code = external.SourceLoader.source_to_code
def counting(self, data, path, *, _optimize=-1):
    compiled.append(path)
    return source_to_code(self, data, path, _optimize=_optimize)
external.SourceLoader.source_to_code = counting
import ipykernel.ipkernel
import nsdl_jupyter as nj
nj.GraphView(nj.open_model(sys.argv[1]))
print("COMPILED", len(compiled), compiled[:5])
"""


def test_a_first_view_after_it_compiles_nothing(tmp_path: pathlib.Path) -> None:
    from nsdl_jupyter.examples import save_example

    model = save_example("bert_base", tmp_path / "bert.onnx", layers=2)
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    script = REPO / "scripts" / "cache_bytecode.py"
    subprocess.run([sys.executable, str(script)], env=env, check=True, timeout=120)
    run = subprocess.run(
        [sys.executable, "-c", COUNT_COMPILES, str(model)],
        env=env, capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    assert "COMPILED 0 []" in run.stdout, run.stdout + run.stderr
