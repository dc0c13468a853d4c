"""The TensorRT precision badges of a GraphView: what they say (the document's layer precision
constraints, `doc.tensorrt`) and what a badge's chooser (js/src/graph_view/badges.ts) and the
canvas menu offer; the pick is the canvas edits' `precision` request (widgets/_canvas_edit.py)."""

from __future__ import annotations

from typing import Any

from nsdl_jupyter.document import NO_CONSTRAINT, PRECISIONS


def precision_badges(doc: Any) -> dict[str, str]:
    """`{node name: precision}` of the nodes that carry a constraint; {} without a document."""
    tensorrt = getattr(doc, "tensorrt", None)
    return dict(tensorrt.layer_precisions) if tensorrt is not None else {}


def precision_choices(doc: Any) -> list[str]:
    """What a badge's chooser offers: every precision and "none"; [] for a read-only view."""
    return [*PRECISIONS, NO_CONSTRAINT] if getattr(doc, "tensorrt", None) is not None else []
