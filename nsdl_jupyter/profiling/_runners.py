"""The runner files the profiling activities run on a target, and one short request to them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nsdl_jupyter.profiling._errors import ProfileError
from nsdl_jupyter.targets import EventListener, RunnerJob, Target

RUNNER = Path(__file__).with_name("_ort_runner.py")
# Every runner file. They load each other by path from their own folder (the TensorRT runner
# loads the onnxruntime runner's main loop, which loads the GPU timing module; its profile
# request loads the TensorRT profile runner), so a target
# gets all of them side by side, whichever one runs. A remote target deploys them as one group.
RUNNER_FILES = (
    RUNNER,
    RUNNER.with_name("_gpu_runner.py"),
    RUNNER.with_name("_ort_gpu_passes.py"),
    RUNNER.with_name("_trt_runner.py"),
    RUNNER.with_name("_trt_profile_runner.py"),
)


def start_runner(
    target: Target,
    runner: Path,
    request: dict[str, Any],
    workdir: str,
    listener: EventListener | None = None,
) -> RunnerJob:
    """Start `runner` (one of RUNNER_FILES) with `request` on `target`, the other runner files
    beside it."""
    support = tuple(path for path in RUNNER_FILES if path != runner)
    return target.start(runner, request, workdir, listener, support_files=support)


def ask_runner(target: Target, request: dict[str, Any], what: str, timeout: float) -> Any:
    """A short request's answer (a fresh workdir, removed after); ProfileError if none."""
    workdir = target.make_workdir()
    try:
        result = start_runner(target, RUNNER, request, workdir).wait(timeout)
    finally:
        target.remove_workdir(workdir)
    if result.result is None:
        if result.error:
            detail = result.error.get("message")
        else:
            detail = result.lost or result.crash_description
        raise ProfileError(f"cannot {what} on {target.name}: {detail}", result.stderr)
    return result.result
