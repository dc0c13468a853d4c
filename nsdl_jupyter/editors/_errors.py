"""Errors of the tool windows' logic."""

from __future__ import annotations

from nsdl_jupyter._errors import NsdlError


class EditorError(NsdlError, ValueError):
    """A tool window's input was refused (filter, grouping, value); nothing changed."""
