"""The widget protocol with two views of one GraphView open in a real JupyterLab: requests
sent from both views at once each get their own answer, a kernel error comes back typed,
a busy kernel makes a request time out with the reason in the view, and closing one view
leaves the other working."""

from __future__ import annotations

import ast
from typing import Any

import pytest

pytestmark = [pytest.mark.ui, pytest.mark.slow]

VIEWS = ".jp-NotebookPanel:not(.lm-mod-hidden) .nsdl-graph-view"
READY = '.nsdl-graph-view[data-ready="1"]'

CELLS = [
    """
import tempfile, onnx
import ipywidgets as widgets
import nsdl_jupyter as nj
from nsdl_jupyter.examples import synthetic_dag
folder = tempfile.mkdtemp()
onnx.save(synthetic_dag(1500, seed=1), folder + "/model.onnx")
view = nj.GraphView(nj.open_model(folder + "/model.onnx"), height=260)
view
""",
    # the second view of the same model, in an Output so that the test can close it
    "second = widgets.Output()\nwith second:\n    display(view)\nsecond",
    # two closed groups side by side, neither inside the other (the first view is the outline
    # of the modules, whose nested groups are closed too)
    "closed = [k for k, v in view.groups.items() if not v]\n"
    "outer = [k for k in closed if not any(k.startswith(o + '/') for o in closed)]\n"
    "print('CLOSED', *outer[:2])",
    "print('OPEN', *[k for k, v in view.groups.items() if v])",
    "import time\nprint('BUSY', flush=True)\ntime.sleep(4)",
    "second.clear_output()",
]


def in_views(nb: Any, expression: str, arg: Any = None) -> Any:
    """Evaluate `expression`, a JS function of (apis, arg) where apis are the test hooks of
    every GraphView view on the page, in document order."""
    return nb.page.evaluate(
        f"""async ([arg]) => {{
            const apis = [...document.querySelectorAll('{VIEWS}')].map((r) => r.__nsdl);
            return await ({expression})(apis, arg); }}""",
        [arg],
    )


def test_two_views_of_one_graph_each_get_their_own_answers(notebook: Any) -> None:
    nb = notebook(CELLS)
    nb.run_cell(0)
    nb.run_cell(1)
    nb.page.wait_for_function(
        f"() => document.querySelectorAll('{VIEWS}[data-ready=\"1\"]').length === 2",
        timeout=120_000,
    )
    assert nb.error_outputs() == []
    ids = in_views(nb, "(apis) => apis.map((a) => a.viewId())")
    assert len(set(ids)) == 2, ids
    first, second = nb.run_cell(2).split("CLOSED", 1)[1].split()
    groups = in_views(nb, "(apis, keys) => keys.map((k) => apis[0].groupIndex(k))", [first, second])
    assert min(groups) > 0

    # both views at once, in this order: A expand, B expand, A collapse, B an unknown request;
    # each view's first request has the same counter, only the view id tells them apart
    answers = in_views(
        nb,
        """(apis, g) => Promise.all([
            apis[0].request('expand', {groups: [g[0]]}),
            apis[1].request('expand', {groups: [g[1]]}),
            apis[0].request('collapse', {groups: [g[0]]}),
            apis[1].request('bogus', {}),
        ])""",
        groups,
    )
    a_expand, b_expand, a_collapse, b_bogus = answers
    assert a_expand["ok"] and b_expand["ok"] and a_collapse["ok"], answers
    seqs = [a_expand["value"]["layout_seq"], b_expand["value"]["layout_seq"]]
    seqs.append(a_collapse["value"]["layout_seq"])
    # one layout per change, each answer naming its own; one view's answers in the order it
    # asked (how the two views' messages interleave on the way to the kernel is not promised)
    assert len(set(seqs)) == 3 and min(seqs) > 1, f"answers mixed up between the views: {answers}"
    assert seqs[0] < seqs[2], f"view A's answers out of order: {answers}"
    assert b_bogus == {
        "ok": False, "code": "unknown_request", "type": "LookupError",
        "message": "unknown request 'bogus'",
    }  # fmt: skip
    # a payload the kernel refuses comes back typed
    bad = in_views(nb, "(apis) => apis[1].request('expand', {groups: 'all'})")
    assert bad["ok"] is False and bad["code"] == "invalid_payload"
    assert "groups should be a list" in bad["message"]
    both = in_views(nb, "(apis) => apis.map((a) => a.stats().layoutDecodes)")
    assert both[0] == both[1], "both views show the same layouts"
    out = nb.run_cell(3)
    assert second in out.split() and first not in out.split()
    nb.page.locator(VIEWS).first.scroll_into_view_if_needed()
    nb.screenshot("two_views")

    # a busy kernel: the request times out and the view says why instead of hanging
    nb._queue_cell(4)
    # the request must reach the kernel while the cell runs, not before it starts
    nb.page.wait_for_function(
        "(c) => c.querySelector('.jp-Cell-outputArea').textContent.includes('BUSY')",
        arg=nb.cell(4).element_handle(),
    )
    failed = in_views(nb, "(apis, g) => apis[0].send('expand', [g], 1000)", groups[0])
    assert failed is None
    error = nb.page.locator(VIEWS).first.get_attribute("data-error") or ""
    assert 'did not answer "expand" within 1 s' in error
    status = nb.page.locator(VIEWS).first.locator(".nsdl-gv-status").inner_text()
    assert "expand failed" in status and "busy" in status
    nb.screenshot("timeout", ".nsdl-graph-view")
    nb.wait_idle()
    # the late answer is ignored; the expansion itself still happened, and the next answer
    # clears the message
    assert first in nb.run_cell(3).split()
    ok = in_views(nb, "(apis, g) => apis[0].send('collapse', [g])", groups[0])
    assert ok is not None and ok["value"]["layout_seq"] > max(seqs)
    assert nb.page.locator(VIEWS).first.get_attribute("data-error") is None

    # closing one view leaves the other one answering
    nb.run_cell(5)
    nb.page.wait_for_function(f"() => document.querySelectorAll('{VIEWS}').length === 1")
    last = in_views(nb, "(apis, g) => apis[0].request('expand', {groups: [g]})", groups[1])
    assert last["ok"] is True
    assert nb.page.locator(READY).count() == 1
    assert nb.error_outputs() == []
    uncaught = [e for e in nb.console_errors if "Uncaught" in e or "RequestError" in e]
    assert uncaught == [], uncaught


