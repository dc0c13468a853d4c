"""Benchmarks of the SSH target against a real OpenSSH sshd on 127.0.0.1 (started here, with
its own host key and authorized_keys, like the tests). Prints figures and one JSON line.

1. Connect (TCP, key exchange, host key check, key login, SFTP, deploy dir check) and the
   target check (`check_target`: one runner call listing Python, onnxruntime, GPUs, ...).
2. The extra wall time of a cached remote profile run (runner and model already deployed)
   over the same run on LocalTarget, small model (goal: at most 0.5 s), and the bytes a
   cached run uploads.

    python bench/bench_ssh.py [--runs 5] [--iterations 20]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import onnx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests._sshd

from _common import emit_json, fmt_seconds, print_table

from nsdl_jupyter import examples
from nsdl_jupyter.profiling import check_target, profile_ort
from nsdl_jupyter.targets import SshTarget
from tests._sshd import Sshd, keygen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--iterations", type=int, default=20)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="bench-ssh-") as folder_name:
        folder = Path(folder_name)
        key = keygen(folder / "id_bench")
        authorized = folder / "authorized_keys"
        authorized.write_text(Path(f"{key}.pub").read_text())
        server = Sshd(folder / "sshd", authorized, password_auth=False).start()
        known = folder / "known_hosts"
        known.write_text(server.known_hosts_line())
        model = folder / "small.onnx"
        onnx.save(examples.small_transformer(batch=1), model)

        def target() -> SshTarget:
            return SshTarget(
                "127.0.0.1",
                "root",
                server.port,
                key_file=key,
                known_hosts=known,
                ssh_config=False,
                deploy_dir=str(folder / "deploy"),
                python=sys.executable,
            )

        try:
            connects = []
            for _ in range(args.runs):
                start = time.perf_counter()
                target().connect().close()
                connects.append(time.perf_counter() - start)
            remote = target().connect()
            check_target(remote)  # deploys the runner: later checks are cached
            checks = []
            for _ in range(args.runs):
                start = time.perf_counter()
                check_target(remote)
                checks.append(time.perf_counter() - start)

            settings = {
                "iterations": args.iterations,
                "warmup": 2,
                "trace_path": folder / "trace.json",
            }
            profile_ort(model, target=remote, **settings)  # deploys the model
            local_s, remote_s, uploads = [], [], []
            for _ in range(args.runs):
                start = time.perf_counter()
                profile_ort(model, **settings)
                local_s.append(time.perf_counter() - start)
                before = remote.bytes_uploaded
                start = time.perf_counter()
                profile_ort(model, target=remote, **settings)
                remote_s.append(time.perf_counter() - start)
                uploads.append(remote.bytes_uploaded - before)
            remote.close()
        finally:
            server.stop()

    connect = statistics.median(connects)
    check = statistics.median(checks)
    local = statistics.median(local_s)
    cached = statistics.median(remote_s)
    print_table(
        "SSH target, sshd on 127.0.0.1 (medians)",
        [
            {"what": "connect (key login, SFTP, deploy dir)", "time": fmt_seconds(connect)},
            {"what": "check_target on a connected target", "time": fmt_seconds(check)},
            {"what": "connect + check", "time": fmt_seconds(connect + check)},
            {"what": f"local profile run ({args.iterations} it.)", "time": fmt_seconds(local)},
            {"what": "cached remote profile run", "time": fmt_seconds(cached)},
            {
                "what": "extra time of the remote run (goal <= 0.5 s)",
                "time": fmt_seconds(cached - local),
            },
            {"what": "bytes uploaded by a cached run", "time": str(max(uploads))},
        ],
    )
    emit_json(
        "ssh",
        {
            "connect_s": connect,
            "check_s": check,
            "connect_and_check_s": connect + check,
            "local_run_s": local,
            "cached_remote_run_s": cached,
            "remote_extra_s": cached - local,
            "cached_run_upload_bytes": max(uploads),
            "runs": args.runs,
            "iterations": args.iterations,
        },
    )


if __name__ == "__main__":
    main()
