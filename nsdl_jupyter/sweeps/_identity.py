"""Who ran a row: a target's identity (GPU, driver, CPU, runtime versions) from `check_target`,
so rows from different machines are never confused and the cache never serves one machine's
figures for another's."""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import sys
from dataclasses import asdict, dataclass
from typing import Any

from nsdl_jupyter.profiling import check_target
from nsdl_jupyter.targets import LocalTarget, Target


@dataclass(frozen=True)
class TargetIdentity:
    """What a row's figures depend on besides the model and the settings. `gpus` counts the
    target's GPUs: one sweep slot each (one slot on a machine without a GPU); `cores` the CPU
    cores its runs may use (0: unknown), shared by the CPU runs of its slots."""

    target: str
    gpu: str
    driver: str
    cpu: str
    os: str
    python: str
    onnxruntime: str
    tensorrt: str
    gpus: int
    cores: int = 0

    @property
    def slots(self) -> int:
        return max(1, self.gpus)

    def key(self) -> str:
        """A hash of all of it: two machines of one fleet have the same GPU and versions, but
        not the same target name."""
        return hashlib.sha256(json.dumps(asdict(self), sort_keys=True).encode()).hexdigest()[:16]

    def columns(self) -> dict[str, Any]:
        """The row columns that say where a row ran."""
        return {
            "target": self.target,
            "gpu_name": self.gpu,
            "driver": self.driver,
            "cpu": self.cpu,
            "onnxruntime_version": self.onnxruntime,
            "tensorrt_version": self.tensorrt,
        }


def identity_from_check(name: str, raw: dict[str, Any]) -> TargetIdentity:
    """A TargetIdentity from the raw answer of the runner's target check."""
    smi = raw.get("nvidia_smi") or {}
    gpus = [g for g in smi.get("gpus", []) if g] if smi.get("available") else []
    ort = raw.get("onnxruntime") or {}
    return TargetIdentity(
        target=name,
        gpu="; ".join(sorted({str(g[0]) for g in gpus})),
        driver="; ".join(sorted({str(g[1]) for g in gpus if len(g) > 1})),
        cpu=str(ort.get("cpu") or raw.get("arch") or ""),
        os=str(raw.get("os") or ""),
        python=str(raw.get("python") or ""),
        onnxruntime=str(ort.get("ort_version") or ""),
        tensorrt=str(raw.get("tensorrt") or raw.get("tensorrt_rtx") or ""),
        gpus=len(gpus),
        cores=int(raw.get("cores") or 0),
    )


_LOCAL: dict[tuple[str, str], TargetIdentity] = {}


def _local_key() -> tuple[str, str]:
    """What would change this machine's identity within one kernel: the runner's Python and
    the onnxruntime installed for it (a driver update needs a reboot, hence a new kernel)."""
    try:
        ort = importlib.metadata.version("onnxruntime")
    except importlib.metadata.PackageNotFoundError:
        ort = ""
    return sys.executable, ort


def target_identity(target: Target | None = None, *, timeout: float = 120.0) -> TargetIdentity:
    """The identity of `target` (default: this machine, asked once per kernel and onnxruntime
    install), in one runner call."""
    local = target is None or (isinstance(target, LocalTarget) and target.python == sys.executable)
    if local and _local_key() in _LOCAL:
        return _LOCAL[_local_key()]
    check = check_target(target, timeout=timeout)
    identity = identity_from_check(check.target, check.raw)
    if local:
        _LOCAL[_local_key()] = identity
    return identity
