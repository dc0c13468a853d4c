"""Errors of the example models built in code."""

from __future__ import annotations

from nsdl_jupyter._errors import NsdlError


class ExampleError(NsdlError, ValueError):
    """An example model cannot be built or saved with these arguments."""
