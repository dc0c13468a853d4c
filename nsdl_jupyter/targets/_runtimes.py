"""Runtime sets: the Python packages a target needs (onnxruntime, numpy, ...), as wheels kept on
this machine and installed on the target without the target needing network or root.

The host's wheel cache (`<cache dir>/wheels/<platform key>/`) is filled once per target
platform (architecture, glibc, Python version, read from the target) with
`pip download --only-binary=:all: --no-deps --platform ... --python-version ...`, run without a
shell, unless a wheel that meets the requirement was put into that folder (an offline host).
Which wheel a requirement resolved to is recorded (`resolved.json`), so later sets of the same
requirements ask no registry. On the target, wheels live once per content hash
(`wheels/<sha256>/<file>`) and each set gets its own venv (`runtimes/<set key>/`), made by the
target's Python and filled by `pip install --no-index --no-deps` from those wheels.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nsdl_jupyter._paths import cache_dir
from nsdl_jupyter.targets._errors import TargetError, TargetSettingsError
from nsdl_jupyter.targets._ssh_files import sha256_file

PIP_TIMEOUT_S = 600.0
_REQUIREMENT = re.compile(
    r"[A-Za-z0-9][A-Za-z0-9._-]*"
    r"(\s*(===|==|~=|!=|>=|<=|<|>)\s*[A-Za-z0-9.*+!_-]+)?"
    r"(\s*,\s*(===|==|~=|!=|>=|<=|<|>)\s*[A-Za-z0-9.*+!_-]+)*"
)
# always in a set: the runners load numpy beside the runtime
BASE_PACKAGES = ("numpy",)

PLATFORM_PROBE = (
    "import json, platform, sys; libc = platform.libc_ver(); print(json.dumps({"
    "'arch': platform.machine(), 'libc': libc[0], 'libc_version': libc[1], "
    "'python': list(sys.version_info[:2]), 'implementation': sys.implementation.name, "
    "'executable': sys.executable}))"
)


class RuntimeSetError(TargetError):
    """A runtime set cannot be fetched for the target's platform or installed there."""


def check_requirements(runtimes: str | Sequence[str] | None) -> tuple[str, ...]:
    """The requirements as given (`"onnxruntime==1.32.0"` or a list), checked: names with
    optional version pins only (no URLs, no pip options)."""
    if runtimes is None:
        return ()
    items = [runtimes] if isinstance(runtimes, str) else list(runtimes)
    for item in items:
        if not isinstance(item, str) or not _REQUIREMENT.fullmatch(item.strip()):
            raise TargetSettingsError(
                f"runtime {item!r} is not a package requirement: give a name with an optional "
                "version, e.g. 'onnxruntime==1.32.0' or 'onnxruntime-gpu>=1.20'"
            )
    return tuple(item.strip() for item in items)


def _name(requirement: str) -> str:
    found = re.match(r"[A-Za-z0-9._-]+", requirement)
    assert found is not None
    return re.sub(r"[-_.]+", "-", found[0]).lower()


def full_set(requirements: Sequence[str]) -> tuple[str, ...]:
    """`requirements` plus the base packages that none of them names."""
    named = {_name(r) for r in requirements}
    return (*requirements, *(p for p in BASE_PACKAGES if p not in named))


@dataclass(frozen=True)
class TargetPlatform:
    arch: str
    glibc: tuple[int, int] | None
    python: tuple[int, int]
    implementation: str
    executable: str

    @classmethod
    def from_probe(cls, raw: dict[str, Any]) -> TargetPlatform:
        glibc = None
        if raw.get("libc") == "glibc":
            major, minor = (int(x) for x in str(raw["libc_version"]).split(".")[:2])
            glibc = (major, minor)
        python = raw["python"]
        return cls(
            str(raw["arch"]),
            glibc,
            (int(python[0]), int(python[1])),
            str(raw["implementation"]),
            str(raw["executable"]),
        )

    @property
    def key(self) -> str:
        libc = f"glibc{self.glibc[0]}.{self.glibc[1]}" if self.glibc else "noglibc"
        return f"cp{self.python[0]}{self.python[1]}-{libc}-{self.arch}"

    def pip_arguments(self) -> list[str]:
        """pip download's options that select wheels this platform can install."""
        if self.implementation != "cpython" or self.glibc is None or self.glibc[0] != 2:
            raise RuntimeSetError(
                f"wheels can be chosen only for CPython on glibc Linux (the target has "
                f"{self.implementation}, libc {self.glibc}): install the runtime there yourself "
                "and leave runtimes= out"
            )
        abi = f"cp{self.python[0]}{self.python[1]}"
        version = f"{self.python[0]}.{self.python[1]}"
        arguments = ["--implementation", "cp", "--python-version", version]
        for tag in (abi, "abi3", "none"):
            arguments += ["--abi", tag]
        for minor in range(self.glibc[1], 4, -1):
            arguments += ["--platform", f"manylinux_2_{minor}_{self.arch}"]
        arguments += ["--platform", f"manylinux2014_{self.arch}", "--platform", "any"]
        return arguments


