"""Byte-compile every module a notebook's first view imports: the kernel's own, the package's
and its dependencies' (onnx, onnx_ir, protobuf, numpy, ipywidgets, anywidget).

setup.sh installs with `pip install --no-compile` (compiling all of plotly, pandas and torch
would double the install's CPU), so Python compiles a module when a run first imports it. A
shell with PYTHONDONTWRITEBYTECODE set (some CI shells, some containers) never keeps that
bytecode, and every new kernel then compiles ~150 modules again, ~0.2 s of a model's first
view. Bytecode written here is read whatever that variable says. Files whose bytecode is
current are skipped, so a second run costs only the imports (~1 s).

    .venv/bin/python scripts/cache_bytecode.py
"""

from __future__ import annotations

import compileall
import sys
import tempfile
from pathlib import Path


def first_view_modules() -> list[Path]:
    """Source files of the modules loaded once a small model has been opened and drawn."""
    import ipykernel.ipkernel  # noqa: F401 (what a kernel imports before the first cell)

    import nsdl_jupyter as nj
    from nsdl_jupyter.examples import save_example

    with tempfile.TemporaryDirectory(prefix="nsdl-bytecode-") as folder:
        path = save_example("small_transformer", Path(folder) / "m.onnx")
        nj.GraphView(nj.open_model(path))
    files = (getattr(module, "__file__", None) for module in list(sys.modules.values()))
    return sorted({Path(f) for f in files if f and f.endswith(".py")})


def main() -> None:
    files = first_view_modules()
    failed = [f for f in files if not compileall.compile_file(f, quiet=2)]
    if failed:  # a read-only or odd file: Python compiles it on import, as before
        print(f"cache_bytecode: {len(failed)} of {len(files)} files not compiled", file=sys.stderr)


if __name__ == "__main__":
    main()
