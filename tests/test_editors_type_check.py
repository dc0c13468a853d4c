"""Type checking after edits: diagnostics per node, graph marks, debounce, the worker-thread
path (results applied on the event loop's thread, stale results dropped) and the panel."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable

import onnx_ir as ir
import pytest
from onnx import TensorProto, helper

from nsdl_jupyter.document import Diagnostic, ModelDocument, check_proto
from nsdl_jupyter.editors import (
    TypeCheckRunner,
    diagnostic_label,
    marks_of,
    summary_of,
)
from nsdl_jupyter.widgets import GraphView
from nsdl_jupyter.widgets.designer._type_check_panel import TypeCheckPanel
from tests import real_exports
from tests._document_models import chain_model


@pytest.fixture
def doc() -> ModelDocument:
    return ModelDocument(ir.from_proto(chain_model()))


def break_model(doc: ModelDocument) -> None:
    doc.add_node("Cast", inputs=["b"], name="bad_cast")  # 'to' is required


def test_labels_marks_and_summary() -> None:
    found = [
        Diagnostic("error", "a", "broken"),
        Diagnostic("warning", "a", "odd"),
        Diagnostic("warning", "b", "odd"),
        Diagnostic("error", None, "model level"),
        Diagnostic("info", "c", "fyi"),
    ]
    assert marks_of(found) == {"a": "error", "b": "warning"}
    assert summary_of(found) == "2 errors, 2 warnings"
    assert summary_of([]) == "no problems found"
    assert diagnostic_label(found[0]) == "✖ a: broken"
    assert diagnostic_label(found[3]) == "✖ model: model level"
    assert diagnostic_label(found[1]).startswith("⚠")


def test_run_now_maps_problems_to_nodes(doc: ModelDocument) -> None:
    results: list[list[Diagnostic]] = []
    runner = TypeCheckRunner(doc, results.append, auto=False)
    assert runner.run_now() == []
    break_model(doc)
    found = runner.run_now()
    assert [(d.severity, d.node) for d in found] == [("error", "bad_cast")]
    assert found[0].message == "Cast: attribute `to` is required: set it to an int"
    assert results[-1] == found
    runner.close()


def test_worker_thread_check_matches_the_document_check(doc: ModelDocument) -> None:
    results: list[list[Diagnostic]] = []
    runner = TypeCheckRunner(doc, results.append, delay=0.05, background_nodes=0)
    break_model(doc)
    runner.wait()
    assert results and results[-1] == doc.check()
    assert runner.checks == 1
    doc.undo()
    runner.wait()
    assert results[-1] == []
    runner.close()


def test_bursts_are_debounced_and_stale_results_dropped(doc: ModelDocument) -> None:
    results: list[list[Diagnostic]] = []
    runner = TypeCheckRunner(doc, results.append, delay=0.3, background_nodes=0)
    names = ["neg", "negated"]
    for index in range(5):
        doc.rename_node(names[index % 2], names[(index + 1) % 2])
    runner.wait()
    assert runner.checks == 1, "five quick edits, one check"
    # a check that overlapped an edit is not delivered: its version is no longer current
    version = runner._version
    runner._version += 1
    runner._background(version)
    assert runner.checks == 1
    runner.close()
    break_model(doc)
    time.sleep(0.4)
    assert runner.checks == 1, "a closed runner does not check any more"


def test_results_are_applied_on_the_event_loop_thread(doc: ModelDocument) -> None:
    seen: list[tuple[list[Diagnostic], threading.Thread]] = []

    async def scenario() -> None:
        runner = TypeCheckRunner(
            doc, lambda d: seen.append((d, threading.current_thread())), delay=0.01,
            background_nodes=0,
        )  # fmt: skip
        break_model(doc)
        for _ in range(400):
            await asyncio.sleep(0.025)
            if seen:
                break
        runner.close()

    asyncio.run(scenario())
    assert seen, "no result arrived"
    diagnostics, thread = seen[-1]
    assert thread is threading.main_thread()
    assert [d.node for d in diagnostics] == ["bad_cast"]


def test_panel_lists_problems_marks_the_graph_and_jumps(doc: ModelDocument) -> None:
    view = GraphView(doc)
    panel = TypeCheckPanel(doc, graph_view=view, delay=0.05)
    assert "no problems" in panel.status.value and panel.list.layout.display == "none"
    break_model(doc)
    panel.runner.wait()
    assert "1 error" in panel.status.value
    assert panel.list.options == (
        ("✖ bad_cast: Cast: attribute `to` is required: set it to an int", 0),
    )
    assert view._marks == {"bad_cast": "error"}
    panel.list.value = 0
    assert panel.selected == ["bad_cast"]
    doc.set_attribute("bad_cast", "to", 1)
    panel.runner.wait()
    assert view._marks == {} and "no problems" in panel.status.value
    panel.close()
    view.close()


def test_a_node_without_its_inputs_is_reported_not_raised(doc: ModelDocument) -> None:
    doc.add_node("Tanh", name="lonely")  # lenient shape inference already stops on it
    found = TypeCheckRunner(doc, lambda _d: None, auto=False).run_now()
    assert [d.node for d in found] == ["lonely"] and found[0].severity == "error"


def _control_flow() -> ModelDocument:
    """The scripted if/for model as TorchScript exports it: /Cast feeds If's `cond`."""
    return ModelDocument(ir.from_proto(real_exports.load("control_flow_torchscript")))


