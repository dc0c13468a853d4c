"""The runtime-set and cache side of SshTarget: which wheels a target needs and has, the venv
they are installed into, and what the deploy folder keeps (`cache_info`, `clear_cache`).

A mixin of SshTarget: it uses the connection, the file transfers and the remote commands that
`_ssh.py` owns, declared below for the type checker.
"""

from __future__ import annotations

import dataclasses
import json
import posixpath
import threading
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nsdl_jupyter.targets._errors import TargetError
from nsdl_jupyter.targets._runtimes import (
    INSTALL_SCRIPT,
    PIP_TIMEOUT_S,
    PLATFORM_PROBE,
    RuntimePlan,
    RuntimeSetError,
    TargetPlatform,
    Wheel,
    WheelCache,
    check_driver,
    full_set,
    set_key,
)
from nsdl_jupyter.targets._ssh_files import REMOVE, RemoteFiles, sh_command
from nsdl_jupyter.targets._target_cache import (
    LIST_SCRIPT,
    CacheEntry,
    CacheInfo,
    check_kinds,
    check_limit,
    evictions,
    inside,
)


def _wheel_path(wheel: Wheel) -> str:
    """Where a wheel lives in the deploy folder: once per content hash."""
    return posixpath.join("wheels", wheel.sha256, wheel.path.name)


