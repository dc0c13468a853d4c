"""Targets: where activities run their runner modules (this machine now, SSH hosts later)."""

from __future__ import annotations

from nsdl_jupyter.targets._base import JobResult, RunnerJob, Target
from nsdl_jupyter.targets._local import LocalJob, LocalTarget

__all__ = ["JobResult", "LocalJob", "LocalTarget", "RunnerJob", "Target"]
