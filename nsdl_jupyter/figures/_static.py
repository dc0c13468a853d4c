"""Figures that survive a static HTML export of the notebook (nbconvert)."""

from __future__ import annotations


def use_static_renderer() -> str:
    """Make `fig.show()` embed plotly.js in the output, so an nbconvert HTML export (offline,
    no widget manager) still shows the figures. JupyterLab keeps its own mime renderer.

    An executed notebook's default plotly output is only `application/vnd.plotly.v1+json`,
    which the HTML exporter drops; the 'notebook' renderer adds HTML with plotly.js inlined
    (once per notebook, about 4.6 MB).
    """
    import plotly.io as pio

    pio.renderers.default = "plotly_mimetype+notebook"
    return str(pio.renderers.default)
