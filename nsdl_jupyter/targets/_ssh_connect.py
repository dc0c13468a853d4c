"""Opening an SSH connection with paramiko: ssh_config, ProxyJump chains, ProxyCommand, host
keys and authentication.

A chain is a list of hops; the first is reached by TCP (or through a ProxyCommand process),
each next one through a `direct-tcpip` channel of the previous hop, as OpenSSH's ProxyJump
does. Every hop's host key is checked against known_hosts and every hop authenticates with the
same credentials. A ProxyCommand is an argument list run without a shell; its stdin and stdout
are one end of a socket pair, so paramiko reads it like any socket.
"""

from __future__ import annotations

import getpass
import os
import shlex
import socket
import subprocess
import tempfile
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from nsdl_jupyter._process import end_session
from nsdl_jupyter.targets._errors import (
    HostKeyError,
    TargetAuthError,
    TargetConnectionError,
    TargetSettingsError,
)
from nsdl_jupyter.targets._hostkeys import KnownHosts, fingerprint, host_key_name

PROXY_GRACE_S = 1.0  # closing: SIGTERM to the ProxyCommand's session, SIGKILL after this
KEEPALIVE_S = 5  # a keepalive every so often keeps NAT entries open on long runs


def _import_paramiko() -> Any:
    try:
        import paramiko
    except ImportError as exc:
        raise ImportError(
            "SSH targets need paramiko: pip install 'nsdl_jupyter[ssh]' (or pip install paramiko)"
        ) from exc
    return paramiko


@dataclass(frozen=True)
class Hop:
    """One host of a chain, with ssh_config applied."""

    alias: str  # what the user wrote
    hostname: str
    port: int
    user: str
    key_files: tuple[str, ...] = ()  # IdentityFile entries of ssh_config (tried if present)
    proxy_command: tuple[str, ...] = ()  # only on the first hop

    @property
    def key_name(self) -> str:
        return host_key_name(self.hostname, self.port)

    @property
    def label(self) -> str:
        return f"{self.user}@{self.hostname}:{self.port}"


@dataclass(frozen=True)
class Credentials:
    """Secrets stay here, in memory; repr never shows them."""

    key_file: str | None = None
    passphrase: str | None = field(default=None, repr=False)
    password: str | None = field(default=None, repr=False)
    agent: bool = True


def load_ssh_config(ssh_config: bool | str | os.PathLike[str]) -> Any:
    """The parsed ssh_config (`True`: ~/.ssh/config when it exists), or None."""
    paramiko = _import_paramiko()
    if ssh_config is False:
        return None
    path = Path("~/.ssh/config" if ssh_config is True else ssh_config).expanduser()
    if not path.is_file():
        if ssh_config is True:
            return None
        raise TargetSettingsError(f"ssh_config file {path} does not exist: fix the path")
    return paramiko.SSHConfig.from_path(str(path))


def proxy_argv(command: str | Sequence[str]) -> tuple[str, ...]:
    """A ProxyCommand as an argument list: a string is split like a shell would (no shell ever
    runs it, so pipes and redirections are not available)."""
    if isinstance(command, str):
        argv = tuple(shlex.split(command))
    elif isinstance(command, Sequence):
        argv = tuple(command)
    else:
        argv = ()
    if not argv or not all(isinstance(arg, str) for arg in argv):
        raise TargetSettingsError("proxy_command must be a non-empty list of strings (or a str)")
    return argv


def resolve_hop(
    alias: str,
    *,
    user: str | None,
    port: int | None,
    config: Any,
    proxy_command: str | Sequence[str] | None = None,
) -> Hop:
    """`alias` with ssh_config's HostName, User, Port, IdentityFile and ProxyCommand applied;
    explicit arguments win."""
    entry: dict[str, Any] = dict(config.lookup(alias)) if config is not None else {}
    hostname = str(entry.get("hostname", alias))
    final_port = port if port is not None else int(entry.get("port", 22))
    if isinstance(final_port, bool) or not isinstance(final_port, int):
        raise TargetSettingsError(
            f"port of {alias} must be an int, e.g. port=22, not {type(final_port).__name__}"
        )
    if not 0 < final_port < 65536:
        raise TargetSettingsError(f"port {final_port} of {alias} is out of range 1..65535")
    command: Sequence[str] | str | None = proxy_command
    if command is None and str(entry.get("proxycommand", "none")).lower() != "none":
        command = str(entry["proxycommand"])
    return Hop(
        alias=alias,
        hostname=hostname,
        port=final_port,
        user=user or str(entry.get("user") or getpass.getuser()),
        key_files=tuple(str(Path(p).expanduser()) for p in entry.get("identityfile", [])),
        proxy_command=proxy_argv(command) if command else (),
    )


