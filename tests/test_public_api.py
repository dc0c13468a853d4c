"""The package's public names: every lazy name resolves, and import stays cheap."""

from __future__ import annotations

import subprocess
import sys

import nsdl_jupyter


def test_every_public_name_resolves() -> None:
    assert set(nsdl_jupyter.__all__) == {"__version__", *nsdl_jupyter._LAZY}
    for name in nsdl_jupyter.__all__:
        assert getattr(nsdl_jupyter, name) is not None, name


def test_import_does_not_load_heavy_modules() -> None:
    code = (
        "import sys, nsdl_jupyter; "
        "print(sorted(m for m in ('onnxruntime', 'plotly', 'anywidget', 'pandas') "
        "if m in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], check=False, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
