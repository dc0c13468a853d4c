"""Any OpenSSH server (issue 27, item 3): without the SFTP subsystem, files stream over exec
channels, checked by size and hash, paths passed as arguments (never parsed by a shell)."""

from __future__ import annotations

import hashlib
import os
import shlex
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nsdl_jupyter.profiling import profile_ort
from nsdl_jupyter.targets import SshTarget, TargetError
from nsdl_jupyter.targets._ssh_files import StreamFiles, sh_command
from tests._sshd import Sshd, keygen
from tests.test_targets_ssh import small_model

pytestmark = pytest.mark.skipif(
    not Path("/usr/sbin/sshd").exists() or os.geteuid() != 0,
    reason="needs OpenSSH's sshd (bash scripts/setup.sh installs it) and root to run it",
)

# a name a shell would expand, split and run, were it ever parsed by one
AWKWARD = "we ird $(touch INJECTED) `touch INJECTED2`; 'q\" *.bin"


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Sshd, Sshd]]:
    folder = tmp_path_factory.mktemp("sshstream")
    key = keygen(folder / "id")
    authorized = folder / "authorized_keys"
    authorized.write_text(Path(f"{key}.pub").read_text())
    with_sftp = Sshd(folder / "sftp", authorized, password_auth=False).start()
    without = Sshd(folder / "nosftp", authorized, password_auth=False, sftp=False)
    try:
        without.start()
        yield key, with_sftp, without
    finally:
        with_sftp.stop()
        without.stop()


def target_of(key: Path, server: Sshd, tmp_path: Path, **settings: Any) -> SshTarget:
    known = tmp_path / f"known_hosts-{server.port}"
    known.write_text(server.known_hosts_line())
    return SshTarget(
        "127.0.0.1",
        "root",
        key_file=key,
        deploy_dir=str(tmp_path / "deploy"),
        known_hosts=known,
        ssh_config=False,
        **{"port": server.port, "python": sys.executable, **settings},
    )


@pytest.mark.parametrize("sftp", [True, False], ids=["sftp", "no-sftp"])
def test_a_profile_runs_with_and_without_the_sftp_subsystem(
    servers: tuple[Path, Sshd, Sshd], tmp_path: Path, sftp: bool
) -> None:
    key, with_sftp, without = servers
    model = small_model(tmp_path / "small.onnx")
    with target_of(key, with_sftp if sftp else without, tmp_path) as target:
        assert target.transfer == ("sftp" if sftp else "stream")
        report = profile_ort(model, target=target, iterations=3, trace_path=tmp_path / "t.json")
        first = target.bytes_uploaded
        profile_ort(model, target=target, iterations=3, trace_path=tmp_path / "t2.json")
        again = target.bytes_uploaded - first
    # without SFTP the last job's folder goes with close() (each earlier one with the next run)
    jobs = list(Path(target.deploy_root, "jobs").iterdir())
    assert list(report.layers["name"]) == ["mm1", "relu", "mm2"]
    assert (tmp_path / "t.json").stat().st_size > 0  # the trace came back
    assert first > model.stat().st_size
    assert again < 2048  # the request alone: runner files and model were there
    assert jobs == []


def test_streamed_files_keep_every_byte_and_awkward_names(
    servers: tuple[Path, Sshd, Sshd], tmp_path: Path
) -> None:
    key, _, without = servers
    source = tmp_path / "source.bin"
    source.write_bytes(os.urandom(3 << 20) + bytes(range(256)) * 7)
    with target_of(key, without, tmp_path) as target:
        workdir = target.make_workdir()
        remote = target.put(source, workdir, companions={f"sub/{AWKWARD}": source})
        back = tmp_path / "back" / "again.bin"
        target.get(remote, back)
        target.get(remote.rsplit("/", 1)[0] + f"/sub/{AWKWARD}", tmp_path / "awkward.bin")
        sent = target.bytes_uploaded
        target.remove_workdir(workdir)
        assert not Path(workdir).exists()
        deployed = sorted(p.name for p in Path(target.deploy_root).rglob("*") if p.is_file())
    digest = hashlib.sha256(source.read_bytes()).hexdigest()
    assert hashlib.sha256(back.read_bytes()).hexdigest() == digest
    assert hashlib.sha256((tmp_path / "awkward.bin").read_bytes()).hexdigest() == digest
    assert sent == 2 * source.stat().st_size
    assert deployed == sorted([AWKWARD, "source.bin"])  # no partial file left, nothing run
    assert not list(Path("/").glob("INJECTED*")) and not list(tmp_path.rglob("INJECTED*"))
    assert not list(Path.home().glob("INJECTED*"))


def test_a_failing_stream_names_the_cause_and_the_fix(
    servers: tuple[Path, Sshd, Sshd], tmp_path: Path
) -> None:
    key, _, without = servers
    with target_of(key, without, tmp_path) as target:
        with pytest.raises(TargetError, match=r"no SFTP subsystem.*Subsystem sftp internal-sftp"):
            target.get(target.deploy_root + "/no such file", tmp_path / "x.bin")
        assert not (tmp_path / "x.bin").exists()


class Impostor:
    """A real channel to the real sshd that runs `script` (the target's answer) in place of
    the command the host sends, with the paths the host asked for as its arguments."""

    def __init__(self, channel: Any, script: str) -> None:
        self._channel = channel
        self._script = script

    def exec_command(self, command: str) -> None:
        asked = shlex.split(command)[4:]  # sh -c <script> sh <paths...>
        self._channel.exec_command(sh_command(self._script, *asked))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._channel, name)


@pytest.mark.parametrize(
    "script",
    [
        "for p; do printf '5 - ../../escaped.json\\000hello'; done",  # names not asked for
        "for p; do printf '5 - %s\\000helloEXTRA' \"$p\"; done",  # more than it announced
        "for p; do printf '999 - %s\\000hello' \"$p\"; done",  # less than it announced
        "printf '5 - %s\\000hello' \"$1\"",  # the first file only
        'for p; do printf \'5 %s %s\\000hello\' "$(printf x%.0s $(seq 64))" "$p"; done',
        "head -c 300000 /dev/zero",  # no header at all
    ],
    ids=["name", "oversized", "short", "missing", "sha256", "no-header"],
)
def test_a_batched_download_refuses_an_answer_not_asked_for(
    servers: tuple[Path, Sshd, Sshd], tmp_path: Path, script: str
) -> None:
    """Whatever a target answers, a batch lands whole and checked or not at all: a package
    error, nothing written outside the destination, the files already there kept."""
    key, _, without = servers
    dest = tmp_path / "dest" / "deeper"
    dest.mkdir(parents=True)
    (dest / "trace.json").write_text("the last trace")
    with target_of(key, without, tmp_path) as target:
        workdir = target.make_workdir()
        remote = target.put(small_model(tmp_path / "m.onnx"), workdir)
        with target._remote_files() as files:
            assert isinstance(files, StreamFiles)
            honest = files._open
            files._open = lambda: Impostor(honest(), script)
        with pytest.raises(TargetError, match="no SFTP subsystem"):
            target.get_many({remote: dest / "trace.json", remote + "x": dest / "other.onnx"})
        files._open = honest
        target.get_many({remote: tmp_path / "back.onnx"})  # the connection still serves
    assert [p.name for p in dest.iterdir()] == ["trace.json"]
    assert (dest / "trace.json").read_text() == "the last trace"
    assert not list(tmp_path.rglob("escaped*")) and not list(tmp_path.rglob("*.partial"))
    assert (tmp_path / "back.onnx").read_bytes() == (tmp_path / "m.onnx").read_bytes()
