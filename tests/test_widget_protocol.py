"""The kernel end of the widget protocol (widgets/_protocol.py) and its declared message kinds
(widgets/_messages.py); the browser end is js/test/protocol.test.ts, both ends together
tests/ui/test_widget_protocol_ui.py."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, TypedDict

import onnx
import pytest

import nsdl_jupyter as nj
from nsdl_jupyter.examples import synthetic_dag
from nsdl_jupyter.widgets import GraphView
from nsdl_jupyter.widgets._messages import generated_typescript
from nsdl_jupyter.widgets._protocol import (
    ANSWER,
    EVENT,
    REQUEST,
    Catalog,
    Endpoint,
    InvalidPayloadError,
    Kind,
    WidgetRequestError,
    check,
)

REPO = Path(__file__).resolve().parent.parent


class Move(TypedDict):
    steps: list[int]
    mode: Literal["walk", "run"]
    note: str | None


class Moved(TypedDict):
    total: int


class Shot(TypedDict):
    scale: float


class Picture(TypedDict):
    mime: str


CATALOG = Catalog(
    "Test",
    {
        "move": Kind(Move, Moved, "kernel"),
        "ping": Kind(Moved, None, "kernel"),
        "shot": Kind(Shot, Picture, "browser"),
        "fit": Kind(Shot, None, "browser"),
    },
)


class Wire:
    """The comm of one widget, kernel side: records what the kernel sends."""

    def __init__(self) -> None:
        self.sent: list[tuple[dict[str, Any], list[bytes] | None]] = []
        self.callback: Callable[[Any, Any, list[bytes]], None] | None = None

    def send(self, content: dict[str, Any], buffers: list[bytes] | None = None) -> None:
        self.sent.append((content, buffers))

    def on_msg(self, callback: Callable[[Any, Any, list[bytes]], None]) -> None:
        self.callback = callback

    def deliver(self, content: dict[str, Any], buffers: list[bytes] | None = None) -> None:
        assert self.callback is not None
        self.callback(self, content, buffers or [])


def test_the_typescript_declarations_are_generated_from_the_python_ones() -> None:
    current = (REPO / "js" / "src" / "messages.ts").read_text()
    assert current == generated_typescript(), (
        "js/src/messages.ts is stale: python js/gen_messages.py"
    )
    assert "export interface GraphViewToKernel" in current
    assert 'format: "png" | "jpeg";' in current and "background: string | null;" in current


def test_requests_are_checked_answered_with_their_id_and_errors_are_typed() -> None:
    wire = Wire()
    moves: list[Move] = []

    def move(payload: Move) -> Moved:
        if payload["mode"] == "run":
            raise KeyError("no running here")
        moves.append(payload)
        return {"total": sum(payload["steps"])}

    Endpoint(wire, CATALOG, {"move": move, "ping": lambda _p: None})

    def ask(request_id: str, name: str, payload: Any) -> dict[str, Any]:
        wire.deliver({"kind": REQUEST, "id": request_id, "name": name, "payload": payload})
        return wire.sent[-1][0]

    ok = {"steps": [1, 2], "mode": "walk", "note": None}
    assert ask("a1b2:1", "move", ok) == {
        "kind": ANSWER, "id": "a1b2:1", "ok": True, "value": {"total": 3}
    }  # fmt: skip
    bad_payloads = [
        {"steps": [1, True], "mode": "walk", "note": None},  # a bool is no int
        {"steps": [1], "mode": "fly", "note": None},
        {"steps": [1], "mode": "walk"},
        {"steps": [1], "mode": "walk", "note": None, "extra": 1},
        [1, 2],
    ]
    for payload in bad_payloads:
        answer = ask("a1b2:2", "move", payload)
        assert answer["ok"] is False and answer["error"]["code"] == "invalid_payload", payload
    assert len(moves) == 1, "a handler never sees an invalid payload"
    failed = ask("a1b2:3", "move", {**ok, "mode": "run"})
    assert failed["error"] == {
        "code": "handler_error", "type": "KeyError", "message": "'no running here'"
    }  # fmt: skip
    assert ask("a1b2:4", "shot", {"scale": 1.0})["error"]["code"] == "unknown_request"
    count = len(wire.sent)
    wire.deliver({"kind": EVENT, "name": "ping", "payload": {"total": 1}})
    wire.deliver({"kind": EVENT, "name": "nope", "payload": {}})
    wire.deliver({"type": "legacy"})  # not ours: ignored
    assert len(wire.sent) == count, "events are never answered"


def test_kernel_requests_take_the_first_answer_and_report_browser_errors() -> None:
    wire = Wire()
    endpoint = Endpoint(wire, CATALOG, {"move": lambda p: {"total": 0}, "ping": lambda p: None})
    first = endpoint.request("shot", {"scale": 2.0})
    second = endpoint.request("shot", {"scale": 1.0})
    (one, _), (two, _) = wire.sent
    assert one["id"] != two["id"] and one["id"].startswith("kernel-")
    # two views answer the second request; the first request's answer comes last
    wire.deliver({"kind": ANSWER, "id": two["id"], "ok": True, "value": {"mime": "a"}}, [b"A"])
    wire.deliver({"kind": ANSWER, "id": two["id"], "ok": True, "value": {"mime": "b"}}, [b"B"])
    assert second.result(timeout=0) == ({"mime": "a"}, [b"A"])
    assert not first.done()
    error = {"code": "handler_error", "type": "Error", "message": "no canvas"}
    wire.deliver({"kind": ANSWER, "id": one["id"], "ok": False, "error": error})
    with pytest.raises(WidgetRequestError, match="the browser could not shot: no canvas"):
        first.result(timeout=0)
    assert issubclass(WidgetRequestError, RuntimeError) and issubclass(
        WidgetRequestError, nj.NsdlError
    )
    endpoint.notify("fit", {"scale": 1.0})
    assert wire.sent[-1][0] == {"kind": EVENT, "name": "fit", "payload": {"scale": 1.0}}
    with pytest.raises(InvalidPayloadError, match="scale should be number"):
        endpoint.request("shot", {"scale": "big"})
    with pytest.raises(ValueError, match="is an event"):
        endpoint.request("fit", {"scale": 1.0})
    with pytest.raises(ValueError, match="declares no message 'move' to the browser"):
        endpoint.notify("move", {})


def test_every_kind_sent_to_the_kernel_needs_a_handler() -> None:
    with pytest.raises(ValueError, match="kinds sent to the kernel are \\['move', 'ping'\\]"):
        Endpoint(Wire(), CATALOG, {"move": lambda p: {"total": 0}})
    with pytest.raises(InvalidPayloadError, match="missing field 'mime'"):
        check({}, Picture, "answer")


def test_two_views_asking_a_graph_view_at_once_each_get_their_own_answer(tmp_path: Path) -> None:
    onnx.save(synthetic_dag(800, seed=11), tmp_path / "m.onnx")
    view = GraphView(nj.open_model(tmp_path / "m.onnx"))
    sent: list[dict[str, Any]] = []
    view.send = lambda content, buffers=None: sent.append(content)  # no comm outside a kernel
    closed = [view._scene.hierarchy.by_key()[k] for k, open_ in view.groups.items() if not open_]
    # both views count from 1: the ids still differ, so neither answer is mistaken for the other
    for view_id, group in (("aaaa:1", closed[0]), ("bbbb:1", closed[1])):
        message = {"groups": [group]}
        view._channel.receive(
            view, {"kind": REQUEST, "id": view_id, "name": "expand", "payload": message}, []
        )
    view._channel.receive(
        view, {"kind": REQUEST, "id": "aaaa:2", "name": "expand", "payload": {"groups": "all"}}, []
    )
    answers = {m["id"]: m for m in sent}
    assert answers["aaaa:1"]["value"]["layout_seq"] < answers["bbbb:1"]["value"]["layout_seq"]
    assert answers["aaaa:2"]["error"]["code"] == "invalid_payload"
    assert sum(open_ for open_ in view.groups.values()) >= 2
