"""The one base class of every error the package raises on purpose.

`except nsdl_jupyter.NsdlError` catches all of them; each domain base also subclasses the
built-in a user would catch without knowing the package (`ValueError` for refused input,
`RuntimeError` for a run that failed, `OSError` for a file that could not be written).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any


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


class MissingFileError(NsdlError, FileNotFoundError):
    """A file the call reads does not exist, is a folder, or cannot exist (a NUL byte or an
    empty name). Also a FileNotFoundError: the same condition from every reader."""


def input_path(value: object, what: str) -> Path:
    """`value` as the path of a file to read, or the package's error saying what is wrong:
    ArgumentError for a value that is no path, MissingFileError for a name no file can have
    or a file that is not there. `what` names it for the message ("model file")."""
    if not isinstance(value, (str, os.PathLike)):
        raise ArgumentError(
            f"the {what} must be a path (str or os.PathLike), not {type(value).__name__}"
        )
    text = os.fspath(value)
    if not isinstance(text, str):
        raise ArgumentError(f"the {what} must be a text path, not bytes")
    if not text.strip():
        raise MissingFileError(f"the {what} path is empty: give the path of the file")
    if "\x00" in text:
        raise MissingFileError(f"no {what} can be named {text!r}: a path has no NUL byte")
    path = Path(text)
    if not path.exists():
        raise MissingFileError(f"no such {what}: {path}")
    if not path.is_file():
        raise MissingFileError(f"{path} is not a file: give the path of the {what}")
    return path


def text_argument(value: object, what: str) -> str:
    """`value` when it is a str, else ArgumentError naming `what` ("operator type")."""
    if not isinstance(value, str):
        raise ArgumentError(f"the {what} must be a str, not {type(value).__name__}")
    return value


def list_argument(value: object, what: str) -> list[Any]:
    """The items of a list-like `value` (not a str: a name is not a list of letters), else
    ArgumentError naming `what` ("nodes")."""
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise ArgumentError(
            f"{what} must be a list (e.g. [{what[:-1]!r}]), not {type(value).__name__}"
        )
    return list(value)


def first_line(error: BaseException | str, limit: int | None = 400) -> str:
    """The first line of an error's text (at most `limit` characters), for a message of one
    sentence; an error with no text gives its type's name."""
    text = str(error).strip()
    if not text:
        return type(error).__name__ if isinstance(error, BaseException) else ""
    return text.splitlines()[0][:limit]
