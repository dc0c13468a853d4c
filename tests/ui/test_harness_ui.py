"""The UI harness itself: browser tests mix with the other tests on one pytest worker, and
the notebook tests of a worker share one JupyterLab page without seeing each other."""

from __future__ import annotations

import asyncio
import json
import time
import urllib.request
from typing import Any

import pytest

from tests.ui.conftest import TOKEN

# one worker runs the module: the two turns of the kept-page test meet in one page
pytestmark = [pytest.mark.ui, pytest.mark.xdist_group("test_harness_ui")]


async def _answer() -> int:
    await asyncio.sleep(0)
    return 42


def test_parked_playwright_leaves_no_running_loop_and_comes_back(
    browser: Any, chromium: Any
) -> None:
    """After a browser test the next test of the process may call asyncio.run() (the
    type-check runner does): Playwright's loop, marked running while it is started, is
    parked in between and put back for the next browser test."""
    pending = _answer()
    with pytest.raises(RuntimeError, match="cannot be called from a running event loop"):
        asyncio.run(pending)  # what a test after a browser test met before the parking
    pending.close()
    chromium.park()
    assert asyncio.run(_answer()) == 42
    again = chromium.get()
    assert again is browser
    page = again.new_page()
    try:
        page.set_content("<p id=x>ok</p>")
        assert page.inner_text("#x") == "ok"
    finally:
        page.close()


# What the kept JupyterLab page shows a test when it opens the test's notebook.
STATE = """() => { const shell = window.jupyterapp.shell;
  const kernel = shell.currentWidget.sessionContext.session.kernel;
  return {page: window.nsdlHarnessMark ?? null, kernel: kernel.id,
          tabs: Array.from(shell.widgets('main')).length,
          left: shell.leftCollapsed, dialogs: document.querySelectorAll('.jp-Dialog').length,
          size: [window.innerWidth, window.innerHeight]}; }"""
# A mess for the next test: a page mark, the left area toggled, a dialog left open.
MESS = """async () => { window.nsdlHarnessMark ??= String(Math.random());
  await window.jupyterapp.commands.execute('application:toggle-left-area');
  window.jupyterapp.commands.execute('notebook:restart-kernel'); }"""
_SEEN: dict[str, Any] = {}


@pytest.mark.parametrize("turn", [1, 2])
def test_each_notebook_opens_in_the_kept_page_as_in_a_fresh_one(
    notebook: Any, lab: Any, turn: int
) -> None:
    """The second of the two turns (either order) opens its notebook in the page the first
    one left in a mess, yet sees what a freshly loaded page shows: one tab, the left area as
    at load, no dialog, its own size and a kernel of its own; the first turn's kernel is shut."""
    nb = notebook(["print('ready')"], width=1000 + 100 * turn, height=700 + 50 * turn)
    state = nb.page.evaluate(STATE)
    assert state["tabs"] == 1 and state["dialogs"] == 0
    assert state["size"] == [1000 + 100 * turn, 700 + 50 * turn]
    assert "ready" in nb.run_cell(0)
    # over Unix sockets: no TCP port another process can take before the kernel binds it
    connection = json.loads((lab.runtime / f"kernel-{state['kernel']}.json").read_text())
    assert connection["transport"] == "ipc" and str(lab.runtime) in connection["ip"]
    if _SEEN:
        first = _SEEN
        assert state["page"] == first["mark"]  # JupyterLab was not loaded again
        assert state["kernel"] != first["kernel"] and state["left"] == first["left"]
        deadline = time.monotonic() + 60
        while first["kernel"] in _kernels(lab):
            assert time.monotonic() < deadline, "the first turn's kernel still runs"
            time.sleep(0.5)
    nb.page.evaluate(MESS)
    nb.page.locator(".jp-Dialog").first.wait_for(timeout=30_000)
    nb.page.keyboard.down("Shift")
    if not _SEEN:
        _SEEN.update(state, mark=nb.page.evaluate("() => window.nsdlHarnessMark"))


def _kernels(lab: Any) -> list[str]:
    with urllib.request.urlopen(f"{lab.url}/api/kernels?token={TOKEN}", timeout=30) as answer:
        return [kernel["id"] for kernel in json.load(answer)]
