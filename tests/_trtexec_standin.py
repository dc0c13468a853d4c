"""A stand-in for trtexec that replays the real exports of ../shared/fixtures/trtexec and
records its argv. It checks command lines and parsing only: it is not TensorRT and proves
nothing about profiling on a GPU."""

from __future__ import annotations

import json
import stat
import sys
from pathlib import Path

from test_profiling_helpers import shared_fixture

PREFIX = "mobilenet.qat.onnx.engine."

_SCRIPT = """#!{python}
import json, os, shutil, sys, time
args = sys.argv[1:]
print("&&&& RUNNING TensorRT.trtexec [TensorRT v100300] # trtexec " + " ".join(args))
if args == ["--help"]:
    sys.exit(0)
with open(sys.argv[0] + ".json") as f:
    config = json.load(f)
with open(config["log"], "a") as f:
    f.write(json.dumps(args) + "\\n")
time.sleep(config["sleep"])
opts = dict(a[2:].split("=", 1) for a in args if a.startswith("--") and "=" in a)
if "saveEngine" in opts:
    with open(opts["saveEngine"], "wb") as f:
        f.write(b"not a real engine")
for flag, kind in (("exportProfile", "profile"), ("exportLayerInfo", "graph"),
                   ("exportTimes", "timing")):
    if flag in opts:
        shutil.copy(os.path.join(config["fixtures"], "{prefix}" + kind + ".json"), opts[flag])
open(config["log"] + ".finished", "w").close()
"""


def write_standin(folder: Path, *, sleep: float = 0.0) -> tuple[Path, Path]:
    """The stand-in's path in `folder` and the file each call's argv lands in (JSON lines)."""
    fixtures = shared_fixture("trtexec", PREFIX + "profile.json").parent
    script = folder / "trtexec"
    log = folder / "argv.jsonl"
    script.write_text(_SCRIPT.format(python=sys.executable, prefix=PREFIX))
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    config = {"log": str(log), "fixtures": str(fixtures), "sleep": sleep}
    Path(str(script) + ".json").write_text(json.dumps(config))
    return script, log


def calls(log: Path) -> list[list[str]]:
    """The argv of each stand-in call so far."""
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