@dataclass(frozen=True)
class Wheel:
    requirement: str
    path: Path
    sha256: str

    @property
    def size(self) -> int:
        return self.path.stat().st_size


class WheelCache:
    """Wheels on this machine, by target platform; fetched once, then reused offline."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = root or cache_dir() / "wheels"

    def folder(self, platform: TargetPlatform) -> Path:
        return self.root / platform.key

    def _resolved(self, platform: TargetPlatform) -> dict[str, dict[str, str]]:
        index = self.folder(platform) / "resolved.json"
        try:
            data = json.loads(index.read_text())
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def wheels(self, requirements: Sequence[str], platform: TargetPlatform) -> list[Wheel]:
        """A wheel for each requirement, downloaded when the cache lacks it."""
        resolved = self._resolved(platform)
        found: list[Wheel] = []
        for requirement in requirements:
            entry = resolved.get(requirement)
            path = self.folder(platform) / entry["file"] if entry else None
            if entry is None or path is None or not path.is_file():
                entry = self._placed(requirement, platform) or self._download(requirement, platform)
                resolved[requirement] = entry
                self._save(platform, resolved)
                path = self.folder(platform) / entry["file"]
            found.append(Wheel(requirement, path, entry["sha256"]))
        return found

    def _save(self, platform: TargetPlatform, resolved: dict[str, dict[str, str]]) -> None:
        index = self.folder(platform) / "resolved.json"
        partial = index.with_suffix(".partial")
        partial.write_text(json.dumps(resolved, indent=1, sort_keys=True))
        partial.replace(index)

    def _placed(self, requirement: str, platform: TargetPlatform) -> dict[str, str] | None:
        """A wheel someone put into the platform's folder that meets `requirement` (the highest
        version), so that an offline host needs no registry; None when there is none."""
        from packaging.requirements import InvalidRequirement, Requirement
        from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename

        try:
            wanted = Requirement(requirement)
        except InvalidRequirement:
            return None
        found = []
        for path in self.folder(platform).glob("*.whl"):
            try:
                name, version, _build, _tags = parse_wheel_filename(path.name)
            except InvalidWheelFilename:
                continue
            if name == canonicalize_name(wanted.name) and wanted.specifier.contains(
                version, prereleases=True
            ):
                found.append((version, path))
        if not found:
            return None
        path = max(found)[1]
        return {"file": path.name, "sha256": sha256_file(path)}

    def _download(self, requirement: str, platform: TargetPlatform) -> dict[str, str]:
        folder = self.folder(platform)
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=folder, prefix=".download-") as scratch:
            command = [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--only-binary=:all:",
                "--no-deps",
                "--disable-pip-version-check",
                "--quiet",
                *platform.pip_arguments(),
                "--dest",
                scratch,
                requirement,
            ]
            try:
                done = subprocess.run(
                    command,
                    capture_output=True,
                    text=True,
                    timeout=PIP_TIMEOUT_S,
                    stdin=subprocess.DEVNULL,
                    check=False,
                )
            except subprocess.TimeoutExpired:
                done = None
            wheels = sorted(Path(scratch).glob("*.whl"))
            if done is None or done.returncode != 0 or len(wheels) != 1:
                tail = (done.stderr or done.stdout).strip().splitlines()[-3:] if done else []
                raise RuntimeSetError(
                    f"no wheel of {requirement!r} for {platform.key} could be fetched "
                    f"({' '.join(tail) or 'pip timed out'}): pick a version that has a wheel for "
                    f"that platform, or put the wheel into {folder} yourself"
                )
            target = folder / wheels[0].name
            shutil.move(str(wheels[0]), target)
        return {"file": target.name, "sha256": sha256_file(target)}


@dataclass(frozen=True)
class RuntimePlan:
    """A runtime set on one target: wheels there and to upload (by remote path), its venv."""

    platform: TargetPlatform
    on_target: dict[str, Wheel]
    to_upload: dict[str, Wheel]
    venv: str
    ready: bool

    @property
    def python(self) -> str:
        return self.venv + "/bin/python"

    @property
    def upload_bytes(self) -> int:
        return sum(w.size for w in self.to_upload.values())


def set_key(platform: TargetPlatform, wheels: Sequence[Wheel]) -> str:
    """The name of a set's venv on the target: its interpreter and its wheels' hashes."""
    text = platform.executable + "\0" + "\0".join(sorted(w.sha256 for w in wheels))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


# $1: the base python, $2: the venv folder, then the wheel files
INSTALL_SCRIPT = (
    'py=$1; dir=$2; shift 2; rm -rf -- "$dir" && "$py" -m venv -- "$dir" '
    '|| { echo "nsdl: $py -m venv failed" >&2; exit 5; }; '
    '"$dir/bin/python" -m pip install --no-index --no-deps --disable-pip-version-check -q -- "$@" '
    '&& touch -- "$dir/.nsdl-ready"'
)
