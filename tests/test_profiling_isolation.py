"""The runtime runs in a child process: crashes become errors, cancel ends the child."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import onnx
import pytest
from test_profiling_helpers import mlp_model

from nsdl_jupyter.profiling import (
    ProfileCancelledError,
    ProfileError,
    RunnerCrashError,
    profile_ort,
    start_profile_ort,
)
from tests._processes import alive


@pytest.fixture
def model_path(tmp_path: Path) -> Path:
    path = tmp_path / "mlp.onnx"
    onnx.save(mlp_model(hidden=512, layers=8), path)
    return path


@pytest.mark.parametrize(("where", "signal_name"), [("session", "SIGSEGV"), ("run", "SIGSEGV")])
def test_segfault_in_the_runtime_is_an_error_and_we_survive(
    model_path: Path, tmp_path: Path, where: str, signal_name: str
) -> None:
    job = start_profile_ort(model_path, iterations=2, warmup=1, trace_path=tmp_path / "t.json",
                            _debug_crash_at=where)  # fmt: skip
    with pytest.raises(RunnerCrashError) as info:
        job.wait(120)
    message = str(info.value)
    assert signal_name in message and "segmentation fault" in message
    assert "kernel is unaffected" in message
    assert not (tmp_path / "t.json").exists()
    # and this process still profiles fine afterwards
    report = profile_ort(model_path, iterations=1, warmup=0, trace_path=tmp_path / "ok.json")
    assert len(report.layers) > 0


def test_abort_is_reported_with_its_signal(model_path: Path, tmp_path: Path) -> None:
    from nsdl_jupyter.profiling._model_source import model_source
    from nsdl_jupyter.profiling.ort._activity import ProfileJob
    from nsdl_jupyter.profiling.ort._settings import OrtProfileSettings
    from nsdl_jupyter.targets import LocalTarget

    class AbortingTarget(LocalTarget):
        def start(self, runner, request, workdir, listener=None, **kw):  # type: ignore[no-untyped-def]
            return super().start(runner, {**request, "debug_crash_kind": "abort"}, workdir,
                                 listener, **kw)  # fmt: skip

    job = ProfileJob(model_source(model_path), OrtProfileSettings(iterations=1, warmup=0),
                     AbortingTarget(), debug_crash_at="session")  # fmt: skip
    with pytest.raises(RunnerCrashError, match=r"SIGABRT \(abort\)"):
        job.wait(120)


def test_cancel_ends_the_child(model_path: Path, tmp_path: Path) -> None:
    started = threading.Event()

    def on_progress(progress: object) -> None:
        if getattr(progress, "phase", "") == "latency":
            started.set()

    job = start_profile_ort(model_path, iterations=100_000, warmup=1, progress=on_progress,
                            trace_path=tmp_path / "t.json")  # fmt: skip
    pid = job._job.pid  # type: ignore[attr-defined]
    assert started.wait(120), "the runner never reached its timed loop"
    assert alive(pid)
    t = time.monotonic()
    job.cancel()
    with pytest.raises(ProfileCancelledError):
        job.wait(30)
    assert time.monotonic() - t < 10
    assert not alive(pid)
    assert job.done
    assert not (tmp_path / "t.json").exists()
    assert job.progress.phase == "cancelled"


def test_progress_reaches_done(model_path: Path, tmp_path: Path) -> None:
    seen: list[tuple[str, float]] = []
    report = profile_ort(model_path, iterations=3, warmup=1, trace_path=tmp_path / "t.json",
                         progress=lambda p: seen.append((p.phase, p.fraction)))  # fmt: skip
    phases = [p for p, _ in seen]
    for phase in ("warm-up", "latency", "profile", "parsing", "done"):
        assert phase in phases
    fractions = [f for _, f in seen]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0
    assert report.metadata["iterations"] == 3


def test_timeout_cancels(model_path: Path, tmp_path: Path) -> None:
    with pytest.raises(ProfileError, match="did not finish within"):
        profile_ort(model_path, iterations=1_000_000, warmup=0, timeout=3,
                    trace_path=tmp_path / "t.json")  # fmt: skip
