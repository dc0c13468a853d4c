"""Adding operators in a real JupyterLab + headless Chromium: an operator dragged from the
Designer's Layer Palette lands on the canvas where it is dropped, and the canvas's quick add
suggests operators while one types (arrows choose, Enter adds, Escape closes)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.ui.graph_probe import VIEW as SHOWN
from tests.ui.graph_probe import graph_api
from tests.ui.test_canvas_edit_ui import VIEW, _edited, _open
from tests.ui.test_designer import KEYS_READY, NB, SMALL_CONV

pytestmark = [pytest.mark.ui, pytest.mark.slow]

ADDED = (
    "new = [n for n in doc.nodes if doc.nodes[n].op_type == {op!r}]; "
    "print('ADDED=', new, [round(v) for v in doc.companion['moved'][new[0]]], "
    "'INPUTS=', len(doc.nodes[new[0]].inputs), 'UNDO=', doc.undo_description)"
)


def _world(nb: Any, point: tuple[float, float]) -> list[float]:
    """Layout coordinates of a client point over the shown canvas."""
    return list(
        graph_api(
            nb,
            "(a, p) => { const c = a.camera(); const r = document.querySelector('"
            + SHOWN
            + " canvas').getBoundingClientRect();"
            " return [(p[0] - r.left - c.tx) / c.scale, (p[1] - r.top - c.ty) / c.scale]; }",
            list(point),
        )
    )


def _drawn(nb: Any, name: str) -> None:
    nb.page.wait_for_function(
        "(n) => document.querySelector('" + SHOWN + "').__nsdl.nodeNames().includes(n)",
        arg=name,
        timeout=20_000,
    )
    nb.two_frames()


def test_drag_an_operator_from_the_palette_onto_the_canvas(notebook: Any) -> None:
    nb = notebook([SMALL_CONV, ADDED.format(op="Sigmoid")], width=1600, height=1000)
    nb.run_all()
    nb.wait_for(KEYS_READY)
    nb.wait_idle()
    tabs = nb.page.locator(f"{NB} .nsdl-designer .lm-TabBar-tab")
    tabs.filter(has_text="Palette").first.click()
    nb.page.locator(f"{NB} .nsdl-palette-filter input").fill("Sigmoid")
    line = nb.page.locator(f'{NB} .nsdl-op-item[data-key="Sigmoid"]').first
    line.wait_for(state="visible", timeout=30_000)
    canvas = nb.page.locator(f"{SHOWN} canvas").first
    box = canvas.bounding_box()
    assert box is not None
    spot = (box["x"] + box["width"] * 0.7, box["y"] + box["height"] - 70)
    start = line.bounding_box()
    assert start is not None
    mouse = nb.page.mouse
    mouse.move(start["x"] + 10, start["y"] + start["height"] / 2)
    mouse.down()
    mouse.move(start["x"] + 40, start["y"] + 20, steps=4)
    mouse.move(*spot, steps=12)
    nb.screenshot("palette_dragging", ".nsdl-designer")
    mouse.up()
    name = _edited(nb, "Sigmoid")
    world = _world(nb, spot)
    out = nb.run_cell(1)
    assert f"ADDED= ['{name}'] [" in out, out
    placed = [float(v) for v in out.split("] [", 1)[1].split("]", 1)[0].split(",")]
    # the drop event reports whole client pixels: within a pixel of the pointer
    assert all(abs(p - w) <= 2 for p, w in zip(placed, world, strict=True)), (out, world)
    assert "INPUTS= 0" in out and "UNDO= add Sigmoid" in out  # dropped unlinked, one step
    _drawn(nb, name)
    nb.screenshot("palette_dropped", ".nsdl-designer")
    assert nb.error_outputs() == []


def test_quick_add_suggests_while_typing_and_adds_the_chosen_one(notebook: Any) -> None:
    nb = _open(notebook, [ADDED.format(op="HardSigmoid")])
    box = nb.wait_for("canvas").bounding_box()
    spot = (box["x"] + 140, box["y"] + box["height"] - 90)
    nb.page.mouse.click(*spot)
    nb.page.keyboard.press("Control+Space")
    field = nb.wait_for(".nsdl-gv-menu-input")
    field.press_sequentially("sigm", delay=40)
    suggestions = nb.page.locator(f"{NB} .nsdl-gv-suggestion")
    nb.page.wait_for_function(
        "() => document.querySelectorAll('.nsdl-gv-suggestion').length >= 2", timeout=20_000
    )
    values = [s.get_attribute("data-value") for s in suggestions.all()]
    assert values[:2] == ["Sigmoid", "HardSigmoid"], values  # prefix before word start
    field.press("ArrowDown")
    active = nb.page.locator(f"{NB} .nsdl-gv-suggestion.nsdl-gv-active")
    assert active.get_attribute("data-value") == "HardSigmoid"
    nb.screenshot("quick_add_suggestions", VIEW)
    field.press("Enter")
    name = _edited(nb, "HardSigmoid")
    out = nb.run_cell(1)
    assert f"ADDED= ['{name}']" in out and "UNDO= add HardSigmoid" in out, out
    _drawn(nb, name)
    nb.screenshot("quick_added_suggestion", VIEW)

    nb.page.mouse.click(*spot)
    nb.page.keyboard.press("Control+Space")
    nb.wait_for(".nsdl-gv-menu-input").press_sequentially("conv", delay=40)
    nb.page.wait_for_function(
        "() => document.querySelectorAll('.nsdl-gv-suggestion').length > 0", timeout=20_000
    )
    nb.page.keyboard.press("Escape")
    nb.page.wait_for_function(
        "() => !document.querySelector('.nsdl-gv-menu-input')", timeout=10_000
    )  # Escape closes, nothing added
    assert "HardSigmoid" in (nb.page.locator(SHOWN).first.get_attribute("data-last-edit") or "")
