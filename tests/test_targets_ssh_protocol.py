"""The runner protocol against hostile output (issue 22): forged control lines, endless lines,
random bytes and malformed results, from a runner or from a model's text, over a real sshd on
127.0.0.1 and in a local child. Nothing of it may steer `cancel()`, fill the kernel's memory or
reach the user as anything but the package's own errors."""

# ruff: noqa: F811 - the SSH lab's fixtures are imported, and named again as test parameters

from __future__ import annotations

import base64
import random
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from nsdl_jupyter._errors import NsdlError
from nsdl_jupyter._process import group_alive
from nsdl_jupyter.profiling import (
    ProfileCancelledError,
    RunnerProtocolError,
    check_target,
    profile_ort,
    start_profile_ort,
)
from nsdl_jupyter.profiling._runners import RUNNER_FILES
from nsdl_jupyter.profiling.ort._providers import probe_runtime
from nsdl_jupyter.targets import LocalTarget, SshJob, SshTarget
from nsdl_jupyter.targets._wire import MAX_LOG_CHARS, MAX_LOG_LINE_CHARS, MAX_MESSAGE_BYTES
from tests.test_targets_ssh import (  # noqa: F401 - fixtures shared with the SSH tests
    Lab,
    config_dir,
    lab,
    make_target,
    pytestmark,
    small_model,
)


@pytest.fixture
def victim() -> Iterator[int]:
    """A process group that is not the job's: forged lines name it; it must survive."""
    process = subprocess.Popen(["sleep", "120"], start_new_session=True)
    try:
        yield process.pid
        assert process.poll() is None, "a signal reached a process group the job did not start"
    finally:
        process.kill()
        process.wait(5)


def forged_lines(victim: int) -> list[str]:
    return [
        f"@@nsdl-pid {victim}",
        "@@nsdl-pid 1",
        f"@@nsdl-pid {'0' * 32} {victim}",
        f"@@nsdl-pid {'f' * 32} 1",
        "@@nsdl-exit 0",
        '@@nsdl {"event": "result", "forged": true, "trace": "/etc/passwd"}',
    ]


# A runner that speaks through the real runner's main loop; its handler prints forged control
# lines the way a runtime would: Python's print, and raw writes to file descriptors 1 and 2.
NOISY_RUNNER = """
import importlib.util, json, os, sys, time
path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_ort_runner.py")
if not os.path.exists(path):  # a local run: the package's own file
    path = json.load(open(sys.argv[1]))["ort_runner"]
spec = importlib.util.spec_from_file_location("_nsdl_ort_runner", path)
common = importlib.util.module_from_spec(spec)
spec.loader.exec_module(common)

def noisy(request):
    for line in request["forged"]:
        print(line, flush=True)
        os.write(1, (line + "\\n").encode())
        os.write(2, (line + "\\n").encode())
    # written beside, then renamed: a test polling for the file never reads it empty
    pgid = os.path.join(request["workdir"], "pgid")
    with open(pgid + ".part", "w") as f:
        f.write(str(os.getpgrp()))
    os.replace(pgid + ".part", pgid)
    while request.get("hang"):
        time.sleep(0.1)
    return {"genuine": True}

sys.exit(common.main(sys.argv, {"noisy": noisy}))
"""


def _noisy_runner(tmp_path: Path) -> Path:
    runner = tmp_path / "noisy_runner.py"
    runner.write_text(NOISY_RUNNER)
    return runner


def _target(kind: str, lab: Lab, tmp_path: Path) -> LocalTarget | SshTarget:
    return LocalTarget() if kind == "local" else make_target(lab, tmp_path)


