"""Benchmark of the Designer's tool windows on the 20,000-node model (goal: < 100 ms).

Python side (in this process, no browser):
- selection change -> every tool window rebuilt: ``designer.graph.selected = [node]`` (the
  ParameterEditor, InitializerEditor, palette, explorer and type-check panel all follow);
- the ParameterEditor alone for the same selections;
- attribute edit -> GraphView patch and editors refreshed: ``doc.set_attribute`` with every
  listener of the Designer subscribed;
- a background type check: its duration and the longest stall of the kernel's thread.

Browser side (real JupyterLab + headless Chromium, `tests/ui/conftest.py` harness):
- click on a node -> ParameterEditor painted: from the canvas pointerdown event to the first
  animation frame after the editor shows the node's name;
- attribute edit in the browser -> updated graph: from the Enter keydown in the attribute box
  to the first GraphView frame drawn after the document's patch arrived.

Prints tables and one JSON line. Never asserts a time.

    python bench/bench_editors.py [--nodes 20000] [--samples 15] [--no-browser]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import emit_json, print_table

REPO = Path(__file__).resolve().parent.parent
NB = ".jp-NotebookPanel:not(.lm-mod-hidden)"
ROOT = f"document.querySelector('{NB} .nsdl-graph-view')"


def summary(ms: list[float]) -> dict[str, float]:
    ordered = sorted(ms)
    return {
        "median_ms": round(statistics.median(ordered), 1),
        "p90_ms": round(ordered[int(0.9 * (len(ordered) - 1))], 1),
        "max_ms": round(ordered[-1], 1),
    }


# ------------------------------------------------------------------ python side
def python_side(nodes: int, samples: int) -> dict[str, Any]:
    import onnx_ir as ir

    from nsdl_jupyter.document import ModelDocument
    from nsdl_jupyter.examples import synthetic_dag
    from nsdl_jupyter.widgets.designer._designer import Designer
    from nsdl_jupyter.widgets.designer._parameter_editor import ParameterEditor

    doc = ModelDocument(ir.from_proto(synthetic_dag(nodes, seed=0)))
    start = time.perf_counter()
    designer = Designer(doc)
    build_s = time.perf_counter() - start
    names = list(doc.nodes)
    rng = random.Random(0)
    picks = rng.sample(names, samples)
    select_ms = []
    for name in picks:
        start = time.perf_counter()
        designer.graph.selected = [name]
        select_ms.append((time.perf_counter() - start) * 1e3)
        assert designer.parameters.form is not None
    alone = ParameterEditor(doc)
    editor_ms = []
    for name in picks:
        start = time.perf_counter()
        alone.selected = [name]
        editor_ms.append((time.perf_counter() - start) * 1e3)
    concats = [n for n in names if doc.nodes[n].op_type == "Concat"]
    edit_ms = []
    for index, name in enumerate(rng.sample(concats, min(samples, len(concats)))):
        designer.graph.selected = [name]
        start = time.perf_counter()
        doc.set_attribute(name, "axis", -1 if index % 2 == 0 else 1)
        edit_ms.append((time.perf_counter() - start) * 1e3)
    designer.close()
    alone.close()
    stall_ms, check_s = background_check(doc)
    return {
        "designer_build_s": round(build_s, 2),
        "select_to_tools_built": summary(select_ms),
        "select_to_parameter_editor": summary(editor_ms),
        "edit_to_patch_and_editors": summary(edit_ms),
        "background_check_s": round(check_s, 2),
        "kernel_stall_during_check_ms": round(stall_ms, 1),
    }


def background_check(doc: Any) -> tuple[float, float]:
    """Longest stall of this (the kernel's) thread while a big model is type-checked in the
    background, and the check's duration (second check: the child process is warm)."""
    from nsdl_jupyter.editors import TypeCheckRunner

    runner = TypeCheckRunner(doc, lambda _d: None, delay=0.0, background_nodes=0, auto=False)
    stall = check = 0.0
    for _ in range(2):
        before = runner.checks
        start = last = time.perf_counter()
        runner.schedule()
        stall = 0.0
        while runner.checks == before:
            time.sleep(0.001)
            now = time.perf_counter()
            stall, last = max(stall, now - last), now
        check = time.perf_counter() - start
    runner.close()
    return stall * 1e3, check


# ------------------------------------------------------------------ browser side
SETUP = """
import json, onnx, tempfile, random
import nsdl_jupyter as nj
from nsdl_jupyter.examples import synthetic_dag
folder = tempfile.mkdtemp()
onnx.save(synthetic_dag({n}, seed=0), folder + "/model.onnx")
doc = nj.open_model(folder + "/model.onnx")
designer = nj.Designer(doc, height=560)
names = list(doc.nodes)
targets = random.Random(1).sample([n for n in names if doc.nodes[n].op_type == "Concat"], {k})
keys = set(designer.graph.groups)
scopes = {{"/".join(t.split("/")[:i]) for t in targets for i in range(2, t.count("/") + 1)}}
opened = sorted(scopes & keys)
designer.graph.expand(*opened)
print("TARGETS", json.dumps(targets))
designer
"""

CLICK_WATCH = """([root, name]) => {
  const w = window.__nsdlBench = { t0: null, t1: null };
  const canvas = document.querySelector(root + ' canvas');
  canvas.addEventListener('pointerdown', (e) => { if (w.t0 === null) w.t0 = e.timeStamp; },
                          { capture: true, once: true });
  const seen = () => document.querySelector('__NB__ .nsdl-node-name input')?.value === name;
  const poll = () => {
    if (w.t0 !== null && seen()) {
      requestAnimationFrame(() => { w.t1 = performance.now(); });
      return;
    }
    requestAnimationFrame(poll);
  };
  requestAnimationFrame(poll);
}""".replace("__NB__", NB)

EDIT_WATCH = """([css]) => {
  const root = __ROOT__;
  const w = window.__nsdlBench = { t0: null, t1: null };
  const seq = Number(root.dataset.patchSeq || 0), draws = Number(root.dataset.draws || 0);
  document.querySelector(css).addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && w.t0 === null) w.t0 = e.timeStamp;
  }, { capture: true });
  const poll = () => {
    if (Number(root.dataset.patchSeq) > seq && Number(root.dataset.draws) > draws) {
      w.t1 = performance.now();
      return;
    }
    requestAnimationFrame(poll);
  };
  requestAnimationFrame(poll);
}""".replace("__ROOT__", ROOT)

DONE = "() => window.__nsdlBench && window.__nsdlBench.t1 !== null"
ELAPSED = "() => window.__nsdlBench.t1 - window.__nsdlBench.t0"


def _harness() -> Any:
    spec = importlib.util.spec_from_file_location("nsdl_ui_harness", REPO / "tests/ui/conftest.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def browser_side(nodes: int, samples: int) -> dict[str, Any]:
    from playwright.sync_api import sync_playwright

    ui = _harness()
    lab = ui._start_lab(Path(tempfile.mkdtemp(prefix="nsdl-bench-")))
    try:
        ui.write_notebook(lab.root / "bench.ipynb", [SETUP.format(n=nodes, k=samples)])
        with sync_playwright() as p:
            browser = p.chromium.launch(
                executable_path=ui.CHROMIUM, args=ui.CHROMIUM_FLAGS, headless=True
            )
            context = browser.new_context(viewport={"width": 1600, "height": 1100})
            nb = ui.NotebookPage(context.new_page(), lab, "bench.ipynb", Path(tempfile.mkdtemp()))
            nb.open()
            out = nb.run_cell(0)
            targets = json.loads(out.split("TARGETS", 1)[1].strip().splitlines()[0])
            nb.wait_for('.nsdl-graph-view[data-ready="1"]', timeout_ms=300_000)
            nb.wait_for('.nsdl-designer[data-keys-ready="1"]')
            graph_root = f"{NB} .nsdl-graph-view"
            click_ms, edit_ms = [], []
            for name in targets:
                nb.page.evaluate(f"(n) => {ROOT}.__nsdl.fit([n])", name)
                nb.two_frames()
                nb.two_frames()
                at = nb.page.evaluate(f"(n) => {ROOT}.__nsdl.locate(n)", name)
                if at is None:
                    continue
                nb.page.evaluate(CLICK_WATCH, [graph_root, name])
                nb.page.mouse.click(at[0], at[1])
                nb.page.wait_for_function(DONE, timeout=60_000, polling="raf")
                click_ms.append(float(nb.page.evaluate(ELAPSED)))
                css = f"{NB} .nsdl-attr-axis input"
                box = nb.page.locator(css).first
                box.wait_for(state="visible", timeout=30_000)
                box.fill("-1" if box.input_value() == "1" else "1")  # a real change
                nb.page.evaluate(EDIT_WATCH, [css])
                box.press("Enter")
                nb.page.wait_for_function(DONE, timeout=60_000, polling="raf")
                edit_ms.append(float(nb.page.evaluate(ELAPSED)))
            shots = REPO / "test-output" / "bench_editors"
            shots.mkdir(parents=True, exist_ok=True)
            nb.page.locator(f"{NB} .nsdl-designer").first.screenshot(
                path=str(shots / "designer.png")
            )
            context.close()
            browser.close()
    finally:
        ui._stop_lab(lab.process)
    return {
        "clicks": len(click_ms),
        "edits": len(edit_ms),
        "click_to_parameter_editor_painted": summary(click_ms),
        "browser_edit_to_graph_drawn": summary(edit_ms),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=20000)
    parser.add_argument("--samples", type=int, default=15)
    parser.add_argument("--no-browser", action="store_true")
    args = parser.parse_args()
    results: dict[str, Any] = {"nodes": args.nodes, "samples": args.samples}
    results["python"] = python_side(args.nodes, args.samples)
    rows = [
        {"measure": key, **value}
        for key, value in results["python"].items()
        if isinstance(value, dict)
    ]
    python = results["python"]
    print(f"Designer built in {python['designer_build_s']} s; a background type check took "
          f"{python['background_check_s']} s, the kernel thread stalled at most "
          f"{python['kernel_stall_during_check_ms']} ms meanwhile")  # fmt: skip
    print_table(f"Python side, {args.nodes:,}-node model", rows)
    if not args.no_browser:
        results["browser"] = browser_side(args.nodes, args.samples)
        rows = [
            {"measure": key, **value}
            for key, value in results["browser"].items()
            if isinstance(value, dict)
        ]
        print_table(f"Browser (JupyterLab + Chromium), {results['browser']['clicks']} clicks", rows)
    emit_json("editors", results)


if __name__ == "__main__":
    main()