def parse_jump(spec: str) -> list[tuple[str, str | None, int | None]]:
    """`[user@]host[:port][,...]` -> [(host, user, port)]."""
    hops: list[tuple[str, str | None, int | None]] = []
    for raw in spec.split(","):
        part = raw.strip().removeprefix("ssh://")
        user, _, hostport = part.rpartition("@")
        host, port = hostport, None
        if hostport.startswith("["):  # [ipv6]:port
            host, _, rest = hostport[1:].partition("]")
            port = rest.removeprefix(":") or None
        elif hostport.count(":") == 1:
            host, port = hostport.split(":")
        if not host or (port is not None and not port.isdigit()):
            raise TargetSettingsError(
                f"ProxyJump hop {raw!r} is not [user@]host[:port]; separate hops with ','"
            )
        hops.append((host, user or None, int(port) if port else None))
    return hops


class ProxyProcess:
    """A ProxyCommand child: its stdin/stdout are one end of a socket pair, its stderr a file."""

    def __init__(self, argv: Sequence[str]) -> None:
        self.argv = list(argv)
        ours, theirs = socket.socketpair()
        self._stderr: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115 (closed in close())
        try:
            self.process = subprocess.Popen(
                self.argv,
                stdin=theirs.fileno(),
                stdout=theirs.fileno(),
                stderr=self._stderr,
                start_new_session=True,
            )
        except OSError as exc:
            ours.close()
            self._stderr.close()
            raise TargetConnectionError(
                f"the ProxyCommand {self.argv[0]!r} cannot start ({exc.strerror}): give the "
                "full path of an installed program"
            ) from None
        finally:
            theirs.close()
        self.socket = ours

    def stderr_tail(self) -> str:
        self._stderr.seek(0)
        return self._stderr.read().decode("utf-8", "replace").strip()[-2000:]

    def close(self) -> None:
        self.socket.close()
        if self.process.poll() is None:
            end_session(self.process, PROXY_GRACE_S)
        self.process.poll()
        self._stderr.close()


class Connection:
    """An authenticated chain: `transport` is the last hop's, the target's."""

    def __init__(self) -> None:
        self.transports: list[Any] = []
        self.proxy: ProxyProcess | None = None

    @property
    def transport(self) -> Any:
        return self.transports[-1]

    @property
    def active(self) -> bool:
        return bool(self.transports) and bool(self.transport.is_active())

    def close(self) -> None:
        for transport in reversed(self.transports):
            transport.close()
        if self.proxy is not None:
            self.proxy.close()


def connect(
    chain: Sequence[Hop],
    credentials: Credentials,
    known_hosts: KnownHosts,
    *,
    timeout: float,
    refused: dict[str, tuple[str, Any]],
) -> Connection:
    """Open and authenticate every hop of `chain`. A host key that known_hosts does not trust
    is recorded in `refused` (fingerprint -> (known_hosts name, key)) and raised."""
    paramiko = _import_paramiko()
    connection = Connection()
    try:
        for index, hop in enumerate(chain):
            sock = _open_socket(hop, connection, index, timeout)
            transport = paramiko.Transport(sock)
            connection.transports.append(transport)
            preferred = known_hosts.key_types(hop.key_name)
            if preferred:
                options = transport.get_security_options()
                options.key_types = [
                    *[t for t in options.key_types if t in preferred],
                    *[t for t in options.key_types if t not in preferred],
                ]
            _handshake(paramiko, transport, hop, connection, timeout)
            key = transport.get_remote_server_key()
            try:
                known_hosts.check(hop.key_name, key)
            except HostKeyError:
                refused[fingerprint(key)] = (hop.key_name, key)
                raise
            _authenticate(paramiko, transport, hop, credentials)
        connection.transport.set_keepalive(KEEPALIVE_S)
    except BaseException:
        connection.close()
        raise
    return connection


def _handshake(
    paramiko: Any, transport: Any, hop: Hop, connection: Connection, timeout: float
) -> None:
    """The SSH handshake with `hop`, finished within `timeout` seconds. paramiko's own
    `start_client(timeout=)` returns silently when the time is up, and the next call then
    fails with "No existing session"."""
    done = threading.Event()
    try:
        transport.start_client(event=done)
    except (paramiko.SSHException, OSError, EOFError) as exc:
        raise TargetConnectionError(
            f"no SSH session with {hop.label}: {_reason(exc, connection)}"
        ) from None
    if not done.wait(timeout):
        raise TargetConnectionError(
            f"{hop.label} did not finish the SSH handshake within connect_timeout={timeout:g} s: "
            "check that an SSH server answers on that port (not another service), or give "
            "a larger connect_timeout= for a slow link"
        )
    if not transport.is_active():
        failure = transport.get_exception() or paramiko.SSHException("negotiation failed")
        raise TargetConnectionError(
            f"no SSH session with {hop.label}: {_reason(failure, connection)}"
        )