class TargetCaches:
    """Runtime sets and caches of an SshTarget."""

    if TYPE_CHECKING:
        name: str
        python: str
        runtimes: tuple[str, ...]
        cache_limit_bytes: int | None
        wheel_cache: WheelCache
        _plan: RuntimePlan | None
        _lock: threading.RLock
        _deploy_root: str
        _deployed: set[str]

        @property
        def connected(self) -> bool: ...

        def connect(self) -> TargetCaches: ...

        def run_command(self, command: str, timeout: float = ...) -> tuple[int, str]: ...

        def _remote_files(self) -> AbstractContextManager[RemoteFiles]: ...

        def _ensure_files(self, files: Mapping[str, Path]) -> None: ...

    # ---- runtime sets -------------------------------------------------------------------------

    def _run_python(self, script: str, *args: str) -> tuple[int, str]:
        """Run `script` with the target's `python`, `args` as its sys.argv[1:]."""
        launch = 'py=$1; shift; exec "$py" -c "$@"'
        return self.run_command(sh_command(launch, self.python, script, *args))

    def read_platform(self) -> TargetPlatform:
        """The target's architecture, libc and Python (of `python`), which pick its wheels,
        and its NVIDIA driver with the CUDA version it runs."""
        code, output = self._run_python(PLATFORM_PROBE, self._deploy_root)
        try:
            raw = json.loads(output.strip().splitlines()[-1])
            return TargetPlatform.from_probe(raw["platform"], raw.get("nvidia_smi"))
        except (ValueError, LookupError, TypeError):
            raise RuntimeSetError(
                f"{self.python} on {self.name} did not say its platform ({output.strip()[-300:]}"
                f" exit code {code}): give SshTarget(python=) a Python 3.8+ interpreter's path"
            ) from None

    def runtime_plan(self) -> RuntimePlan:
        """What the runtime set (`runtimes`) needs: its wheels (fetched into the host's cache
        when missing there), which of them the target holds, and whether its venv is ready.
        Changes nothing on the target; RuntimeSetError when the set cannot be deployed there
        (no wheel for its platform, a driver too old for the CUDA a wheel needs)."""
        with self._lock:
            if self._plan is not None and self.connected:
                return self._plan
            self.connect()
            return self._make_plan(self.read_platform(), None)

    def check_fields(self) -> dict[str, Any]:
        """What a `target_check` request carries so that its one runner call also answers for
        the runtime set: for each platform the host has the set's wheels for, their hashes
        (the runner picks the venv of its own platform when it is ready) and remote paths."""
        if not self.runtimes:
            return {}
        sets: dict[str, list[str]] = {}
        paths: list[str] = []
        for key, wheels in self.wheel_cache.known(full_set(self.runtimes)).items():
            sets[key] = [w.sha256 for w in wheels]
            paths += [_wheel_path(w) for w in wheels]
        return {"deploy_root": self._deploy_root, "runtime_sets": {"sets": sets, "paths": paths}}

    def plan_from_check(self, raw: Mapping[str, Any]) -> RuntimePlan:
        """The runtime plan from a `target_check` answer (see `check_fields`): no further
        question to the target when it already said what it holds."""
        with self._lock:
            try:
                answer = raw["runtime_sets"]
                platform = TargetPlatform.from_probe(answer["platform"], raw.get("nvidia_smi"))
                seen = (set(answer["asked"]), set(answer["present"]), answer["ready_venv"])
            except (LookupError, TypeError, ValueError):
                return self.runtime_plan()
            return self._make_plan(platform, seen)

    def _make_plan(
        self, platform: TargetPlatform, seen: tuple[set[str], set[str], str | None] | None
    ) -> RuntimePlan:
        """The plan for `platform`; `seen`: (paths asked, paths present, the ready venv) from
        a check, else the target is asked (and the wheels it holds are touched)."""
        wheels: list[Wheel] = []
        for requirement in full_set(self.runtimes):  # refused before fetching the rest
            wheels += self.wheel_cache.wheels([requirement], platform)
            check_driver(platform, wheels[-1:], self.name)
        venv = posixpath.join(self._deploy_root, "runtimes", set_key(platform, wheels))
        remote = {posixpath.join(self._deploy_root, _wheel_path(w)): w for w in wheels}
        ready = posixpath.join(venv, ".nsdl-ready")
        if seen is not None and all(_wheel_path(w) in seen[0] for w in wheels):
            missing = {p for p, w in remote.items() if _wheel_path(w) not in seen[1]}
            missing |= set() if seen[2] == venv else {ready}
        else:
            with self._remote_files() as files:
                missing = set(files.missing([*remote, ready]))
        self._plan = RuntimePlan(
            platform,
            {path: wheel for path, wheel in remote.items() if path not in missing},
            {path: wheel for path, wheel in remote.items() if path in missing},
            venv,
            ready not in missing,
        )
        return self._plan

    def _runtime_python(self) -> str:
        """The interpreter runners run with: `python`, or the runtime set's venv, deployed
        first when it is not ready."""
        if not self.runtimes:
            return self.python
        with self._lock:
            plan = self.runtime_plan()
            if plan.ready:
                return plan.python
            self._ensure_files({path: w.path for path, w in plan.to_upload.items()})
            wheels = [*plan.on_target, *plan.to_upload]
            code, output = self.run_command(
                sh_command(INSTALL_SCRIPT, self.python, plan.venv, *sorted(wheels)),
                timeout=PIP_TIMEOUT_S,
            )
            if code != 0:
                raise RuntimeSetError(
                    f"the runtime set {', '.join(self.runtimes)} could not be installed on "
                    f"{self.name} ({output.strip()[-500:] or f'exit code {code}'}): the target "
                    f"needs {self.python} with its venv module (Debian: the python3-venv package)"
                )
            self._plan = dataclasses.replace(
                plan, on_target={**plan.on_target, **plan.to_upload}, to_upload={}, ready=True
            )
            if self.cache_limit_bytes is not None:
                self.clear_cache(keep_bytes=self.cache_limit_bytes, keep_in_use=True)
            return plan.python

    # ---- caches on the target ------------------------------------------------------------

    def cache_folder(self, kind: str) -> str:
        """The folder of one cache kind in the deploy folder (where runners keep what they make
        there: TensorRT engines, timing caches), covered by cache_info and clear_cache."""
        (chosen,) = check_kinds(kind)
        self.connect()
        return posixpath.join(self._deploy_root, chosen)

    def cache_info(self, kinds: str | Sequence[str] | None = None) -> CacheInfo:
        """What the deploy folder keeps: models and files by hash, runner files, wheels and
        runtime venvs, each entry with its size and last use."""
        chosen = check_kinds(kinds)
        self.connect()
        code, output = self._run_python(LIST_SCRIPT, self._deploy_root, *chosen)
        try:
            rows = json.loads(output.strip().splitlines()[-1])
            entries = [CacheEntry(k, n, p, int(b), float(t)) for k, n, p, b, t in rows]
        except (ValueError, LookupError, TypeError):
            raise TargetError(
                f"{self.python} on {self.name} could not list the caches ({output.strip()[-300:]}"
                f" exit code {code}): give SshTarget(python=) a Python 3.8+ interpreter's path"
            ) from None
        entries.sort(key=lambda entry: entry.last_used)
        return CacheInfo(self.name, entries, self.cache_limit_bytes)

    def clear_cache(
        self,
        kinds: str | Sequence[str] | None = None,
        *,
        keep_bytes: int = 0,
        keep_in_use: bool = False,
    ) -> int:
        """Remove cache entries of `kinds` (default: all), least recently used first, until at
        most `keep_bytes` of them remain; `keep_in_use` spares what this connection deployed.
        Returns the bytes freed (a later run deploys again what it needs)."""
        check_limit(keep_bytes)
        info = self.cache_info(kinds)
        used = [*self._deployed, *([self._plan.venv + "/"] if self._plan else [])]
        chosen = evictions(info.entries, keep_bytes, used if keep_in_use else ())
        if not chosen:
            return 0
        paths = [entry.path for entry in chosen]
        code, output = self.run_command(sh_command(REMOVE, *paths))
        if code != 0:
            raise TargetError(f"{self.name}: the caches could not be removed ({output.strip()})")
        self._deployed -= set(inside(self._deployed, paths))
        if any(entry.kind in ("wheels", "runtimes") for entry in chosen):
            self._plan = None
        return sum(entry.bytes for entry in chosen)
