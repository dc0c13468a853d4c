"""Real OpenSSH servers on 127.0.0.1 for the SSH target tests.

Each `Sshd` has its own host key, config, authorized_keys, log and a free port; nothing of the
system's sshd is used or changed (only /run/sshd, sshd's privilege separation folder, is made
when missing). Root may log in with a key; the password tests use a dedicated user that the
fixture creates and deletes.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SSHD = Path("/usr/sbin/sshd")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def keygen(path: Path, *, passphrase: str = "", kind: str = "ed25519") -> Path:
    subprocess.run(
        ["ssh-keygen", "-q", "-t", kind, "-N", passphrase, "-C", "nsdl-test", "-f", str(path)],
        check=True,
    )
    return path


def fingerprint_of(pub: Path) -> str:
    """The fingerprint OpenSSH shows for a public key file."""
    out = subprocess.run(
        ["ssh-keygen", "-l", "-E", "sha256", "-f", str(pub)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return out.split()[1]


class PortTakenError(RuntimeError):
    """sshd could not bind its port: another process holds it."""


@dataclass
class Sshd:
    folder: Path
    authorized_keys: Path
    password_auth: bool = True
    sftp: bool = True  # False: no SFTP subsystem, as on hardened servers and minimal containers
    env: dict[str, str] = field(default_factory=dict)  # set in each session (sshd's SetEnv)
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None

    @property
    def host_key_pub(self) -> Path:
        return self.folder / "host_key.pub"

    @property
    def log(self) -> Path:
        return self.folder / "sshd.log"

    def known_hosts_line(self) -> str:
        kind, blob = self.host_key_pub.read_text().split()[:2]
        return f"[127.0.0.1]:{self.port} {kind} {blob}\n"

    def start(self) -> Sshd:
        """Start it on `port`; a port that another process took between `free_port()` and
        sshd's bind (parallel test workers pick ports at once) is replaced by a fresh one."""
        for _attempt in range(5):
            try:
                return self._start()
            except PortTakenError:
                self.port = free_port()
        raise RuntimeError(f"sshd found no free port: {self.log.read_text()[-2000:]}")

    def _start(self) -> Sshd:
        self.folder.mkdir(parents=True, exist_ok=True)
        if not (self.folder / "host_key").exists():
            keygen(self.folder / "host_key")
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
        config = self.folder / "sshd_config"
        config.write_text(
            "\n".join(
                [
                    f"Port {self.port}",
                    "ListenAddress 127.0.0.1",
                    f"HostKey {self.folder / 'host_key'}",
                    f"PidFile {self.folder / 'sshd.pid'}",
                    f"AuthorizedKeysFile {self.authorized_keys}",
                    "StrictModes no",  # the test folders live under /tmp (world-writable)
                    "PermitRootLogin yes",
                    "PubkeyAuthentication yes",
                    f"PasswordAuthentication {'yes' if self.password_auth else 'no'}",
                    "KbdInteractiveAuthentication no",
                    "UsePAM no",
                    "AllowTcpForwarding yes",
                    "LogLevel DEBUG1",
                    *(["Subsystem sftp internal-sftp"] if self.sftp else []),
                    *(
                        [f"SetEnv {' '.join(f'{k}={v}' for k, v in self.env.items())}"]
                        * bool(self.env)
                    ),
                    "",
                ]
            )
        )
        logged = self.log.stat().st_size if self.log.exists() else 0
        self.process = subprocess.Popen(
            [str(SSHD), "-D", "-f", str(config), "-E", str(self.log)],
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        pid_file = self.folder / "sshd.pid"
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                log = self.log.read_text()[logged:]
                if "Address already in use" in log:
                    raise PortTakenError(self.port)
                raise RuntimeError(f"sshd exited: {log[-2000:]}")
            # sshd writes its pid file once it holds the port: only then is a banner on the
            # port ours (not another worker's server that got the same port first)
            try:
                ours = pid_file.read_text().strip() == str(self.process.pid)
            except OSError:
                ours = False
            try:
                if ours:
                    with socket.create_connection(("127.0.0.1", self.port), timeout=1) as s:
                        if s.recv(4).startswith(b"SSH-"):
                            return self
            except OSError:
                pass
            time.sleep(0.05)
        raise RuntimeError(f"sshd did not answer on port {self.port}")

    def session_pids(self) -> list[int]:
        """The sshd processes of this server: the listener and its per-connection children."""
        assert self.process is not None
        children: dict[int, list[int]] = {}
        names: dict[int, str] = {}
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                text = stat.read_text()
            except OSError:
                continue
            pid = int(stat.parent.name)
            names[pid] = text.split("(", 1)[1].rsplit(")", 1)[0]
            children.setdefault(int(text.rsplit(")", 1)[1].split()[1]), []).append(pid)
        found, todo = [self.process.pid], [self.process.pid]
        while todo:
            for child in children.get(todo.pop(), []):
                todo.append(child)
                if names.get(child) == "sshd":
                    found.append(child)
        return found

    def kill9(self) -> None:
        """SIGKILL the listener and every sshd process of its connections at once."""
        for pid in self.session_pids():
            os.kill(pid, signal.SIGKILL)
        assert self.process is not None
        self.process.wait(5)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(5)


@dataclass
class SshLab:
    """Real sshd servers on 127.0.0.1 that root reaches with one key, and SshTargets for them."""

    folder: Path
    key: Path
    servers: list[Sshd]

    @property
    def server(self) -> Sshd:
        return self.servers[0]

    def target(self, server: Sshd | None = None, **settings: Any) -> Any:
        """An SshTarget for `server` (default: the first), its host key known, deploying into
        a folder of its own under the lab, with this Python; `settings` override."""
        from nsdl_jupyter.targets import SshTarget

        server = server or self.server
        known = self.folder / f"known_hosts-{server.port}"
        known.write_text(server.known_hosts_line())
        return SshTarget(
            "127.0.0.1",
            **{
                "user": "root",
                "port": server.port,
                "key_file": self.key,
                "known_hosts": known,
                "ssh_config": False,
                "deploy_dir": str(self.folder / f"deploy-{server.port}"),
                "python": sys.executable,
                **settings,
            },
        )


@contextmanager
def ssh_lab(folder: Path, *servers: dict[str, Any]) -> Iterator[SshLab]:
    """Start one sshd per settings dict (Sshd's fields: `sftp`, `env`; key login only, by
    default one server), stop them all on exit."""
    folder.mkdir(parents=True, exist_ok=True)
    key = keygen(folder / "id")
    authorized = folder / "authorized_keys"
    authorized.write_text(Path(f"{key}.pub").read_text())
    started: list[Sshd] = []
    try:
        for index, settings in enumerate(servers or ({},)):
            server = Sshd(
                folder / f"sshd-{index}", authorized, **{"password_auth": False, **settings}
            )
            started.append(server.start())
        yield SshLab(folder, key, started)
    finally:
        for server in started:
            server.stop()
