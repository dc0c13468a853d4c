"""The TensorRT precision badges of a GraphView: what they say (the document's layer precision
constraints, `doc.tensorrt`) and the browser's request to change or remove one (the badge's
chooser, js/src/graph_view/badges.ts), applied as one undoable document command."""

from __future__ import annotations

from typing import Any

from nsdl_jupyter.document import NO_CONSTRAINT, PRECISIONS
from nsdl_jupyter.widgets._errors import WidgetError
from nsdl_jupyter.widgets._messages import Empty, SetPrecision


def precision_badges(doc: Any) -> dict[str, str]:
    """`{node name: precision}` of the nodes that carry a constraint; {} without a document."""
    tensorrt = getattr(doc, "tensorrt", None)
    return dict(tensorrt.layer_precisions) if tensorrt is not None else {}


def precision_choices(doc: Any) -> list[str]:
    """What a badge's chooser offers: every precision and "none"; [] for a read-only view."""
    return [*PRECISIONS, NO_CONSTRAINT] if getattr(doc, "tensorrt", None) is not None else []


def set_precision(doc: Any, payload: SetPrecision) -> Empty:
    """The chooser's pick: `doc.tensorrt.set_layer_precision` (its errors reach the view)."""
    tensorrt = getattr(doc, "tensorrt", None)
    if tensorrt is None:
        raise WidgetError(
            "this view shows a read-only model: open it as a document "
            "(nsdl_jupyter.open_model) to set TensorRT layer precisions"
        )
    tensorrt.set_layer_precision(payload["node"], payload["precision"])
    return {}
