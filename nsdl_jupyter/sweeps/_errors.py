"""Errors of sweeps; each message says what to do about it."""

from __future__ import annotations

from nsdl_jupyter._errors import NsdlError


class SweepSettingsError(NsdlError, ValueError):
    """The grid, a target or an option of `sweep()` is wrong; nothing ran."""


class SweepError(NsdlError, RuntimeError):
    """The sweep as a whole could not run (no Dask, a cluster that would not start). A failing
    configuration is never this: its row carries the error."""


class SweepCancelledError(SweepError):
    """The sweep was cancelled; `result` holds the rows that finished (and were cached)."""

    def __init__(self, message: str, result: object = None) -> None:
        super().__init__(message)
        self.result = result
