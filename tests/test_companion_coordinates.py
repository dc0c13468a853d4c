"""Box positions are numbers of the canvas (issue 22, item 15): a companion with a position
beyond the float range made open_model fail; huge or non-finite coordinates (companion, move,
add_at) broke export_image("*.svg") and were written as non-standard JSON (NaN, Infinity)."""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path
from typing import Any

import onnx
import pytest

import nsdl_jupyter as nj
from nsdl_jupyter.document import COMPANION_SUFFIX, CompanionWarning, DocumentError
from nsdl_jupyter.widgets import GraphView
from tests.test_canvas_edit import _model, ask, ok, rect

HUGE_INT = int("1" + "0" * 400)  # valid JSON, beyond the float range
HOSTILE = [1e308, -1e308, float("inf"), float("nan"), HUGE_INT, 1e7 * 10]


def _strict_json(path: Path) -> Any:
    """Parse as standard JSON: NaN and Infinity are refused."""

    def refuse(constant: str) -> Any:
        raise AssertionError(f"non-standard JSON constant {constant} in {path.name}")

    return json.loads(path.read_text(), parse_constant=refuse)


def _svg_numbers_are_finite(svg: str) -> None:
    numbers = re.findall(r'(?:x|y|width|height|[xy][12]|viewBox|d|points)="([^"]*)"', svg)
    assert numbers
    for text in numbers:
        assert not re.search(r"(?i)\b(nan|inf|infinity)\b", text), text


@pytest.fixture
def model(tmp_path: Path) -> Path:
    path = tmp_path / "m.onnx"
    onnx.save(_model(), path)
    return path


def test_a_companion_with_positions_beyond_the_canvas_opens_and_exports(
    model: Path, tmp_path: Path
) -> None:
    companion = model.with_name(model.name + COMPANION_SUFFIX)
    companion.write_text(
        '{"moved": {"sig1": [1' + "0" * 400 + ', 0], "relu1": [NaN, 1], "clip1": [1e308, 2],'
        ' "add1": [-Infinity, 3], "cat1": [900, -40]},'
        ' "positions": {"relu1": [1e400, 0], "sig1": [1, 2]}}'
    )
    with pytest.warns(CompanionWarning, match="malformed moved entries"):
        doc = nj.open_model(model)
    assert doc.companion["moved"] == {"cat1": [900.0, -40.0]}
    assert doc.companion["positions"] == {"sig1": [1.0, 2.0]}
    view = GraphView(doc)
    assert rect(view, "cat1") == (900.0, -40.0)
    svg = view.export_image(tmp_path / "m.svg").result()
    _svg_numbers_are_finite(svg.read_text())
    doc.save()
    _strict_json(companion)


@pytest.mark.parametrize("value", HOSTILE, ids=["1e308", "-1e308", "inf", "nan", "10**400", "1e8"])
def test_move_and_add_at_refuse_a_place_off_the_canvas(
    model: Path, tmp_path: Path, value: float
) -> None:
    doc = nj.open_model(model)
    view = GraphView(doc)
    before = rect(view, "sig1")
    for kind, payload in (
        ("move", {"nodes": ["sig1"], "x": [value], "y": [0.0]}),
        ("move", {"nodes": ["sig1"], "x": [0.0], "y": [value]}),
        ("add_at", {"text": "Tanh", "x": value, "y": 0.0, "link": True}),
    ):
        answer = ask(view, kind, **payload)
        assert not answer["ok"]
        assert answer["error"]["type"] == "WidgetError", answer
        assert "no place on the canvas" in answer["error"]["message"]
    assert not doc.can_undo and "moved" not in doc.companion
    assert rect(view, "sig1") == before
    svg = view.export_image(tmp_path / "m.svg").result()
    _svg_numbers_are_finite(svg.read_text())


def test_positions_at_the_edge_of_the_canvas_are_kept(model: Path, tmp_path: Path) -> None:
    doc = nj.open_model(model)
    view = GraphView(doc)
    ok(view, "move", nodes=["sig1"], x=[1e7], y=[-1e7])
    assert rect(view, "sig1") == (1e7, -1e7)
    _svg_numbers_are_finite(view.export_image(tmp_path / "m.svg").result().read_text())
    doc.save()
    assert nj.open_model(model).companion["moved"] == {"sig1": [1e7, -1e7]}


def test_the_companion_is_always_written_as_standard_json(model: Path) -> None:
    doc = nj.open_model(model)
    with pytest.raises(DocumentError, match="finite numbers"):
        doc.update_companion("moved", {"sig1": [float("nan"), 0.0]})
    with pytest.raises(DocumentError, match="standard JSON"):
        doc.update_companion("tool_state", {"zoom": float("inf")})
    assert doc.companion == {}
    # the dict itself stays writable: what JSON cannot hold is left out, with a warning
    doc.companion["moved"] = {"sig1": [float("inf"), 0.0], "relu1": [5.0, 6.0]}
    doc.companion["tool_state"] = {"zoom": float("nan")}
    doc.companion["collapsed"] = ["/encoder"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        doc.save()
    said = " ".join(str(w.message) for w in caught if w.category is CompanionWarning)
    assert "malformed moved" in said and "malformed tool_state" in said
    written = _strict_json(model.with_name(model.name + COMPANION_SUFFIX))
    assert written["moved"] == {"relu1": [5.0, 6.0]}
    assert "tool_state" not in written and written["collapsed"] == ["/encoder"]
