"""DesignerKeys: the Designer's keyboard shortcuts (Ctrl+Z, Ctrl+Y, Ctrl+S, "/" for quick add,
Enter in the quick-add box) and double-clicks on its lists. A tiny invisible anywidget
(js/src/designer_keys/) that listens on the Designer box around it and sends what happened
to the kernel."""

from __future__ import annotations

from collections.abc import Mapping

import anywidget
import traitlets

from nsdl_jupyter.widgets._bundles import bundle
from nsdl_jupyter.widgets._messages import DESIGNER_KEYS
from nsdl_jupyter.widgets._protocol import Endpoint, Handler


class DesignerKeys(anywidget.AnyWidget):  # type: ignore[misc]
    _esm = bundle("designer_keys")
    root_class = traitlets.Unicode("nsdl-designer").tag(sync=True)

    def __init__(self, root_class: str, handlers: Mapping[str, Handler]) -> None:
        """`handlers`: one per event of `_messages.DESIGNER_KEYS`, given its payload."""
        super().__init__(root_class=root_class)
        self._channel = Endpoint(self, DESIGNER_KEYS, handlers)
