"""Which execution providers a target's onnxruntime offers, and why the others are missing."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from nsdl_jupyter.profiling._runners import ask_runner
from nsdl_jupyter.targets import LocalTarget, Target

# The providers the activity offers, in the order of the seed's dialog, and where to get them.
KNOWN_PROVIDERS = {
    "CPUExecutionProvider": "every onnxruntime build",
    "CUDAExecutionProvider": "pip install onnxruntime-gpu (NVIDIA GPU, CUDA and cuDNN)",
    "TensorrtExecutionProvider": "pip install onnxruntime-gpu, plus TensorRT libraries",
    "DmlExecutionProvider": "pip install onnxruntime-directml (Windows)",
}
_SKIPPED = {"AzureExecutionProvider"}  # a remote-inference provider: nothing to profile


@dataclass(frozen=True)
class ProviderStatus:
    name: str
    available: bool
    reason: str  # why it is unavailable ('' when available)

    @property
    def short_name(self) -> str:
        return self.name.removesuffix("ExecutionProvider")


@dataclass(frozen=True)
class RuntimeInfo:
    ort_version: str
    providers: list[ProviderStatus]
    cpu: str
    gpus: list[str]
    host: str


_cache: dict[str, RuntimeInfo] = {}


def probe_runtime(
    target: Target | None = None, *, refresh: bool = False, timeout: float = 120.0
) -> RuntimeInfo:
    """Ask the target's onnxruntime (in a child process) what it offers; cached per target."""
    target = target or LocalTarget()
    key = repr(target)
    if not refresh and key in _cache:
        return _cache[key]
    info = ask_runner(
        target, {"kind": "probe", "protocol": 1}, "query onnxruntime", timeout, _runtime_info
    )
    _cache[key] = info
    return info


def _runtime_info(answer: dict[str, Any]) -> RuntimeInfo:
    available = [p for p in answer["available"] if p not in _SKIPPED]
    load_errors: dict[str, str] = answer.get("load_errors", {})
    statuses: list[ProviderStatus] = []
    for name in [*KNOWN_PROVIDERS, *[p for p in available if p not in KNOWN_PROVIDERS]]:
        if name in load_errors:
            statuses.append(ProviderStatus(name, False, f"fails to load: {load_errors[name]}"))
        elif name in available:
            statuses.append(ProviderStatus(name, True, ""))
        else:
            how = KNOWN_PROVIDERS.get(name, "a build of onnxruntime that has it")
            statuses.append(
                ProviderStatus(
                    name,
                    False,
                    f"not in this onnxruntime build ({answer['ort_version']}); get it with: {how}",
                )
            )
    return RuntimeInfo(
        answer["ort_version"],
        statuses,
        answer.get("cpu", ""),
        list(answer.get("gpus", [])),
        answer.get("host", ""),
    )


def available_providers(target: Target | None = None) -> list[ProviderStatus]:
    """Every execution provider the activity knows, available or with the reason it is not."""
    return probe_runtime(target).providers
