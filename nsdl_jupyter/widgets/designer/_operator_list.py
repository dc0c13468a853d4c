"""OperatorList: one group of the Layer Palette as a list whose lines can be dragged onto the
GraphView canvas (HTML5 drag and drop; a `<select>`'s options cannot be dragged). A click
chooses an operator (`value`), as a `widgets.Select` does; the browser side is
js/src/operator_list/."""

from __future__ import annotations

import anywidget
import traitlets

from nsdl_jupyter.widgets._bundles import bundle

_CSS = """
.nsdl-op-list { overflow-y: auto; border: 1px solid var(--jp-border-color1, #bdbdbd);
  font-family: var(--jp-code-font-family, monospace); font-size: 12px; }
.nsdl-op-item { padding: 2px 6px; line-height: 18px; cursor: grab; white-space: nowrap;
  overflow: hidden; text-overflow: ellipsis; user-select: none; }
.nsdl-op-item:hover { background: var(--jp-layout-color2, #eeeeee); }
.nsdl-op-item.nsdl-op-chosen { background: var(--jp-brand-color1, #1976d2); color: #ffffff; }
"""


class OperatorList(anywidget.AnyWidget):  # type: ignore[misc]
    """``OperatorList(options=[(label, key), ...])``: `value` is the chosen key or None."""

    _esm = bundle("operator_list")
    _css = _CSS
    options = traitlets.List(traitlets.Tuple(traitlets.Unicode(), traitlets.Unicode())).tag(
        sync=True
    )
    value = traitlets.Unicode(None, allow_none=True).tag(sync=True)
    rows = traitlets.Int(8).tag(sync=True)

    @traitlets.validate("value")
    def _known(self, proposal: traitlets.Bunch) -> str | None:
        value = proposal["value"]
        if value is not None and value not in {key for _, key in self.options}:
            raise traitlets.TraitError(f"{value!r} is not in this list")
        return value  # type: ignore[no-any-return]
