"""Plotly figures in static HTML: a div and a call to `Plotly.newPlot`, plus plotly.js itself
once per page (inlined: an export must not depend on a CDN)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

FIGURE_CLASS = "nsdl-static-plotly"  # marks HTML that needs plotly.js on the page
# the banner at the top of the plotly.js bundle: HTML holding it defines window.Plotly
_PLOTLYJS_BANNER = re.compile(r"\*\s*plotly\.js v\d")


def figure_html(figure: Mapping[str, Any], height: int = 450) -> str:
    """A figure dict ({"data", "layout"}) as a div drawn by plotly.js when the page loads."""
    import plotly.io as pio

    body = pio.to_html(
        {"data": list(figure.get("data") or []), "layout": dict(figure.get("layout") or {})},
        include_plotlyjs=False,
        include_mathjax=False,
        full_html=False,
        validate=False,
        default_height=height,
        config={"displaylogo": False, "responsive": True},
    )
    return f'<div class="{FIGURE_CLASS}">{body}</div>'


def needs_plotly(text: str) -> bool:
    return FIGURE_CLASS in text


def defines_plotly(text: str) -> bool:
    """True when this HTML inlines plotly.js (e.g. plotly's "notebook" renderer output)."""
    return _PLOTLYJS_BANNER.search(text) is not None


def plotly_loader() -> str:
    """plotly.js as one inline script (about 4.8 MB): sets window.Plotly."""
    from plotly.offline import get_plotlyjs

    source = get_plotlyjs().replace("</script", "<\\/script")
    return f'<script type="text/javascript">{source}</script>'
