"""Benchmark of the GraphView in a real JupyterLab + headless Chromium (median of N runs).

Measures, per model (synthetic network-shaped DAGs of 1k/5k/20k/50k nodes and BERT-base):
- cell run -> first drawing: from the Ctrl+Enter that runs ``GraphView(doc)`` to the
  widget's own "drawn" signal (data-ready, set one frame after the first paint); the first
  GraphView of the kernel, so it includes importing the widget;
- open_model -> drawing: the same for a cell that opens the file and shows it (run last,
  so the widget modules are imported already);
- bytes sent to the browser (topology + layout buffers);
- frame time while panning (the renderer's draw time per frame, 120 frames), in the default
  (collapsed) view and with every group expanded, and the time the breadcrumb and the minimap
  take to follow each frame; the minimap's overview drawing time (once per layout);
- edit -> updated drawing: from the document edit (``doc.rename_node`` in the kernel) to the
  paint that shows its patch (both wall clocks of this machine); also from the Ctrl+Enter of
  that cell (adds Jupyter's cell round trip, ~100 ms on a loaded 2-core box).

Prints a table and one JSON line. Never asserts a time.

    python bench/bench_graph_view.py [--sizes 1000 5000 20000 50000] [--repeat 3] [--no-bert]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent


def _harness() -> Any:
    """The project's UI harness (tests/ui/conftest.py), loaded as a module."""
    spec = importlib.util.spec_from_file_location("nsdl_ui_harness", REPO / "tests/ui/conftest.py")
    if spec is None or spec.loader is None:
        raise RuntimeError("tests/ui/conftest.py not found: run from a checkout of the repo")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


SETUP = """
import time, onnx, tempfile
import nsdl_jupyter as nj
from nsdl_jupyter.examples import synthetic_dag, bert_base
folder = tempfile.mkdtemp()
proto = bert_base() if {n} == 0 else synthetic_dag({n}, seed=0)
onnx.save(proto, folder + "/model.onnx", save_as_external_data={n} == 0)
doc = nj.open_model(folder + "/model.onnx")
names = list(doc.nodes)
print("NODES", len(names))
"""
SHOW = "view = nj.GraphView(doc, height=600)\nview"
BYTES = "print('BYTES', len(view._topology) + len(view._layout), len(view._topology))"
EDIT = """k = len(names) // 2
new = f"renamed_{time.time_ns()}"
t0 = time.time() * 1000
doc.rename_node(names[k], new)
names[k] = new
print("EDIT_T0", repr(t0))"""
EXPAND = "view.expand()\nprint('EXPANDED', sum(view.groups.values()))"
# what a user runs: open the file and show it (the kernel has imported the package already);
# the wall clocks (ms) at its start, after open_model and after GraphView() for the split
OPEN = """t_cell = time.time() * 1000
opened = nj.open_model(folder + "/model.onnx")
t_open = time.time() * 1000
shown = nj.GraphView(opened, height=600)
print("OPEN_T", repr(t_cell), repr(t_open), repr(time.time() * 1000))
shown"""
# GraphView()'s steps again on a freshly opened file (ms): reading the graph from the file
# (a big file draws from its protobuf: GraphSkeleton; a small one is built by open_model),
# the scene with its topology buffer, and the first layout with its buffer; min and median of 3
SPLIT = """from nsdl_jupyter.graph import GraphScene, GraphSkeleton
import statistics
def _ms(f):
    t = time.perf_counter(); r = f(); return r, (time.perf_counter() - t) * 1000
def _graph(doc):
    proto = doc.unbuilt_model()
    skeleton = GraphSkeleton.of(proto, lambda: doc.graph) if proto is not None else None
    return skeleton or doc.graph
splits = []
for _ in range(3):
    reopened = nj.open_model(folder + "/model.onnx")
    graph, read_ms = _ms(lambda: _graph(reopened))
    scene, scene_ms = _ms(lambda: GraphScene(graph))
    _, topo_ms = _ms(scene.topology_bytes)
    _, layout_ms = _ms(scene.layout_bytes)
    splits.append((read_ms, scene_ms + topo_ms, layout_ms))
print("SPLIT", *(f(s[k] for s in splits) for k in (0, 1, 2) for f in (min, statistics.median)))"""
VIEW_STATS = """([i]) => {
  const panel = '.jp-NotebookPanel:not(.lm-mod-hidden)';
  const cell = document.querySelectorAll(panel + ' .jp-Notebook .jp-Cell')[i];
  const s = cell.querySelector('.nsdl-graph-view').__nsdl.stats();
  return [s.topologyAt, s.topologyMs, s.firstPaintAt];
}"""

