"""How long `nj.open_model` takes against `onnx_ir.load` and `onnx.load`, and where it goes.

Each figure is the best of --repeat runs, each in a fresh process (imports and a 1-node
model opened first, untimed): wall seconds, and CPU seconds of open_model and onnx_ir.load
(the figures to read on a shared machine). Goals: open_model <= 1.1x onnx_ir.load (CPU) on a
20,000-node synthetic model; issue 25: a 100,000-node file drawn in <= 3 s on a quiet 2-core
machine, open_model's share of it ~1.3 s CPU. The breakdown times each step of open_model
(CPU, each step's best of --repeat fresh processes), the steps run as open_model runs them
(cyclic GC paused): parse (the file's protobuf), checks (external data references), onnx_ir
build (serde.deserialize_model), base dir (only with external data), large weights (the
inline weights a save copies file to file), subgraph walk, names (generated-name
recording), data files (identities of external data files), companion (`<model>.nsdl.json`).

    python bench/bench_open.py [--nodes 20000 100000] [--repeat 3]

--fresh-kernel: the first cell of a fresh Jupyter kernel (ipykernel), as a user runs it on a
real torch export (tests/real_exports.py: torchvision ResNet-50, HF BERT-base, weights
inline): `import nsdl_jupyter as nj; doc = nj.open_model(path); nj.GraphView(doc)`, split
into imports (the modules open_model and GraphView use), open and GraphView (scene, layout,
widget state); wall and CPU seconds, the best of --repeat kernels. CPU is the figure to read
on a shared machine.
Goal (issue 25, cell -> drawn on a quiet 2-core machine): ResNet-50 <= 0.8 s, BERT <= 1.2 s,
of which the browser's part (bench/bench_graph_view.py) <= 0.15 s.
Imports read cached bytecode, as after `pip install` (which compiles every module): the
kernels run without PYTHONDONTWRITEBYTECODE, after one untimed kernel per model (with it set,
as some CI shells do, every kernel compiles ~150 modules from source, ~0.2 s more).

    python bench/bench_open.py --fresh-kernel [--models resnet50_torchscript ...] [--repeat 5]

(`--models synthetic_100000`: a synthetic network of that many nodes, as --nodes makes.)

--browser (with --fresh-kernel): the same cell in JupyterLab + headless Chromium, a new
notebook (fresh kernel) each run: Ctrl+Enter -> the widget's "drawn", split into the kernel's
part, the data reaching the view, data -> first paint (decode + first frame) and the frame
to "drawn"; with --netron PYTHON (a Python with `pip install netron==9.3.3`), Netron in the
same Chromium: page request -> first node drawn. Wall seconds and the CPU seconds of every
process involved (kernel, Lab server and browser; Netron's server and browser), each the best
of --repeat.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path
from typing import Any

from _common import emit_json, fmt_seconds, measure_in_child, print_table

from nsdl_jupyter.examples import save_example

REPO = Path(__file__).resolve().parent.parent

GOAL = 1.1

_SETUP = """
import gc, json, time, onnx, onnx_ir as ir, nsdl_jupyter as nj
onnx.load(tiny); ir.load(tiny); nj.open_model(tiny)
"""

# open_model's steps one by one, in its order; prints {step: seconds} as JSON
_STEPS = """
from pathlib import Path
from nsdl_jupyter._gc import gc_paused
from nsdl_jupyter.document._companion import read_companion
from nsdl_jupyter.document._data_files import DataFileBook
from nsdl_jupyter.document._document import _name_unnamed_nodes
from nsdl_jupyter.document._inline_weights import large_weights
from nsdl_jupyter.document._loading import _read_proto, check_external_data
from nsdl_jupyter._walk import graphs_in
source = Path(path).absolute()
steps = {}
def step(name, fn):
    start = time.process_time()
    out = fn()
    steps[name] = time.process_time() - start
    return out
