"""Errors of the widgets called from Python."""

from __future__ import annotations

from nsdl_jupyter._errors import NsdlError


class WidgetError(NsdlError, ValueError):
    """A widget method was called with a value it cannot show or use; nothing changed."""


class WidgetLookupError(WidgetError, KeyError):
    """A name the view does not have (a group key, a graph attribute): a KeyError too."""
