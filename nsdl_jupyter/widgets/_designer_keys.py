"""DesignerKeys: the Designer's keyboard shortcuts (Ctrl+Z, Ctrl+Y, Ctrl+S, "/" for quick add,
Enter in the quick-add box) and double-clicks on its lists. A tiny invisible anywidget
(js/src/designer_keys/) that listens on the Designer box around it and sends what happened
to the kernel."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import anywidget
import traitlets

_STATIC = Path(__file__).resolve().parent.parent / "static"


class DesignerKeys(anywidget.AnyWidget):  # type: ignore[misc]
    _esm = _STATIC / "designer_keys.js"
    root_class = traitlets.Unicode("nsdl-designer").tag(sync=True)

    def __init__(self, root_class: str, handler: Callable[[dict[str, Any]], None]) -> None:
        super().__init__(root_class=root_class)
        self._handler = handler
        self.on_msg(self._on_custom_msg)

    def _on_custom_msg(self, _widget: Any, content: dict[str, Any], _buffers: list[bytes]) -> None:
        if isinstance(content, dict) and content.get("type") in ("key", "activate", "quick_add"):
            self._handler(content)