with gc_paused():
    proto = step("parse", lambda: _read_proto(source)[0])
    external = step("checks", lambda: check_external_data(proto, source.parent, source))
    model = step("onnx_ir build", lambda: ir.serde.deserialize_model(proto))
    if external:
        step("base dir", lambda: ir.external_data.set_base_dir(model.graph, source.parent))
    step("large weights", lambda: large_weights(model))
    graphs = step("subgraph walk", lambda: graphs_in(model.graph))
    step("names", lambda: _name_unnamed_nodes(graphs))
    step("data files", lambda: DataFileBook().record_loaded(graphs))
    step("companion", lambda: read_companion(source))
print("STEPS" + json.dumps(steps))
"""


# the CPU seconds of CODE, as {"cpu": seconds}
_CPU = """
_start = time.process_time()
CODE
print("STEPS" + json.dumps({"cpu": time.process_time() - _start}))
"""


def best_in_child(code: str, env: dict[str, str], repeat: int) -> float:
    return min(measure_in_child(code, setup=_SETUP, env=env).seconds for _ in range(repeat))


def best_cpu_in_child(code: str, env: dict[str, str], repeat: int) -> float:
    return min(steps_in_child(_CPU.replace("CODE", code), env)["cpu"] for _ in range(repeat))


def best_steps(env: dict[str, str], repeat: int) -> dict[str, float]:
    """Each step's best CPU seconds over `repeat` fresh processes."""
    runs = [steps_in_child(_STEPS, env) for _ in range(repeat)]
    return {step: min(run[step] for run in runs) for step in runs[0]}


def steps_in_child(code: str, env: dict[str, str]) -> dict[str, float]:
    """Run `_SETUP` then `code` in a fresh process; `code` prints STEPS{name: seconds}."""
    import subprocess
    import sys

    script = _SETUP + code
    done = subprocess.run(
        [sys.executable, "-c", f"path={env['path']!r}\ntiny={env['tiny']!r}\n{script}"],
        capture_output=True,
        text=True,
        check=True,
    )
    line = next(x for x in done.stdout.splitlines() if x.startswith("STEPS"))
    steps: dict[str, float] = json.loads(line[len("STEPS") :])
    return steps


def bench_model(path: Path, tiny: Path, repeat: int) -> dict[str, Any]:
    env = {"path": str(path), "tiny": str(tiny)}
    result: dict[str, Any] = {
        "file_bytes": path.stat().st_size,
        "onnx_load_s": best_in_child("onnx.load(path)", env, repeat),
        "onnx_ir_load_s": best_in_child("ir.load(path)", env, repeat),
        "open_model_s": best_in_child("nj.open_model(path)", env, repeat),
        "onnx_ir_load_cpu_s": best_cpu_in_child("ir.load(path)", env, repeat),
        "open_model_cpu_s": best_cpu_in_child("nj.open_model(path)", env, repeat),
        "steps_cpu_s": best_steps(env, repeat),
    }
    result["ratio_to_onnx_ir"] = result["open_model_cpu_s"] / result["onnx_ir_load_cpu_s"]
    return result


# the cell, split; prints CELL{step: [wall s, cpu s]} as JSON
_CELL = """
import json, time
def _now():
    return time.perf_counter(), time.process_time()
_t = [_now()]
import nsdl_jupyter as nj
from nsdl_jupyter.document import open_model
from nsdl_jupyter.widgets.graph._graph_view import GraphView
_t.append(_now())
doc = nj.open_model(PATH)
_t.append(_now())
view = nj.GraphView(doc)
_t.append(_now())
_steps = dict(zip(("imports", "open", "graph_view"), zip(_t, _t[1:])))
_out = {k: [b[0] - a[0], b[1] - a[1]] for k, (a, b) in _steps.items()}
print("CELL" + json.dumps(_out))
"""
FRESH_MODELS = ("resnet50_torchscript", "bert_base_torchscript")


