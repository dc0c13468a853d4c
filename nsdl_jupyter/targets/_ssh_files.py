"""File transfers to and from an SSH target: over SFTP when the server offers it, else streamed
over an exec channel (`cat`), for servers without the SFTP subsystem (hardened configs, minimal
containers, Dropbear).

Streamed commands are fixed `sh -c` scripts; every path travels as a quoted positional argument
(`sh -c '<script>' sh "$path"`), so no file name is ever parsed as shell code. Each transfer
checks the size, and the sha256 where the target has `sha256sum`; an upload lands under a
temporary name and is renamed into place only when it checks out.

A big upload (a runtime's wheel, a model) is resumable: its partial file is named by the
content's hash, so an upload cut off (a dropped link) leaves a prefix that the next try checks
(the sha256 of what is there against the same bytes here) and appends to, sending only the rest.
"""

from __future__ import annotations

import hashlib
import posixpath
import secrets
import shlex
import stat
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol

from nsdl_jupyter.targets._errors import TargetError

_CHUNK = 1 << 20


def read_from(
    path: Path, offset: int, size: int, name: str, progress: Progress | None
) -> Iterator[bytes]:
    """The bytes of `path` from `offset` on, a chunk at a time; `progress(name, sent, size)`
    hears of each chunk once the caller has sent it (when the next one is asked for)."""
    with open(path, "rb") as source:
        source.seek(offset)
        sent = offset
        for chunk in iter(lambda: source.read(_CHUNK), b""):
            yield chunk
            sent += len(chunk)
            if progress is not None:
                progress(name, sent, size)


RESUMABLE_BYTES = 4 << 20  # uploads from this size on resume where a cut-off one stopped
Progress = Callable[[str, int, int], None]  # (remote path, bytes there so far, total bytes)
STREAM_FIX = (
    "enable SFTP on the server (`Subsystem sftp internal-sftp` in sshd_config), or let this "
    "user run commands with a POSIX sh that has cat, mkdir, mv and wc"
)

