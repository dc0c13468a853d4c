"""igraph's Sugiyama layout, from igraph's C extension alone.

`import igraph` costs ~0.2 s in a fresh kernel (its summary module pulls texttable and
wcwidth, and the drawing and clustering modules come with it), most of a transformer's first
view, while the layout needs only the C extension, which loads in ~5 ms. So the extension is
loaded on its own, under its own name. It refuses a second initialisation, so it is handed to
the igraph package if that is imported later (by the user or by us): `import igraph` keeps
working as usual, with `igraph._igraph` bound as the import system binds any submodule.
Whatever goes wrong on this path falls back to `import igraph`; the results are the same
(tests/test_graph_sugiyama.py compares them).
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
import threading
from collections.abc import Sequence
from types import ModuleType

_CORE_NAME = "igraph._igraph"

_core: ModuleType | None = None
_loading = threading.Lock()


def sugiyama(n: int, edges: Sequence[tuple[int, int]], maxiter: int) -> list[list[float]]:
    """igraph's `Graph.layout_sugiyama(maxiter=...)` coordinates of a directed graph's `n`
    vertices, as (x, y) rows, then the dummy vertices of long edges igraph appends."""
    core = _igraph_core()
    try:
        graph = core.GraphBase(n, list(edges), True)
        coords: list[list[float]] = core.GraphBase._layout_sugiyama(
            graph, None, None, 1, 1, maxiter, False
        )
    except (AttributeError, TypeError):  # a private signature that changed: the public way
        import igraph

        graph = igraph.Graph(n=n, edges=list(edges), directed=True)
        return [list(row) for row in graph.layout_sugiyama(maxiter=maxiter).coords]
    return coords


def _igraph_core() -> ModuleType:
    global _core  # noqa: PLW0603 (the extension is loaded once per process)
    with _loading:
        if _core is None:
            _core = sys.modules.get(_CORE_NAME) or _load_alone()
        return _core


def _load_alone() -> ModuleType:
    try:
        package = importlib.util.find_spec("igraph")
        locations = package.submodule_search_locations if package else None
        spec = importlib.machinery.PathFinder.find_spec(_CORE_NAME, list(locations or []))
        if spec is None or spec.loader is None:
            raise ImportError(_CORE_NAME)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    except Exception:  # any surprise: the usual import, whose error explains itself
        import igraph

        return igraph._igraph  # type: ignore[no-any-return]
    # the import system binds a submodule to its package only when it loads it: leave it to
    # load this one from _Handover when igraph's __init__ imports it
    sys.modules.pop(_CORE_NAME, None)
    sys.meta_path.insert(0, _Handover(module))
    return module


class _Handover(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Serves the already initialised extension the first time `igraph._igraph` is imported,
    then steps aside."""

    def __init__(self, module: ModuleType) -> None:
        self.module = module

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != _CORE_NAME:
            return None
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        return importlib.util.spec_from_loader(fullname, self, origin=self.module.__file__)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        return self.module

    def exec_module(self, module: ModuleType) -> None:
        """Already initialised."""
