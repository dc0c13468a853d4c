"""Direct manipulation on the GraphView canvas in a real JupyterLab + headless Chromium: the
gestures a user makes reach the document as undoable commands."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import onnx
import pytest

from tests.test_canvas_edit import _model
from tests.ui.graph_probe import VIEW as SHOWN
from tests.ui.graph_probe import graph_api

pytestmark = [pytest.mark.ui, pytest.mark.slow]

VIEW = ".nsdl-graph-view"
READY = '.nsdl-graph-view[data-ready="1"]'

# the model of tests/test_canvas_edit.py, written once per test by `_open`
SETUP = """
import shutil, tempfile
import nsdl_jupyter as nj
path = tempfile.mkdtemp() + "/m.onnx"
shutil.copy({source!r}, path)
doc = nj.open_model(path)
view = nj.GraphView(doc, height=520)
view
"""


# what a file over BUILD_ON_USE_ABOVE nodes does: open and draw from its protobuf
BUILD_ON_USE = "from nsdl_jupyter.document import _document\n_document.BUILD_ON_USE_ABOVE = 0\n"
DRAWN_UNBUILT = (
    "\nprint('UNBUILT=', doc.unbuilt_model() is not None, type(view._scene._graph).__name__)"
)


def _open(notebook: Any, cells: list[str], *, build_on_use: bool = False) -> Any:
    folder = Path(tempfile.mkdtemp(prefix="nsdl-canvas-"))
    onnx.save(_model(), str(folder / "m.onnx"))
    setup = SETUP.format(source=str(folder / "m.onnx"))
    if build_on_use:  # the view's last line stays last: it shows the view
        head, last = setup.rstrip().rsplit("\n", 1)
        setup = f"{BUILD_ON_USE}{head}{DRAWN_UNBUILT}\n{last}"
    nb = notebook([setup, *cells])
    nb.run_cell(0)
    nb.wait_for(READY).scroll_into_view_if_needed()
    graph_api(nb, "(a) => a.fit()")
    nb.two_frames()
    assert nb.page.locator(f"{VIEW}[data-editable='1']").count() == 1
    return nb


def _terminal(nb: Any, node: str, side: str, index: int) -> tuple[float, float]:
    """Wait until the terminal is drawn (the kernel answered), then its client point."""
    handle = nb.page.wait_for_function(
        f"""([n, s, i]) => document.querySelector('{SHOWN}').__nsdlEdit.terminal(n, s, i)""",
        arg=[node, side, index],
        timeout=20_000,
    )
    x, y = handle.json_value()
    return float(x), float(y)


def _drag(nb: Any, start: tuple[float, float], end: tuple[float, float]) -> None:
    mouse = nb.page.mouse
    mouse.move(*start)
    mouse.down()
    mouse.move(start[0] + (end[0] - start[0]) / 3, start[1] + (end[1] - start[1]) / 3, steps=4)
    mouse.move(*end, steps=8)
    mouse.up()


def _edited(nb: Any, words: str) -> str:
    handle = nb.page.wait_for_function(
        f"""(w) => {{ const e = document.querySelector('{SHOWN}').dataset.lastEdit;
             return e && e.includes(w) ? e : null; }}""",
        arg=words,
        timeout=20_000,
    )
    return str(handle.json_value())


def _delete(nb: Any, node: str, shot: str) -> None:
    """Click `node`, press Delete, and wait until the drawing has lost it."""
    at = graph_api(nb, f"(a) => a.locate('{node}')")
    nb.page.mouse.click(*at)
    nb.page.wait_for_function(
        f"(n) => document.querySelector('{SHOWN}').dataset.selected === n",
        arg=node,
        timeout=10_000,
    )
    nb.page.keyboard.press("Delete")
    assert f"remove {node}" in _edited(nb, "remove")
    nb.page.wait_for_function(
        f"(n) => !document.querySelector('{SHOWN}').__nsdl.nodeNames().includes(n)",
        arg=node,
        timeout=20_000,
    )
    nb.screenshot(shot, VIEW)


def test_drag_from_an_output_terminal_to_an_input_links_them(notebook: Any) -> None:
    nb = _open(notebook, ["print('IN=', doc.nodes['clip1'].inputs[1].name); doc.undo()"
                          "; print('AFTER=', len(doc.nodes['clip1'].inputs))"])  # fmt: skip
    start = _terminal(nb, "relu1", "out", 0)
    end = _terminal(nb, "clip1", "in", 1)
    nb.page.mouse.move(*start)
    nb.page.mouse.down()
    nb.page.mouse.move((start[0] + end[0]) / 2, (start[1] + end[1]) / 2, steps=6)
    nb.screenshot("link_dragging", VIEW)
    nb.page.mouse.move(*end, steps=6)
    nb.page.mouse.up()
    assert "connect r to clip1[1]" in _edited(nb, "connect")
    nb.two_frames()
    nb.screenshot("linked", VIEW)
    out = nb.run_cell(1)
    assert "IN= r" in out and "AFTER= 1" in out  # one undo reverts the link


def test_delete_key_removes_the_selected_node_or_link(notebook: Any) -> None:
    nb = _open(notebook, ["print('HAS=', 'sig1' in doc.nodes); doc.undo()"
                          "; print('BACK=', 'sig1' in doc.nodes)",
                          "print('ADD0=', doc.nodes['add1'].inputs[0])"])  # fmt: skip
    _delete(nb, "sig1", "deleted")
    out = nb.run_cell(1)
    assert "HAS= False" in out and "BACK= True" in out

    # a click on the link cat1 -> add1 selects it; Backspace removes it
    nb.page.wait_for_function(
        "() => document.querySelector('" + SHOWN + "').__nsdl.nodeNames().includes('sig1')",
        timeout=20_000,
    )
    nb.two_frames()
    scale = graph_api(nb, "(a) => a.camera().scale")
    left = graph_api(nb, "(a) => a.locate('cat1')")
    right = graph_api(nb, "(a) => a.locate('add1')")
    middle = ((left[0] + 75 * scale + right[0] - 75 * scale) / 2, (left[1] + right[1]) / 2)
    nb.page.mouse.click(*middle)
    nb.page.wait_for_function(
        "() => document.querySelector('" + SHOWN + "').dataset.selectedLinks === 'add1[0]'",
        timeout=20_000,
    )
    nb.screenshot("link_selected", VIEW)
    nb.page.keyboard.press("Backspace")
    assert "unlink add1[0]" in _edited(nb, "unlink")
    assert "ADD0= None" in nb.run_cell(2)


def test_a_big_file_drawn_before_its_model_is_built_takes_a_canvas_edit(notebook: Any) -> None:
    """A big file draws from its protobuf; the first edit on its canvas builds the onnx_ir
    model, binds the view to it and lands like any other (one undo step)."""
    nb = _open(
        notebook,
        ["print('HAS=', 'sig1' in doc.nodes, 'BUILT=', doc.unbuilt_model() is None)"
         "; doc.undo(); print('BACK=', 'sig1' in doc.nodes)"],
        build_on_use=True,
    )  # fmt: skip
    assert "UNBUILT= True GraphSkeleton" in nb.output(0)
    _delete(nb, "sig1", "deleted_after_build")
    assert "HAS= False BUILT= True\nBACK= True" in nb.run_cell(1)


def test_a_moved_node_is_where_it_was_left_after_reopening(notebook: Any) -> None:
    reopen = (
        "doc.save()\n"
        "again = nj.GraphView(nj.open_model(path))\n"
        "from nsdl_jupyter.graph import decode_columns\n"
        "def where(v):\n"
        "    _m, c = decode_columns(v._layout)\n"
        "    s = list(c['ref']).index(v._scene.table.by_key['relu1'])\n"
        "    return round(float(c['x'][s]), 1), round(float(c['y'][s]), 1)\n"
        "print('FIRST=', where(view), 'REOPENED=', where(again))"
    )
    nb = _open(notebook, [reopen])
    before = graph_api(nb, "(a) => a.locate('relu1')")
    scale = graph_api(nb, "(a) => a.camera().scale")
    _drag(nb, (before[0], before[1]), (before[0] + 30, before[1] + 90))
    assert "move relu1" in _edited(nb, "move")
    nb.page.wait_for_function(
        f"""([x, y]) => {{ const p = document.querySelector('{SHOWN}').__nsdl.locate('relu1');
             return Math.abs(p[0] - x) < 2 && Math.abs(p[1] - y) < 2; }}""",
        arg=[before[0] + 30, before[1] + 90],
        timeout=20_000,
    )  # the kernel's new layout keeps the box where it was dropped
    nb.screenshot("moved", VIEW)
    out = nb.run_cell(1)
    first = out.split("FIRST=")[1].split("REOPENED=")[0].strip()
    reopened = out.split("REOPENED=")[1].strip()
    assert first == reopened, out
    assert scale > 0


def test_context_menu_rename_and_quick_add_at_the_pointer(notebook: Any) -> None:
    added = (
        "t = [n for n in doc.nodes if doc.nodes[n].op_type == 'Tanh']; "
        "print('TANH=', t, [round(v) for v in doc.companion['moved'][t[0]]])"
    )
    nb = _open(notebook, ["print('NAMES=', sorted(doc.nodes))", added])
    at = graph_api(nb, "(a) => a.locate('add1')")
    nb.page.mouse.click(*at, button="right")
    menu = nb.wait_for(".nsdl-gv-menu")
    for label in ("Open subgraph", "Rename…", "Delete", "Extract selection", "Profile from here"):
        assert menu.locator(f"[data-label='{label}']").count() == 1
    menu.locator("[data-label='TensorRT precision']").hover()
    nb.screenshot("context_menu", VIEW)
    menu.locator("[data-label='Rename…']").click()
    field = nb.wait_for(".nsdl-gv-menu-input")
    field.fill("final_add")
    field.press("Enter")
    assert "rename add1 to final_add" in _edited(nb, "rename")
    out = nb.run_cell(1)
    assert "'final_add'" in out and "'add1'" not in out
    nb.page.wait_for_function(
        "() => document.querySelector('" + SHOWN + "').__nsdl.nodeNames().includes('final_add')",
        timeout=20_000,
    )
    nb.screenshot("renamed", VIEW)

    # Ctrl+Space on the canvas: an operator typed there lands where the pointer is
    box = nb.wait_for("canvas").bounding_box()
    spot = (box["x"] + 120, box["y"] + box["height"] - 80)
    nb.page.mouse.click(*spot)
    nb.page.keyboard.press("Control+Space")
    field = nb.wait_for(".nsdl-gv-menu-input")
    field.fill("Tanh")
    nb.screenshot("quick_add", VIEW)
    field.press("Enter")
    name = _edited(nb, "Tanh")
    world = graph_api(
        nb,
        "(a, p) => { const c = a.camera(); const r = document.querySelector('"
        + SHOWN
        + " canvas').getBoundingClientRect();"
        " return [(p[0] - r.left - c.tx) / c.scale, (p[1] - r.top - c.ty) / c.scale]; }",
        list(spot),
    )
    out = nb.run_cell(2)
    assert f"TANH= ['{name}'] [{round(world[0])}, {round(world[1])}]" in out, (out, world)
    nb.page.wait_for_function(
        "(n) => document.querySelector('" + SHOWN + "').__nsdl.nodeNames().includes(n)",
        arg=name,
        timeout=20_000,
    )
    nb.two_frames()
    nb.screenshot("quick_added", VIEW)


IF_SETUP = """
import tempfile, onnx
from onnx import TensorProto, helper
import nsdl_jupyter as nj
x = helper.make_tensor_value_info("X", TensorProto.FLOAT, [2])
c = helper.make_tensor_value_info("C", TensorProto.BOOL, [])
y = helper.make_tensor_value_info("Y", TensorProto.FLOAT, [2])
def branch(op):
    out = helper.make_tensor_value_info(op.lower(), TensorProto.FLOAT, [2])
    return helper.make_graph([helper.make_node(op, ["X"], [op.lower()], name=op.lower() + "1")],
                             op, [], [out])
