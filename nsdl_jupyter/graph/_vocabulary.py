"""The drawing vocabulary (drawing.json), read once: the layout takes box sizes from it and
both renderers take everything else (nsdl_jupyter/graph/_drawing.py, js vocabulary.ts)."""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

VOCABULARY: dict[str, Any] = json.loads(
    resources.files("nsdl_jupyter.graph").joinpath("drawing.json").read_text(encoding="utf-8")
)
