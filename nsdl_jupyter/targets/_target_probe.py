"""What a target is, asked in one go: its platform (which wheels fit), its GPUs with the driver
and the highest CUDA version that driver runs, and which runtime-set venv is ready there.

Runs on the target with the standard library alone (Python 3.8+): SshTarget sends this file as
`python -c` with the deploy folder as its argument, and the runner's `target_check` loads it
from beside the runner files. The host imports it for the keys, so both sides compute them
with the same code.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
import sys
from typing import Any

SMI_TIMEOUT_S = 20
# When a driver's nvidia-smi does not print "CUDA Version": the last CUDA each driver branch
# runs (NVIDIA's CUDA toolkit release notes, table 3).
_DRIVER_CUDA = ((580, "13.0"), (575, "12.9"), (570, "12.8"), (560, "12.6"), (550, "12.4"),
                (545, "12.3"), (535, "12.2"), (530, "12.1"), (525, "12.0"), (520, "11.8"),
                (450, "11.0"))  # fmt: skip


def platform_facts() -> dict[str, Any]:
    libc = platform.libc_ver()
    return {
        "arch": platform.machine(),
        "libc": libc[0],
        "libc_version": libc[1],
        "python": list(sys.version_info[:2]),
        "implementation": sys.implementation.name,
        "executable": sys.executable,
    }


def platform_key(python: Any, glibc: Any, arch: str) -> str:
    """The name of a platform's wheel folder: `cp311-glibc2.36-x86_64`."""
    libc = f"glibc{glibc[0]}.{glibc[1]}" if glibc else "noglibc"
    return f"cp{python[0]}{python[1]}-{libc}-{arch}"


def glibc_of(facts: dict[str, Any]) -> tuple[int, int] | None:
    if facts.get("libc") != "glibc":
        return None
    major, minor = (int(x) for x in str(facts["libc_version"]).split(".")[:2])
    return major, minor


def set_key(executable: str, hashes: Any) -> str:
    """The name of a runtime set's venv: its base interpreter and its wheels' sha256."""
    text = executable + "\0" + "\0".join(sorted(hashes))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def cuda_of_driver(driver: str) -> str | None:
    try:
        major = int(driver.split(".", maxsplit=1)[0])
    except ValueError:
        return None
    return next((cuda for branch, cuda in _DRIVER_CUDA if major >= branch), None)


def _smi(smi: str, *arguments: str) -> tuple[int, str]:
    done = subprocess.run(
        [smi, *arguments],
        capture_output=True,
        text=True,
        timeout=SMI_TIMEOUT_S,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    return done.returncode, (done.stdout if done.returncode == 0 else done.stderr or done.stdout)


def nvidia_smi() -> dict[str, Any]:
    """The GPUs (name, driver, memory), the driver and the CUDA version it supports."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return {"available": False, "message": "nvidia-smi is not on PATH"}
    try:
        code, out = _smi(
            smi, "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"
        )
        if code != 0:
            return {"available": False, "message": out.strip()[-500:]}
        gpus = [[f.strip() for f in line.split(",")] for line in out.splitlines() if line.strip()]
        # the header of `-q` (and of the plain table) says the CUDA version the driver runs
        code, text = _smi(smi, "-q", "-d", "COMPUTE")
    except (OSError, subprocess.TimeoutExpired) as exc:
        return {"available": False, "message": str(exc)}
    driver = gpus[0][1] if gpus and len(gpus[0]) > 1 else ""
    found = re.search(r"CUDA Version\s*:\s*([0-9]+\.[0-9]+)", text) if code == 0 else None
    cuda = found.group(1) if found else cuda_of_driver(driver)
    return {"available": True, "gpus": gpus, "driver": driver, "cuda": cuda}


def ready_venv(deploy_root: str, sets: dict[str, Any], facts: dict[str, Any]) -> str | None:
    """The venv of the runtime set for this platform (`sets`: platform key -> the wheels'
    sha256), when it is made and ready; else None."""
    key = platform_key(facts["python"], glibc_of(facts), str(facts["arch"]))
    hashes = sets.get(key)
    if not isinstance(hashes, list):
        return None
    venv = os.path.join(deploy_root, "runtimes", set_key(str(facts["executable"]), hashes))
    ready = os.path.exists(os.path.join(venv, ".nsdl-ready"))
    return venv if ready and os.access(os.path.join(venv, "bin", "python"), os.X_OK) else None


def present(deploy_root: str, relative: Any) -> list[str]:
    """Those of the `relative` paths under the deploy folder that exist there."""
    return [p for p in relative if os.path.exists(os.path.join(deploy_root, str(p)))]


def main(argv: list[str]) -> int:
    """`probe.py DEPLOY_ROOT [SETS_JSON]`: one JSON line about this machine."""
    facts = platform_facts()
    answer: dict[str, Any] = {"platform": facts, "nvidia_smi": nvidia_smi()}
    if len(argv) > 2:
        wanted = json.loads(argv[2])
        answer["ready_venv"] = ready_venv(argv[1], wanted.get("sets", {}), facts)
        answer["present"] = present(argv[1], wanted.get("paths", []))
    print(json.dumps(answer))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
