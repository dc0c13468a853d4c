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

import json
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nsdl_jupyter._paths import cache_dir
from nsdl_jupyter.targets import _target_probe
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

# the probe's file: deployed beside the runner files (their target check loads it), and sent
# to the target's python as `-c` text, the deploy folder as its argument: one JSON line
PROBE_FILE = Path(_target_probe.__file__)
PLATFORM_PROBE = PROBE_FILE.read_text(encoding="utf-8")
# the driver branch each CUDA major needs at least (CUDA's minor version compatibility)
MIN_DRIVER = {11: 450, 12: 525, 13: 580}


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
    driver: str | None = None  # the NVIDIA driver's version; None: no nvidia-smi answered
    cuda: str | None = None  # the highest CUDA version that driver runs

    @classmethod
    def from_probe(cls, raw: dict[str, Any], smi: dict[str, Any] | None = None) -> TargetPlatform:
        """From the probe's `platform` facts and its `nvidia_smi` answer."""
        python = raw["python"]
        smi = smi if isinstance(smi, dict) and smi.get("available") else {}
        return cls(
            str(raw["arch"]),
            _target_probe.glibc_of(raw),
            (int(python[0]), int(python[1])),
            str(raw["implementation"]),
            str(raw["executable"]),
            str(smi["driver"]) if smi.get("driver") else None,
            str(smi["cuda"]) if smi.get("cuda") else None,
        )

    @property
    def key(self) -> str:
        return _target_probe.platform_key(self.python, self.glibc, self.arch)

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

    def known(self, requirements: Sequence[str]) -> dict[str, list[Wheel]]:
        """For each platform whose folder resolves every requirement to a wheel present here,
        those wheels (nothing is fetched)."""
        found: dict[str, list[Wheel]] = {}
        for folder in sorted(self.root.glob("*/resolved.json")):
            try:
                resolved = json.loads(folder.read_text())
                entries = [resolved[r] for r in requirements]
                wheels = [
                    Wheel(r, folder.parent / e["file"], e["sha256"])
                    for r, e in zip(requirements, entries, strict=True)
                ]
            except (OSError, ValueError, LookupError, TypeError):
                continue
            if all(w.path.is_file() for w in wheels):
                found[folder.parent.name] = wheels
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
    return _target_probe.set_key(platform.executable, [w.sha256 for w in wheels])


_CUDA_NAME = re.compile(r"[-_]cu(\d{2})(?![0-9])", re.IGNORECASE)


def cuda_major_needed(wheel: Wheel) -> int | None:
    """The CUDA major a wheel is built for: from its name (`tensorrt_cu13`) or the CUDA
    packages its metadata requires (`nvidia-cuda-runtime-cu12`); None when it names none."""
    found = [int(m) for m in _CUDA_NAME.findall(wheel.path.name.split("-")[0])]
    if not found:
        try:
            with zipfile.ZipFile(wheel.path) as archive:
                meta = next(
                    (n for n in archive.namelist() if n.endswith(".dist-info/METADATA")), None
                )
                text = archive.read(meta).decode("utf-8", "replace") if meta else ""
        except (OSError, zipfile.BadZipFile):
            text = ""
        for line in text.splitlines():
            if line.startswith("Requires-Dist:"):
                name = re.split(r"[\s;<>=!~\[(]", line.split(":", 1)[1].strip(), maxsplit=1)[0]
                found += [int(m) for m in _CUDA_NAME.findall(name)]
    # a wheel whose extras name several CUDA majors (cu12 and cu13 variants) runs with the lowest
    return min(found) if found else None


def check_driver(platform: TargetPlatform, wheels: Sequence[Wheel], target: str) -> None:
    """RuntimeSetError when a wheel needs a newer CUDA than the target's driver runs (said
    before anything is uploaded); nothing to say on a target without nvidia-smi."""
    if platform.cuda is None:
        return
    have = tuple(int(x) for x in platform.cuda.split(".")[:2])
    for wheel in wheels:
        major = cuda_major_needed(wheel)
        if major is None or major <= have[0]:
            continue
        version = wheel.path.name.split("-")[1] if wheel.path.name.count("-") >= 2 else ""
        name = wheel.path.name.split("-")[0].replace("_", "-")
        raise RuntimeSetError(
            f"cannot deploy to {target}: driver {platform.driver} supports CUDA \u2264 "
            f"{platform.cuda}, {name} {version} needs CUDA {major}: install a driver of branch "
            f"{MIN_DRIVER.get(major, '?')} or newer there, or ask for a build for CUDA "
            f"{have[0]} (e.g. an older {name} version)"
        )


# $1: the base python, $2: the venv folder, then the wheel files
INSTALL_SCRIPT = (
    'py=$1; dir=$2; shift 2; rm -rf -- "$dir" && "$py" -m venv -- "$dir" '
    '|| { echo "nsdl: $py -m venv failed" >&2; exit 5; }; '
    '"$dir/bin/python" -m pip install --no-index --no-deps --disable-pip-version-check -q -- "$@" '
    '&& touch -- "$dir/.nsdl-ready"'
)
