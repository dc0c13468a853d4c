"""Deprecated: the profile figures and tables moved to `nsdl_jupyter.figures`.

Kept so that notebooks written with `from nsdl_jupyter import views` still run; every name
read from here warns once per use and comes from `nsdl_jupyter.figures`.
"""

from __future__ import annotations

import warnings
from typing import Any

import nsdl_jupyter.figures as _figures

__all__ = _figures.__all__  # the same public names as figures


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module 'nsdl_jupyter.views' has no attribute {name!r}")
    warnings.warn(
        f"nsdl_jupyter.views is renamed nsdl_jupyter.figures: use nsdl_jupyter.figures.{name}",
        DeprecationWarning,
        stacklevel=2,
    )
    return getattr(_figures, name)


def __dir__() -> list[str]:
    return sorted(__all__)
