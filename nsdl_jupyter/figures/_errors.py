"""Errors of the profile figures and tables."""

from __future__ import annotations

from nsdl_jupyter._errors import NsdlError


class FigureError(NsdlError, ValueError):
    """A figure or table cannot be drawn with these options from this report."""
