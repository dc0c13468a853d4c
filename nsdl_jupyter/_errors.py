"""The one base class of every error the package raises on purpose.

`except nsdl_jupyter.NsdlError` catches all of them; each domain base also subclasses the
built-in a user would catch without knowing the package (`ValueError` for refused input,
`RuntimeError` for a run that failed, `OSError` for a file that could not be written).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path


class NsdlError(Exception):
    """Base class of the package's errors; the message says what to do about it."""

    def __str__(self) -> str:
        # the message as written, also in subclasses of KeyError (whose str() quotes it)
        return Exception.__str__(self)


class ArgumentError(NsdlError, TypeError):
    """A call the function cannot take: an unknown keyword argument (the message names the
    valid ones), a missing one, or a value of a type it does not accept."""


class OutputPathError(NsdlError, ValueError):
    """An output path would replace a file it must not (nsdl_jupyter/_output_guard.py says
    which); nothing was written. `path` is the refused path."""

    def __init__(self, message: str, path: Path | None = None) -> None:
        super().__init__(message)
        self.path = path


def check_keywords(owner: str, given: Iterable[str], valid: Iterable[str]) -> None:
    """Refuse keyword arguments `owner()` does not take, naming the ones it does."""
    known = list(valid)
    unknown = sorted(set(given) - set(known))
    if unknown:
        raise ArgumentError(
            f"{owner}() got unexpected keyword argument(s) {', '.join(unknown)}; "
            f"valid ones are: {', '.join(known) or 'none'}"
        )