gate = helper.make_node("If", ["C"], ["Y"], name="gate", then_branch=branch("Relu"),
                        else_branch=branch("Neg"))
model = helper.make_model(helper.make_graph([gate], "g", [x, c], [y]),
                          opset_imports=[helper.make_opsetid("", 17)])
path = tempfile.mkdtemp() + "/if.onnx"
onnx.save(model, path)
doc = nj.open_model(path)
view = nj.GraphView(doc, height=420)
opened = []
view.on_open_body(lambda node, attribute: opened.append((node, attribute)))
view
"""


def test_context_menu_open_subgraph_reaches_python(notebook: Any) -> None:
    nb = notebook([IF_SETUP, "print('OPENED=', opened)"])
    nb.run_cell(0)
    nb.wait_for(READY).scroll_into_view_if_needed()
    graph_api(nb, "(a) => a.fit()")
    nb.two_frames()
    at = graph_api(nb, "(a) => a.locate('gate')")
    nb.page.mouse.click(*at, button="right")
    menu = nb.wait_for(".nsdl-gv-menu")
    item = menu.locator("[data-label='Open subgraph']")
    assert "nsdl-gv-disabled" not in (item.get_attribute("class") or "")
    item.click()
    nb.page.wait_for_timeout(500)
    assert "OPENED= [('gate', '')]" in nb.run_cell(1)
