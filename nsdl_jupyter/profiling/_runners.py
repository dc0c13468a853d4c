"""The runner files the profiling activities run on a target, and one short request to them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nsdl_jupyter.profiling._errors import ProfileError
from nsdl_jupyter.targets import Target

RUNNER = Path(__file__).with_name("_ort_runner.py")
# Every file the runner needs on a target: the runner first, then what it loads from its own
# folder by path (the GPU timing module). A remote target deploys all of them.
RUNNER_FILES = (RUNNER, RUNNER.with_name("_gpu_runner.py"))


def start_runner(
    target: Target, request: dict[str, Any], workdir: str, listener: Any = None
) -> Any:
    """Start the runner with `request` on `target` (its support files deployed beside it)."""
    return target.start(RUNNER, request, workdir, listener, support_files=RUNNER_FILES[1:])


def ask_runner(target: Target, request: dict[str, Any], what: str, timeout: float) -> Any:
    """A short request's answer (a fresh workdir, removed after); ProfileError if none."""
    workdir = target.make_workdir()
    try:
        result = start_runner(target, request, workdir).wait(timeout)
    finally:
        target.remove_workdir(workdir)
    if result.result is None:
        if result.error:
            detail = result.error.get("message")
        else:
            detail = result.lost or result.crash_description
        raise ProfileError(f"cannot {what} on {target.name}: {detail}", result.stderr)
    return result.result
