"""Models and helpers shared by the sweep tests: a tiny BERT shaped like a TorchScript export
(free `batch_size` axis, `/encoder/layer.0/...` names), and the backend this machine lacks."""

from __future__ import annotations

import onnx

from nsdl_jupyter.examples import small_transformer
from nsdl_jupyter.sweeps import target_identity

RUNNER_MARK = "_ort_runner"  # in the command line of every onnxruntime runner process


def tiny_export() -> onnx.ModelProto:
    return small_transformer(1, hidden=32, heads=2, seq=8, vocab=100)


def missing_backend() -> str | None:
    """A backend this machine cannot run (its sweep rows fail for real), or None."""
    identity = target_identity()
    if not identity.tensorrt:
        return "tensorrt"
    if not identity.gpus:
        return "ort-cuda"
    return None


def runner_processes() -> list[int]:
    """Pids of onnxruntime runner processes anywhere on this machine."""
    import psutil

    found = []
    for process in psutil.process_iter(["pid", "cmdline"]):
        cmdline = process.info.get("cmdline") or []
        if any(RUNNER_MARK in part for part in cmdline):
            found.append(process.info["pid"])
    return found
