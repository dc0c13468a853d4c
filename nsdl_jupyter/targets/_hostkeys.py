"""Trusted SSH host keys: a known_hosts file (OpenSSH format) under the package's config dir,
and, read only, the user's own `~/.ssh/known_hosts` (hosts already trusted with OpenSSH).

A key is trusted only when it is in one of them; an unknown or changed key is refused with its
fingerprint, and only `trust` (called with that fingerprint, by the user) adds it, to the
package's file.
"""

from __future__ import annotations

import base64
import hashlib
import threading
from pathlib import Path
from typing import Any

from nsdl_jupyter._atomic import atomic_write_bytes
from nsdl_jupyter._paths import config_dir
from nsdl_jupyter.targets._errors import HostKeyChangedError, UnknownHostKeyError


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


class KnownHosts:
    """The known_hosts file; reads it on every check so a key trusted elsewhere counts."""

    _lock = threading.Lock()

    def __init__(self, path: Path, read_only: tuple[Path, ...] = ()) -> None:
        self.path = path
        self.read_only = read_only

    def _load(self) -> Any:
        import paramiko

        keys = paramiko.HostKeys()
        for source in (*self.read_only, self.path):  # the package's file has the last word
            if source.is_file():
                try:
                    keys.load(str(source))
                except (OSError, UnicodeDecodeError):
                    continue  # an unreadable file of the user's trusts nothing
        return keys

    def key_types(self, name: str) -> list[str]:
        """Key types known for `name` (the transport prefers them, as OpenSSH does)."""
        return list((self._load().lookup(name) or {}).keys())

    def check(self, name: str, key: Any) -> None:
        """Raise UnknownHostKeyError or HostKeyChangedError unless `key` is trusted for `name`."""
        known = self._load().lookup(name) or {}
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
        """Store `key` as the one key of `name` (replacing a changed one)."""
        with self._lock:
            keys = self._load()
            while keys.lookup(name):
                del keys[name]
            keys.add(name, key.get_name(), key)
            lines = [
                f"{host} {kind} {value.get_base64()}\n"
                for host, entries in keys.items()
                for kind, value in entries.items()
            ]
            atomic_write_bytes(self.path, "".join(lines).encode("ascii"))
