"""Widget outputs of a notebook replaced by their static pictures (used by the nbconvert
preprocessor): the saved widget state gives the last state; without it, the text/html picture
stored in the output at display time stands in."""

from __future__ import annotations

import logging
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass
from typing import Any

from nsdl_jupyter._static_export._plotly_html import defines_plotly, needs_plotly, plotly_loader
from nsdl_jupyter._static_export._widget_html import (
    WIDGET_VIEW,
    WidgetHtml,
    saved_states,
)

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Replaced:
    """What `replace_widget_outputs` did."""

    from_state: int  # widget outputs drawn from the saved widget state (their last state)
    from_output: int  # drawn from the picture stored in the output when it was displayed
    kept: int  # widget outputs left as they were (no state, no picture)
    plotly_inlined: bool  # plotly.js was added to the page for static figures


def _text(value: Any) -> str:
    return "".join(map(str, value)) if isinstance(value, list) else str(value)


def _render(renderer: WidgetHtml, view: Mapping[str, Any]) -> str | None:
    """The picture of one widget output; None (so the stored picture stands in) when it
    cannot be drawn, which costs this output its last state and never the export."""
    try:
        return renderer.render(str(view.get("model_id", "")))
    except Exception as error:
        logger.warning("widget output %s could not be drawn: %r", view.get("model_id"), error)
        return None


def replace_widget_outputs(nb: Any) -> Replaced:
    """Rewrite `nb` (an nbformat v4 notebook) in place: each widget-view output becomes
    text/html; the saved widget state is dropped when no widget output needs it any more, so
    an HTML export loads no widget manager and no widget JavaScript."""
    metadata = nb.get("metadata") or {}
    renderer = WidgetHtml(saved_states(metadata).get)
    from_state = from_output = kept = 0
    plotly_on_page = inlined = False
    for cell in nb.get("cells") or []:
        if cell.get("cell_type") != "code":
            continue
        for output in cell.get("outputs") or []:
            data: MutableMapping[str, Any] | None = output.get("data")
            if not isinstance(data, MutableMapping):
                continue
            text = _text(data["text/html"]) if "text/html" in data else None
            view = data.get(WIDGET_VIEW)
            if isinstance(view, MutableMapping):
                drawn = _render(renderer, view)
                if drawn is None and text is None:
                    kept += 1
                    continue
                if drawn is None:
                    from_output += 1
                else:
                    from_state += 1
                    text = drawn
                del data[WIDGET_VIEW]
            if text is None:
                continue
            if defines_plotly(text):
                plotly_on_page = True
            elif needs_plotly(text) and not plotly_on_page:
                text = plotly_loader() + text
                plotly_on_page = inlined = True
            data["text/html"] = text
    if not kept and isinstance(metadata, MutableMapping):
        metadata.pop("widgets", None)
    return Replaced(from_state, from_output, kept, inlined)
