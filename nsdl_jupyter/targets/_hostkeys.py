"""Trusted SSH host keys: a known_hosts file (OpenSSH format) under the package's config dir,
and, read only, the user's own `~/.ssh/known_hosts` (hosts already trusted with OpenSSH).

A key is trusted only when it is in one of them; an unknown or changed key is refused with its
fingerprint, and only `trust` (called with that fingerprint, by the user) adds it, that one key,
to the package's file. A key marked `@revoked` in either file is refused for every host and
never trusted. Lines that cannot be used (`@cert-authority`, other markers, damaged or unknown
keys) are skipped with a TargetWarning; they never stop a connection.
"""

from __future__ import annotations

import base64
import hashlib
import threading
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nsdl_jupyter._atomic import atomic_write_bytes
from nsdl_jupyter._paths import config_dir
from nsdl_jupyter.targets._errors import (
    HostKeyChangedError,
    HostKeyRevokedError,
    TargetWarning,
    UnknownHostKeyError,
)


def default_known_hosts() -> Path:
    return config_dir() / "known_hosts"


def user_known_hosts() -> Path:
    """OpenSSH's own list of the user's trusted hosts (read, never written)."""
    return Path.home() / ".ssh" / "known_hosts"


def fingerprint(key: Any) -> str:
    """OpenSSH's form: `SHA256:` and the unpadded base64 of the key blob's SHA-256."""
    digest = hashlib.sha256(key.asbytes()).digest()
    return "SHA256:" + base64.b64encode(digest).decode("ascii").rstrip("=")


def host_key_name(host: str, port: int) -> str:
    """How known_hosts names a host: `host` on port 22, else `[host]:port`."""
    return host if port == 22 else f"[{host}]:{port}"


@dataclass
class _Entries:
    """The usable lines of known_hosts files: trusted keys (as paramiko's HostKeys, which
    matches hashed names) and revoked keys."""

    trusted: Any
    revoked: list[Any] = field(default_factory=list)


def _skip(path: Path, number: int, why: str) -> None:
    warnings.warn(f"{path} line {number} is skipped: {why}", TargetWarning, stacklevel=4)


def _read(path: Path, into: _Entries) -> None:
    """Add the usable lines of `path` (if it exists) to `into`; warn about the others."""
    from paramiko.hostkeys import HostKeyEntry

    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return  # absent or unreadable: it trusts nothing
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        marker = ""
        if line.startswith("@"):
            marker, _, line = line.partition(" ")
            line = line.strip()
            if marker != "@revoked":
                _skip(path, number, f"{marker[:40]!r} lines are not supported (no certificates)")
                continue
        try:
            entry = HostKeyEntry.from_line(line, number)
        except Exception:  # paramiko's InvalidHostKey, or the key library's own error
            entry = None
        if entry is None:
            _skip(path, number, "it is not a host key line that can be read (damaged, or an "
                  "unsupported key type)")  # fmt: skip
        elif marker:
            into.revoked.append(entry.key)
        else:
            for host in entry.hostnames:
                into.trusted.add(host, entry.key.get_name(), entry.key)


class KnownHosts:
    """The known_hosts file; reads it on every check so a key trusted elsewhere counts."""

    _lock = threading.Lock()

    def __init__(self, path: Path, read_only: tuple[Path, ...] = ()) -> None:
        self.path = path
        self.read_only = read_only

    def _load(self, sources: tuple[Path, ...] | None = None) -> _Entries:
        import paramiko

        entries = _Entries(paramiko.HostKeys())
        for source in sources or (*self.read_only, self.path):  # the package's file last
            _read(source, entries)
        return entries

    def key_types(self, name: str) -> list[str]:
        """Key types known for `name` (the transport prefers them, as OpenSSH does)."""
        return list((self._load().trusted.lookup(name) or {}).keys())

    def _refuse_revoked(self, entries: _Entries, name: str, key: Any) -> None:
        if any(key == revoked for revoked in entries.revoked):
            seen = fingerprint(key)
            raise HostKeyRevokedError(
                f"the {key.get_name()} key {seen} that {name} shows is marked @revoked in "
                f"{' or '.join(str(p) for p in (*self.read_only, self.path))}: it must not be "
                "trusted. Ask the host's admin for its new key; if the mark is a mistake, "
                "remove that @revoked line",
                name,
                seen,
            )

    def check(self, name: str, key: Any) -> None:
        """Raise UnknownHostKeyError, HostKeyChangedError or HostKeyRevokedError unless `key`
        is trusted for `name`."""
        entries = self._load()
        self._refuse_revoked(entries, name, key)
        known = entries.trusted.lookup(name) or {}
        seen = fingerprint(key)
        if key.get_name() in known and known[key.get_name()] == key:
            return
        if known:
            old = ", ".join(fingerprint(k) for k in known.values())
            raise HostKeyChangedError(
                f"the host key of {name} CHANGED: it is now {key.get_name()} {seen}, while "
                f"{self.path} trusts {old}. This can be a man-in-the-middle attack. If the "
                f"host was reinstalled and you checked the new fingerprint with its admin, "
                f"call target.trust_host_key({seen!r})",
                name,
                seen,
            )
        raise UnknownHostKeyError(
            f"{name} is not a known host: its {key.get_name()} key has fingerprint {seen}. "
            f"Compare it with the host's `ssh-keygen -lf /etc/ssh/ssh_host_*_key.pub`, then "
            f"call target.trust_host_key({seen!r}) to trust it (saved in {self.path})",
            name,
            seen,
        )

    def trust(self, name: str, key: Any) -> None:
        """Store `key` as the one key of `name` in the package's file (replacing a changed
        one there); nothing else of the user's files is copied. A revoked key is refused."""
        with self._lock:
            self._refuse_revoked(self._load(), name, key)
            own = self._load((self.path,)).trusted
            while own.lookup(name):
                del own[name]
            own.add(name, key.get_name(), key)
            lines = [
                f"{host} {kind} {value.get_base64()}\n"
                for host, entries in own.items()
                for kind, value in entries.items()
            ]
            atomic_write_bytes(self.path, "".join(lines).encode("ascii"))
