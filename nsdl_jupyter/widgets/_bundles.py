"""Where the widgets' ESM bundles live: nsdl_jupyter/static/, built from js/ by the build hook."""

from __future__ import annotations

from pathlib import Path

STATIC = Path(__file__).resolve().parents[1] / "static"


def bundle(name: str) -> Path:
    """The bundle of widget `name` (`graph_view` -> static/graph_view.js)."""
    return STATIC / f"{name}.js"
