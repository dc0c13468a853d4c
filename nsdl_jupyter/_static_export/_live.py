"""Static pictures of live widgets.

Two things keep a notebook's pictures right where no widget manager runs:
- the display bundle of our widgets carries a `text/html` picture next to the widget view
  (JupyterLab, Notebook 7 and VS Code pick the widget view; nbconvert, nbviewer and GitHub,
  which cannot, fall back to the picture of the moment the widget was displayed);
- a widget that draws itself (GraphView) keeps its picture in a synced `_static_html` trait,
  redrawn after each cell that changed it, so the widget state saved with the notebook
  (nbclient, `nbconvert --execute`, JupyterLab's "save widget state") holds the LAST picture
  for `StaticWidgetsPreprocessor` to use.
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Callable, Mapping
from typing import Any

from nsdl_jupyter._static_export._widget_html import STATIC_TRAIT, WidgetHtml

logger = logging.getLogger(__name__)

_STALE = "_nsdl_static_stale"
_PICTURE = "_nsdl_static_picture"
_TRACKED: weakref.WeakSet[Any] = weakref.WeakSet()
_HOOKED: list[object] = []  # the IPython shell our post_run_cell hook is registered with


def track_static_picture(widget: Any, picture: Callable[[], str]) -> None:
    """Keep `widget._static_html` equal to `picture()`: any synced trait change marks it stale,
    and it is redrawn once after the running cell (not on every change)."""
    names = [n for n in widget.trait_names(sync=True) if n != STATIC_TRAIT]
    setattr(widget, _PICTURE, picture)
    setattr(widget, _STALE, True)
    widget.observe(lambda _change: setattr(widget, _STALE, True), names=names)
    _TRACKED.add(widget)
    _hook_cells()


def refresh_static_picture(widget: Any) -> None:
    """Redraw a tracked widget's picture now if something changed since the last one."""
    picture = getattr(widget, _PICTURE, None)
    if picture is None or not getattr(widget, _STALE, False):
        return
    setattr(widget, _STALE, False)
    try:
        setattr(widget, STATIC_TRAIT, picture())
    except Exception:  # a static picture must never break the live widget
        logger.exception("could not draw the static picture of %s", type(widget).__name__)


def _after_cell(*_result: object) -> None:
    for widget in list(_TRACKED):
        if getattr(widget, "comm", None) is not None:  # closed widgets are not saved
            refresh_static_picture(widget)


def _hook_cells() -> None:
    try:
        from IPython import get_ipython
    except ImportError:  # plain Python: pictures are drawn on display only
        return
    shell = get_ipython()
    if shell is None or any(s is shell for s in _HOOKED):
        return
    shell.events.register("post_run_cell", _after_cell)
    _HOOKED.append(shell)


def live_state(model_id: str) -> Mapping[str, Any] | None:
    """The state of a live widget, as its frontend would save it (pictures made current)."""
    from ipywidgets.widgets.widget import _instances

    widget = _instances.get(model_id)
    if widget is None:
        return None
    refresh_static_picture(widget)
    state: dict[str, Any] = widget.get_state()
    plotly_class = any(c.__module__.startswith("plotly") for c in type(widget).__mro__)
    if plotly_class and hasattr(widget, "to_dict"):  # a FigureWidget, or our subclass of it
        # a FigureWidget's synced data is its first state; Python holds the current figure
        figure = widget.to_dict()
        state["_widget_data"] = figure.get("data", [])
        state["_widget_layout"] = figure.get("layout", {})
    return state


def static_html(widget: Any) -> str | None:
    """What the widget (and everything inside it) shows now, as HTML without JavaScript."""
    return WidgetHtml(live_state).render(str(widget.model_id))


def with_static_fallback(widget: Any, bundle: Any) -> Any:
    """`bundle` (a widget's `_repr_mimebundle_`: data dict, or (data, metadata)) plus the
    widget's picture as text/html, for viewers that cannot run widgets."""
    if not bundle:
        return bundle
    try:
        picture = static_html(widget)
    except Exception:  # the live widget view matters more than its picture
        logger.exception("could not draw the static picture of %s", type(widget).__name__)
        return bundle
    if not picture:
        return bundle
    if isinstance(bundle, tuple):
        data, metadata = bundle
        return {**data, "text/html": picture}, metadata
    return {**bundle, "text/html": picture}


class StaticPictureMixin:
    """For our widget classes: the live view for Jupyter, plus a static picture (text/html) for
    viewers without a widget manager. List it before the widget base class."""

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return with_static_fallback(self, super()._repr_mimebundle_(**kwargs))  # type: ignore[misc]
