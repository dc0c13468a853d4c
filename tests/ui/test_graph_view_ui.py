"""GraphView in a real JupyterLab + headless Chromium: what a user sees and does."""

from __future__ import annotations

import re
import struct
import zlib
from pathlib import Path
from typing import Any

import pytest

from tests.ui.graph_probe import graph_api, pixels_near_node

pytestmark = [pytest.mark.ui, pytest.mark.slow]

VIEW = ".nsdl-graph-view"
READY = '.nsdl-graph-view[data-ready="1"]'

SETUP = """
import tempfile, onnx
import nsdl_jupyter as nj
from nsdl_jupyter.examples import synthetic_dag
folder = tempfile.mkdtemp()
onnx.save(synthetic_dag({n}, seed=1), folder + "/model.onnx")
doc = nj.open_model(folder + "/model.onnx")
names = list(doc.nodes)
view = nj.GraphView(doc, height=520)
view
"""

ORANGE_PIXELS = pixels_near_node(((220, 270), (128, 188), (float("-inf"), 70)), (110, 40, 220, 80))


def click_box(nb: Any, name: str, shift: bool = False) -> None:
    nb.wait_for(VIEW).scroll_into_view_if_needed()
    graph_api(nb, "(a, name) => a.fit([name])", name)
    nb.two_frames()
    at = graph_api(nb, "(a, name) => a.locate(name)", name)
    assert at is not None, f"{name} is not drawn"
    if shift:
        nb.page.keyboard.down("Shift")
    nb.page.mouse.click(at[0], at[1])
    if shift:
        nb.page.keyboard.up("Shift")


def test_graph_draws_click_reaches_python_and_python_selection_highlights(notebook: Any) -> None:
    nb = notebook([SETUP.format(n=40), "print('SEL=' + repr(view.selected))",
                   "view.selected = [names[20]]; print('SET', names[20])",
                   "view.selected = []"])  # fmt: skip
    nb.run_all()  # the first test goes the user's way: Run ▸ Run All Cells
    nb.wait_for(READY)
    nb.wait_idle()
    nb.two_frames()
    assert nb.error_outputs() == []
    graph_api(nb, "(a) => { a.fit(); }")  # cell 2 already moved the view to its selection
    nb.page.evaluate(
        "() => { const v = document.querySelector('.nsdl-graph-view'); v.dataset.selected = ''; }"
    )
    nb.run_cell(3)  # clear the selection made by Run All
    drawn = nb.page.locator(f"{READY}").first
    assert (
        int(drawn.get_attribute("data-visible-nodes") or 0) >= 40
    )  # 40 nodes + graph I/O laid out
    assert int(drawn.get_attribute("data-drawn-boxes") or 0) >= 5  # on screen at a readable zoom
    nb.screenshot("drawn", VIEW)

    target = graph_api(nb, "(a) => a.nodeNames()")[3]
    assert nb.page.evaluate(ORANGE_PIXELS, target) == 0
    click_box(nb, target)
    nb.page.wait_for_function(
        "(n) => document.querySelector('.nsdl-graph-view').dataset.selected === n", arg=target
    )
    out = nb.run_cell(1)
    assert f"SEL=['{target}']" in out
    nb.screenshot("clicked", VIEW)

    out = nb.run_cell(2)
    chosen = out.split("SET", 1)[1].strip()
    nb.page.wait_for_function(
        "(n) => document.querySelector('.nsdl-graph-view').dataset.selected === n", arg=chosen
    )
    nb.two_frames()
    assert nb.page.evaluate(ORANGE_PIXELS, chosen) > 50, "the Python selection is not highlighted"
    assert nb.page.evaluate(ORANGE_PIXELS, target) == 0 or target == chosen
    nb.screenshot("python_selection", VIEW)