def cell_in_fresh_kernel(path: Path) -> dict[str, tuple[float, float]]:
    """The cell's split {step: (wall s, CPU s)} in a new ipykernel, shut down after."""
    import os

    from jupyter_client.manager import start_new_kernel

    paths = [str(REPO), os.environ.get("PYTHONPATH", "")]
    manager, client = start_new_kernel(
        kernel_name="python3", env=dict(os.environ, PYTHONPATH=os.pathsep.join(paths))
    )
    try:
        lines: list[str] = []
        reply = client.execute_interactive(
            _CELL.replace("PATH", repr(str(path))),
            timeout=300,
            output_hook=lambda msg: lines.append(msg["content"].get("text", "")),
        )
        if reply["content"]["status"] != "ok":
            raise RuntimeError(f"the cell failed in the kernel: {reply['content']}")
        split = json.loads("".join(lines).split("CELL", 1)[1].splitlines()[0])
        steps = {step: (wall, cpu) for step, (wall, cpu) in split.items()}
        steps["cell"] = (sum(w for w, _ in steps.values()), sum(c for _, c in steps.values()))
        return steps
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


_LAB_CELL = """import time; T0, C0 = time.time() * 1000, time.process_time() * 1000
import nsdl_jupyter as nj; doc = nj.open_model(PATH); view = nj.GraphView(doc)
print("T", T0, time.time() * 1000, time.process_time() * 1000 - C0)
view"""
_VIEW_STATS = """([i]) => {
  const panel = '.jp-NotebookPanel:not(.lm-mod-hidden)';
  const cell = document.querySelectorAll(panel + ' .jp-Notebook .jp-Cell')[i];
  const s = cell.querySelector('.nsdl-graph-view').__nsdl.stats();
  return [s.topologyAt, s.firstPaintAt];
}"""


def _cpu_of_children() -> dict[int, float]:
    """CPU seconds of every process this one started, and theirs (Lab, its kernels, the
    browser's processes, a Netron server): {pid: seconds}."""
    import psutil  # type: ignore[import-untyped]

    seconds = {}
    for child in psutil.Process().children(recursive=True):
        try:
            times = child.cpu_times()
        except psutil.Error:  # ended meanwhile
            continue
        seconds[child.pid] = times.user + times.system
    return seconds


def _cpu_since(before: dict[int, float]) -> float:
    return sum(s - before.get(pid, 0.0) for pid, s in _cpu_of_children().items())


def lab_runs(paths: dict[str, Path], repeat: int) -> dict[str, dict[str, float]]:
    """Per model, the best of `repeat` fresh kernels in JupyterLab: the cell -> drawn (s)
    and its split (ms)."""
    import time

    import bench_graph_view as gv
    from playwright.sync_api import sync_playwright

    harness = gv._harness()
    best: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as state, sync_playwright() as p:
        lab = harness._start_lab(Path(state))
        browser = p.chromium.launch(
            executable_path=harness.CHROMIUM, args=harness.CHROMIUM_FLAGS, headless=True
        )
        try:
            for name, path in paths.items():
                runs = []
                for k in range(repeat):
                    notebook = f"fresh_{name}_{k}_{time.time_ns()}.ipynb"
                    cell = _LAB_CELL.replace("PATH", repr(str(path)))
                    harness.write_notebook(lab.root / notebook, ["1", cell])
                    context = browser.new_context(viewport={"width": 1280, "height": 800})
                    nb = harness.NotebookPage(context.new_page(), lab, notebook, Path(state))
                    nb.open()
                    nb.run_cell(0)  # the kernel is up
                    pressed: list[float] = []
                    before = _cpu_of_children()
                    drawn = gv.timed_run(nb, 1, gv.CELL_READY, [1], pressed)
                    cpu_all = _cpu_since(before)
                    t0, t1, cpu = (float(v) for v in nb.output(1).split("T", 1)[1].split()[:3])
                    data_at, painted_at = nb.page.evaluate(_VIEW_STATS, [1])
                    runs.append({
                        "cell_to_drawn_s": drawn,
                        "cpu_to_drawn_s": cpu_all,  # kernel, Lab server and browser
                        "kernel_ms": t1 - t0,
                        "kernel_cpu_ms": cpu,
                        "to_view_ms": data_at - t1,
                        "data_to_paint_ms": painted_at - data_at,
                        "paint_to_drawn_ms": pressed[0] + 1000 * drawn - painted_at,
                    })  # fmt: skip
                    context.close()
                best[name] = {k: round(min(r[k] for r in runs), 3) for k in runs[0]}
        finally:
            browser.close()
            harness._stop_lab(lab.process)
    return best