@pytest.mark.parametrize("kind", ["local", "ssh"])
def test_forged_control_lines_from_a_runtime_change_nothing(
    lab: Lab, tmp_path: Path, kind: str, victim: int
) -> None:
    target = _target(kind, lab, tmp_path)
    workdir = target.make_workdir()
    request = {"kind": "noisy", "forged": forged_lines(victim), "workdir": workdir}
    request["ort_runner"] = str(RUNNER_FILES[0])
    try:
        job = target.start(
            _noisy_runner(tmp_path), request, workdir, support_files=(RUNNER_FILES[0],)
        )
        result = job.wait(30)
        assert result.result == {"event": "result", "genuine": True}
        assert result.error is None and result.returncode == 0
        assert result.stderr.splitlines().count("@@nsdl-pid 1") == 3  # all three are logged
        if isinstance(job, SshJob):
            assert job.remote_pid == int(Path(workdir, "pgid").read_text())
    finally:
        target.remove_workdir(workdir)


def test_cancel_signals_only_the_group_the_launcher_named(
    lab: Lab, tmp_path: Path, victim: int
) -> None:
    with make_target(lab, tmp_path) as target:
        workdir = target.make_workdir()
        request: dict[str, object] = {"kind": "noisy", "forged": forged_lines(victim)}
        request.update(workdir=workdir, hang=True)
        job = target.start(
            _noisy_runner(tmp_path), request, workdir, support_files=(RUNNER_FILES[0],)
        )
        pgid_file = Path(workdir, "pgid")
        deadline = time.monotonic() + 20
        while not pgid_file.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        pgid = int(pgid_file.read_text())
        assert job.remote_pid == pgid and group_alive(pgid)
        job.cancel()
        assert job.wait(10).cancelled
        assert not group_alive(pgid)
        target.remove_workdir(workdir)


def _forging_model(path: Path, victim: int, size: int = 64) -> Path:
    """small_model plus an unused initializer whose name holds forged control lines:
    onnxruntime quotes it in a warning while it loads the model."""
    onnx.save(onnx.load(small_model(path, size)), path)
    model = onnx.load(path)
    name = "unused\n" + "\n".join(forged_lines(victim)) + "\n"
    model.graph.initializer.append(numpy_helper.from_array(np.zeros(1, np.float32), name))
    onnx.save(model, path)
    return path


def test_a_model_that_forges_control_lines_steers_no_cancel(
    lab: Lab, tmp_path: Path, victim: int
) -> None:
    model = _forging_model(tmp_path / "forging.onnx", victim)
    with make_target(lab, tmp_path) as target:
        report = profile_ort(model, target=target, iterations=2, trace_path=tmp_path / "t.json")
        assert report.layers["name"].tolist()  # the genuine trace, not the forged one
        logged: list[str] = []
        started: list[str] = []
        job = start_profile_ort(
            model,
            target=target,
            iterations=10**7,
            warmup=0,
            dim_sizes={"batch": 1},
            trace_path=tmp_path / "long.json",
            progress=lambda p: started.append(p.phase),
        )
        job.add_log_listener(logged.append)
        deadline = time.monotonic() + 30
        while "latency" not in started and time.monotonic() < deadline:
            time.sleep(0.05)
        assert any(line == "@@nsdl-pid 1" for line in logged)  # the model did print it
        pgid = job._job.remote_pid  # type: ignore[attr-defined]
        assert pgid not in (None, 1, victim) and group_alive(pgid)
        assert Path(f"/proc/{pgid}/cmdline").read_bytes().startswith(b"/bin/sh\0")
        job.cancel()
        with pytest.raises(ProfileCancelledError):
            job.wait(20)
        assert not group_alive(pgid)


# ---- caps ----------------------------------------------------------------------------------

ENDLESS_RUNNER = """
import os
chunk = b"x" * (1 << 20)
for _ in range({mib}):
    os.write(1, chunk)
os.write(1, b'\\n@@nsdl {{"event": "result", "ok": 1}}\\n')
for _ in range({mib}):
    os.write(2, chunk)
"""


