"""The host's wheel cache serves wheels put into its platform folder by hand (an offline host,
issue 27): no registry is asked for a requirement such a wheel meets."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from nsdl_jupyter.targets._runtimes import RuntimeSetError, TargetPlatform, WheelCache

PLATFORM = TargetPlatform("x86_64", (2, 36), (3, 12), "cpython", "/usr/bin/python3")
# a name no registry holds: fetching it fails, so a served wheel came from the folder
NAME = "nsdl-offline-probe-pkg"


def put_wheel(folder: Path, version: str) -> Path:
    """A real (installable) pure-Python wheel of NAME at `version` in `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    stem = f"nsdl_offline_probe_pkg-{version}"
    path = folder / f"{stem}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as wheel:
        wheel.writestr("nsdl_offline_probe_pkg/__init__.py", f"VERSION = {version!r}\n")
        info = f"{stem}.dist-info"
        wheel.writestr(
            f"{info}/METADATA", f"Metadata-Version: 2.1\nName: {NAME}\nVersion: {version}\n"
        )
        wheel.writestr(
            f"{info}/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        )
        wheel.writestr(f"{info}/RECORD", "")
    return path


def test_a_wheel_put_into_the_cache_folder_is_served_without_a_registry(tmp_path: Path) -> None:
    cache = WheelCache(tmp_path / "wheels")
    folder = cache.folder(PLATFORM)
    put_wheel(folder, "1.0")
    newest = put_wheel(folder, "1.2")
    pinned, free = cache.wheels([f"{NAME}==1.0", NAME.replace("-", "_")], PLATFORM)
    assert pinned.path.name == "nsdl_offline_probe_pkg-1.0-py3-none-any.whl"
    assert free.path == newest  # the highest version that meets the requirement
    assert sorted(cache._resolved(PLATFORM)) == sorted([f"{NAME}==1.0", "nsdl_offline_probe_pkg"])


def test_a_wheel_that_does_not_meet_the_requirement_is_not_taken(tmp_path: Path) -> None:
    cache = WheelCache(tmp_path / "wheels")
    put_wheel(cache.folder(PLATFORM), "1.0")
    with pytest.raises(RuntimeSetError, match="put the wheel into"):
        cache.wheels([f"{NAME}>=2"], PLATFORM)