def test_expand_group_and_edit_patch_without_redraw(notebook: Any) -> None:
    nb = notebook(
        [
            SETUP.format(n=1500),
            # the first view is the outline (modules collapsed): open the first module's
            # parents so that a group of nodes, not of modules, waits closed for the click
            "closed = [k for k, v in view.groups.items() if not v]\n"
            "leaf = next(k for k in closed if not any(o.startswith(k + '/') for o in closed))\n"
            "view.expand(leaf.rsplit('/', 1)[0])\nprint('CLOSED', leaf)",
            "print('EXPANDED', view.groups[closed[0]])",
            "doc.rename_node(names[0], 'renamed_first')\n"
            "source = doc.nodes['renamed_first'].outputs[0]\n"
            "new = doc.add_node('Relu', inputs=[source], name='added_relu')\n"
            "view.selected = ['added_relu']",
        ]
    )
    nb.run_cell(0)
    nb.wait_for(READY)
    assert nb.error_outputs() == []
    first = nb.page.locator(READY).first.get_attribute("data-layout-seq")
    nb.run_cell(1)
    key = nb.output(1).split("CLOSED", 1)[1].strip()
    nb.page.wait_for_function(
        "(s) => document.querySelector('.nsdl-graph-view').dataset.layoutSeq !== s", arg=first
    )
    before = int(nb.page.locator(READY).first.get_attribute("data-visible-nodes") or 0)
    seq = nb.page.locator(READY).first.get_attribute("data-layout-seq")
    nb.screenshot("collapsed", VIEW)
    # fit on the group, click it: the kernel answers with a new layout holding its nodes
    graph_api(nb, "(a) => a.fit()")
    click_box(nb, key)
    nb.page.wait_for_function(
        "(s) => document.querySelector('.nsdl-graph-view').dataset.layoutSeq !== s", arg=seq
    )
    after = int(nb.page.locator(READY).first.get_attribute("data-visible-nodes") or 0)
    assert after > before
    assert "EXPANDED True" in nb.run_cell(2)
    nb.screenshot("expanded", VIEW)

    stats = graph_api(nb, "(a) => a.stats()")
    assert stats["topologyDecodes"] == 1
    nb.run_cell(3)
    nb.page.wait_for_function(
        "() => document.querySelector('.nsdl-graph-view').dataset.selected === 'added_relu'"
    )
    nb.page.wait_for_function(
        "() => document.querySelector('.nsdl-graph-view').__nsdl.locate('added_relu') !== null"
    )
    stats = graph_api(nb, "(a) => a.stats()")
    assert stats["topologyDecodes"] == 1, "an edit must arrive as a patch, not a new topology"
    assert stats["patches"] == 2
    assert graph_api(nb, "(a) => a.locate('renamed_first')") is not None
    nb.two_frames()
    assert nb.page.evaluate(ORANGE_PIXELS, "added_relu") > 50
    nb.screenshot("after_edit", VIEW)


def _png_pixels_vary(path: Path) -> int:
    """Distinct byte values in the decompressed image data (a blank image has a handful)."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat = 8, b""
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind = data[pos + 4 : pos + 8]
        if kind == b"IDAT":
            idat += data[pos + 8 : pos + 8 + length]
        pos += 12 + length
    return len(set(zlib.decompress(idat)))


def test_export_png_and_svg(notebook: Any, tmp_path: Path) -> None:
    png, svg = tmp_path / "graph.png", tmp_path / "graph.svg"
    nb = notebook(
        [
            SETUP.format(n=60),
            f"png = view.export_image({str(png)!r}, grid=True)\n"
            f"svg = view.export_image({str(svg)!r})\nprint('SVG', svg.done())",
            "print('PNG', png.done(), png.result() if png.done() else None)",
        ]
    )
    nb.run_cell(0)
    nb.wait_for(READY)
    assert "SVG True" in nb.run_cell(1)
    assert nb.error_outputs() == []
    for _ in range(20):  # the browser answers after the cell finished
        if "PNG True" in nb.run_cell(2):
            break
        nb.page.wait_for_timeout(250)
    assert "PNG True" in nb.output(2)
    assert _png_pixels_vary(png) > 20
    import xml.etree.ElementTree as ET

    root = ET.parse(svg).getroot()
    assert root.tag.endswith("svg")
    assert len(re.findall(r"<rect", svg.read_text())) >= 60
    out_dir = nb.shots
    (out_dir / "exported_graph.png").write_bytes(png.read_bytes())
    (out_dir / "exported_graph.svg").write_bytes(svg.read_bytes())
    nb.screenshot("export", VIEW)


def test_quickstart_notebook_draws_in_jupyterlab(notebook: Any) -> None:
    import json

    source = Path(__file__).resolve().parents[2] / "example_notebooks" / "quickstart.ipynb"
    cells = [
        "".join(c["source"])
        for c in json.loads(source.read_text())["cells"]
        if c["cell_type"] == "code"
    ]
    nb = notebook(cells)
    nb.run_all()
    nb.wait_for(READY)
    nb.wait_idle()
    nb.two_frames()
    assert nb.error_outputs() == []
    # the edit cells ran after the view was drawn: patches, never a second topology
    stats = graph_api(nb, "(a) => a.stats()")
    assert stats["topologyDecodes"] == 1 and stats["patches"] >= 2
    assert graph_api(nb, "(a) => a.visible('attention_probs')") is True
    nb.screenshot("quickstart", VIEW)