CELL_READY = """([i]) => {
  const panel = '.jp-NotebookPanel:not(.lm-mod-hidden)';
  const cells = document.querySelectorAll(panel + ' .jp-Notebook .jp-Cell');
  return !!cells[i]?.querySelector('.nsdl-graph-view[data-ready="1"]');
}"""
ROOT = "document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden) .nsdl-graph-view')"


def timed_run(
    nb: Any, index: int, until: str, arg: Any, pressed: list[float] | None = None
) -> float:
    """Seconds from the Ctrl+Enter that runs cell `index` to `until(arg)` being true; the
    wall clock (ms) of the key press is appended to `pressed`."""
    cell = nb.cell(index)
    cell.scroll_into_view_if_needed()
    cell.locator(".jp-InputPrompt").first.click()
    nb.page.wait_for_function(
        "e => e.classList.contains('jp-mod-active')", arg=cell.element_handle(), timeout=30_000
    )
    if pressed is not None:
        pressed.append(time.time() * 1000)
    start = time.perf_counter()
    nb.page.keyboard.press("Control+Enter")
    nb.page.wait_for_function(until, arg=arg, timeout=90_000, polling="raf")
    elapsed = time.perf_counter() - start
    nb.wait_idle()
    return elapsed


def pan_frames(nb: Any, frames: int = 120) -> dict[str, float]:
    """Draw time per frame while the camera moves every frame (a steady drag), and what
    following the camera (breadcrumb, minimap) takes per frame."""
    ms = nb.page.evaluate(
        f"""async (frames) => {{
      const root = {ROOT}; const api = root.__nsdl;
      api.fit();
      await new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
      const before = api.stats().frameMs.length;
      const wall = [];
      for (let k = 0; k < frames; k++) {{
        const t = performance.now();
        api.pan(k % 60 < 30 ? 7 : -7, k % 40 < 20 ? 3 : -3);
        await new Promise(r => requestAnimationFrame(r));
        wall.push(performance.now() - t);
      }}
      await new Promise(r => requestAnimationFrame(r));
      const stats = api.stats();
      return {{ draw: stats.frameMs.slice(before), nav: stats.afterPaintMs.slice(before), wall,
                overview: stats.overviewMs }};
    }}""",
        frames,
    )
    draw = sorted(ms["draw"])
    nav = sorted(ms["nav"])
    wall = sorted(ms["wall"])
    return {
        "draw_median_ms": round(statistics.median(draw), 2),
        "draw_p95_ms": round(draw[int(0.95 * (len(draw) - 1))], 2),
        "navigation_median_ms": round(statistics.median(nav), 3),
        "navigation_p95_ms": round(nav[int(0.95 * (len(nav) - 1))], 3),
        "minimap_overview_ms": round(ms["overview"], 2),
        "frame_median_ms": round(statistics.median(wall), 2),
        "frame_p95_ms": round(wall[int(0.95 * (len(wall) - 1))], 2),
    }


