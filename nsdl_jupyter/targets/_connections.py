"""Saved SSH connections: `connections()` lists, adds, removes and tests them.

Kept in `connections.json` under the package's config dir, written atomically. A saved
connection holds everything `SshTarget` takes except secrets: passwords and passphrases are
given again (e.g. with getpass) each time a connection is opened. A field this version does not
know (saved by a newer one) is ignored with a TargetWarning; a field of the wrong type is a
TargetSettingsError naming it.
"""

from __future__ import annotations

import json
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nsdl_jupyter._atomic import atomic_write_bytes
from nsdl_jupyter._output_guard import output_path
from nsdl_jupyter._paths import config_dir
from nsdl_jupyter.targets._errors import (
    TargetSettingsError,
    TargetWarning,
    UnknownConnectionError,
)
from nsdl_jupyter.targets._ssh import SshTarget

_FORMAT_VERSION = 1
_TEXT = (str, type(None))
# Every field SshTarget.settings() writes, and the types a saved value may have.
_FIELDS: dict[str, tuple[type, ...]] = {
    "name": (str,),
    "host": (str,),
    "user": _TEXT,
    "port": (int, type(None)),
    "key_file": _TEXT,
    "agent": (bool,),
    "deploy_dir": (str,),
    "proxy_jump": _TEXT,
    "proxy_command": (list, str, type(None)),
    "ssh_config": (bool, str),
    "known_hosts": _TEXT,
    "python": (str,),
    "connect_timeout": (int, float),
    "runtimes": (list, type(None)),
    "cache_limit_bytes": (int, type(None)),
}


def _checked(name: str, saved: dict[str, Any], path: Path) -> dict[str, Any]:
    """The fields of a saved connection that SshTarget takes, each of a type it accepts."""
    unknown = sorted(set(saved) - set(_FIELDS))
    if unknown:
        warnings.warn(
            f"the saved connection {name!r} in {path} has fields this version does not know "
            f"({', '.join(unknown)}; saved by a newer version?): they are ignored",
            TargetWarning,
            stacklevel=4,
        )
    if "host" not in saved:
        raise TargetSettingsError(f"the saved connection {name!r} in {path} has no host: add it")
    settings = {key: value for key, value in saved.items() if key in _FIELDS}
    for key, value in settings.items():
        types = _FIELDS[key]
        wrong = not isinstance(value, types) or (isinstance(value, bool) and bool not in types)
        if key in ("proxy_command", "runtimes") and isinstance(value, list):
            wrong = not all(isinstance(arg, str) for arg in value)
        if wrong:
            allowed = " or ".join("null" if t is type(None) else t.__name__ for t in types)
            raise TargetSettingsError(
                f"the saved connection {name!r} in {path} has {key}={value!r}, which must be "
                f"{allowed}: fix it there, or remove and add the connection again"
            )
    return settings


@dataclass(frozen=True)
class ConnectionTest:
    """A connection that worked: how long connecting took and where files are deployed."""

    name: str
    seconds: float
    deploy_dir: str


class Connections:
    """The saved connections (by name)."""

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = (
            output_path(path, "connections file")
            if path is not None
            else config_dir() / "connections.json"
        )

    def _load(self) -> dict[str, dict[str, Any]]:
        if not self.path.is_file():
            return {}
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            entries = {entry["name"]: dict(entry) for entry in data["connections"]}
        except (ValueError, LookupError, TypeError, AttributeError) as exc:
            raise TargetSettingsError(
                f"{self.path} is not a connections file ({exc}): fix or delete it"
            ) from None
        if not all(isinstance(name, str) for name in entries):
            raise TargetSettingsError(
                f"{self.path} is not a connections file (a name is not a string): fix or delete it"
            )
        return entries

    def _save(self, entries: dict[str, dict[str, Any]]) -> None:
        data = {"version": _FORMAT_VERSION, "connections": list(entries.values())}
        atomic_write_bytes(self.path, json.dumps(data, indent=1).encode("utf-8"))

    def names(self) -> list[str]:
        return list(self._load())

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self._load())

    def __contains__(self, name: object) -> bool:
        return name in self._load()

    def settings(self, name: str) -> dict[str, Any]:
        entries = self._load()
        if name not in entries:
            raise UnknownConnectionError(f"no saved connection {name!r}; saved: {sorted(entries)}")
        return dict(entries[name])

    def get(
        self, name: str, *, password: str | None = None, passphrase: str | None = None
    ) -> SshTarget:
        """The saved connection as a target; secrets are given here, never stored."""
        settings = _checked(name, self.settings(name), self.path)
        host = settings.pop("host")
        return SshTarget(host, password=password, passphrase=passphrase, **settings)

    __getitem__ = get

    def add(self, target: SshTarget, *, replace: bool = False) -> SshTarget:
        """Save `target`'s settings (no secrets) under its name."""
        entries = self._load()
        if target.name in entries and not replace:
            raise TargetSettingsError(
                f"a connection named {target.name!r} is saved already: pass replace=True or "
                "give the target another name="
            )
        entries[target.name] = target.settings()
        self._save(entries)
        return target

    def remove(self, name: str) -> None:
        entries = self._load()
        if name not in entries:
            raise UnknownConnectionError(f"no saved connection {name!r}; saved: {sorted(entries)}")
        del entries[name]
        self._save(entries)

    def test(
        self, name: str, *, password: str | None = None, passphrase: str | None = None
    ) -> ConnectionTest:
        """Connect (host key, login, deploy dir writable) and close; raises what failed."""
        target = self.get(name, password=password, passphrase=passphrase)
        start = time.perf_counter()
        try:
            target.connect()
            return ConnectionTest(name, time.perf_counter() - start, target.deploy_root)
        finally:
            target.close()


def connections(path: str | Path | None = None) -> Connections:
    """The saved SSH connections (`add`, `remove`, `test`, `get`)."""
    return Connections(path)