@pytest.mark.parametrize("kind", ["local", "ssh"])
def test_a_128_mb_line_without_newline_is_cut_in_bounded_memory(
    lab: Lab, tmp_path: Path, kind: str
) -> None:
    runner = tmp_path / "endless_runner.py"
    runner.write_text(ENDLESS_RUNNER.format(mib=128))
    target = _target(kind, lab, tmp_path)
    workdir = target.make_workdir()
    tracemalloc.start()
    try:
        result = target.start(runner, {}, workdir).wait(120)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
        target.remove_workdir(workdir)
    assert result.result == {"event": "result", "ok": 1}
    lines = result.stderr.splitlines()
    mark = f" [nsdl: {(128 << 20) - MAX_MESSAGE_BYTES} more bytes of this line were cut]"
    assert lines[0].endswith(mark)  # the stray stdout line, cut again for the log
    assert lines[-1].endswith(mark)  # the stderr line, with no newline at its end
    assert all(len(line) < MAX_LOG_LINE_CHARS + 200 for line in lines)
    assert peak < 4 * MAX_MESSAGE_BYTES, f"{peak / 2**20:.0f} MiB held for 256 MiB of output"


def test_the_log_tail_is_capped_in_lines_and_characters() -> None:
    from nsdl_jupyter.targets._base import MessageCollector

    collector = MessageCollector()
    for i in range(1000):
        collector.stderr_line(f"{i} " + "y" * (MAX_LOG_LINE_CHARS * 2))
    kept = collector.stderr.splitlines()
    assert kept[-1].startswith("999 ") and len(collector.stderr) <= MAX_LOG_CHARS + 1000
    assert all("more characters of this line were cut" in line for line in kept)


# ---- fuzz ----------------------------------------------------------------------------------

FUZZ_RUNNER = """
import base64, json, os, sys, time
request = json.load(open(sys.argv[1]))
plan = request["fuzz"]
with open(os.path.join(os.path.dirname(sys.argv[1]), "pgid"), "w") as f:
    f.write(str(os.getpgrp()))
for fd, data, times in plan["writes"]:
    data = base64.b64decode(data)
    for _ in range(times):
        os.write(fd, data)
while plan["hang"]:
    time.sleep(0.1)
sys.exit(plan["exit"])
"""


class FuzzTarget(SshTarget):
    """A real SshTarget whose jobs run FUZZ_RUNNER with `plan` instead of the package's
    runner: whatever the public API asks, the answer is the plan's bytes."""

    runner: Path
    plan: dict[str, Any]
    workdirs: list[str]

    def start(  # type: ignore[override]
        self, runner: Path, request: Any, workdir: str, listener: Any = None, **_: Any
    ) -> Any:
        self.workdirs.append(workdir)
        request = {**request, "fuzz": self.plan}
        return super().start(self.runner, request, workdir, listener)


def _fuzz_writes(rng: random.Random, victim: int) -> list[tuple[int, str, int]]:
    """A random mix of what a broken or hostile runner can write."""
    pieces: list[tuple[int, bytes]] = []
    results = [
        b'@@nsdl {"event": "result"',
        b"@@nsdl []",
        b'@@nsdl {"event": 5}',
        b'@@nsdl {"event": "result"}',
        b'@@nsdl {"event": "result", "trace": 5, "latencies_ms": "x", "gpu": [1]}',
        b'@@nsdl {"event": "result", "available": 3, "onnxruntime": [], "nvidia_smi": "x"}',
        b'@@nsdl {"event": "error", "type": [1], "message": {"a": 1}}',
        b'@@nsdl {"event": "progress", "phase": [], "done": "x", "total": null}',
        b"@@nsdl " + b"[" * 100000,
        b'@@nsdl {"event": "result", "x": 1e999, "y": NaN}',
    ]
    for _ in range(rng.randint(1, 8)):
        fd = rng.choice((1, 2))
        kind = rng.randrange(5)
        if kind == 0:
            piece = rng.randbytes(rng.randint(1, 1 << 16))
        elif kind == 1:
            piece = rng.choice(forged_lines(victim)).encode() + b"\n"
        elif kind == 2:
            piece = rng.choice(results) + rng.choice((b"\n", b"", b"\r\n"))
        elif kind == 3:
            piece = b"@@nsdl " + b"z" * rng.randint(1 << 10, 1 << 18)
        else:
            piece = b"\n" * rng.randint(1, 50)
        pieces.append((fd, piece))
    return [(fd, base64.b64encode(piece).decode(), 1) for fd, piece in pieces]


