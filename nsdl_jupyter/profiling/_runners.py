"""The runner files the profiling activities run on a target, and one short request to them."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from nsdl_jupyter._errors import NsdlError
from nsdl_jupyter._runner_files import ORT_RUNNER, TRT_RUNNER
from nsdl_jupyter.profiling._errors import ProfileError, RunnerProtocolError
from nsdl_jupyter.targets import (
    MALFORMED,
    PROBE_FILE,
    EventListener,
    JobResult,
    RunnerJob,
    Target,
)

_Read = TypeVar("_Read")

RUNNER = ORT_RUNNER
# Every runner file. They load each other by path from their own folder (the TensorRT runner
# loads the onnxruntime runner's main loop, which loads the GPU timing module; its profile
# request loads the TensorRT profile runner; the target check loads the targets' probe), so a target
# gets all of them side by side, whichever one runs. A remote target deploys them as one group.
RUNNER_FILES = (
    RUNNER,
    RUNNER.with_name("_gpu_runner.py"),
    TRT_RUNNER,
    RUNNER.with_name("_ort_gpu_passes.py"),
    RUNNER.with_name("_trt_profile_runner.py"),
    PROBE_FILE,
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


def ask_runner(
    target: Target,
    request: dict[str, Any],
    what: str,
    timeout: float,
    read: Callable[[dict[str, Any]], _Read],
) -> _Read:
    """A short request's answer (a fresh workdir, removed after) as `read` makes it from the
    runner's result; ProfileError if none, RunnerProtocolError if it is malformed."""
    workdir = target.make_workdir()
    try:
        result = start_runner(target, RUNNER, request, workdir).wait(timeout)
    finally:
        target.remove_workdir(workdir)
    with reading_answer(result, what):
        if result.result is None:
            if result.error:
                detail = result.error.get("message")
            else:
                detail = result.lost or result.crash_description
            raise ProfileError(f"cannot {what} on {target.name}: {detail}", result.stderr)
        return read(result.result)


@contextmanager
def reading_answer(result: JobResult, what: str) -> Iterator[None]:
    """Read the runner's answer to the `what` inside: a malformed message, or a field of the
    answer that is missing or of the wrong type, is RunnerProtocolError naming the target (never
    a bare KeyError or TypeError); the package's own errors pass through."""
    if not result.cancelled and (result.error or {}).get("type") == MALFORMED:
        raise RunnerProtocolError(str((result.error or {}).get("message")), result.stderr)
    try:
        yield
    except NsdlError:
        raise
    except (LookupError, TypeError, ValueError, AttributeError) as exc:
        raise RunnerProtocolError(
            f"the runner on {result.target} gave a malformed answer when asked to {what} "
            f"({type(exc).__name__}: {exc}): a runner file there may be changed or from another "
            "version; run again (changed files are deployed anew) and see the runner's log",
            result.stderr,
        ) from None
