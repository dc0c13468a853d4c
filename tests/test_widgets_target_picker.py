"""The ActivityPanel's target picker against a real OpenSSH server on 127.0.0.1 (issue 15,
item 6): a connection made through the form (key login), tested, its dependency table, an
unknown host key trusted with the button, a profile run there from the panel, the remote log,
a dropped connection; and a canary password that no widget's state ever holds."""

from __future__ import annotations

import json
import os
import secrets
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import ipywidgets as widgets
import onnx
import pytest
from test_profiling_helpers import mlp_model

from nsdl_jupyter.profiling import TargetLostError
from nsdl_jupyter.targets import SshTarget, connections
from nsdl_jupyter.transforms._tools import MAX_LOG_LINES
from nsdl_jupyter.widgets.profile._activity_panel import ActivityPanel
from nsdl_jupyter.widgets.profile._log_view import LogView
from nsdl_jupyter.widgets.targets._target_picker import LOCAL, TargetPicker
from tests._sshd import Sshd, fingerprint_of, keygen

pytestmark = pytest.mark.skipif(
    not Path("/usr/sbin/sshd").exists() or os.geteuid() != 0,
    reason="needs OpenSSH's sshd (bash scripts/setup.sh installs it) and root to run it",
)

PASSWORD = "canary-password-" + secrets.token_hex(8)
PASSPHRASE = "canary-passphrase-" + secrets.token_hex(8)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Sshd, Path]]:
    """One sshd that lets root in with a plain ed25519 key; its key file."""
    folder = tmp_path_factory.mktemp("picker-sshd")
    key = keygen(folder / "id_plain")
    authorized = folder / "authorized_keys"
    authorized.write_text(Path(f"{key}.pub").read_text())
    sshd = Sshd(folder / "sshd", authorized).start()
    try:
        yield sshd, key
    finally:
        sshd.stop()


@pytest.fixture(autouse=True)
def config_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """known_hosts and saved connections in the test's folder; no agent."""
    folder = tmp_path / "config"
    monkeypatch.setenv("NSDL_CONFIG_DIR", str(folder))
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    return folder


@pytest.fixture
def model_path(tmp_path: Path) -> Path:
    path = tmp_path / "mlp.onnx"
    onnx.save(mlp_model(layers=2), path)
    return path


def all_states(root: widgets.Widget) -> list[dict[str, Any]]:
    """`get_state()` of `root` and of every widget reachable from its traits."""
    seen: set[str] = set()
    states = []
    todo = [root]
    while todo:
        widget = todo.pop()
        if widget.model_id in seen:
            continue
        seen.add(widget.model_id)
        states.append(widget.get_state())
        for name in widget.keys:
            value = getattr(widget, name)
            values = value if isinstance(value, (list, tuple)) else [value]
            todo.extend(v for v in values if isinstance(v, widgets.Widget))
    return states


def assert_no_secret(root: widgets.Widget) -> None:
    states = all_states(root)
    assert len(states) > 40  # the walk reached the form, the fields and the panel's controls
    text = json.dumps(states, default=repr)
    assert PASSWORD not in text and PASSPHRASE not in text


def fill_form(picker: TargetPicker, sshd: Sshd, key: Path, tmp_path: Path) -> None:
    picker._add.value = True
    assert picker._form.layout.display is None and picker._secrets.layout.display is None
    picker._host.value = "127.0.0.1"
    picker._user.value = "root"
    picker._port.value = sshd.port
    picker._key_file.value = str(key)
    picker._agent.value = False
    picker._deploy_dir.value = str(tmp_path / "deploy")
    picker._name.value = "lab box"
    picker._python.value = sys.executable
    # typed although the key logs in: they must vanish from the fields all the same
    picker._password.value = PASSWORD
    picker._passphrase.value = PASSPHRASE


