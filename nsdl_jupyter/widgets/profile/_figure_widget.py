"""A plotly FigureWidget whose first message to the browser already holds its figure.

plotly's FigureWidget opens its comm with an empty figure and sends the traces and layout in
updates right after (plotly/basewidget.py, `BaseFigureWidget.__init__`). anywidget's frontend
holds each update to a model until the model's ESM (plotly's 5 MB bundle, sent with every
FigureWidget) is imported, and drops them all when that takes more than 2 s (anywidget 0.11,
`Runtime`: `AbortSignal.timeout(2000)` rejects the `ready` that `AnyModel._handle_comm_msg`
awaits; JupyterLab's kernel message chain swallows the error). A busy browser then draws the
empty figure of the open message, for good. Opening the comm once the figure (and the CSS
classes) are set puts all of it in that first message.

plotly is imported here: import this module inside the function that makes the widget.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import plotly.graph_objects as go


class FigureWidget(go.FigureWidget):  # type: ignore[misc]
    """`go.FigureWidget(figure)` with `classes` on its element, its comm opened with both."""

    _opening_later = False

    def __init__(self, figure: Any, *, classes: Sequence[str] = ()) -> None:
        self._opening_later = True
        try:
            super().__init__(figure)
            for name in classes:
                self.add_class(name)
        finally:
            self._opening_later = False
        self.open()

    def open(self) -> None:
        if not self._opening_later:
            super().open()