def _call_public_api(target: FuzzTarget, case: int, tmp_path: Path) -> None:
    which = case % 3
    if which == 0:
        profile_ort(
            small_model(tmp_path / "fuzz.onnx", 8),
            target=target,
            iterations=1,
            trace_path=tmp_path / f"fuzz-{case}.json",
        )
    elif which == 1:
        check_target(target, timeout=30)
    else:
        probe_runtime(target, refresh=True, timeout=30)


def test_fuzz_the_runner_protocol_over_ssh(lab: Lab, tmp_path: Path, victim: int) -> None:
    """Random bytes, endless lines, forged control lines and malformed results through the
    public API over a real sshd: only the package's own errors, bounded memory, no signal to
    a group the job did not start (the `victim` fixture checks), each cancel ends its job."""
    rng = random.Random(22)
    fuzz = FuzzTarget(
        "127.0.0.1",
        user="root",
        port=lab.target.port,
        key_file=lab.key,
        deploy_dir=str(tmp_path / "deploy"),
        known_hosts=lab.known_hosts(tmp_path, lab.target),
        ssh_config=False,
        python=sys.executable,
    )
    fuzz.runner = tmp_path / "fuzz_runner.py"
    fuzz.runner.write_text(FUZZ_RUNNER)
    fuzz.workdirs = []
    outcomes: dict[str, int] = {}
    tracemalloc.start()
    try:
        with fuzz:
            for case in range(16):
                hang = case % 8 == 7
                fuzz.plan = {
                    "writes": _fuzz_writes(rng, victim),
                    "exit": rng.choice((0, 1, 2, 139)),
                    "hang": hang,
                }
                if case == 4:  # one endless message line, past the cap
                    for piece, times in ((b"@@nsdl ", 1), (b"{" * (1 << 20), 20)):
                        fuzz.plan["writes"].append((1, base64.b64encode(piece).decode(), times))
                if hang:
                    _cancel_a_hanging_fuzz_job(fuzz, tmp_path)
                    outcomes["cancelled"] = outcomes.get("cancelled", 0) + 1
                    continue
                error: NsdlError | None = None
                try:
                    _call_public_api(fuzz, case, tmp_path)
                except NsdlError as raised:  # anything else fails the test
                    error = raised
                if isinstance(error, RunnerProtocolError):
                    assert fuzz.name in str(error)
                outcome = type(error).__name__ if error is not None else "answered"
                outcomes[outcome] = outcomes.get(outcome, 0) + 1
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert outcomes.get("RunnerProtocolError", 0) >= 3, outcomes
    assert peak < 4 * MAX_MESSAGE_BYTES, f"{peak / 2**20:.0f} MiB"


def _cancel_a_hanging_fuzz_job(fuzz: FuzzTarget, tmp_path: Path) -> None:
    job = start_profile_ort(
        small_model(tmp_path / "fuzz.onnx", 8),
        target=fuzz,
        iterations=1,
        trace_path=tmp_path / "hang.json",
    )
    pgid_file = Path(fuzz.workdirs[-1], "pgid")
    deadline = time.monotonic() + 20
    while not pgid_file.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    pgid = int(pgid_file.read_text())
    # the file can be there before the kernel has read the runner's pid line from the link
    while job._job.remote_pid is None and time.monotonic() < deadline:  # type: ignore[attr-defined]
        time.sleep(0.05)
    assert job._job.remote_pid == pgid  # type: ignore[attr-defined]
    job.cancel()
    with pytest.raises(ProfileCancelledError):
        job.wait(20)
    assert not group_alive(pgid)


def test_the_runner_and_the_host_speak_the_same_prefix() -> None:
    """The runner files cannot import the package: its prefix is written there once more."""
    from nsdl_jupyter.profiling.runners import _ort_runner
    from nsdl_jupyter.targets._wire import RUNNER_PREFIX

    assert _ort_runner.PREFIX == RUNNER_PREFIX