def _phases(nb: Any, pressed: float, elapsed: float) -> dict[str, float]:
    """Where one open_model + GraphView cell's time went (ms): the cell's start, open_model,
    GraphView() in the kernel, the buffers reaching the view, decoding them, the first paint,
    and the frame until "drawn". Kernel and browser clocks are this machine's wall clock."""
    t_cell, t_open, t_view = (float(v) for v in nb.output(5).split("OPEN_T", 1)[1].split()[:3])
    topology_at, topology_ms, painted_at = nb.page.evaluate(VIEW_STATS, [5])
    return {
        "cell_start": t_cell - pressed,
        "open": t_open - t_cell,
        "view": t_view - t_open,
        "transfer": topology_at - t_view,
        "decode": topology_ms,
        "first_paint": painted_at - topology_at - topology_ms,
        "to_drawn": pressed + 1000 * elapsed - painted_at,
    }


def _min_median(values: list[float]) -> dict[str, float]:
    return {"min": round(min(values), 1), "median": round(statistics.median(values), 1)}


def bench_model(harness: Any, browser: Any, lab: Any, n: int, repeat: int) -> dict[str, Any]:
    name = f"bench_{n or 'bert'}_{int(time.time())}.ipynb"
    cells = [SETUP.format(n=n), SHOW, BYTES, EDIT, EXPAND, OPEN, SPLIT]
    harness.write_notebook(lab.root / name, cells)
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    nb = harness.NotebookPage(context.new_page(), lab, name, Path(tempfile.mkdtemp()))
    try:
        nb.open()
        out = nb.run_cell(0)
        nodes = int(out.split("NODES", 1)[1].split()[0])
        first = [timed_run(nb, 1, CELL_READY, [1]) for _ in range(repeat)]
        nbytes, topology = (int(v) for v in nb.run_cell(2).split("BYTES", 1)[1].split()[:2])
        nb.two_frames()
        pan_collapsed = pan_frames(nb)
        edits = []
        in_kernel = []
        for _ in range(repeat):
            seq = int(nb.page.evaluate(f"() => Number({ROOT}.dataset.patchSeq || 0)"))
            draws = int(nb.page.evaluate(f"() => Number({ROOT}.dataset.draws || 0)"))
            until = f"""([seq, draws]) => {{ const r = {ROOT};
                return Number(r.dataset.patchSeq) > seq && Number(r.dataset.draws) > draws; }}"""
            edits.append(timed_run(nb, 3, until, [seq, draws]))
            t0 = float(nb.output(3).split("EDIT_T0", 1)[1].split()[0])
            painted = nb.page.evaluate(f"() => {ROOT}.__nsdl.stats().patchPaintedAt")
            in_kernel.append(painted - t0)
        patch_ms = nb.page.evaluate(f"() => {ROOT}.__nsdl.stats().patchMs.slice(-{repeat})")
        boxes_before = int(nb.page.evaluate(f"() => Number({ROOT}.dataset.visibleBoxes)"))
        layout_seq = nb.page.evaluate(f"() => {ROOT}.dataset.layoutSeq")
        expand_s = timed_run(nb, 4, f"(s) => {ROOT}.dataset.layoutSeq !== s", layout_seq)
        nb.two_frames()
        boxes_after = int(nb.page.evaluate(f"() => Number({ROOT}.dataset.visibleBoxes)"))
        pan_expanded = pan_frames(nb)
        opened = []
        phases = []
        for _ in range(repeat):
            pressed: list[float] = []
            opened.append(timed_run(nb, 5, CELL_READY, [5], pressed))
            phases.append(_phases(nb, pressed[0], opened[-1]))
        split = [float(v) for v in nb.run_cell(6).split("SPLIT", 1)[1].split()[:6]]
        return {
            "model": "bert_base" if n == 0 else f"synthetic_{n}",
            "nodes": nodes,
            "first_draw_s": round(statistics.median(first), 3),
            "first_draw_runs_s": [round(v, 3) for v in first],
            "open_to_draw_s": round(statistics.median(opened), 3),
            "open_to_draw_runs_s": [round(v, 3) for v in opened],
            # ms per phase over the runs; GraphView()'s scene and layout measured again after
            "open_to_draw_phases_ms": {k: _min_median([p[k] for p in phases]) for k in phases[0]},
            "view_read_ms": {"min": round(split[0], 1), "median": round(split[1], 1)},
            "view_scene_ms": {"min": round(split[2], 1), "median": round(split[3], 1)},
            "view_layout_ms": {"min": round(split[4], 1), "median": round(split[5], 1)},
            "bytes_sent": nbytes,
            "topology_bytes": topology,
            "boxes_collapsed": boxes_before,
            "pan_collapsed": pan_collapsed,
            "edit_to_drawing_ms": round(statistics.median(in_kernel), 1),
            "edit_cell_to_drawing_ms": round(1000 * statistics.median(edits), 1),
            "edit_browser_patch_ms": round(statistics.median(patch_ms), 2) if patch_ms else None,
            "expand_all_s": round(expand_s, 3),
            "boxes_expanded": boxes_after,
            "pan_expanded": pan_expanded,
            "errors": nb.error_outputs(),
        }
    except Exception:
        failure = REPO / "bench" / "results" / "graph_view_failure.png"
        failure.parent.mkdir(parents=True, exist_ok=True)
        nb.page.screenshot(path=str(failure))
        print(
            f"failed: screenshot in {failure}; errors: {nb.error_outputs()}; "
            f"console: {nb.console_errors}",
            file=sys.stderr,
        )
        raise
    finally:
        context.close()


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", type=int, nargs="*", default=[1000, 5000, 20000, 50000])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-bert", action="store_true")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "graph_view.json")
    args = parser.parse_args()
    harness = _harness()
    from playwright.sync_api import sync_playwright

    results = []
    with tempfile.TemporaryDirectory() as state:
        lab = harness._start_lab(Path(state))
        try:
            with sync_playwright() as p:
                browser = p.chromium.launch(
                    executable_path=harness.CHROMIUM, args=harness.CHROMIUM_FLAGS, headless=True
                )
                sizes = list(args.sizes) + ([] if args.no_bert else [0])
                for n in sizes:
                    result = bench_model(harness, browser, lab, n, args.repeat)
                    results.append(result)
                    print(
                        f"{result['model']:>16} {result['nodes']:>6} nodes | first draw "
                        f"{result['first_draw_s']:.2f} s | open_model + draw "
                        f"{result['open_to_draw_s']:.2f} s | {result['bytes_sent'] / 1e6:.2f} MB | "
                        f"pan {result['pan_collapsed']['draw_median_ms']:.1f} ms "
                        f"({result['boxes_collapsed']} boxes), expanded "
                        f"{result['pan_expanded']['draw_median_ms']:.1f} ms "
                        f"p95 {result['pan_expanded']['draw_p95_ms']:.1f} ms "
                        f"({result['boxes_expanded']} boxes), breadcrumb + minimap "
                        f"{result['pan_expanded']['navigation_median_ms']:.2f} ms, overview "
                        f"{result['pan_expanded']['minimap_overview_ms']:.0f} ms | "
                        f"edit {result['edit_to_drawing_ms']:.0f} ms"
                        f" (cell run {result['edit_cell_to_drawing_ms']:.0f} ms,"
                        f" browser {result['edit_browser_patch_ms']} ms)"
                        f" | expand all {result['expand_all_s']:.2f} s",
                        flush=True,
                    )
                    phases = result["open_to_draw_phases_ms"]
                    print(
                        f"{'':>16} open_model + draw, ms (min/median of {args.repeat}): "
                        + ", ".join(
                            f"{k} {v['min']:.0f}/{v['median']:.0f}" for k, v in phases.items()
                        )
                        + f"; view = read {result['view_read_ms']['min']:.0f}"
                        f" + scene {result['view_scene_ms']['min']:.0f}"
                        f" + layout {result['view_layout_ms']['min']:.0f} + the rest",
                        flush=True,
                    )
                browser.close()
        finally:
            harness._stop_lab(lab.process)
    summary = {"bench": "graph_view", "repeat": args.repeat, "results": results}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(summary, indent=1))
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
