"""Errors of the graph data layer."""

from __future__ import annotations

from nsdl_jupyter._errors import NsdlError


class GraphDataError(NsdlError, ValueError):
    """Graph data cannot be encoded or decoded (binary columns)."""