def test_messages_name_the_schema_input_or_attribute_and_the_fix() -> None:
    doc = _control_flow()
    doc.remove_node("/Cast")
    (found,) = doc.check()
    assert found.node == "/If"
    assert found.message == "If: input `cond` is not connected: connect a bool tensor"
    # a file may carry what the editor refuses: an attribute the operator lacks
    relu = helper.make_node("Relu", ["x"], ["y"], name="relu", foo=1)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])
    graph = helper.make_graph([relu], "g", [x], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    (found,) = check_proto(model)
    assert (
        found.message
        == "Relu: has no attribute `foo` (opset 14): remove it; its attributes are none"
    )


async def _until(condition: Callable[[], bool], seconds: float = 10.0) -> bool:
    for _ in range(int(seconds / 0.02)):
        if condition():
            return True
        await asyncio.sleep(0.02)
    return condition()


def test_a_canvas_delete_shows_in_the_panel_without_another_cell() -> None:
    doc = _control_flow()

    async def scenario() -> tuple[str, tuple[object, ...], dict[str, str]]:
        view = GraphView(doc)
        panel = TypeCheckPanel(doc, graph_view=view, delay=0.05)
        assert "no problems" in panel.status.value
        sent: list[dict[str, object]] = []
        view.send = lambda content, buffers=None: sent.append(content)  # type: ignore[method-assign]
        request = {"nodes": ["/Cast"]}
        message = {"kind": "nsdl.request", "id": "t:1", "name": "delete", "payload": request}
        view._channel.receive(view, message, [])  # as the browser's Delete key sends it
        assert sent[-1]["ok"], sent[-1]
        await _until(lambda: "error" in panel.status.value)
        result = panel.status.value, panel.list.options, dict(view._marks)
        panel.close()
        view.close()
        return result

    status, options, marks = asyncio.run(scenario())
    assert "1 error" in status
    assert options == (("✖ /If: If: input `cond` is not connected: connect a bool tensor", 0),)
    assert marks == {"/If": "error"}


def test_an_edit_from_another_thread_is_checked_while_the_kernel_idles() -> None:
    """An edit arriving on a thread other than the kernel's (a subshell, a worker, a tool)
    while the kernel's loop waits for nothing: the check must still run (it waited for the
    next cell: call_later from another thread does not wake the loop)."""
    doc = _control_flow()
    delivered = threading.Event()
    outcome: dict[str, bool] = {}

    async def scenario() -> None:
        loop = asyncio.get_running_loop()
        panel = TypeCheckPanel(doc, delay=0.05)
        idle = asyncio.Event()

        def on_result(found: list[Diagnostic]) -> None:
            if found:
                delivered.set()

        panel.runner._on_result = on_result

        def edit_elsewhere() -> None:
            time.sleep(0.3)  # until the loop waits in its selector, with no timer due
            doc.remove_node("/Cast")
            outcome["checked"] = delivered.wait(5.0)
            loop.call_soon_threadsafe(idle.set)

        threading.Thread(target=edit_elsewhere, daemon=True).start()
        await idle.wait()  # nothing else wakes the loop
        panel.close()

    asyncio.run(scenario())
    assert outcome["checked"], "the check of an edit made on another thread never ran"