def test_form_trust_test_save_connect_and_profile_remotely(
    server: tuple[Sshd, Path], tmp_path: Path, model_path: Path, config_dir: Path
) -> None:
    sshd, key = server
    panel = ActivityPanel(model_path)
    picker = panel.target_picker
    assert picker._selector.value == LOCAL and picker._selector.options == (("localhost", ""),)
    assert picker._secrets.layout.display == "none"
    fill_form(picker, sshd, key, tmp_path)

    picker._test.click()  # the host key is unknown: refused, with a Trust button
    assert picker._password.value == "" and picker._passphrase.value == ""
    assert picker._host_key_row.layout.display is None
    shown = picker._host_key.value
    assert fingerprint_of(sshd.host_key_pub) in shown
    assert f"[127.0.0.1]:{sshd.port}" in shown
    assert picker.check is None and not (config_dir / "known_hosts").exists()

    picker._trust.click()  # trusted and saved; the test goes on: connected, then checked
    assert picker._host_key_row.layout.display == "none"
    kind, blob = sshd.host_key_pub.read_text().split()[:2]
    assert f"[127.0.0.1]:{sshd.port} {kind} {blob}" in (config_dir / "known_hosts").read_text()
    assert "lab box: connected in" in picker._message.value
    assert str((tmp_path / "deploy").resolve()) in picker._message.value
    check = picker.check
    assert check is not None and check.ok and check.target == "lab box"
    items = {row.item: row for row in check.rows}
    assert items["onnxruntime"].status == "ok"
    for row in check.rows:  # the table shows every row
        assert row.item in picker._table.value
    assert "ready" in picker._table.value
    assert panel.target is None  # Test does not switch the panel

    picker._save.click()
    assert connections().names() == ["lab box"]
    saved = (config_dir / "connections.json").read_text()
    assert PASSWORD not in saved and PASSPHRASE not in saved
    assert picker._selector.value == "lab box" and picker._form.layout.display == "none"

    picker._connect.click()
    target = panel.target
    assert isinstance(target, SshTarget) and target.connected
    assert "lab box" in panel._title.value
    assert panel.provider == "CPUExecutionProvider"

    panel._iterations.value = 2
    panel._warmup.value = 0
    panel._optimize.value = False
    panel._dims.value = "batch=2"
    panel._trace.value = str(tmp_path / "remote_trace.json")
    panel._run.click()
    report = panel.wait(60)
    assert panel.status == "done", panel._message.value
    assert report is not None and report.metadata["inputs"]["x"]["shape"] == [2, 256]
    assert set(report.layers["name"]) == {n.name for n in mlp_model(layers=2).graph.node}
    assert (tmp_path / "remote_trace.json").is_file()
    assert target.bytes_uploaded > 0

    assert_no_secret(panel)

    # back to this machine: runs go there again
    picker._selector.value = LOCAL
    assert panel.target is not None and panel.target.name == "local"
    assert "this machine" in panel._title.value
    target.close()


def test_a_saved_connection_takes_a_password_once(
    server: tuple[Sshd, Path], tmp_path: Path, model_path: Path, config_dir: Path
) -> None:
    sshd, key = server
    config_dir.mkdir(parents=True)
    # known_hosts trusts another key for this host: refused as CHANGED until trusted again
    other = keygen(tmp_path / "other_host_key")
    kind, blob = Path(f"{other}.pub").read_text().split()[:2]
    (config_dir / "known_hosts").write_text(f"[127.0.0.1]:{sshd.port} {kind} {blob}\n")
    made = SshTarget("127.0.0.1", "root", sshd.port, key_file=key, agent=False,
                     deploy_dir=str(tmp_path / "deploy"), python=sys.executable)  # fmt: skip
    connections().add(made)
    picker = TargetPicker()
    assert picker._selector.options == (("localhost", ""), (made.name, made.name))
    picker._selector.value = made.name
    assert "press Connect" in picker._message.value
    assert picker.target.name == "local"
    picker._password.value = PASSWORD
    picker._connect.click()
    assert picker._password.value == ""
    assert "CHANGED" in picker._message.value and picker.target.name == "local"
    assert fingerprint_of(sshd.host_key_pub) in picker._host_key.value
    picker._trust.click()
    assert isinstance(picker.target, SshTarget) and picker.target.connected
    assert sshd.known_hosts_line() == (config_dir / "known_hosts").read_text()
    assert picker.check is not None and picker.check.ok
    assert_no_secret_small(picker)
    # an empty host in the form: the error is shown, the target stays
    picker._add.value = True
    picker._host.value = ""
    picker._test.click()
    assert "Host: give the host name" in picker._message.value
    remote = picker.target
    # localhost: Connect shows this machine's table
    picker._selector.value = LOCAL
    picker._connect.click()
    assert picker.target.name == "local" and picker.check is not None
    assert picker.check.target == "local" and "onnxruntime" in picker._table.value
    remote.close()  # type: ignore[attr-defined]


