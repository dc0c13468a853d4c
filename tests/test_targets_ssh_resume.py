"""Resumable uploads (issue 27, item 1): a big upload cut off by a dropped connection (the
server's session processes killed mid-file) resumes on the next try from what reached the
target, sending only the rest, with and without the SFTP subsystem; the file that lands has the
sha256 of the one sent. And the commands a check and a warm profile cost (issue 27, benchmark
goal)."""

from __future__ import annotations

import hashlib
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from nsdl_jupyter.profiling import check_target, profile_ort
from nsdl_jupyter.targets import TargetError
from nsdl_jupyter.targets._ssh_files import RESUMABLE_BYTES
from tests._sshd import Sshd, SshLab, ssh_lab
from tests.test_targets_ssh import small_model

pytestmark = pytest.mark.skipif(
    not Path("/usr/sbin/sshd").exists() or os.geteuid() != 0,
    reason="needs OpenSSH's sshd (bash scripts/setup.sh installs it) and root to run it",
)
MIB = 1 << 20


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SshLab]:
    with ssh_lab(tmp_path_factory.mktemp("resume"), {}, {"sftp": False}) as started:
        yield started


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _settled_size(path: Path, timeout: float = 20.0) -> int:
    """The file's size once it stops growing: after its connection is killed, the target's
    writer (orphaned, no longer a child of sshd) still drains what its pipe held."""
    deadline = time.monotonic() + timeout
    sizes = [-1, -2, -3]
    while time.monotonic() < deadline and len(set(sizes[-3:])) > 1:
        time.sleep(0.2)
        sizes.append(path.stat().st_size)
    return sizes[-1]


@pytest.mark.parametrize("sftp", [True, False], ids=["sftp", "no-sftp"])
def test_a_cut_off_upload_resumes_where_it_stopped(lab: SshLab, tmp_path: Path, sftp: bool) -> None:
    server = lab.servers[0 if sftp else 1]
    wheel = tmp_path / "big_runtime-1.0-py3-none-any.whl"
    wheel.write_bytes(os.urandom(3 * RESUMABLE_BYTES))
    size = wheel.stat().st_size
    deploy = tmp_path / "deploy"
    target = lab.target(server, deploy_dir=str(deploy))
    cuts: list[int] = []

    def drop_the_link(_path: str, sent: int, _total: int) -> None:
        if sent >= size // 2 and not cuts:
            cuts.append(sent)
            for pid in server.session_pids()[1:]:  # the connection's sshd, not the listener
                os.kill(pid, signal.SIGKILL)

    target.upload_progress = drop_the_link
    with pytest.raises(TargetError):
        target.put(wheel, target.connect().make_workdir())
    (partial,) = deploy.rglob("*.partial-*")
    there = _settled_size(partial)
    assert cuts and 0 < there < size

    target.upload_progress = None
    before = target.bytes_uploaded
    remote = Path(target.put(wheel, target.make_workdir()))
    target.close()
    assert target.bytes_uploaded - before == size - there  # only the rest travelled
    assert sha256(remote) == sha256(wheel)
    assert not list(deploy.rglob("*.partial-*"))


@pytest.mark.parametrize("sftp", [True, False], ids=["sftp", "no-sftp"])
def test_a_partial_that_is_not_a_prefix_is_sent_again_whole(
    lab: SshLab, tmp_path: Path, sftp: bool
) -> None:
    server = lab.servers[0 if sftp else 1]
    wheel = tmp_path / "big_runtime-1.0-py3-none-any.whl"
    wheel.write_bytes(os.urandom(RESUMABLE_BYTES + MIB))
    deploy = tmp_path / "deploy"
    with lab.target(server, deploy_dir=str(deploy)) as target:
        remote = Path(target.put(wheel, target.make_workdir()))
        # the same name's partial with other bytes in it (a disk error, another writer)
        partial = remote.with_name(f"{remote.name}.partial-{sha256(wheel)[:16]}")
        remote.unlink()
        partial.write_bytes(os.urandom(MIB))
        before = target.bytes_uploaded
        target._deployed.clear()  # this connection saw it there: forget that
        assert Path(target.put(wheel, target.make_workdir())) == remote
        sent = target.bytes_uploaded - before
    assert sent == wheel.stat().st_size
    assert sha256(remote) == sha256(wheel)
    assert not partial.exists()


def commands(server: Sshd) -> int:
    """Exec sessions the server has started (each costs the login shell's start-up)."""
    return server.log.read_text().count("Starting session: command")


@pytest.mark.parametrize("sftp", [True, False], ids=["sftp", "no-sftp"])
def test_a_warm_check_is_one_command_and_leaves_no_job_folder(
    lab: SshLab, tmp_path: Path, sftp: bool
) -> None:
    """check_target asks everything in the runner's one command; without SFTP the job folder
    it used goes with the next launcher (or close), not with a command of its own."""
    server = lab.servers[0 if sftp else 1]
    deploy = tmp_path / "deploy"
    before = commands(server)
    with lab.target(server, deploy_dir=str(deploy)) as target:
        connecting = commands(server) - before
        check_target(target)  # deploys the runner files
        before = commands(server)
        check_target(target)
        check_target(target)
        warm = commands(server) - before
    assert connecting == (0 if sftp else 1)  # the deploy folder: over SFTP, or one command
    assert warm == 2
    assert not list((deploy / "jobs").iterdir())


@pytest.mark.parametrize("sftp", [True, False], ids=["sftp", "no-sftp"])
def test_a_warm_profile_fetches_its_files_in_one_command(
    lab: SshLab, tmp_path: Path, sftp: bool
) -> None:
    """Without SFTP, a warm profile costs the launch and one command that brings back the
    trace and the optimized model together; over SFTP the launch alone."""
    server = lab.servers[0 if sftp else 1]
    model = small_model(tmp_path / "small.onnx")
    with lab.target(server, deploy_dir=str(tmp_path / "deploy")) as target:
        profile_ort(model, target=target, iterations=1)  # deploys runner files and model
        before = commands(server)
        report = profile_ort(model, target=target, iterations=1, trace_path=tmp_path / "t.json")
        warm = commands(server) - before
    assert warm == (1 if sftp else 2)
    assert (tmp_path / "t.json").stat().st_size > 0 and len(report.layers) == 3
    assert not list(tmp_path.rglob(".*.partial"))
