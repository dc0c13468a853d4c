"""Benchmarks of the SSH target against a real OpenSSH sshd on 127.0.0.1 (started here, with
its own host key and authorized_keys, like the tests). Prints figures and one JSON line.

1. Connect (TCP, key exchange, host key check, key login, SFTP, deploy dir check) and the
   target check (`check_target`: one runner call listing Python, onnxruntime, GPUs, ...), on a
   plain target and on one with a runtime set (`runtimes=`, its venv ready; goal for connect +
   check: at most 1.5 s).
2. The extra wall time of a cached remote profile run (runner and model already deployed)
   over the same run on LocalTarget, small model (goal: at most 0.5 s), and the bytes a
   cached run uploads.
Each remote step also counts its exec round trips (sessions sshd started for a command: each
costs the login shell's start-up, ~0.5-0.9 s where root's ~/.bashrc runs `pyenv init`).

    python bench/bench_ssh.py [--runs 3] [--iterations 20]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import onnx
import onnxruntime

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests._sshd

from _common import emit_json, fmt_seconds, print_table

from nsdl_jupyter import examples
from nsdl_jupyter.profiling import check_target, profile_ort
from nsdl_jupyter.targets import SshTarget
from tests._sshd import Sshd, ssh_lab


def _commands(server: Sshd) -> int:
    """Exec sessions the server has started so far (its log says each)."""
    return server.log.read_text().count("Starting session: command")


def _measure(server: Sshd, runs: int, step: Callable[[], object]) -> tuple[list[float], int]:
    """`runs` timings of `step` and the exec round trips of one."""
    seconds, commands = [], 0
    for _ in range(runs):
        before = _commands(server)
        start = time.perf_counter()
        step()
        seconds.append(time.perf_counter() - start)
        commands = _commands(server) - before
    return seconds, commands


def _fresh_check(make: Callable[[], SshTarget]) -> None:
    """Connect a new target and check it."""
    with make() as target:
        check_target(target)


def _row(what: str, seconds: list[float], commands: int | str = "") -> dict[str, str]:
    return {
        "what": what,
        "min": fmt_seconds(min(seconds)),
        "median": fmt_seconds(statistics.median(seconds)),
        "exec round trips": str(commands),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--iterations", type=int, default=20)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="bench-ssh-") as folder_name:
        folder = Path(folder_name)
        model = folder / "small.onnx"
        onnx.save(examples.small_transformer(batch=1), model)
        bare = folder / "bare-venv"  # a target Python without onnxruntime: the set deploys it
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True)
        with ssh_lab(folder / "ssh") as lab:
            server = lab.server

            def with_set() -> SshTarget:
                return lab.target(
                    python=str(bare / "bin" / "python"),
                    runtimes=f"onnxruntime=={onnxruntime.__version__}",
                    deploy_dir=str(folder / "deploy-set"),
                )

            connects, connect_cmds = _measure(
                server, args.runs, lambda: lab.target().connect().close()
            )
            remote = lab.target().connect()
            check_target(remote)  # deploys the runner: later checks are cached
            checks, check_cmds = _measure(server, args.runs, lambda: check_target(remote))
            both, both_cmds = _measure(server, args.runs, lambda: _fresh_check(lab.target))

            settings = {"iterations": args.iterations, "warmup": 2, "trace_path": folder / "t.json"}
            with with_set() as target:  # deploys the runtime set once
                profile_ort(model, target=target, **settings)
            set_both, set_cmds = _measure(server, args.runs, lambda: _fresh_check(with_set))

            profile_ort(model, target=remote, **settings)  # deploys the model
            local_s, _ = _measure(server, args.runs, lambda: profile_ort(model, **settings))
            before = remote.bytes_uploaded
            remote_s, profile_cmds = _measure(
                server, args.runs, lambda: profile_ort(model, target=remote, **settings)
            )
            uploads = (remote.bytes_uploaded - before) // args.runs
            remote.close()

    local = statistics.median(local_s)
    cached = statistics.median(remote_s)
    print_table(
        f"SSH target, sshd on 127.0.0.1 (min and median of {args.runs})",
        [
            _row("connect (key login, SFTP, deploy dir)", connects, connect_cmds),
            _row("check_target on a connected target", checks, check_cmds),
            _row("connect + check (goal <= 1.5 s)", both, both_cmds),
            _row("connect + check, runtime set ready (goal <= 1.5 s)", set_both, set_cmds),
            _row(f"local profile run ({args.iterations} it.)", local_s),
            _row("cached remote profile run", remote_s, profile_cmds),
            _row(
                "extra time of the remote run (goal <= 0.5 s)",
                [r - lo for r, lo in zip(remote_s, local_s, strict=True)],
            ),
        ],
    )
    print(f"bytes uploaded by a cached run: {uploads}")
    emit_json(
        "ssh",
        {
            "connect_s": statistics.median(connects),
            "check_s": statistics.median(checks),
            "connect_and_check_s": statistics.median(both),
            "connect_and_check_min_s": min(both),
            "connect_and_check_runtime_set_s": statistics.median(set_both),
            "connect_and_check_runtime_set_min_s": min(set_both),
            "check_exec_round_trips": check_cmds,
            "connect_and_check_runtime_set_exec_round_trips": set_cmds,
            "local_run_s": local,
            "cached_remote_run_s": cached,
            "remote_extra_s": cached - local,
            "profile_exec_round_trips": profile_cmds,
            "cached_run_upload_bytes": uploads,
            "runs": args.runs,
            "iterations": args.iterations,
        },
    )


if __name__ == "__main__":
    main()
