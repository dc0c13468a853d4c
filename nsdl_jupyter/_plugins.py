"""Late wiring between layers: a lower layer names an extension point, and the package's
`__init__` (which may know every layer) says what fills it, imported only on first use.

This is how `ProfileReport.timeline()` draws with `nsdl_jupyter.figures` while profiling
never imports a layer above it.
"""

from __future__ import annotations

from collections.abc import Callable

# ProfileReport's figure shortcuts (`report.timeline()`): profiling asks, figures registers.
REPORT_FIGURES = "report_figures"

_LOADERS: dict[str, list[Callable[[], object]]] = {}


def provide(point: str, loader: Callable[[], object]) -> None:
    """Run `loader` (which registers on `point`) the first time `point` is asked for."""
    _LOADERS.setdefault(point, []).append(loader)


def load(point: str) -> None:
    """Run every loader provided for `point` once (one that raised is tried again next time)."""
    loaders = _LOADERS.get(point, [])
    while loaders:
        loaders[0]()
        loaders.pop(0)
