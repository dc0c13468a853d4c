"""Third-party modules that load on their first use instead of at import.

onnx_ir imports sympy at import time (`onnx_ir._core`, and `onnx_ir._symbolic_shapes` reads
`sympy.Max` & co. into a table) for arithmetic on symbolic dimensions, which opening, drawing
and editing a model never do. sympy is ~1,000 modules: 0.2-0.3 s of CPU in a fresh kernel, a
third of the time to the first drawing of a ResNet-50. Both are registered here as modules
that run their code, whole and unchanged, into the same module object on the first read of an
attribute they define (`SymbolicDim("N") + 1`, a user's `sympy.Symbol`), or when a submodule
is imported. Nothing is deferred that is imported already.

Not `importlib.util.LazyLoader`: its module loads on any attribute read, and every `import`
statement reads `__spec__` (to see whether the module is still initializing), so the first
`import sympy` in onnx_ir would load it.
"""

from __future__ import annotations

import importlib.util
import sys
import threading
import types
from collections.abc import Sequence
from importlib.machinery import PathFinder
from typing import Any

# onnx_ir's symbolic-shape parser first: its import reads sympy's attributes
DEFERRED = ("onnx_ir._symbolic_shapes", "sympy")
_LOCK = threading.RLock()


class _DeferredModule(types.ModuleType):
    """A module whose code has not run yet; the first read of a name it lacks runs it."""

    def __getattr__(self, name: str) -> Any:
        with _LOCK:
            if type(self) is _DeferredModule:  # not run by another thread meanwhile
                _run(self)
        return getattr(self, name)


def _run(module: types.ModuleType) -> None:
    spec = module.__spec__  # _defer made the module from a spec with a loader
    if spec is None or spec.loader is None:
        raise ImportError(f"{module.__name__} has no loader to run", name=module.__name__)
    module.__class__ = types.ModuleType
    if spec.submodule_search_locations is not None:
        module.__path__ = spec.submodule_search_locations
    try:
        spec.loader.exec_module(module)
    except BaseException:
        # as a failed import: the half-run module is forgotten, the next import tries again
        if sys.modules.get(module.__name__) is module:
            del sys.modules[module.__name__]
        raise


def defer_imports(names: Sequence[str] = DEFERRED) -> None:
    """Register each of `names` (a top-level module, or a direct child of a package that is
    not imported yet) to run its code on first use."""
    for name in names:
        if name not in sys.modules:
            _defer(name)


def _defer(name: str) -> None:
    parent, _, _ = name.rpartition(".")
    if parent:
        if parent in sys.modules:  # the package ran its imports already: nothing to gain
            return
        # the child's spec without running the package's __init__ (find_spec would)
        package = importlib.util.find_spec(parent)
        where = package.submodule_search_locations if package else None
        spec = PathFinder.find_spec(name, list(where)) if where else None
    else:
        spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
        return  # not installed, or an unusual loader: the import runs as usual
    module = importlib.util.module_from_spec(spec)
    # without __path__, importing a submodule reads it through __getattr__: the package's
    # own __init__ runs first, as in a plain import
    module.__dict__.pop("__path__", None)
    module.__class__ = _DeferredModule
    sys.modules[name] = module
