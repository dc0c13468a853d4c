"""A sweep over two real SSH targets (two sshd on 127.0.0.1): every configuration runs on each
target through the SSH path, one profile at a time per target GPU slot (Dask resources), and
the rows say which target ran them."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import onnx
import pytest
from _sweep_models import tiny_export

from nsdl_jupyter.sweeps import SweepSettingsError, sweep
from nsdl_jupyter.targets import SshTarget, connections
from tests._sshd import Sshd, SshLab, ssh_lab

pytest.importorskip("distributed")
pytest.importorskip("paramiko")
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not Path("/usr/sbin/sshd").exists() or os.geteuid() != 0,
        reason="needs OpenSSH's sshd (bash scripts/setup.sh installs it) and root to run it",
    ),
]


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SshLab]:
    with ssh_lab(tmp_path_factory.mktemp("sweep-sshd"), {}, {}) as started:
        yield started


def _targets(lab: SshLab, servers: list[Sshd], folder: Path) -> list[SshTarget]:
    return [
        lab.target(server, deploy_dir=str(folder / f"deploy-{index}"), name=f"box{index}")
        for index, server in enumerate(servers)
    ]


def test_each_configuration_runs_on_each_target_one_at_a_time_per_slot(
    tmp_path: Path, lab: SshLab, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NSDL_CONFIG_DIR", str(tmp_path / "config"))
    started = lab.servers
    model = tmp_path / "bert.onnx"
    onnx.save(tiny_export(), model)
    targets = _targets(lab, started, tmp_path)
    connections().add(targets[1])  # the fleet: a saved connection, named
    grid = {"batch": [1, 2, 3], "iterations": [2]}
    result = sweep(
        model, grid, targets=[targets[0], "box1"], cache_dir=tmp_path / "cache", progress=False
    )
    frame = result.frame
    assert len(frame) == 6, frame[["target", "status", "error"]]
    assert (frame["status"] == "ok").all(), frame["error"].tolist()
    assert sorted(frame["target"].value_counts().items()) == [("box0", 3), ("box1", 3)]
    for target in targets:
        # each ran through its own deploy directory on the target
        assert any(Path(target.deploy_dir).rglob("*_ort_runner.py")), target.name
        # a machine without a GPU is one slot: its profiles never overlap in time
        spans = frame[frame["target"] == target.name].sort_values("started")
        assert (spans["started"].to_numpy()[1:] >= spans["ended"].to_numpy()[:-1]).all()
    # the two targets did run at the same time (each its own slot)
    a, b = (frame[frame["target"] == t.name] for t in targets)
    assert a["started"].min() < b["ended"].max() and b["started"].min() < a["ended"].max()


def test_targets_and_a_client_together_are_refused(tmp_path: Path) -> None:
    model = tmp_path / "bert.onnx"
    onnx.save(tiny_export(), model)
    target = SshTarget("127.0.0.1", "root", 22, ssh_config=False)
    with pytest.raises(SweepSettingsError, match="not both"):
        sweep(model, {"batch": [1]}, targets=[target], client=object(), progress=False)


def test_a_dropped_ssh_link_re_runs_the_task_and_the_row_counts_it(
    tmp_path: Path, lab: SshLab, monkeypatch: pytest.MonkeyPatch
) -> None:
    import signal
    import time

    import psutil

    from nsdl_jupyter.sweeps import start_sweep

    monkeypatch.setenv("NSDL_CONFIG_DIR", str(tmp_path / "config"))
    server = lab.server
    model = tmp_path / "bert.onnx"
    onnx.save(tiny_export(), model)
    (target,) = _targets(lab, [server], tmp_path)
    job = start_sweep(model, {"iterations": [3]}, targets=[target], retries=1,
                      cache_dir=tmp_path / "cache", progress=False)  # fmt: skip
    assert server.process is not None
    deadline = time.monotonic() + 120
    dropped = False
    while time.monotonic() < deadline and not dropped:
        below = psutil.Process(server.process.pid).children(recursive=True)
        if any("_ort_runner" in " ".join(p.cmdline()) for p in below if p.is_running()):
            for pid in server.session_pids()[1:]:  # the connection's sshd, not the listener
                os.kill(pid, signal.SIGKILL)
            dropped = True
        time.sleep(0.02)
    assert dropped, "the profile never started on the target"
    result = job.wait(180)
    row = result.frame.iloc[0]
    assert row["status"] == "ok", row["error"]
    assert row["attempts"] == 2
