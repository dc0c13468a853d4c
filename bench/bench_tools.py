"""User tools: lines of tool output through the notebook widget (`run_tool_in_notebook`).

Inside a real kernel (nbclient, so every widget change is serialised and sent as a comm
message, as in JupyterLab; the browser's own drawing is not timed):
- today's path: a tool printing N lines, from start until the run is done and the log shows
  the last lines; widget redraws counted;
- the per-line path it replaced (`Output.append_stdout` for every line: each call resends the
  whole log), timed on fewer lines because it grows quadratically (385 s for 20k in issue 9).

Prints a table and one JSON line. Never asserts a time.

    python bench/bench_tools.py [--lines 20000] [--old-lines 1000 2000 4000]
"""

from __future__ import annotations

import argparse
import json
import tempfile
from typing import Any

import nbformat
from _common import emit_json, fmt_seconds, print_table
from nbclient import NotebookClient

MARK = "@@bench-tools@@"

NEW = """
import json, sys, time
from nsdl_jupyter.examples import small_transformer
from nsdl_jupyter.transforms import UserTool, run_tool_in_notebook
import onnx
onnx.save(small_transformer(layers=1), "bench_model.onnx")
code = f"for i in range({lines}): print('line', i)"
tool = UserTool("loud", sys.executable, ["-c", code], open_output=False)
start = time.perf_counter()
box = run_tool_in_notebook(tool, "bench_model.onnx")
redraws = []
box.children[1].observe(redraws.append, names="outputs")
box.run.wait()
seconds = time.perf_counter() - start
shown = "".join(o["text"] for o in box.children[1].outputs).count("\\n")
print(MARK + json.dumps({"seconds": seconds, "redraws": len(redraws), "shown_lines": shown}))
"""

OLD = """
import json, time
import ipywidgets as widgets
log = widgets.Output()
display(log)
start = time.perf_counter()
for i in range({lines}):
    log.append_stdout(f"line {{i}}\\n")
print(MARK + json.dumps({{"seconds": time.perf_counter() - start}}))
"""


def _in_kernel(source: str) -> dict[str, Any]:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(f"MARK = {MARK!r}\n" + source)]
    with tempfile.TemporaryDirectory() as folder:
        client = NotebookClient(
            nb, timeout=1800, kernel_name="python3", resources={"metadata": {"path": folder}}
        )
        client.execute()
    text = "".join(o.get("text", "") for o in nb.cells[0].outputs if o.output_type == "stream")
    line = next(line for line in text.splitlines() if line.startswith(MARK))
    result: dict[str, Any] = json.loads(line[len(MARK) :])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--lines", type=int, default=20000)
    parser.add_argument("--old-lines", type=int, nargs="*", default=[1000, 2000, 4000])
    args = parser.parse_args()
    new = _in_kernel(NEW.replace("{lines}", str(args.lines)))
    rows = [
        {
            "path": "ring buffer + throttled redraw",
            "lines": f"{args.lines:,}",
            "seconds": fmt_seconds(new["seconds"]),
            "redraws": new["redraws"],
            "lines shown": new["shown_lines"],
        }
    ]
    old: dict[str, float] = {}
    for lines in args.old_lines:
        seconds = _in_kernel(OLD.format(lines=lines))["seconds"]
        old[str(lines)] = seconds
        rows.append(
            {
                "path": "append_stdout per line (before)",
                "lines": f"{lines:,}",
                "seconds": fmt_seconds(seconds),
                "redraws": lines,
                "lines shown": lines,
            }
        )
    if len(args.old_lines) >= 2:  # quadratic: scale the largest measurement
        biggest = max(args.old_lines)
        estimate = old[str(biggest)] * (args.lines / biggest) ** 2
        rows.append(
            {
                "path": "append_stdout per line (before), extrapolated",
                "lines": f"{args.lines:,}",
                "seconds": f"~{fmt_seconds(estimate)}",
                "redraws": args.lines,
                "lines shown": args.lines,
            }
        )
    print_table("tool output through the notebook widget, in a real kernel", rows)
    emit_json(
        "tools",
        {
            "lines": args.lines,
            "widget_seconds": new["seconds"],
            "widget_redraws": new["redraws"],
            "widget_lines_shown": new["shown_lines"],
            "per_line_append_seconds": old,
        },
    )


if __name__ == "__main__":
    main()