THREAD_CELLS = [
    """
import tempfile, threading, onnx
import ipywidgets as widgets
import nsdl_jupyter as nj
from nsdl_jupyter.examples import synthetic_dag
folder = tempfile.mkdtemp()
onnx.save(synthetic_dag(300, seed=1), folder + "/model.onnx")
view = nj.GraphView(nj.open_model(folder + "/model.onnx"), height=260)
threads = []
for name, handler in list(view._channel._handlers.items()):
    def spy(payload, handler=handler, name=name):
        threads.append(threading.current_thread().name)
        return handler(payload)
    view._channel._handlers[name] = spy
from nsdl_jupyter.widgets._main_shell import route_tree_to_main_shell
def button(who):
    def clicked(b):
        threads.append(who + " " + threading.current_thread().name)
        # published while handling the click: ipykernel sends the next click to its subshell
        b.description = f"clicked {len(threads)}"
    b = widgets.Button(description="clicked 0")
    b.add_class("nsdl-test-" + who)
    b.on_click(clicked)
    return b
ours = widgets.VBox()
route_tree_to_main_shell(ours)
ours.children = [button("ours")]  # a child added later is routed too (as a pane's new form)
designer = nj.Designer(nj.open_model(folder + "/model.onnx"))
def tree(w):
    yield w
    for c in getattr(w, "children", ()):
        yield from tree(c)
print("UNROUTED", [type(w).__name__ for w in tree(designer)  # an ipykernel with subshells
                   if hasattr(w.comm, "_reply_subshell_for")
                   and not getattr(w.comm, "_nsdl_main_shell", False)])
widgets.VBox([button("plain"), ours, view])
""",
    "view.expand()",  # published from a cell: ipykernel would route the next message here
    "print('THREADS', sorted(set(threads)))",
]


@pytest.mark.may_skip  # a JupyterLab before 4.4 or an ipykernel before 7 has no subshells
def test_every_request_is_handled_on_the_main_shell(notebook: Any) -> None:
    """JupyterLab sends widget messages over a kernel subshell (a plain ipywidgets Button's
    second click runs on the subshell's thread here); a GraphView's requests, and clicks in
    our boxes (every widget of a Designer, a child added later), still run on the main
    thread, one at a time, whoever published last."""
    nb = notebook(THREAD_CELLS)
    assert "UNROUTED []" in nb.run_cell(0), "a widget of the Designer keeps ipykernel's routing"
    nb.page.wait_for_function(
        f"() => document.querySelector('{VIEWS}[data-ready=\"1\"]') !== null", timeout=120_000
    )
    burst = """(apis) => Promise.all([
        apis[0].request('expand_all', {}), apis[0].request('collapse_all', {}),
        apis[0].request('expand_all', {}), apis[0].request('collapse_all', {}),
    ])"""
    first = in_views(nb, burst)
    nb.run_cell(1)
    second = in_views(nb, burst)
    seqs = [a["value"]["layout_seq"] for a in first + second]
    assert all(a["ok"] for a in first + second), first + second
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs), seqs
    for who in ("plain", "ours"):
        button = nb.page.locator(f".nsdl-test-{who}")
        for _ in range(2):
            before = button.inner_text()
            button.click()
            nb.page.wait_for_function(
                "([b, t]) => b.textContent !== t", arg=[button.element_handle(), before]
            )
    seen = ast.literal_eval(nb.run_cell(2).split("THREADS", 1)[1].strip())
    plain = [t for t in seen if t.startswith("plain ")]
    if not any(t.startswith("plain subshell") for t in plain):
        pytest.skip(f"JupyterLab sent no widget message over a kernel subshell here: {seen}")
    assert [t for t in seen if t not in plain] == ["MainThread", "ours MainThread"], seen
