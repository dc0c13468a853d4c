"""Reading the files users hand to profiling (reports, traces, trtexec exports, input tensors).

They are untrusted input: only regular files are opened (a FIFO would block forever, a link to
/dev/zero never ends), and malformed content ends in the file kind's own error naming the file,
never in a raw KeyError or RecursionError from deep inside a parser.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from nsdl_jupyter._errors import input_path
from nsdl_jupyter.profiling._errors import ProfileFileError, ProfileSettingsError

# What malformed JSON content raises inside code written for well-formed content.
_MALFORMED = (
    KeyError,
    IndexError,
    TypeError,
    AttributeError,
    ValueError,
    OverflowError,
    RecursionError,
)


def readable_file(value: object, what: str) -> Path:
    """`value` as the path of a file to read, checked as `input_path` does (ArgumentError for
    no path, MissingFileError for a missing file or an impossible name); what exists but is
    no regular file is left to `open_regular`, which says what it is in the file kind's error."""
    if isinstance(value, (str, os.PathLike)) and os.path.lexists(value):
        return Path(value)
    return input_path(value, what)


@contextmanager
def open_regular(path: Path, error: type[ValueError]) -> Iterator[IO[bytes]]:
    """`path` opened for reading, or `error` when it is not a regular file (FIFO, device)."""
    try:
        # O_NONBLOCK: opening a FIFO with no writer returns at once instead of blocking.
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        if isinstance(exc, (FileNotFoundError, PermissionError)):
            raise
        # ENXIO and the like from sockets and odd devices
        raise error(f"{path} cannot be read as a file ({exc}): give a regular file") from exc
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        kind = "a folder" if stat.S_ISDIR(mode) else "a FIFO, device or socket"
        raise error(f"{path} is {kind}, not a regular file: give the path of a regular file")
    with os.fdopen(fd, "rb") as handle:
        yield handle


def read_json(path: str | os.PathLike[str], error: type[ProfileFileError], what: str) -> Any:
    """The JSON content of `path`; `error` (naming `what` the file should be) when it is not."""
    path = readable_file(path, what)
    try:
        with open_regular(path, error) as handle:
            return json.load(handle)
    except UnicodeDecodeError as exc:
        raise error(f"{path} is not UTF-8 text, so not {what} ({exc})") from exc
    except json.JSONDecodeError as exc:
        raise error(f"{path} is not valid JSON (truncated?), so not {what}: {exc}") from exc
    except RecursionError:
        raise error(f"{path} nests JSON too deeply to be {what}") from None


@contextmanager
def malformed_as(error: type[ProfileFileError], where: str) -> Iterator[None]:
    """Turn what malformed content raises in the block into `error`, prefixed with `where`."""
    try:
        yield
    except (ProfileFileError, ProfileSettingsError):
        raise
    except _MALFORMED as exc:
        raise error(f"{where}: unexpected content ({type(exc).__name__}: {exc})") from exc
