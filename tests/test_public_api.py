"""The package's public names: every lazy name resolves, and import stays cheap."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import nsdl_jupyter


def test_every_public_name_resolves() -> None:
    assert set(nsdl_jupyter.__all__) == {"__version__", "NsdlError", *nsdl_jupyter._LAZY}
    for name in nsdl_jupyter.__all__:
        assert getattr(nsdl_jupyter, name) is not None, name


def _heavy_modules_after(statement: str, heavy: str) -> str:
    code = f"import sys; {statement}; print(sorted(m for m in {heavy} if m in sys.modules))"
    result = subprocess.run(
        [sys.executable, "-c", code], check=False, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_import_does_not_load_heavy_modules() -> None:
    heavy = "('onnxruntime', 'plotly', 'anywidget', 'pandas')"
    assert _heavy_modules_after("import nsdl_jupyter", heavy) == "[]"


def test_the_designer_loads_profiling_only_when_it_profiles() -> None:
    """Designer's "Profile from here" needs the ActivityPanel (pandas, plotly, onnxruntime):
    importing the Designer must not pay for it."""
    designer = "from nsdl_jupyter.widgets.designer._designer import Designer"
    assert _heavy_modules_after(designer, "('onnxruntime', 'plotly', 'pandas')") == "[]"


def test_a_first_graph_view_loads_only_what_it_draws(resnet18_file: Path) -> None:
    """A fresh kernel's first drawing pays for its imports: opening a plain ONNX model and
    showing it must not load onnxruntime (contrib schemas), the editors or the transforms."""
    show = f"import nsdl_jupyter as nj; nj.GraphView(nj.open_model({str(resnet18_file)!r}))"
    heavy = "('onnxruntime', 'pandas', 'plotly.graph_objects', 'nsdl_jupyter.editors', "
    heavy += "'nsdl_jupyter.transforms', 'sympy.core')"  # sympy: nsdl_jupyter/_lazy_modules.py
    assert _heavy_modules_after(show, heavy) == "[]"


def test_sympy_deferred_by_the_package_loads_on_first_use() -> None:
    """onnx_ir's symbolic dimensions and a user's sympy work as without the deferral: the
    first use runs sympy (a submodule imported first runs the package's __init__ first)."""
    code = (
        "import sys, nsdl_jupyter, onnx_ir as ir; assert 'sympy.core' not in sys.modules; "
        "d = ir.SymbolicDim('N') * 2 + 1; print(d.evaluate({'N': 3}), end=' '); "
        "from sympy.core import Symbol; import sympy; print(sympy.Symbol is Symbol, end=' '); "
        "import onnx_ir._symbolic_shapes as s; print(s.parse_symbolic_expression('max(a, 2)'))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], check=False, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == "7 True Max(2, a)\n"
    first = "import nsdl_jupyter; from sympy.core import Symbol; import sympy; print(sympy.pi)"
    result = subprocess.run(
        [sys.executable, "-c", first], check=False, capture_output=True, text=True
    )
    assert (result.returncode, result.stdout) == (0, "pi\n"), result.stderr


def test_every_error_class_of_the_package_is_an_nsdl_error() -> None:
    """One base: `except nsdl_jupyter.NsdlError` catches whatever the package raises on purpose."""
    import importlib
    import pkgutil

    internal = {  # signals caught inside, never raised to users
        "nsdl_jupyter.graph._scene.NeedsRebuild",
        "nsdl_jupyter.transforms._small_ops._NotSmallError",
        "nsdl_jupyter.profiling.analysis._node_work._UnknownShape",
        "nsdl_jupyter.editors._modification._CancelledError",
        "nsdl_jupyter.targets._ssh_files._AnswerError",  # becomes the target's TargetError
    }
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


def test_the_package_raises_its_own_errors_not_bare_builtins() -> None:
    """A refused input raises a domain error (which is also the built-in it replaces), so that
    `except nsdl_jupyter.NsdlError` catches it and the same condition has the same type."""
    import ast
    from pathlib import Path

    package = Path(nsdl_jupyter.__file__).parent
    allowed = {
        "_compare_child.py:ValueError",  # a spawned child: imports only numpy and onnxruntime
    }
    bare = []
    for path in package.rglob("*.py"):
        where = path.relative_to(package).as_posix()
        # transforms/ is being rewritten as passes; runner scripts run without the package
        if where.startswith("transforms/") or where.endswith("_runner.py"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Raise)
                and isinstance(node.exc, ast.Call)
                and isinstance(node.exc.func, ast.Name)
                and node.exc.func.id in {"ValueError", "KeyError", "TypeError"}
            ):
                bare.append(f"{where}:{node.exc.func.id}")
    assert sorted(bare) == sorted(allowed)