def netron_runs(paths: dict[str, Path], repeat: int, python: str) -> dict[str, dict[str, float]]:
    """Per model, the best of `repeat` Netron pages (a new server each): request -> drawn,
    wall and CPU (its server and the browser) seconds."""
    import socket
    import subprocess
    import time

    import bench_graph_view as gv
    from playwright.sync_api import sync_playwright

    harness = gv._harness()
    best: dict[str, dict[str, float]] = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=harness.CHROMIUM, args=harness.CHROMIUM_FLAGS, headless=True
        )
        for name, path in paths.items():
            runs: list[tuple[float, float]] = []
            for _ in range(repeat):
                with socket.socket() as probe:
                    probe.bind(("127.0.0.1", 0))
                    port = probe.getsockname()[1]
                serve = f"import netron, time; netron.start({str(path)!r}, ('127.0.0.1', {port}), "
                serve += "browse=False); time.sleep(3600)"
                server = subprocess.Popen([python, "-c", serve], stdout=subprocess.DEVNULL)
                try:
                    for _ in range(600):
                        try:
                            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                            break
                        except OSError:
                            time.sleep(0.1)
                    url = f"http://127.0.0.1:{port}/"
                    context = browser.new_context(viewport={"width": 1280, "height": 800})
                    # Netron asks for cookie consent before it shows a model
                    consent = str(time.time_ns() // 10**6)
                    context.add_cookies([{"name": "consent", "value": consent, "url": url}])
                    page = context.new_page()
                    before = _cpu_of_children()
                    start = time.perf_counter()
                    page.goto(url)
                    # a selector wait: Netron replaces window.eval, which page.evaluate uses
                    page.wait_for_selector("#canvas .node", timeout=300_000)
                    runs.append((time.perf_counter() - start, _cpu_since(before)))
                    context.close()
                finally:
                    server.kill()
                    server.wait()
            best[name] = {
                "request_to_drawn_s": round(min(wall for wall, _ in runs), 3),
                "cpu_to_drawn_s": round(min(cpu for _, cpu in runs), 3),
            }
        browser.close()
    return best


def _model_file(name: str, folder: Path, save_export: Any) -> Path:
    """A real export by its name, or `synthetic_<nodes>` (a synthetic network that size)."""
    if name.startswith("synthetic_"):
        nodes = int(name.removeprefix("synthetic_"))
        return Path(save_example("synthetic_dag", folder / f"{name}.onnx", num_nodes=nodes))
    return Path(save_export(name, folder))


def fresh_kernel(models: list[str], repeat: int, browser: bool, netron: str | None) -> None:
    import os
    import sys

    sys.path.insert(0, str(REPO))
    from tests import real_exports

    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)  # the kernels and Lab inherit it
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="nsdl-bench-fresh-") as folder:
        paths = {name: _model_file(name, Path(folder), real_exports.save) for name in models}
        for path in paths.values():
            cell_in_fresh_kernel(path)  # untimed: writes the bytecode of what the cell imports
        for name, path in paths.items():
            runs = [cell_in_fresh_kernel(path) for _ in range(repeat)]
            results[name] = {"file_bytes": path.stat().st_size} | {
                step: {
                    "cpu_s": round(min(run[step][1] for run in runs), 3),
                    "wall_s": round(min(run[step][0] for run in runs), 3),
                }
                for step in runs[0]
            }
        in_lab = lab_runs(paths, repeat) if browser else {}
        in_netron = netron_runs(paths, repeat, netron) if browser and netron else {}
    print_table(
        f"first cell of a fresh kernel, import + open_model + GraphView: CPU s (wall s), best "
        f"of {repeat} kernels; read CPU on a shared machine",
        [
            {"model": name}
            | {
                step: f"{v['cpu_s']:.3f} ({v['wall_s']:.3f})"
                for step, v in r.items()
                if step != "file_bytes"
            }
            for name, r in results.items()
        ],
    )
    if in_lab:
        print_table(
            f"the cell in JupyterLab, Ctrl+Enter -> drawn, wall, best of {repeat} fresh kernels"
            + (" (Netron 9.3: page request -> drawn)" if in_netron else ""),
            [
                {
                    "model": name,
                    "cell -> drawn": fmt_seconds(r["cell_to_drawn_s"]),
                    "CPU": fmt_seconds(r["cpu_to_drawn_s"]),
                }
                | {k.removesuffix("_ms"): f"{v:.0f} ms" for k, v in r.items() if k.endswith("ms")}
                | (
                    {
                        "netron": fmt_seconds(in_netron[name]["request_to_drawn_s"]),
                        "netron CPU": fmt_seconds(in_netron[name]["cpu_to_drawn_s"]),
                    }
                    if name in in_netron
                    else {}
                )
                for name, r in in_lab.items()
            ],
        )
        for name, r in in_lab.items():
            results[name]["lab"] = r
            if name in in_netron:
                results[name]["netron"] = in_netron[name]
    print()
    emit_json("open_fresh_kernel", {"repeat": repeat, "models": results})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, nargs="*", default=[20_000, 100_000])
    parser.add_argument("--repeat", type=int, default=3, help="runs per figure (best is kept)")
    parser.add_argument("--fresh-kernel", action="store_true", help="the first cell's split")
    parser.add_argument("--models", nargs="*", default=list(FRESH_MODELS))
    parser.add_argument("--browser", action="store_true", help="also cell -> drawn in a browser")
    parser.add_argument("--netron", metavar="PYTHON", help="a Python that has netron 9.3")
    args = parser.parse_args()
    if args.fresh_kernel:
        fresh_kernel(args.models, args.repeat, args.browser, args.netron)
        return
    results = {}
    with tempfile.TemporaryDirectory(prefix="nsdl-bench-open-") as folder:
        work = Path(folder)
        tiny = save_example("synthetic_dag", work / "tiny.onnx", num_nodes=1)
        for nodes in args.nodes:
            path = save_example("synthetic_dag", work / f"s{nodes}.onnx", num_nodes=nodes)
            results[f"synthetic_{nodes}"] = bench_model(path, tiny, args.repeat)
    print_table(
        f"open (fresh process each, best of {args.repeat}): wall; CPU, the figure to read on a "
        "shared machine",
        [
            {
                "model": name,
                "onnx.load": fmt_seconds(r["onnx_load_s"]),
                "onnx_ir.load": fmt_seconds(r["onnx_ir_load_s"]),
                "open_model": fmt_seconds(r["open_model_s"]),
                "onnx_ir.load CPU": fmt_seconds(r["onnx_ir_load_cpu_s"]),
                "open_model CPU": fmt_seconds(r["open_model_cpu_s"]),
                "CPU x onnx_ir": f"{r['ratio_to_onnx_ir']:.2f}",
                f"goal <= {GOAL}x": "met" if r["ratio_to_onnx_ir"] <= GOAL else "MISSED",
            }
            for name, r in results.items()
        ],
    )
    for name, r in results.items():
        total = sum(r["steps_cpu_s"].values())
        print_table(
            f"where open_model's CPU goes: {name} (each step's best of {args.repeat}, "
            f"{fmt_seconds(total)} in all)",
            [
                {"step": step, "CPU": fmt_seconds(s), "share": f"{100 * s / total:.0f}%"}
                for step, s in r["steps_cpu_s"].items()
            ],
        )
    print()
    emit_json("open", {"repeat": args.repeat, "goal_ratio": GOAL, "models": results})


if __name__ == "__main__":
    main()
