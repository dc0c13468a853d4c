"""SSH targets against a real sshd on 127.0.0.1, the trust items of issue 22: exactly one key
trusted, hostile known_hosts lines, a handshake that never finishes, deploy_dir, leftovers of
a failed download, saved connections from another version, and TensorRT-RTX found by module."""

# ruff: noqa: F811 - the SSH lab's fixtures are imported, and named again as test parameters

from __future__ import annotations

import json
import os
import socket
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from nsdl_jupyter.profiling import check_target
from nsdl_jupyter.targets import (
    Connections,
    HostKeyRevokedError,
    LocalTarget,
    SshTarget,
    TargetConnectionError,
    TargetSettingsError,
    TargetWarning,
    UnknownHostKeyError,
)
from nsdl_jupyter.widgets.targets._target_picker import TargetPicker
from tests._sshd import fingerprint_of, keygen
from tests.test_targets_ssh import (  # noqa: F401 - fixtures shared with the SSH tests
    Lab,
    config_dir,
    lab,
    make_target,
    pytestmark,
)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home of the test's own: `~/.ssh/known_hosts` is the user's, read only."""
    folder = tmp_path / "home"
    (folder / ".ssh").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(folder))
    return folder


def _key_line(tmp_path: Path, host: str, name: str) -> str:
    kind, blob = Path(f"{keygen(tmp_path / name)}.pub").read_text().split()[:2]
    return f"{host} {kind} {blob}\n"


def test_trust_host_key_trusts_exactly_the_one_key(
    lab: Lab, tmp_path: Path, config_dir: Path, home: Path
) -> None:
    """Nothing of ~/.ssh/known_hosts is copied: a key the user removes there stays removed."""
    others = [_key_line(tmp_path, "other.example", "k1"), _key_line(tmp_path, "[10.9]:22", "k2")]
    (home / ".ssh" / "known_hosts").write_text("".join(others))
    target = make_target(lab, tmp_path, known_hosts=None)
    with pytest.raises(UnknownHostKeyError) as refused:
        target.connect()
    target.trust_host_key(refused.value.fingerprint)
    assert (config_dir / "known_hosts").read_text() == lab.target.known_hosts_line()
    target.close()


def _revoked_line(server_pub: Path) -> str:
    kind, blob = server_pub.read_text().split()[:2]
    return f"@revoked * {kind} {blob}\n"


def test_unusable_known_hosts_lines_are_skipped_with_a_warning(
    lab: Lab, tmp_path: Path, config_dir: Path, home: Path
) -> None:
    port = lab.target.port
    blob = lab.target.host_key_pub.read_text().split()[1]
    hostile = [
        "@cert-authority *.example.com " + _key_line(tmp_path, "", "ca").strip(),
        "@markerfromthefuture * " + _key_line(tmp_path, "", "future").strip(),
        f"[127.0.0.1]:{port} ssh-ed25519 AAAA!!!not-base64",
        f"[127.0.0.1]:{port} ssh-ed25519 {blob[:-8]}",  # base64, a truncated key
        f"[127.0.0.1]:{port} ssh-unknown-type {blob}",
        "just-one-field",
        "\x00\xff binary garbage",
    ]
    known = home / ".ssh" / "known_hosts"
    known.write_text("\n".join(hostile) + "\n" + lab.target.known_hosts_line())
    with (
        pytest.warns(TargetWarning, match="is skipped") as warned,
        make_target(lab, tmp_path, known_hosts=None) as target,
    ):
        assert target.run_command("true")[0] == 0
    texts = " ".join(str(w.message) for w in warned)
    assert "'@cert-authority' lines are not supported" in texts and "line 3" in texts


def test_a_revoked_key_is_refused_and_cannot_be_trusted(
    lab: Lab, tmp_path: Path, config_dir: Path, home: Path
) -> None:
    (home / ".ssh" / "known_hosts").write_text(
        lab.target.known_hosts_line() + _revoked_line(lab.target.host_key_pub)
    )
    target = make_target(lab, tmp_path, known_hosts=None)
    with pytest.raises(HostKeyRevokedError, match="marked @revoked") as refused:
        target.connect()
    assert refused.value.fingerprint == fingerprint_of(lab.target.host_key_pub)
    with pytest.raises(HostKeyRevokedError):
        target.trust_host_key(refused.value.fingerprint)
    assert not (config_dir / "known_hosts").exists()
    # revoked in the package's own file counts the same
    (home / ".ssh" / "known_hosts").write_text(lab.target.known_hosts_line())
    own = tmp_path / "own_known_hosts"
    own.write_text(lab.target.known_hosts_line() + _revoked_line(lab.target.host_key_pub))
    with pytest.raises(HostKeyRevokedError):
        make_target(lab, tmp_path, known_hosts=own).connect()


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A TCP port that accepts connections and never says a word (no SSH banner)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.1)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1]
    finally:
        stop.set()
        thread.join(5)
        for connection in held:
            connection.close()
        server.close()


def test_a_handshake_that_does_not_finish_names_the_host_and_the_timeout(
    lab: Lab, tmp_path: Path, silent_port: int
) -> None:
    target = make_target(lab, tmp_path, port=silent_port, connect_timeout=0.5)
    with pytest.raises(TargetConnectionError, match=r"within connect_timeout=0\.5 s") as failed:
        target.connect()
    assert f"127.0.0.1:{silent_port}" in str(failed.value)


def test_the_pickers_connect_shows_a_handshake_timeout(
    lab: Lab, tmp_path: Path, silent_port: int, config_dir: Path
) -> None:
    store = Connections(tmp_path / "connections.json")
    store.add(make_target(lab, tmp_path, port=silent_port, connect_timeout=0.5, name="mute"))
    picker = TargetPicker(store=store)
    picker._selector.value = "mute"
    picker._connect.click()
    assert "did not finish the SSH handshake" in picker._message.value
    assert picker.target.name == "local"


@pytest.mark.parametrize(
    "deploy_dir",
    ["~/.nsdl ", " /tmp/nsdl", "/tmp/nsdl\n", "/tmp/a\nb", "/tmp/\tnsdl", "/tmp/x\x00", "/x\x7f"],
)
def test_deploy_dir_with_edge_spaces_or_control_characters_is_refused(
    lab: Lab, tmp_path: Path, deploy_dir: str
) -> None:
    with pytest.raises(TargetSettingsError, match="spaces at its ends or control characters"):
        make_target(lab, tmp_path, deploy_dir=deploy_dir)


def test_getting_a_missing_file_leaves_no_partial(lab: Lab, tmp_path: Path) -> None:
    local = tmp_path / "back" / "trace.json"
    with make_target(lab, tmp_path) as target, pytest.raises(FileNotFoundError):
        target.get(str(tmp_path / "no-such-file.json"), local)
    assert list(local.parent.iterdir()) == []


def _saved(tmp_path: Path, **changes: object) -> Connections:
    path = tmp_path / "saved.json"
    entry: dict[str, object] = {
        "name": "box",
        "host": "127.0.0.1",
        "user": "root",
        "port": 22,
        "deploy_dir": "~/.nsdl",
        "ssh_config": False,
        **changes,
    }
    path.write_text(json.dumps({"version": 1, "connections": [entry]}))
    return Connections(path)


def test_a_saved_connection_from_a_newer_version_loads_with_a_warning(tmp_path: Path) -> None:
    store = _saved(tmp_path, jump_mode="fancy", color="teal")
    with pytest.warns(TargetWarning, match="color, jump_mode"):
        target = store.get("box")
    assert isinstance(target, SshTarget) and target.port == 22


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("port", "22"),
        ("port", True),
        ("agent", "yes"),
        ("deploy_dir", 5),
        ("proxy_command", [1, 2]),
        ("proxy_command", 7),
        ("key_file", ["a"]),
        ("ssh_config", 3),
        ("connect_timeout", "fast"),
        ("python", None),
        ("host", None),
    ],
)
def test_a_saved_field_of_the_wrong_type_is_a_settings_error(
    tmp_path: Path, field: str, value: object
) -> None:
    with pytest.raises(TargetSettingsError, match=f"{field}=") as refused:
        _saved(tmp_path, **{field: value}).get("box")
    assert "'box'" in str(refused.value)


@pytest.mark.parametrize(
    "document",
    [
        [],
        {"connections": {"box": 1}},
        {"connections": [1]},
        {"connections": [{"host": "x"}]},
        {"connections": [{"name": 5, "host": "x"}]},
    ],
)
def test_a_damaged_connections_file_is_a_settings_error(tmp_path: Path, document: object) -> None:
    path = tmp_path / "saved.json"
    path.write_text(json.dumps(document))
    with pytest.raises(TargetSettingsError, match="not a connections file"):
        Connections(path).names()


def test_a_saved_connection_without_host_is_a_settings_error(tmp_path: Path) -> None:
    path = tmp_path / "saved.json"
    path.write_text(json.dumps({"connections": [{"name": "box"}]}))
    with pytest.raises(TargetSettingsError, match="has no host"):
        Connections(path).get("box")


def _fake_distribution(folder: Path, module: str, distribution: str, version: str) -> Path:
    """An installed distribution whose name differs from its module (as TensorRT's are)."""
    (folder / module).mkdir(parents=True)
    (folder / module / "__init__.py").write_text(f"__version__ = {version!r}\n")
    info = folder / f"{distribution.replace('-', '_')}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {distribution}\nVersion: {version}\n"
    )
    (info / "top_level.txt").write_text(f"{module}\n")
    (info / "RECORD").write_text(f"{module}/__init__.py,,\n")
    return folder


def test_check_target_finds_tensorrt_rtx_by_its_module(tmp_path: Path) -> None:
    site = _fake_distribution(tmp_path / "site", "tensorrt_rtx", "tensorrt-rtx-cu13", "9.8.7")
    target = LocalTarget(env={**os.environ, "PYTHONPATH": str(site)})
    rows = {row.item: row for row in check_target(target).rows}
    assert rows["tensorrt_rtx"].status == "ok"
    assert rows["tensorrt_rtx"].detail == "9.8.7"


def test_check_target_sees_the_installed_tensorrt_rtx() -> None:
    rtx = pytest.importorskip(
        "tensorrt_rtx", reason="needs TensorRT-RTX: pip install -e '.[trt-rtx]'"
    )
    rows = {row.item: row for row in check_target(LocalTarget(python=sys.executable)).rows}
    assert rows["tensorrt_rtx"].status == "ok"
    assert rows["tensorrt_rtx"].detail.startswith(".".join(rtx.__version__.split(".")[:2]))