# $1: final path, $2: temporary path, $3: size, $4: sha256
_PUT = (
    'umask 077; d=$(dirname -- "$1") && mkdir -p -- "$d" && cat > "$2" && n=$(wc -c < "$2") '
    '&& [ "$n" -eq "$3" ] || { rm -f -- "$2"; echo "nsdl: upload of $1 incomplete" >&2; exit 3; }'
    '; if command -v sha256sum >/dev/null 2>&1; then h=$(sha256sum < "$2"); '
    'if [ "${h%% *}" != "$4" ]; then rm -f -- "$2"; echo "nsdl: $1 arrived changed" >&2; '
    'exit 4; fi; fi; mv -f -- "$2" "$1"'
)
# for each path asked: a header `<size> <sha256 or -> <path>` ended by a NUL, then the bytes
_GET = (
    'for p; do n=$(wc -c < "$p") || exit 2; h=$(sha256sum < "$p" 2>/dev/null) || h=-; '
    'printf "%s %s %s\\0" $n "${h%% *}" "$p"; cat -- "$p" || exit 2; done'
)
# $1: final path, $2: partial path (named by the content), $3: size, $4: sha256. Says what the
# partial holds (`<size> <sha256 or ->`), reads the offset the host sends from (else starts over)
_PUT_RESUMING = (
    'umask 077; d=$(dirname -- "$1") && mkdir -p -- "$d" || exit 3; n=0; h=-; '
    'if [ -f "$2" ]; then n=$(wc -c < "$2") && h=$(sha256sum < "$2" 2>/dev/null) || h=-; fi; '
    'printf "%s %s\\n" "$n" "${h%% *}"; read -r from || exit 3; '
    '[ "$from" = "$n" ] || : > "$2"; cat >> "$2"; n=$(wc -c < "$2"); '
    'if [ "$n" -ne "$3" ]; then echo "nsdl: upload of $1 cut off at $n of $3 bytes" >&2; exit 3; fi'
    '; if command -v sha256sum >/dev/null 2>&1; then h=$(sha256sum < "$2"); '
    'if [ "${h%% *}" != "$4" ]; then rm -f -- "$2"; echo "nsdl: $1 arrived changed" >&2; '
    'exit 4; fi; fi; mv -f -- "$2" "$1"'
)
_HASH = 'h=$(sha256sum < "$1" 2>/dev/null) && printf "%s\\n" "${h%% *}" || echo -'
_EXISTS = 'test -e "$1"'
_PREPARE = 'mkdir -p -- "$1" && test -w "$1" && test -x "$1" && cd -- "$1" && pwd -P'
_MISSING = 'for p; do if [ -e "$p" ]; then touch -c -- "$p"; else printf "%s\\0" "$p"; fi; done'
_MKDIRS = 'umask 077; mkdir -p -- "$1"'
REMOVE = 'rm -rf -- "$@"'  # the paths given, folders with what they hold


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def sha256_prefix(path: Path, size: int) -> str:
    """The sha256 of the first `size` bytes of `path`."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while size > 0 and (chunk := f.read(min(_CHUNK, size))):
            digest.update(chunk)
            size -= len(chunk)
    return digest.hexdigest()


def partial_path(remote_path: str, sha: str) -> str:
    """Where a resumable upload collects its bytes: the same content, the same name."""
    return f"{remote_path}.partial-{sha[:16]}"


def sh_command(script: str, *args: str) -> str:
    """`sh -c <script> sh <args...>`, each part quoted: the arguments are `$1`..."""
    return " ".join(shlex.quote(part) for part in ("sh", "-c", script, "sh", *args))


class RemoteFiles(Protocol):
    """What a target does with files on the host it reaches."""

    kind: str  # "sftp" or "stream"
    progress: Progress | None  # told each chunk of an upload

    def exists(self, path: str) -> bool: ...

    def missing(self, paths: Sequence[str]) -> list[str]:
        """Those of `paths` that do not exist; those that do are touched (their modification
        time is their last use, which cache eviction goes by)."""
        ...

    def makedirs(self, path: str) -> None: ...

    def prepare_dir(self, path: str) -> str:
        """Make the folder `path` (relative: under the home folder) when missing, check that
        it can be written, and return its absolute path; OSError (with why) if it cannot."""
        ...

    def upload(self, local_path: Path, remote_path: str) -> int:
        """Place `local_path` at `remote_path` atomically; returns the bytes sent."""
        ...

    def write_bytes(self, remote_path: str, data: bytes) -> int: ...

    def download(self, pairs: Sequence[tuple[str, Path]]) -> int:
        """Write each remote file (the first of a pair) to its local path (the second); returns
        the bytes received."""
        ...

    def remove_tree(self, path: str) -> None: ...

    def close(self) -> None: ...


class SftpFiles:
    """RemoteFiles over an open paramiko SFTPClient; `run` runs a shell command (rm -rf)."""

    kind = "sftp"

    def __init__(self, sftp: Any, run: Callable[[str], tuple[int, str]]) -> None:
        self._sftp = sftp
        self._run = run
        self.progress: Progress | None = None

    def exists(self, path: str) -> bool:
        try:
            self._sftp.stat(path)
        except FileNotFoundError:
            return False
        return True

    def missing(self, paths: Sequence[str]) -> list[str]:
        absent = []
        for path in paths:
            try:
                self._sftp.utime(path, None)
            except FileNotFoundError:
                absent.append(path)
        return absent

    def makedirs(self, path: str) -> None:
        missing: list[str] = []
        while path not in ("/", "") and not self.exists(path):
            missing.append(path)
            path = posixpath.dirname(path)
        for folder in reversed(missing):
            try:
                self._sftp.mkdir(folder, 0o700)
            except OSError:
                self._sftp.stat(folder)  # made meanwhile by another job: fine; else raise

    def prepare_dir(self, path: str) -> str:
        """Over SFTP: no remote command (each costs the login shell's start-up)."""
        self.makedirs(path)
        absolute = str(self._sftp.normalize(path))
        probe = posixpath.join(absolute, f".nsdl-write-{secrets.token_hex(4)}")
        with self._sftp.open(probe, "w"):
            pass
        self._sftp.remove(probe)
        return absolute

    def upload(self, local_path: Path, remote_path: str) -> int:
        self.makedirs(posixpath.dirname(remote_path))
        size = local_path.stat().st_size
        if size < RESUMABLE_BYTES:
            partial = f"{remote_path}.partial-{secrets.token_hex(4)}"
            self._send(local_path, partial, 0, size, remote_path)
            self._sftp.posix_rename(partial, remote_path)
            return size
        sha = sha256_file(local_path)
        partial = partial_path(remote_path, sha)
        offset = self._resume_from(local_path, partial)
        self._send(local_path, partial, offset, size, remote_path)
        there = self._remote_sha256(partial)
        if self._sftp.stat(partial).st_size != size or there not in ("-", sha):
            self._sftp.remove(partial)
            raise OSError(f"{remote_path} arrived changed (another upload at once?): run again")
        self._sftp.posix_rename(partial, remote_path)
        return size - offset

    def _remote_sha256(self, path: str) -> str:
        """The sha256 of a remote file ('-' where the target has no sha256sum)."""
        code, output = self._run(sh_command(_HASH, path))
        words = output.split()
        return words[-1] if code == 0 and words else "-"

    def _resume_from(self, local_path: Path, partial: str) -> int:
        """How many bytes of a cut-off upload are there and right (0: start over)."""
        try:
            there = int(self._sftp.stat(partial).st_size or 0)
        except FileNotFoundError:
            return 0
        right = 0 < there < local_path.stat().st_size
        if right and self._remote_sha256(partial) == sha256_prefix(local_path, there):
            return there
        return 0

    def _send(self, local_path: Path, remote: str, offset: int, size: int, name: str) -> None:
        with self._sftp.open(remote, "ab" if offset else "wb") as target:
            target.set_pipelined(True)
            for chunk in read_from(local_path, offset, size, name, self.progress):
                target.write(chunk)

    def write_bytes(self, remote_path: str, data: bytes) -> int:
        with self._sftp.open(remote_path, "wb") as f:
            f.write(data)
        return len(data)

    def download(self, pairs: Sequence[tuple[str, Path]]) -> int:
        received = 0
        for remote_path, local_path in pairs:
            self._sftp.get(remote_path, str(local_path))  # makes local_path, then opens remote
            received += local_path.stat().st_size
        return received

    def remove_tree(self, path: str) -> None:
        """Over SFTP (a remote command costs sshd about 0.1 s to start); `rm -rf` for nested
        folders."""
        nested = False
        for entry in self._sftp.listdir_attr(path):
            if stat.S_ISDIR(entry.st_mode or 0):
                nested = True
            else:
                self._sftp.remove(posixpath.join(path, entry.filename))
        if nested:
            self._run(sh_command(REMOVE, path))
        else:
            self._sftp.rmdir(path)

    def close(self) -> None:
        self._sftp.close()


class StreamFiles:
    """RemoteFiles streamed over exec channels: `open_channel()` gives a fresh session channel."""

    kind = "stream"

    def __init__(self, open_channel: Callable[[], Any], target_name: str, timeout: float) -> None:
        self._open = open_channel
        self._name = target_name
        self._timeout = timeout
        self.progress: Progress | None = None

    def _fail(self, what: str, detail: str) -> TargetError:
        return TargetError(
            f"{self._name} offers no SFTP subsystem, and {what} streamed over a command failed "
            f"({detail.strip() or 'no output'}): {STREAM_FIX}"
        )

    def _call(self, command: str, data: bytes | Path | None = None) -> tuple[int, bytes, bytes]:
        """Run `command`, feeding it `data` (bytes, or a file's bytes); its exit code, stdout
        and stderr."""
        channel = self._open()
        try:
            channel.settimeout(self._timeout)
            channel.exec_command(command)
            if isinstance(data, Path):
                with open(data, "rb") as f:
                    for chunk in iter(lambda: f.read(_CHUNK), b""):
                        channel.sendall(chunk)
            elif data is not None:
                channel.sendall(data)
            channel.shutdown_write()
            out = b"".join(iter(lambda: channel.recv(_CHUNK), b""))
            err = b"".join(iter(lambda: channel.recv_stderr(_CHUNK), b""))
            return int(channel.recv_exit_status()), out, err
        finally:
            channel.close()

    def exists(self, path: str) -> bool:
        code, out, err = self._call(sh_command(_EXISTS, path))
        if code not in (0, 1):
            raise self._fail(f"checking {path}", (out + err).decode("utf-8", "replace"))
        return code == 0

    def missing(self, paths: Sequence[str]) -> list[str]:
        code, out, err = self._call(sh_command(_MISSING, *paths))
        if code != 0:
            raise self._fail("checking files", (out + err).decode("utf-8", "replace"))
        return [name.decode("utf-8", "surrogateescape") for name in out.split(b"\0") if name]

    def makedirs(self, path: str) -> None:
        code, out, err = self._call(sh_command(_MKDIRS, path))
        if code != 0:
            raise self._fail(f"making {path}", (out + err).decode("utf-8", "replace"))

    def prepare_dir(self, path: str) -> str:
        code, out, err = self._call(sh_command(_PREPARE, path))
        lines = out.decode("utf-8", "surrogateescape").strip().splitlines()
        if code != 0 or not lines:
            raise OSError((out + err).decode("utf-8", "replace").strip() or f"exit code {code}")
        return lines[-1]

    def _put(self, remote_path: str, data: bytes | Path, size: int, sha: str) -> int:
        partial = f"{remote_path}.partial-{secrets.token_hex(4)}"
        command = sh_command(_PUT, remote_path, partial, str(size), sha)
        code, out, err = self._call(command, data)
        if code != 0:
            raise self._fail(f"the upload of {remote_path}", (out + err).decode("utf-8", "replace"))
        return size

    def upload(self, local_path: Path, remote_path: str) -> int:
        size = local_path.stat().st_size
        if size >= RESUMABLE_BYTES:
            return self._put_resuming(local_path, remote_path, size)
        return self._put(remote_path, local_path, size, sha256_file(local_path))

    def _put_resuming(self, local_path: Path, remote_path: str, size: int) -> int:
        """One command: the target says what a cut-off upload left, the host sends the rest."""
        sha = sha256_file(local_path)
        command = sh_command(_PUT_RESUMING, remote_path, partial_path(remote_path, sha),
                             str(size), sha)  # fmt: skip
        channel = self._open()
        try:
            channel.settimeout(self._timeout)
            channel.exec_command(command)
            fields = _header(channel).split()
            there = int(fields[0]) if len(fields) == 2 and fields[0].isdigit() else 0
            right = 0 < there < size and fields[1] == sha256_prefix(local_path, there)
            offset = there if right else 0
            channel.sendall(f"{offset}\n".encode())
            for chunk in read_from(local_path, offset, size, remote_path, self.progress):
                channel.sendall(chunk)
            channel.shutdown_write()
            out = b"".join(iter(lambda: channel.recv(_CHUNK), b""))
            err = b"".join(iter(lambda: channel.recv_stderr(_CHUNK), b""))
            code = int(channel.recv_exit_status())
        finally:
            channel.close()
        if code != 0:
            raise self._fail(f"the upload of {remote_path}", (out + err).decode("utf-8", "replace"))
        return size - offset

    def write_bytes(self, remote_path: str, data: bytes) -> int:
        return self._put(remote_path, data, len(data), hashlib.sha256(data).hexdigest())

    def download(self, pairs: Sequence[tuple[str, Path]]) -> int:
        """All of `pairs` in one command (each costs sshd a process and the login shell's
        start-up). The target's answer is checked against what was asked: each path in its
        order, its size and sha256, nothing after the last; the local paths are the caller's
        alone, so no name the target sends chooses where bytes land."""
        channel = self._open()
        try:
            channel.settimeout(self._timeout)
            channel.exec_command(sh_command(_GET, *(remote for remote, _ in pairs)))
            stream = _Stream(channel)
            try:
                received = sum(_receive(stream, remote, local) for remote, local in pairs)
                if stream.read(1):
                    raise _AnswerError("it sent more than the files asked for")
            except _AnswerError as exc:
                if not stream.ended:  # it may still be sending: no stderr to wait for
                    raise self._fail("the download", str(exc)) from None
                err = b"".join(iter(lambda: channel.recv_stderr(_CHUNK), b""))
                detail = f"{exc}; {err.decode('utf-8', 'replace').strip() or 'no error text'}"
                raise self._fail("the download", detail) from None
            err = b"".join(iter(lambda: channel.recv_stderr(_CHUNK), b""))
            code = int(channel.recv_exit_status())
        finally:
            channel.close()
        if code != 0:
            detail = err.decode("utf-8", "replace") or f"exit code {code}"
            raise self._fail("the download", detail)
        return received

    def remove_tree(self, path: str) -> None:
        self._call(sh_command(REMOVE, path))

    def close(self) -> None:
        pass


def _header(channel: Any) -> str:
    """The first line a streamed command prints (at most 200 bytes), read byte by byte so that
    nothing after it is taken from the channel."""
    header = b""
    while not header.endswith(b"\n") and len(header) < 200:
        byte = channel.recv(1)
        if not byte:
            break
        header += byte
    return header.decode("ascii", "replace")


class _AnswerError(Exception):
    """A streamed download's answer is not what was asked (said in the message)."""


class _Stream:
    """The stdout of a channel, read in chunks and handed out in the pieces asked for."""

    def __init__(self, channel: Any) -> None:
        self._channel = channel
        self._buffer = b""
        self.ended = False

    def read(self, most: int) -> bytes:
        """Up to `most` bytes (b"" at the end)."""
        if not self._buffer and not self.ended:
            self._buffer = self._channel.recv(_CHUNK)
            self.ended = not self._buffer
        piece, self._buffer = self._buffer[:most], self._buffer[most:]
        return piece

    def read_until(self, end: bytes, most: int, what: str) -> bytes:
        """The bytes before `end` (consumed, not returned), at most `most` of them."""
        line = b""
        while end not in line:
            if len(line) > most:
                raise _AnswerError(f"{what} is longer than {most} bytes: {line[:80]!r}")
            piece = self.read(_CHUNK)
            if not piece:
                raise _AnswerError(f"it ended before {what}")
            line += piece
        line, rest = line.split(end, 1)
        self._buffer = rest + self._buffer
        return line


def _receive(stream: _Stream, remote: str, local: Path) -> int:
    """One file of a streamed download: its header (checked against `remote`), then exactly
    the bytes it announced, into `local`; returns their number."""
    asked = remote.encode("utf-8", "surrogateescape")
    fields = stream.read_until(b"\0", len(asked) + 100, f"the header of {remote}").split(b" ", 2)
    if len(fields) != 3 or not fields[0].isdigit() or fields[2] != asked:
        raise _AnswerError(f"it answered {b' '.join(fields)[:200]!r} where {remote} was asked")
    size, sha = int(fields[0]), fields[1].decode("ascii", "replace")
    digest = hashlib.sha256()
    received = 0
    with open(local, "wb") as f:
        while received < size and (chunk := stream.read(min(_CHUNK, size - received))):
            f.write(chunk)
            digest.update(chunk)
            received += len(chunk)
    if received != size or sha not in ("-", digest.hexdigest()):
        raise _AnswerError(
            f"{received} bytes of {remote} arrived of {size}, or their sha256 differs"
        )
    return received
