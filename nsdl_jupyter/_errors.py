"""The one base class of every error the package raises on purpose.

`except nsdl_jupyter.NsdlError` catches all of them; each domain base also subclasses the
built-in a user would catch without knowing the package (`ValueError` for refused input,
`RuntimeError` for a run that failed, `OSError` for a file that could not be written).
"""

from __future__ import annotations


class NsdlError(Exception):
    """Base class of the package's errors; the message says what to do about it."""
