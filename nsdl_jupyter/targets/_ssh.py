"""SshTarget: run runner modules on another machine over SSH (paramiko).

One connection per target, opened on first use and kept. Files are deployed into a cache in
the deployment directory keyed by sha256 (`files/<hash of a group of files>/<name>`), so a
second run uploads nothing; each job gets `jobs/<random>/`. The runner runs under `/bin/sh`,
leader of the process group sshd made for the command; the shell's first line names that group
with the job's token (`_wire`). `cancel()` signals only that group, and the runner, started
with `NSDL_STDIN_WATCHDOG=1`, ends the group itself when its stdin closes.
Passwords and passphrases live only in this object's memory; nothing writes or shows them.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import posixpath
import secrets
import shlex
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path, PurePosixPath
from typing import Any

from nsdl_jupyter._process import LineSplitter
from nsdl_jupyter.targets._base import (
    CollectingJob,
    EventListener,
    JobResult,
    MessageCollector,
)
from nsdl_jupyter.targets._errors import (
    DeployDirError,
    TargetConnectionError,
    TargetError,
    TargetSettingsError,
)
from nsdl_jupyter.targets._hostkeys import KnownHosts, default_known_hosts, user_known_hosts
from nsdl_jupyter.targets._runtimes import RuntimePlan, WheelCache, check_requirements
from nsdl_jupyter.targets._ssh_caches import TargetCaches
from nsdl_jupyter.targets._ssh_connect import (
    Connection,
    Credentials,
    Hop,
    _import_paramiko,
    connect,
    load_ssh_config,
    parse_jump,
    proxy_argv,
    resolve_hop,
)
from nsdl_jupyter.targets._ssh_files import (
    REMOVE,
    Progress,
    RemoteFiles,
    SftpFiles,
    StreamFiles,
    sh_command,
    sha256_file,
)
from nsdl_jupyter.targets._target_cache import check_limit
from nsdl_jupyter.targets._wire import (
    MAX_MESSAGE_BYTES,
    RUNNER_PREFIX,
    pid_line,
    read_pid_line,
)

TERMINATE_GRACE_S = 2.0  # cancel: SIGTERM to the remote group, SIGKILL after this
LIVENESS_INTERVAL_S = 2.0  # during a run, the server is asked for a keepalive answer this often
LIVENESS_TIMEOUT_S = 6.0  # a link silent this long is closed: the job ends as lost
COMMAND_TIMEOUT_S = 60.0  # a short remote command (mkdir, rm, kill)
INLINE_REQUEST_BYTES = 32 << 10  # without SFTP, a request up to this size goes in the launcher
EXIT_STATUS_WAIT_S = 5.0  # after the runner's output ends, how long its exit status may take


def _check_deploy_dir(deploy_dir: object) -> None:
    """A folder name as typed: spaces at its ends or control characters (a newline from a
    pasted value) would make it another folder on the target, so they are refused."""
    if not isinstance(deploy_dir, str) or not deploy_dir.strip():
        raise TargetSettingsError("deploy_dir must be a folder path: e.g. '~/.nsdl'")
    if deploy_dir != deploy_dir.strip() or any(ord(c) < 32 or ord(c) == 127 for c in deploy_dir):
        raise TargetSettingsError(
            f"deploy_dir {deploy_dir!r} has spaces at its ends or control characters "
            "(a newline?): give the folder's path alone, e.g. '~/.nsdl'"
        )


class SshTarget(TargetCaches):
    """A machine reached over SSH. Paths in requests are paths on that machine.

    `host` may be an ssh_config alias (HostName, User, Port, IdentityFile, ProxyJump and
    ProxyCommand apply unless given here). Credentials are tried in order: `key_file` (with
    `passphrase`), ssh_config's IdentityFile, the agent, `password`. `proxy_jump` is
    `[user@]host[:port][,...]`; `proxy_command` an argument list (`%h`, `%p`, `%r` replaced)
    run without a shell. Host keys are checked against `known_hosts` (default: the package's
    config dir); an unknown one is refused until `trust_host_key(fingerprint)`.
    """

    def __init__(
        self,
        host: str,
        user: str | None = None,
        port: int | None = None,
        *,
        password: str | None = None,
        key_file: str | os.PathLike[str] | None = None,
        passphrase: str | None = None,
        agent: bool = True,
        deploy_dir: str = "~/.nsdl",
        name: str | None = None,
        proxy_jump: str | None = None,
        proxy_command: str | Sequence[str] | None = None,
        ssh_config: bool | str | os.PathLike[str] = True,
        known_hosts: str | os.PathLike[str] | None = None,
        python: str = "python3",
        runtimes: str | Sequence[str] | None = None,
        cache_limit_bytes: int | None = None,
        connect_timeout: float = 15.0,
    ) -> None:
        if not host or not isinstance(host, str):
            raise TargetSettingsError("host must be a host name, an address or an ssh_config alias")
        _check_deploy_dir(deploy_dir)
        if isinstance(connect_timeout, bool) or not isinstance(connect_timeout, (int, float)):
            raise TargetSettingsError("connect_timeout must be a number of seconds, e.g. 15")
        if not 0 < connect_timeout < float("inf"):
            raise TargetSettingsError(f"connect_timeout={connect_timeout} must be > 0 seconds")
        self.host = host
        config = load_ssh_config(ssh_config)
        self._hop = resolve_hop(
            host,
            user=user,
            port=port,
            config=config,
            proxy_command=proxy_argv(proxy_command) if proxy_command is not None else None,
        )
        jump = proxy_jump
        if jump is None and config is not None:
            jump = config.lookup(host).get("proxyjump")
        self._jumps: list[Hop] = []
        if jump and str(jump).lower() != "none":
            for hop_host, hop_user, hop_port in parse_jump(str(jump)):
                self._jumps.append(
                    resolve_hop(hop_host, user=hop_user, port=hop_port, config=config)
                )
        if self._jumps:  # the first hop takes the ProxyCommand, as OpenSSH does
            command = self._jumps[0].proxy_command or self._hop.proxy_command
            self._jumps[0] = dataclasses.replace(self._jumps[0], proxy_command=command)
            self._hop = dataclasses.replace(self._hop, proxy_command=())
        self.user = self._hop.user
        self.port = self._hop.port
        self.name = name or f"{self.user}@{host}:{self.port}"
        self.deploy_dir = deploy_dir
        self.python = python
        self.runtimes = check_requirements(runtimes)
        self.cache_limit_bytes = check_limit(cache_limit_bytes)
        self.wheel_cache = WheelCache()
        self._plan: RuntimePlan | None = None  # of this connection
        self.agent = agent
        self.key_file = str(Path(key_file).expanduser()) if key_file is not None else None
        self.proxy_jump = proxy_jump
        self.proxy_command = list(proxy_argv(proxy_command)) if proxy_command else None
        self.ssh_config = ssh_config if isinstance(ssh_config, bool) else str(ssh_config)
        self.connect_timeout = connect_timeout
        self._known_hosts_setting = None if known_hosts is None else str(known_hosts)
        self.known_hosts = KnownHosts(
            Path(known_hosts).expanduser() if known_hosts is not None else default_known_hosts(),
            read_only=() if known_hosts is not None else (user_known_hosts(),),
        )
        self._credentials = Credentials(self.key_file, passphrase, password, agent)
        self._refused: dict[str, tuple[str, Any]] = {}
        self._connection: Connection | None = None
        self._files: RemoteFiles | None = None
        self._lock = threading.RLock()
        self._deploy_root = ""
        self._deployed: set[str] = set()  # remote paths known to exist in this connection
        self._to_remove: list[str] = []  # job folders the next launcher removes (no SFTP)
        self.bytes_uploaded = 0
        self.bytes_downloaded = 0
        # told (remote path, bytes there, total) as an upload goes: a progress bar's hook
        self.upload_progress: Progress | None = None

    def __repr__(self) -> str:
        return f"SshTarget({self.name!r})"

    def settings(self) -> dict[str, Any]:
        """Everything needed to make this target again, except secrets (for saved connections)."""
        return {
            "name": self.name,
            "host": self.host,
            "user": self.user,
            "port": self.port,
            "key_file": self.key_file,
            "agent": self.agent,
            "deploy_dir": self.deploy_dir,
            "proxy_jump": self.proxy_jump,
            "proxy_command": self.proxy_command,
            "ssh_config": self.ssh_config,
            "known_hosts": self._known_hosts_setting,
            "python": self.python,
            "runtimes": list(self.runtimes) or None,
            "cache_limit_bytes": self.cache_limit_bytes,
            "connect_timeout": self.connect_timeout,
        }

    # ---- connection -----------------------------------------------------------------------

    @property
    def deploy_root(self) -> str:
        """The deploy directory's absolute path on the target ('' before connecting)."""
        return self._deploy_root

    @property
    def connected(self) -> bool:
        return self._connection is not None and self._connection.active

    def connect(self) -> SshTarget:
        """Open the connection now (else the first use does); checks the deploy directory."""
        with self._lock:
            if self.connected:
                return self
            self.close()
            connection = connect(
                [*self._jumps, self._hop],
                self._credentials,
                self.known_hosts,
                timeout=self.connect_timeout,
                refused=self._refused,
            )
            self._connection = connection
            try:
                self._files = self._open_files(connection)
                self._deploy_root = self._prepare_deploy_dir()
            except BaseException:
                self.close()
                raise
            return self

    def close(self) -> None:
        """Close the connection (a running job's remote runner then ends itself)."""
        with self._lock:
            if self._to_remove and self.connected:
                with suppress(Exception):  # best effort: the folders stay under jobs/
                    self.run_command(sh_command(REMOVE, *self._to_remove))
            self._to_remove = []
            # on a link that just dropped, closing may raise what the link said (EOFError):
            # the connection is gone either way
            if self._files is not None:
                with suppress(Exception):
                    self._files.close()
            if self._connection is not None:
                with suppress(Exception):
                    self._connection.close()
            self._files = None
            self._connection = None
            self._deployed.clear()
            self._plan = None

    def __enter__(self) -> SshTarget:
        return self.connect()

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def trust_host_key(self, fingerprint_text: str) -> None:
        """Trust the host key with this fingerprint (as shown by the refusal), for this host
        or a jump host of it; it is saved in known_hosts."""
        if fingerprint_text not in self._refused:
            # Not seen yet: a connection attempt shows the keys on the way.
            with suppress(TargetError):
                self.connect()
        if fingerprint_text not in self._refused:
            seen = ", ".join(self._refused) or "none refused"
            raise TargetError(
                f"no host on the way to {self.name} shows the key {fingerprint_text} (keys "
                f"refused so far: {seen}): copy the fingerprint from the refusal message"
            )
        key_name, key = self._refused.pop(fingerprint_text)
        self.known_hosts.trust(key_name, key)

    def _transport(self) -> Any:
        self.connect()
        assert self._connection is not None
        return self._connection.transport

    def _open_files(self, connection: Connection) -> RemoteFiles:
        """SFTP where the server offers it; else files stream over exec channels."""
        files: RemoteFiles
        try:
            files = SftpFiles(connection.transport.open_sftp_client(), self.run_command)
        except _import_paramiko().SSHException:  # 'Channel closed.': no SFTP subsystem
            if not connection.active:
                raise
            files = StreamFiles(
                lambda: connection.transport.open_session(timeout=self.connect_timeout),
                self.name,
                COMMAND_TIMEOUT_S,
            )
        files.progress = self._upload_progressed
        return files

    def _upload_progressed(self, remote_path: str, sent: int, total: int) -> None:
        if self.upload_progress is not None:
            self.upload_progress(remote_path, sent, total)

    @property
    def transfer(self) -> str:
        """How files travel: 'sftp', 'stream' (no SFTP on the server) or '' (not connected)."""
        return self._files.kind if self._files is not None else ""

    @contextmanager
    def _remote_files(self) -> Iterator[RemoteFiles]:
        with self._lock:
            self.connect()
            assert self._files is not None
            try:
                yield self._files
            except (OSError, EOFError, _import_paramiko().SSHException, TargetError) as exc:
                # paramiko says a dropped link with any of these, mid-transfer; EOFError and
                # SSHException can come before the transport marks itself inactive
                link = isinstance(exc, (EOFError, _import_paramiko().SSHException))
                if link:
                    self.close()
                if not self.connected and not isinstance(exc, TargetConnectionError):
                    raise TargetConnectionError(
                        f"the connection to {self.name} dropped ({exc or type(exc).__name__});"
                        " run again to reconnect (a big upload resumes where it stopped)"
                    ) from None
                raise

    def run_command(self, command: str, timeout: float = COMMAND_TIMEOUT_S) -> tuple[int, str]:
        """Run a shell command on the target; its exit code and output (stdout + stderr)."""
        channel = self._transport().open_session(timeout=self.connect_timeout)
        try:
            channel.settimeout(timeout)
            channel.set_combine_stderr(True)
            channel.exec_command(command)
            chunks = []
            try:
                for chunk in iter(lambda: channel.recv(65536), b""):
                    chunks.append(chunk)
            except TimeoutError:
                raise TargetError(
                    f"{self.name}: `{command}` did not finish within {timeout} s"
                ) from None
            return int(channel.recv_exit_status()), b"".join(chunks).decode("utf-8", "replace")
        finally:
            channel.close()

    def _prepare_deploy_dir(self) -> str:
        path = self.deploy_dir
        if path == "~" or path.startswith("~/"):
            path = path[2:] or "."
        assert self._files is not None
        try:
            return self._files.prepare_dir(path)
        except OSError as exc:
            raise DeployDirError(
                f"the deploy directory {self.deploy_dir} on {self.name} cannot be created or "
                f"written by {self.user} ({exc}): give deploy_dir= a folder that user can "
                "write (relative paths are under its home)"
            ) from None

    # ---- files ----------------------------------------------------------------------------

    def _ensure_files(self, files: Mapping[str, Path]) -> None:
        """Upload each local file to its remote path (the key) unless it is there (atomic:
        temp + rename); one question to the target for all of them."""
        todo = [remote for remote in files if remote not in self._deployed]
        if not todo:
            return
        with self._remote_files() as remote_files:
            missing = remote_files.missing(todo)
            for remote in missing:
                self.bytes_uploaded += remote_files.upload(Path(files[remote]), remote)
        self._deployed.update(todo)
        if missing and self.cache_limit_bytes is not None:
            self.clear_cache(keep_bytes=self.cache_limit_bytes, keep_in_use=True)

    def deploy_files(self, files: Mapping[str, Path], kind: str = "files") -> str:
        """Upload files that belong together (a runner and what it loads beside it, a model and
        its external data) into one folder named by the hash of their names and contents, each
        only when that folder lacks it; returns the folder on the target."""
        self.connect()
        digest = hashlib.sha256()
        for relative, path in sorted(files.items()):
            parts = PurePosixPath(relative).parts
            if not parts or ".." in parts or PurePosixPath(relative).is_absolute():
                raise TargetSettingsError(f"{relative!r} must be a relative path inside its folder")
            digest.update(relative.encode() + b"\0" + sha256_file(path).encode() + b"\0")
        folder = posixpath.join(self._deploy_root, kind, digest.hexdigest()[:32])
        self._ensure_files({posixpath.join(folder, rel): Path(p) for rel, p in files.items()})
        return folder

    # ---- Target -----------------------------------------------------------------------------

    def make_workdir(self) -> str:
        """A fresh folder under jobs/. Without SFTP, where each command costs sshd a process,
        the runner's launcher makes it (a folder no runner used needs no removal either)."""
        with self._remote_files() as files:
            jobs = posixpath.join(self._deploy_root, "jobs")
            workdir = posixpath.join(jobs, f"job-{time.strftime('%Y%m%d-%H%M%S')}-")
            workdir += secrets.token_hex(4)
            if files.kind != "stream":
                files.makedirs(workdir)
            return workdir

    def put(
        self, local_path: Path, workdir: str, *, companions: Mapping[str, Path] | None = None
    ) -> str:
        """Deploy `local_path` (with `companions`, by their paths relative to it) into the
        hash-keyed cache, uploading only what is new there; the runner reads it from there."""
        local_path = Path(local_path)
        folder = self.deploy_files({local_path.name: local_path, **(companions or {})})
        return posixpath.join(folder, local_path.name)

    def get(self, target_path: str, local_path: Path) -> None:
        self.get_many({target_path: local_path})

    def get_many(self, files: Mapping[str, Path]) -> None:
        """Without SFTP, all of them in one command (each costs sshd a process); each lands
        (atomically) only once every one has arrived and checked out."""
        wanted = {remote: Path(local) for remote, local in files.items()}
        partials = {
            remote: local.with_name(f".{local.name}.partial") for remote, local in wanted.items()
        }
        try:
            for local in wanted.values():
                local.parent.mkdir(parents=True, exist_ok=True)
            with self._remote_files() as remote_files:
                self.bytes_downloaded += remote_files.download(list(partials.items()))
            for remote, local in wanted.items():
                os.replace(partials[remote], local)
        finally:
            for partial in partials.values():
                partial.unlink(missing_ok=True)

    def remove_workdir(self, workdir: str) -> None:
        """Best effort: with the connection gone, the folder stays (under jobs/). Without SFTP
        the next runner's launcher (or close()) removes it: a command less per run."""
        if not self.connected or not workdir.startswith(self._deploy_root + "/jobs/"):
            return
        if self.transfer == "stream":
            self._to_remove.append(workdir)
            return
        with suppress(TargetError, OSError, EOFError), self._remote_files() as files:
            files.remove_tree(workdir)

    def start(
        self,
        runner: Path,
        request: Mapping[str, Any],
        workdir: str,
        listener: EventListener | None = None,
        *,
        support_files: Sequence[Path] = (),
    ) -> SshJob:
        files = {Path(p).name: Path(p) for p in [runner, *support_files]}
        folder = self.deploy_files(files, "runners")
        request_path = posixpath.join(workdir, "request.json")
        data = json.dumps(dict(request)).encode("utf-8")
        # without SFTP, a small request travels inside the launcher: one command less
        inline = self.transfer == "stream" and len(data) <= INLINE_REQUEST_BYTES
        if inline:
            self.bytes_uploaded += len(data)
        else:
            with self._remote_files() as remote:
                self.bytes_uploaded += remote.write_bytes(request_path, data)
        prepare = (
            f"(umask 077 && mkdir -p -- {shlex.quote(workdir)} && printf '%s' "
            f"{shlex.quote(data.decode())} > {shlex.quote(request_path)}) || exit 125"
        )
        # a check runs with the base python: the runner moves into the runtime set's venv
        # itself when that is ready there (check_fields), which spares asking for the platform
        check = request.get("kind") == "target_check"
        python = shlex.quote(self.python if check else self._runtime_python())
        missing = {
            "event": "error",
            "type": "TargetError",
            "message": f"{self.python} is not found on {self.name}: install Python 3.8+ with "
            "onnxruntime and numpy there, or give SshTarget(python=) the interpreter's path",
        }
        token = secrets.token_hex(16)
        self._to_remove, removed = [], self._to_remove
        script = "\n".join(
            [
                f"printf '{pid_line(token)}\\n' \"$$\"",
                *([sh_command(REMOVE, *removed)] if removed else []),
                *([prepare] if inline else []),
                f"cd -- {shlex.quote(workdir)} || exit 125",
                f"if ! command -v {python} >/dev/null 2>&1; then",
                f"  printf '%s\\n' {shlex.quote(RUNNER_PREFIX + json.dumps(missing))}",
                "  exit 127",
                "fi",
                f"NSDL_STDIN_WATCHDOG=1 {python} -u "
                f"{shlex.quote(posixpath.join(folder, Path(runner).name))} "
                f"{shlex.quote(request_path)}",
                # not `exec`: a runner killed by a signal then still gives an exit status
                # (128 + the signal), where sshd would send an exit-signal that paramiko drops
                'exit "$?"',
            ]
        )
        return SshJob(self, f"exec /bin/sh -c {shlex.quote(script)}", token, listener)


