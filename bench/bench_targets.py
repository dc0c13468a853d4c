"""Benchmarks of targets that set themselves up (issue 27), against real OpenSSH sshds on
127.0.0.1: one with SFTP, one without (files stream over exec channels), and a target whose
Python has no onnxruntime, given a runtime set (wheels from the host's cache). Prints figures
and one JSON line.

For each: `check_target` on a fresh connection (connect included; goal <= 1.5 s) and on a
connected target, and the extra wall time of a warm remote profile run (runner, model and
runtime already there) over the same run on this machine (goal <= 0.5 s); for the runtime
set also its first deployment (upload + venv + offline pip install).

    python bench/bench_targets.py [--runs 5] [--iterations 20] [--no-runtime]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import onnx
import onnxruntime

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests._sshd

from _common import emit_json, fmt_seconds, print_table

from nsdl_jupyter import examples
from nsdl_jupyter.profiling import check_target, profile_ort
from nsdl_jupyter.targets import SshTarget
from tests._sshd import Sshd, keygen


def _timed(action: Any) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


LABELS = {
    "first_run_s": "first run (deploys)",
    "connect_and_check_s": "connect + check_target (goal <= 1.5 s)",
    "check_s": "check_target, connected",
    "remote_extra_s": "warm remote run - local run (goal <= 0.5 s)",
}


def measure(
    made: dict[str, Any], model: Path, settings: dict[str, Any], runs: int
) -> dict[str, float]:
    """The figures of one target (SshTarget(**made)), medians over `runs`."""
    remote = SshTarget(**made)
    first = _timed(lambda: profile_ort(model, target=remote, **settings))
    remote.close()
    fresh = [_timed(lambda: check_target(SshTarget(**made).connect())) for _ in range(runs)]
    remote = SshTarget(**made).connect()
    check_target(remote)
    checks = [_timed(lambda: check_target(remote)) for _ in range(runs)]
    profile_ort(model, target=remote, **settings)
    local_s, remote_s = [], []
    for _ in range(runs):
        local_s.append(_timed(lambda: profile_ort(model, **settings)))
        remote_s.append(_timed(lambda: profile_ort(model, target=remote, **settings)))
    remote.close()
    return {
        "first_run_s": first,
        "connect_and_check_s": statistics.median(fresh),
        "check_s": statistics.median(checks),
        "local_run_s": statistics.median(local_s),
        "warm_remote_run_s": statistics.median(remote_s),
        "remote_extra_s": statistics.median(remote_s) - statistics.median(local_s),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--no-runtime", action="store_true", help="skip the runtime set case")
    args = parser.parse_args()

    rows: list[dict[str, str]] = []
    figures: dict[str, Any] = {"runs": args.runs, "iterations": args.iterations}
    with tempfile.TemporaryDirectory(prefix="bench-targets-") as folder_name:
        folder = Path(folder_name)
        key = keygen(folder / "id_bench")
        authorized = folder / "authorized_keys"
        authorized.write_text(Path(f"{key}.pub").read_text())
        servers = {
            "sftp": Sshd(folder / "sftp", authorized, password_auth=False),
            "stream": Sshd(folder / "stream", authorized, password_auth=False, sftp=False),
        }
        model = folder / "small.onnx"
        onnx.save(examples.small_transformer(batch=1), model)
        bare = folder / "bare"
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True)
        cases: list[tuple[str, str, dict[str, Any]]] = [
            ("sftp", "sftp", {"python": sys.executable}),
            ("stream", "stream", {"python": sys.executable}),
        ]
        if not args.no_runtime:
            runtime = f"onnxruntime=={onnxruntime.__version__}"
            cases.append(("runtime", "sftp", {"python": str(bare / "bin/python")}))
            cases[-1][2]["runtimes"] = runtime
        settings: dict[str, Any] = {
            "iterations": args.iterations,
            "warmup": 2,
            "trace_path": folder / "trace.json",
        }
        try:
            for server in servers.values():
                server.start()
            for case, server_name, extra in cases:
                server = servers[server_name]
                known = folder / f"known_hosts-{server.port}"
                known.write_text(server.known_hosts_line())
                made = {
                    "host": "127.0.0.1",
                    "user": "root",
                    "port": server.port,
                    "key_file": key,
                    "known_hosts": known,
                    "ssh_config": False,
                    "deploy_dir": str(folder / f"deploy-{case}"),
                    **extra,
                }
                figures[case] = f = measure(made, model, settings, args.runs)
                rows += [
                    {"case": case, "what": what, "time": fmt_seconds(f[name])}
                    for name, what in LABELS.items()
                ]
        finally:
            for server in servers.values():
                server.stop()
    print_table("targets on 127.0.0.1 (medians)", rows)
    emit_json("targets", figures)


if __name__ == "__main__":
    main()