def assert_no_secret_small(root: widgets.Widget) -> None:
    text = json.dumps(all_states(root), default=repr)
    assert PASSWORD not in text


def test_remote_log_is_bounded_and_escaped(server: tuple[Sshd, Path], tmp_path: Path) -> None:
    """A runner on the target that writes more lines than the view keeps, one with markup."""
    sshd, key = server
    runner = tmp_path / "chatty.py"
    runner.write_text(
        "import sys\n"
        f"for i in range({MAX_LOG_LINES + 500}):\n"
        "    print(f'line {i}', file=sys.stderr)\n"
        "print('<script>alert(1)</script>', file=sys.stderr)\n"
    )
    (tmp_path / "kh").write_text(sshd.known_hosts_line())
    target = SshTarget("127.0.0.1", "root", sshd.port, key_file=key, agent=False,
                       known_hosts=tmp_path / "kh", ssh_config=False,
                       deploy_dir=str(tmp_path / "deploy"), python=sys.executable)  # fmt: skip
    with target:
        view = LogView()
        job = target.start(runner, {}, target.make_workdir())
        view.follow(job)
        job.wait(30)
        deadline = time.monotonic() + 5
        while "<script>" not in view.text and time.monotonic() < deadline:
            time.sleep(0.05)
        view.redraw()
    lines = view.text.splitlines()
    assert len(lines) == MAX_LOG_LINES and lines[-1] == "<script>alert(1)</script>"
    assert "<script>" not in view.value and "&lt;script&gt;" in view.value
    assert "501 earlier lines not shown" in view.value


def test_a_dropped_connection_is_a_clear_message(
    server: tuple[Sshd, Path], tmp_path: Path, model_path: Path
) -> None:
    _sshd, key = server
    doomed = Sshd(tmp_path / "doomed", _sshd.authorized_keys).start()
    try:
        (tmp_path / "kh").write_text(doomed.known_hosts_line())
        target = SshTarget("127.0.0.1", "root", doomed.port, key_file=key, agent=False,
                           known_hosts=tmp_path / "kh", ssh_config=False,
                           deploy_dir=str(tmp_path / "deploy"), python=sys.executable)  # fmt: skip
        big = tmp_path / "big.onnx"
        onnx.save(mlp_model(hidden=512, layers=8), big)
        panel = ActivityPanel(big, target=target)
        assert panel.target_picker._selector.value == target.name
        panel._iterations.value = 1_000_000
        panel._trace.value = str(tmp_path / "never.json")
        timing = threading.Event()
        panel.run()
        assert panel.job is not None
        panel.job.add_listener(lambda p: timing.set() if p.phase == "latency" else None)
        assert timing.wait(30), panel.job.progress
        assert panel.target_picker._selector.disabled  # no switching during a run
        doomed.kill9()
        panel.wait(15)
        assert panel.status == "failed"
        assert isinstance(panel.error, TargetLostError)
        assert "Lost the connection to" in panel._message.value
        assert "Press Connect" in panel._message.value
        assert not panel.target_picker._connect.disabled
    finally:
        doomed.stop()
