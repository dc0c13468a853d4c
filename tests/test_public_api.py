"""The package's public names: every lazy name resolves, and import stays cheap."""

from __future__ import annotations

import subprocess
import sys

import nsdl_jupyter


def test_every_public_name_resolves() -> None:
    assert set(nsdl_jupyter.__all__) == {"__version__", "NsdlError", *nsdl_jupyter._LAZY}
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


def test_every_error_class_of_the_package_is_an_nsdl_error() -> None:
    """One base: `except nsdl_jupyter.NsdlError` catches whatever the package raises on purpose."""
    import importlib
    import pkgutil

    internal = {
        "nsdl_jupyter.graph._scene.NeedsRebuild"
    }  # a signal caught inside, never raised to users
    loose = []
    for info in pkgutil.walk_packages(nsdl_jupyter.__path__, "nsdl_jupyter."):
        if info.name.rsplit(".", 1)[-1].endswith("_runner"):
            continue  # runner scripts run alone on a target, without the package
        module = importlib.import_module(info.name)
        for value in vars(module).values():
            if (
                isinstance(value, type)
                and issubclass(value, Exception)
                and not issubclass(value, Warning)
                and value.__module__ == info.name
                and not issubclass(value, nsdl_jupyter.NsdlError)
            ):
                loose.append(f"{info.name}.{value.__name__}")
    assert set(loose) == internal, loose