def _reason(exc: BaseException, connection: Connection) -> str:
    text = str(exc) or type(exc).__name__
    if connection.proxy is not None:
        tail = connection.proxy.stderr_tail()
        if tail:
            text += f"; the ProxyCommand said: {tail}"
    return text


def _open_socket(hop: Hop, connection: Connection, index: int, timeout: float) -> Any:
    if index > 0:
        previous = connection.transports[-1]
        try:
            return previous.open_channel(
                "direct-tcpip", (hop.hostname, hop.port), ("127.0.0.1", 0), timeout=timeout
            )
        except Exception as exc:  # paramiko's ChannelException, SSHException, EOFError
            raise TargetConnectionError(
                f"the jump host {connection.transports[-1].getpeername()!r} could not open a "
                f"connection to {hop.hostname}:{hop.port} ({exc}): check that the jump host "
                "allows TCP forwarding (AllowTcpForwarding) and reaches that address"
            ) from None
    if hop.proxy_command:
        argv = [
            arg.replace("%h", hop.hostname).replace("%p", str(hop.port)).replace("%r", hop.user)
            for arg in hop.proxy_command
        ]
        connection.proxy = ProxyProcess(argv)
        return connection.proxy.socket
    try:
        sock = socket.create_connection((hop.hostname, hop.port), timeout=timeout)
    except OSError as exc:
        raise TargetConnectionError(
            f"cannot reach {hop.hostname}:{hop.port} ({exc.strerror or exc}): check the host "
            "name, the port and that sshd runs there"
        ) from None
    # SSH sends small packets that wait for answers: without this, Nagle's algorithm and
    # delayed ACKs add tens of milliseconds to every SFTP round trip.
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def _load_key(paramiko: Any, path: str, passphrase: str | None) -> Any:
    try:
        # bytes: paramiko hands the passphrase to cryptography, which takes only bytes
        return paramiko.PKey.from_path(path, passphrase.encode() if passphrase else None)
    except TypeError as exc:  # paramiko lets cryptography's "password was not provided" through
        if passphrase is not None and "not encrypted" in str(exc):
            # a passphrase typed for a plain key (one form for several keys): not needed
            return paramiko.PKey.from_path(path, None)
        if passphrase is not None or "password" not in str(exc):
            raise
        raise TargetAuthError(
            f"the key file {path} is encrypted: pass passphrase= (e.g. getpass.getpass())"
        ) from None
    except paramiko.PasswordRequiredException:
        raise TargetAuthError(
            f"the key file {path} is encrypted: pass passphrase= (e.g. getpass.getpass())"
        ) from None
    except (paramiko.SSHException, ValueError) as exc:
        detail = "wrong passphrase?" if passphrase else str(exc)
        raise TargetAuthError(f"cannot read the key file {path}: {detail}") from None
    except OSError as exc:
        raise TargetAuthError(f"cannot read the key file {path}: {exc.strerror}") from None


def _authenticate(paramiko: Any, transport: Any, hop: Hop, credentials: Credentials) -> None:
    tried: list[str] = []

    def offer(what: str, attempt: Any) -> bool:
        try:
            attempt()
        except paramiko.BadAuthenticationType:
            tried.append(f"{what} (not allowed by the server)")
            return False
        except paramiko.AuthenticationException:
            tried.append(what)
            return False
        except (paramiko.SSHException, OSError, EOFError) as exc:
            raise TargetConnectionError(f"{hop.label} dropped during login ({exc})") from None
        return bool(transport.is_authenticated())

    key_files = [credentials.key_file] if credentials.key_file else []
    key_files += [p for p in hop.key_files if p not in key_files and Path(p).is_file()]
    for path in key_files:
        key = _load_key(paramiko, path, credentials.passphrase)
        if offer(f"key {path}", lambda k=key: transport.auth_publickey(hop.user, k)):
            return
    if credentials.agent and os.environ.get("SSH_AUTH_SOCK"):
        agent = paramiko.Agent()
        try:
            for key in agent.get_keys():
                if offer("agent key", lambda k=key: transport.auth_publickey(hop.user, k)):
                    return
        finally:
            agent.close()
    if credentials.password is not None and offer(
        "password", lambda: transport.auth_password(hop.user, credentials.password)
    ):
        return
    offered = ", ".join(tried) or "nothing (no key_file, no agent keys, no password)"
    raise TargetAuthError(
        f"{hop.label} refused the login; offered: {offered}. Give key_file= (and passphrase=), "
        "load the key into ssh-agent, or give password= (e.g. getpass.getpass())"
    )
