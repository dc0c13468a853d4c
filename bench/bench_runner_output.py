"""Benchmark of reading hostile runner output (issue 22, item 6): a runner that writes one
line of N MiB without a newline on stdout, then a result, then N MiB on stderr, on this
machine and over SSH (a real sshd on 127.0.0.1). Prints the wall time and the peak of Python
memory the kernel side held (tracemalloc), and one JSON line. Before the caps, a 128 MiB line
over SSH took 180 s and +275 MB (quadratic rejoining).

    python bench/bench_runner_output.py [--mib 128]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests._sshd

from _common import emit_json, fmt_seconds, print_table

from nsdl_jupyter.targets import LocalTarget, Target
from tests._sshd import ssh_lab

RUNNER = """
import os
chunk = b"x" * (1 << 20)
for _ in range({mib}):
    os.write(1, chunk)
os.write(1, b'\\n@@nsdl {{"event": "result", "ok": 1}}\\n')
for _ in range({mib}):
    os.write(2, chunk)
"""


def _run(target: Target, runner: Path) -> tuple[float, float]:
    workdir = target.make_workdir()
    tracemalloc.start()
    try:
        start = time.perf_counter()
        result = target.start(runner, {}, workdir).wait(600)
        seconds = time.perf_counter() - start
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
        target.remove_workdir(workdir)
    assert result.result == {"event": "result", "ok": 1}, result.error
    return seconds, peak / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=128)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-output-") as folder_name:
        folder = Path(folder_name)
        runner = folder / "endless_runner.py"
        runner.write_text(RUNNER.format(mib=args.mib))
        with ssh_lab(folder / "ssh") as lab:
            remote = lab.target().connect()
            local_s, local_mib = _run(LocalTarget(), runner)
            ssh_s, ssh_mib = _run(remote, runner)
            remote.close()
    print_table(
        f"one {args.mib} MiB line without newline on stdout and on stderr",
        [
            {"target": "local", "time": fmt_seconds(local_s), "peak MiB": f"{local_mib:.0f}"},
            {"target": "ssh", "time": fmt_seconds(ssh_s), "peak MiB": f"{ssh_mib:.0f}"},
        ],
    )
    emit_json(
        "runner_output",
        {
            "line_mib": args.mib,
            "local_s": local_s,
            "local_peak_mib": local_mib,
            "ssh_s": ssh_s,
            "ssh_peak_mib": ssh_mib,
        },
    )


if __name__ == "__main__":
    main()
