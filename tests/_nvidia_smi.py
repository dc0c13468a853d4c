"""A stand-in `nvidia-smi` for a test target: a real executable on the target's PATH that
prints what a real one prints (the `--query-gpu` CSV and the `-q` report's header) for a host
with two GPUs and the driver the test says."""

from __future__ import annotations

from pathlib import Path

SMI = """#!/bin/sh
# nvidia-smi as the target's driver answers: the CSV query, or the `-q` report
here=$(dirname "$0")
case "$1" in
  --query-gpu=*) cat "$here/query.csv" ;;
  -q) cat "$here/report.txt" ;;
  *) echo "unknown option $1" >&2; exit 2 ;;
esac
"""
REPORT = """
==============NVSMI LOG==============

Timestamp                                 : Wed Dec  2 03:40:11 2026
Driver Version                            : {driver}
CUDA Version                              : {cuda}

Attached GPUs                             : 2
GPU 00000000:17:00.0
    Compute Mode                          : Default

GPU 00000000:65:00.0
    Compute Mode                          : Default

"""
QUERY = "NVIDIA A100-SXM4-80GB, {driver}, 81920 MiB\nNVIDIA A100-SXM4-80GB, {driver}, 81920 MiB\n"


def driver(folder: Path, version: str, cuda: str) -> None:
    """What the fake target's nvidia-smi says from now on."""
    (folder / "report.txt").write_text(REPORT.format(driver=version, cuda=cuda))
    (folder / "query.csv").write_text(QUERY.format(driver=version))


def fake_nvidia_smi(folder: Path, version: str, cuda: str) -> str:
    """Put the stand-in into `folder`, answering for driver `version` (CUDA `cuda`); returns a
    PATH that finds it first (sshd's SetEnv gives it to the target's sessions)."""
    folder.mkdir(parents=True, exist_ok=True)
    smi = folder / "nvidia-smi"
    smi.write_text(SMI)
    smi.chmod(0o755)
    driver(folder, version, cuda)
    return f"{folder}:/usr/local/bin:/usr/bin:/bin"