class SshJob(CollectingJob):
    """A runner on the target: its stdout and stderr arrive over one channel, read by two
    threads; `remote_pid` is the process group that `cancel()` ends, as the launcher named it
    with the job's `token` (no other line can set it)."""

    def __init__(
        self, target: SshTarget, command: str, token: str, listener: EventListener | None
    ) -> None:
        self._target = target
        self._token = token
        self._collector = MessageCollector(source=target.name)
        if listener is not None:
            self._collector.listeners.append(listener)
        self._cancelled = False
        self._finished = threading.Event()
        self._pid_known = threading.Event()
        self.remote_pid: int | None = None
        self._exit_code: int | None = None
        self._silent = False  # the link went silent and was closed by _watch_link
        self._channel = target._transport().open_session(timeout=target.connect_timeout)
        self._channel.exec_command(command)
        self._readers = [
            threading.Thread(target=self._read, args=(stream,), daemon=True, name="nsdl-ssh")
            for stream in ("stdout", "stderr")
        ]
        for reader in self._readers:
            reader.start()
        threading.Thread(target=self._await_end, daemon=True, name="nsdl-ssh-end").start()
        threading.Thread(target=self._watch_link, daemon=True, name="nsdl-ssh-alive").start()

    def _watch_link(self) -> None:
        """A link that goes silent (a sleeping laptop, a cut network, a frozen host) closes no
        socket: ask the server for a keepalive answer every LIVENESS_INTERVAL_S, and close the
        connection when none comes within LIVENESS_TIMEOUT_S, so the job ends as lost."""
        transport = self._target._transport()
        while not self._finished.wait(LIVENESS_INTERVAL_S):
            answered = threading.Event()

            def ask(answered: threading.Event = answered) -> None:
                with suppress(Exception):  # a dying transport: the readers see it too
                    transport.global_request("keepalive@openssh.com", wait=True)
                answered.set()

            threading.Thread(target=ask, daemon=True, name="nsdl-ssh-ping").start()
            if not answered.wait(LIVENESS_TIMEOUT_S) and not self._finished.is_set():
                self._silent = True
                self._target.close()
                return

    def _read(self, stream: str) -> None:
        receive = self._channel.recv if stream == "stdout" else self._channel.recv_stderr
        splitter = LineSplitter(MAX_MESSAGE_BYTES, truncate=True)
        try:
            while chunk := receive(65536):
                for raw in splitter.feed(chunk):
                    self._line(stream, raw.decode("utf-8", "replace").removesuffix("\r"))
        except (OSError, EOFError):  # the transport died
            pass
        for raw in splitter.finish():
            self._line(stream, raw.decode("utf-8", "replace"))

    def _line(self, stream: str, line: str) -> None:
        try:
            if stream == "stderr":
                self._collector.stderr_line(line)
            elif self.remote_pid is None and (pid := read_pid_line(line, self._token)):
                self.remote_pid = pid
                self._pid_known.set()
            else:
                self._collector.stdout_line(line)
        except Exception as error:  # a broken listener must not stop reading the runner
            self._collector.stderr_line(f"event listener failed: {error!r}")

    def _await_end(self) -> None:
        for reader in self._readers:
            reader.join()
        self._pid_known.set()  # none will come
        # sshd sends the exit status once the launcher has exited, which can be a moment
        # after its output ended; a closed channel (a lost link) has none
        deadline = time.monotonic() + EXIT_STATUS_WAIT_S
        status = self._channel.status_event
        while not status.wait(0.05) and time.monotonic() < deadline and self._target.connected:
            pass
        if status.is_set() and self._channel.exit_status >= 0:
            self._exit_code = int(self._channel.exit_status)
        self._channel.close()
        self._finished.set()

    def cancel(self) -> None:
        """SIGTERM to the job's own remote process group, SIGKILL after TERMINATE_GRACE_S;
        then the channel closes (which also ends the runner through its stdin watchdog)."""
        if self.done:
            return
        self._cancelled = True
        self._pid_known.wait(5)
        pid = self.remote_pid
        if pid is not None and pid > 1 and self._target.connected:
            ticks = int(TERMINATE_GRACE_S / 0.1)
            script = (
                f"kill -TERM -{pid} 2>/dev/null; i=0; "
                f"while kill -0 -{pid} 2>/dev/null && [ $i -lt {ticks} ]; "
                "do sleep 0.1; i=$((i+1)); done; "
                f"kill -KILL -{pid} 2>/dev/null; true"
            )
            with suppress(TargetError, OSError, EOFError):
                self._target.run_command(script)
        self._channel.close()
        self._finished.wait(TERMINATE_GRACE_S + 5)

    def wait(self, timeout: float | None = None) -> JobResult:
        """Wait for the end; raises TimeoutError when `timeout` passes first."""
        if not self._finished.wait(timeout):
            raise TimeoutError(f"runner still running after {timeout} s")
        code = self._exit_code
        returncode = -(code - 128) if code is not None and code > 128 else code
        lost = None
        if code is None and not self._cancelled and not self._target.connected:
            how = (
                f"went silent for {LIVENESS_TIMEOUT_S:g} s and was closed"
                if self._silent
                else "dropped"
            )
            lost = (
                f"the connection to {self._target.name} {how} while the runner ran; the "
                "runner ends itself when its connection closes. Check the host, then run again"
            )
        return self._collector.job_result(returncode, cancelled=self._cancelled, lost=lost)
