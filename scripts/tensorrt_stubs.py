"""Install TensorRT's type stubs (PyPI `tensorrt-stubs`) where only mypy reads them.

`pyproject.toml` points mypy at `<venv>/typing-stubs`, and the TensorRT runners type their
builder, network and config objects with these stubs (TensorRT 10's API, which
`tensorrt_rtx` shares for every name the runners use). Three things keep the stubs out of the
dev extras:
- the wheel requires `tensorrt==10.13.0.35`, whose PyPI package only fetches from NVIDIA's own
  index: it is installed here with `--no-deps`;
- it ships a `tensorrt/` folder of `.pyi` files, which in site-packages makes `import tensorrt`
  succeed as an empty namespace package: it goes to its own folder instead;
- its generated `tensorrt_bindings/tensorrt.pyi` is not valid Python in 5 places (parameters
  named `in`, a parameter without a default after defaults), and mypy stops at syntax errors
  in any stub: those lines are rewritten (`in` -> `in_`, `= ...`). Other errors inside the
  stub are silenced by the `tensorrt_bindings.*` override in pyproject.toml.

Run by scripts/setup.sh; idempotent: `python scripts/tensorrt_stubs.py [folder]`.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

VERSION = "10.13.0.35.1"
_STAMP = f"tensorrt-stubs-{VERSION}.fixed"


def fix(stub: Path) -> int:
    """Rewrite the lines of `stub` that are not valid Python; returns how many changed."""
    text = stub.read_text(encoding="utf-8")
    fixed, count = re.subn(r"(?<=[(,] )in: |(?<=\()in: ", "in_: ", text)
    late = "power: Weights = None, channel_axis: int)"
    count += text.count(late)
    fixed = fixed.replace(late, "power: Weights = None, channel_axis: int = ...)")
    compile(fixed, str(stub), "exec", flags=0x400, dont_inherit=True)  # PyCF_ONLY_AST
    stub.write_text(fixed, encoding="utf-8")
    return count


def main(argv: list[str]) -> int:
    folder = Path(argv[0]) if argv else Path(sys.prefix) / "typing-stubs"
    if (folder / _STAMP).is_file():
        return 0
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check",
         "--no-deps", "--upgrade", "--target", str(folder), f"tensorrt-stubs=={VERSION}"],
        check=True,
    )  # fmt: skip
    changed = fix(folder / "tensorrt_bindings" / "tensorrt.pyi")
    (folder / _STAMP).write_text(f"{changed} lines fixed\n", encoding="utf-8")
    print(f"tensorrt-stubs {VERSION} in {folder} ({changed} lines made valid Python)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
