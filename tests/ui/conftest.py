"""The project's UI test harness: a real JupyterLab on 127.0.0.1 driven by headless Chromium.

Learned the hard way (the numbers refer to the UI rig's gotchas list):
- Debian's /usr/bin/chromium through Playwright's `executable_path`; never `playwright
  install` (it downloads a browser) (1). JupyterLab needs --allow-root as root (2).
- "Run All" is the Run menu's `runmenu:run-all` (3). A fresh workspace per page, or the server
  restores the previous session's tabs (4). Select a cell by clicking its input prompt, and
  check the prompt turned [*] (5). Notebook windowingMode "none" so off-screen outputs render
  (6). Notebooks need metadata.kernelspec or a kernel dialog swallows clicks (13).
- Kernels talk over Unix sockets (`KernelManager.transport=ipc`): with TCP the server picks
  five free ports per kernel and lets them go before the kernel binds them, and under a full
  parallel run another process took one in between (the kernel died with "Address already in
  use" and the notebook waited for it until the test timed out, in a CI run).
- "Canvas exists" is not "drawn": wait for the widget's own signal (8).

Fixtures: `lab` (session: the server), `browser` (session: one Chromium per test process),
`notebook` (function: writes a notebook from code cells into the lab root, opens it in the
process's one kept JupyterLab page (`_KeptPage`) with a kernel of its own, and returns a
`NotebookPage` driver).
Screenshots go to test-output/ui/<test name>/: those a test takes, and "final" when it fails
(of every test with NSDL_UI_FINAL_SHOTS=1).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Generator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]
NB = ".jp-NotebookPanel:not(.lm-mod-hidden)"
# one per test process: a server of another worker that got the same port refuses it
TOKEN = f"nsdl-ui-token-{os.getpid()}"
KERNELSPEC = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
TIMEOUT_MS = 120_000
# NSDL_UI_FINAL_SHOTS=1: a "final" screenshot of every test's page, not only a failed one's
FINAL_SHOTS = os.environ.get("NSDL_UI_FINAL_SHOTS", "") not in ("", "0")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Lab:
    url: str
    root: Path
    process: subprocess.Popen[bytes]
    log: Path
    runtime: Path


def _start_lab(state: Path) -> Lab:
    root = state / "root"
    # short, because the kernels' Unix sockets live there (a socket path has at most 107 bytes)
    runtime = Path(tempfile.mkdtemp(prefix="nsdl-ui-"))
    for sub in ("root", "config", "data", "settings", "workspaces"):
        (state / sub).mkdir(parents=True, exist_ok=True)
    settings = state / "settings"
    (settings / "@jupyterlab/apputils-extension").mkdir(parents=True, exist_ok=True)
    (settings / "@jupyterlab/notebook-extension").mkdir(parents=True, exist_ok=True)
    (settings / "@jupyterlab/apputils-extension/notification.jupyterlab-settings").write_text(
        '{"fetchNews": "false", "checkForUpdates": false}'
    )
    (settings / "@jupyterlab/notebook-extension/tracker.jupyterlab-settings").write_text(
        '{"windowingMode": "none"}'
    )
    env = dict(os.environ)
    env.update(
        JUPYTER_CONFIG_DIR=str(state / "config"),
        JUPYTER_RUNTIME_DIR=str(runtime),
        JUPYTERLAB_SETTINGS_DIR=str(settings),
        JUPYTERLAB_WORKSPACES_DIR=str(state / "workspaces"),
        JUPYTER_PLATFORM_DIRS="1",
        PYTHONUNBUFFERED="1",
        PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH", "")])),
        # the kernelspec runs `python`: make it this interpreter, whatever PATH the run has
        PATH=os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")]),
    )
    # parallel test workers pick free ports at the same time: one taken between the pick and
    # the server's bind is replaced by a fresh one (port_retries=0 makes the server exit)
    for _attempt in range(5):
        lab = _start_lab_on(state, root, runtime, env, _free_port())
        if lab is not None:
            return lab
    shutil.rmtree(runtime, ignore_errors=True)
    raise RuntimeError("jupyter lab found no free port")


def _start_lab_on(
    state: Path, root: Path, runtime: Path, env: dict[str, str], port: int
) -> Lab | None:
    """The server on `port`, or None when that port was taken before it could bind."""
    jupyter = str(Path(sys.executable).with_name("jupyter"))
    args = [
        jupyter, "lab", "--no-browser",
        "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={TOKEN}", "--ServerApp.password=",
        f"--ServerApp.root_dir={root}", "--ServerApp.open_browser=False",
        "--LabApp.news_url=None", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        "--LabApp.extension_manager=readonly",
        # window.jupyterapp: lets the harness wait until the kernel session is really attached
        "--LabApp.expose_app_in_browser=True",
        "--KernelManager.transport=ipc",
    ]  # fmt: skip
    if os.geteuid() == 0:
        args.append("--allow-root")
    log = state / "lab.log"
    with log.open("wb") as out:
        # own session (PGID == PID): stopping it reaches the server and its kernels only
        process = subprocess.Popen(args, env=env, stdout=out, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    while True:
        if process.poll() is not None:
            if "already in use" in log.read_text():
                return None
            raise RuntimeError(f"jupyter lab exited: {log.read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(f"{url}/api/status?token={TOKEN}", timeout=2):
                break
        except OSError:
            if time.monotonic() > deadline:
                _stop_lab(process)
                raise RuntimeError(
                    f"jupyter lab not ready in 90 s: {log.read_text()[-2000:]}"
                ) from None
            time.sleep(0.5)
    return Lab(url=url, root=root, process=process, log=log, runtime=runtime)


def _stop_lab(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=15)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=10)


def _bundle_missing() -> str | None:
    bundle = REPO / "nsdl_jupyter" / "static" / "graph_view.js"
    if not bundle.exists():
        return f"{bundle} is missing: run `npm ci && npm run build` in js/ (or `pip install -e .`)"
    return None


@pytest.fixture(scope="session")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Generator[Lab, None, None]:
    if not Path(CHROMIUM).exists():
        pytest.skip(f"UI tests need Chromium at {CHROMIUM}: apt-get install -y chromium")
    missing = _bundle_missing()
    if missing:
        pytest.fail(missing)
    server = _start_lab(tmp_path_factory.mktemp("lab"))
    yield server
    _stop_lab(server.process)
    shutil.rmtree(server.runtime, ignore_errors=True)


class _Chromium:
    """The browser, started on a process's first browser test and stopped at its end.

    Playwright's sync API runs its asyncio loop in a greenlet of the main thread, so while it
    is started that loop is marked running in the thread: a test after a browser test that
    calls asyncio.run() or looks for the kernel's loop (the type-check runner) would find
    Playwright's. So the mark is parked (`park`, after each browser test whose successor
    uses no browser) and put back before Playwright is used again (`get`): the other tests
    of the process see no running loop, and the browser tests mix freely with them on every
    pytest-xdist worker (tests/ui/test_harness_ui.py checks it)."""

    def __init__(self) -> None:
        self._playwright: Any = None
        self._instance: Any = None
        self._parked: asyncio.AbstractEventLoop | None = None

    def get(self) -> Any:
        self._unpark()
        if self._instance is None:
            playwright_api = pytest.importorskip("playwright.sync_api")
            self._playwright = playwright_api.sync_playwright().start()
            self._instance = self._playwright.chromium.launch(
                executable_path=CHROMIUM, args=CHROMIUM_FLAGS, headless=True, timeout=60_000
            )
        return self._instance

    def park(self) -> None:
        """Hide Playwright's loop from the thread until the next `get`."""
        loop = asyncio.events._get_running_loop()
        if self._playwright is not None and loop is not None and self._parked is None:
            self._parked = loop
            asyncio.events._set_running_loop(None)

    def _unpark(self) -> None:
        if self._parked is not None:
            other = asyncio.events._get_running_loop()
            assert other is None, f"a loop is running where Playwright's was parked: {other}"
            asyncio.events._set_running_loop(self._parked)
            self._parked = None

    def stop(self) -> None:
        self._unpark()
        instance, playwright = self._instance, self._playwright
        self._instance = self._playwright = None
        try:
            if instance is not None:
                instance.close()
        finally:
            if playwright is not None:
                playwright.stop()


_CHROMIUM = _Chromium()


@pytest.fixture(scope="session")
def chromium() -> Generator[_Chromium, None, None]:
    yield _CHROMIUM
    _CHROMIUM.stop()  # closes the kept page's context with the browser
    _KEPT.context = _KEPT.page = None


@pytest.fixture
def browser(lab: Lab, chromium: _Chromium) -> Any:
    return chromium.get()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(
    item: pytest.Item, nextitem: pytest.Item | None
) -> Generator[None, None, None]:
    yield  # the test's own fixtures (its pages and contexts) are closed first
    if nextitem is None or "browser" not in getattr(nextitem, "fixturenames", ()):
        _CHROMIUM.park()


class NotebookPage:
    """Drives one notebook in its own browser page and JupyterLab workspace."""

    def __init__(self, page: Any, lab: Lab, name: str, shots: Path) -> None:
        self.page = page
        self.lab = lab
        self.name = name
        self.shots = shots
        self.console_errors: list[str] = []
        self._queued = False  # cells were seen queued since the last `wait_idle`
        page.on("console", self._on_console)

    def _on_console(self, message: Any) -> None:
        if message.type == "error":
            self.console_errors.append(message.text[:300])

    def detach(self) -> None:
        """Stop collecting the page's console errors (the page goes on to the next test)."""
        self.page.remove_listener("console", self._on_console)

    # ------------------------------------------------------------------ opening and running
    def open(self) -> None:
        """Load JupyterLab in this page, in a fresh workspace, with the notebook open."""
        workspace = f"ui{int(time.time() * 1000)}"
        self.page.goto(
            f"{self.lab.url}/lab/workspaces/{workspace}/tree/{self.name}?token={TOKEN}",
            wait_until="domcontentloaded",
            timeout=TIMEOUT_MS,
        )
        self._wait_ready()

    def open_in_place(self) -> None:
        """Open the notebook in the JupyterLab this page has loaded already (`_KeptPage`)."""
        self.page.evaluate(
            "async (path) => { await window.jupyterapp.commands.execute("
            "'docmanager:open', {path, factory: 'Notebook'}); }",
            self.name,
        )
        self._wait_ready()
        # the launcher JupyterLab opened when the last test's tabs closed
        self.page.evaluate(_CLOSE_OTHER_TABS)

    def _wait_ready(self) -> None:
        self.page.locator(
            ".lm-DockPanel-tabBar .lm-TabBar-tab.lm-mod-current", has_text=self.name
        ).first.wait_for(timeout=TIMEOUT_MS)
        self.page.wait_for_selector(f"{NB} .jp-Notebook .jp-Cell", timeout=TIMEOUT_MS)
        self.page.wait_for_selector(f'{NB} .jp-Notebook-ExecutionIndicator[data-status="idle"]',
                                    timeout=TIMEOUT_MS)  # fmt: skip
        # "idle" shows before the session is attached; a Run All sent then is dropped and a
        # "Select Kernel" dialog pops up later, swallowing clicks. Wait for the real thing.
        self.page.wait_for_function(
            """() => { const sc = window.jupyterapp?.shell.currentWidget?.sessionContext;
                 const k = sc?.session?.kernel;
                 return !!(sc && sc.isReady && k && k.connectionStatus === 'connected'
                           && k.status === 'idle'); }""",
            timeout=TIMEOUT_MS,
            polling=100,
        )
        self.page.wait_for_timeout(500)  # the notebook may re-render once after the kernel connects
        self.dismiss_kernel_dialog()

    def dismiss_kernel_dialog(self) -> None:
        """Close a stray "Select Kernel" dialog, keeping the running kernel (Escape = cancel)."""
        dialog = self.page.locator(".jp-Dialog", has_text="Select Kernel")
        if dialog.count():
            self.page.keyboard.press("Escape")
            self.page.wait_for_timeout(300)

    def menu(self, label: str, commands: Sequence[str]) -> None:
        self.page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(rf"^{label}$")).first.click(
            timeout=10_000
        )
        selector = ", ".join(f'.lm-Menu-item[data-command="{c}"]' for c in commands)
        self.page.locator(selector).first.click(timeout=10_000)

    _BUSY = f"""() => [...document.querySelectorAll('{NB} .jp-CodeCell .jp-InputPrompt')]
                .some(p => p.textContent.includes('*'))"""

    def wait_idle(self, timeout_ms: int = TIMEOUT_MS) -> None:
        if not self._queued:  # quick cells may be done before we look
            with contextlib.suppress(Exception):
                self.page.wait_for_function(self._BUSY, timeout=3_000, polling=50)
        self._queued = False
        self._wait_done(timeout_ms)

    def _wait_done(self, timeout_ms: int) -> None:
        """Wait until no cell shows [*] and the kernel is idle (the cells were seen queued)."""
        self.page.wait_for_function(f"() => !({self._BUSY})()", timeout=timeout_ms, polling=100)
        self.page.wait_for_selector(f'{NB} .jp-Notebook-ExecutionIndicator[data-status="idle"]',
                                    timeout=timeout_ms)  # fmt: skip

    def run_all(self, tries: int = 3) -> None:
        """Run ▸ Run All Cells, checked: right after load the command can be dropped (the kernel
        is "idle" before its session is fully attached), so retry until cell 0 is queued."""
        for _ in range(tries):
            self.menu("Run", ["runmenu:run-all", "notebook:run-all-cells"])
            self.page.wait_for_timeout(300)
            self.dismiss_kernel_dialog()
            try:
                self.page.wait_for_function(
                    "(e) => /\\*|\\d/.test(e.querySelector('.jp-InputPrompt').textContent)",
                    arg=self.cell(0).element_handle(),
                    timeout=8_000,
                    polling=50,
                )
                # Run All queues every cell at once: no need to wait for a [*] (`wait_idle`)
                self._queued = True
                return
            except Exception:
                continue
        raise RuntimeError("Run All did not start the notebook")

    def cell(self, index: int) -> Any:
        return self.page.locator(f"{NB} .jp-Notebook .jp-Cell").nth(index)

    def run_cell(self, index: int) -> str:
        """Run cell `index` in place, wait for the kernel, return the cell's output text."""
        for attempt in range(4):
            try:
                self._queue_cell(index)
                break
            except Exception as error:  # re-rendered right after load: retry with a fresh locator
                if "not attached" not in str(error) or attempt == 3:
                    raise
                self.page.wait_for_timeout(500)
        # the cell was seen queued or done: no need to wait for it to show [*] (`wait_idle`)
        self._wait_done(TIMEOUT_MS)
        return self.output(index)

    def _queue_cell(self, index: int) -> None:
        cell = self.cell(index)
        before = cell.locator(".jp-InputPrompt").first.inner_text(timeout=5_000).strip()
        for attempt in range(3):
            # a widget output above may grow between the click's aim and the click (a status
            # line after Save): the click then lands on another cell, so aim again
            cell.scroll_into_view_if_needed(timeout=TIMEOUT_MS)
            cell.locator(".jp-InputPrompt").first.click(timeout=TIMEOUT_MS)
            try:
                self.page.wait_for_function(
                    "e => e.classList.contains('jp-mod-active')",
                    arg=cell.element_handle(),
                    timeout=TIMEOUT_MS // 4,
                )
                break
            except Exception:
                if attempt == 2:
                    raise
        for attempt in range(2):
            if attempt == 0:
                self.page.keyboard.press("Control+Enter")
            else:
                self.menu("Run", ["notebook:run-cell", "runmenu:run"])
            try:
                self.page.wait_for_function(
                    "([e, b]) => { const t = e.querySelector('.jp-InputPrompt').textContent.trim();"
                    " return t.includes('*') || (t !== b && /\\d/.test(t)); }",
                    arg=[cell.element_handle(), before],
                    timeout=5_000,
                    polling=20,
                )
                return
            except Exception:
                continue
        raise RuntimeError(f"cell {index} did not start executing")

    def output(self, index: int) -> str:
        return str(
            # the cell's own output area: widgets in it (ipywidgets Output) hold more of them
            self.cell(index).locator(".jp-Cell-outputArea").inner_text(timeout=TIMEOUT_MS)
        ).strip()

    def error_outputs(self) -> list[str]:
        return list(
            self.page.eval_on_selector_all(
                f'{NB} .jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"], '
                f'{NB} .jp-OutputArea-output[data-mime-type="application/vnd.jupyter.error"]',
                "els => els.map(e => e.innerText.slice(0, 800))",
            )
        )

    # ------------------------------------------------------------------ waiting and looking
    def wait_for(self, selector: str, timeout_ms: int = TIMEOUT_MS) -> Any:
        locator = self.page.locator(f"{NB} {selector}").first
        locator.wait_for(state="visible", timeout=timeout_ms)
        return locator

    def two_frames(self) -> None:
        self.page.evaluate(
            "() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))"
        )

    def screenshot(self, name: str, selector: str | None = None) -> Path:
        path = self.shots / f"{name}.png"
        if selector is None:
            self.page.screenshot(path=str(path))
        else:
            self.page.locator(f"{NB} {selector}").first.screenshot(
                path=str(path), timeout=TIMEOUT_MS
            )
        return path


def _shut_kernels_down(lab: Lab) -> None:
    """Shut down the kernels of the server's sessions now, in the background: a kernel takes
    seconds to exit, which the next test need not wait for (its own kernel is a new one)."""
    with urllib.request.urlopen(f"{lab.url}/api/sessions?token={TOKEN}", timeout=30) as answer:
        ids = [session["id"] for session in json.load(answer)]

    def delete() -> None:
        for session in ids:
            request = urllib.request.Request(
                f"{lab.url}/api/sessions/{session}?token={TOKEN}", method="DELETE"
            )
            with contextlib.suppress(OSError), urllib.request.urlopen(request, timeout=60):
                pass

    if ids:
        threading.Thread(target=delete, name="nsdl-ui-kernel-shutdown", daemon=True).start()


# Every tab of the main area but the current notebook's.
_CLOSE_OTHER_TABS = """() => { const shell = window.jupyterapp.shell;
  for (const w of Array.from(shell.widgets('main')))
    if (w !== shell.currentWidget) w.dispose(); }"""
# A test's tabs closed without asking (their changes are not kept: the notebook files are the
# test's), the page scrolled back, the focus dropped and the side areas as they were at load.
_RESET_PAGE = """([left, right]) => { const shell = window.jupyterapp.shell;
  for (const w of Array.from(shell.widgets('main'))) {
    if (w.context) w.context.model.dirty = false;
    w.dispose();
  }
  if (left) shell.activateById(left); else shell.collapseLeft();
  if (right) shell.activateById(right); else shell.collapseRight();
  for (const e of [document.scrollingElement, document.body,
                   ...document.querySelectorAll('#main, #main > *, .lm-DockPanel')]) {
    if (e) { e.scrollTop = 0; e.scrollLeft = 0; }
  }
  document.activeElement?.blur?.();
}"""
# The side areas' open panels (null: collapsed), to put them back after each test.
_SIDE_AREAS = """() => ['left', 'right'].map(side => {
  const tab = document.querySelector(
    `.jp-SideBar.jp-mod-${side} .lm-TabBar-tab.lm-mod-current`);
  return tab ? tab.dataset.id : null; })"""


class _KeptPage:
    """One JupyterLab page per test process, kept loaded from one browser test to the next.

    Loading JupyterLab (its bundles, the workspace, the extensions) costs Chromium and the
    server several CPU seconds, more than most tests spend on their own work. So the first
    browser test loads it as before (a fresh workspace, the notebook in the URL); each later
    one opens its notebook in place (`docmanager:open`) after the previous test's tabs were
    closed, its kernels shut down, its dialogs dismissed and the side areas, scroll and
    focus put back as they were after the first load; the viewport is set to the test's
    size. A test that failed leaves its page behind: the next one loads a fresh page.
    `notebook(..., fresh_page=True)` gives a test a page of its own, loaded for it."""

    def __init__(self) -> None:
        self.context: Any = None
        self.page: Any = None
        self.sides: list[str | None] = [None, None]

    def take(self, browser: Any, width: int, height: int) -> tuple[Any, bool]:
        """The kept page at width x height, and whether JupyterLab still has to be loaded."""
        if self.page is not None and not self.page.is_closed():
            self.page.set_viewport_size({"width": width, "height": height})
            return self.page, False
        self.drop()
        self.context = browser.new_context(viewport={"width": width, "height": height})
        self.page = self.context.new_page()
        return self.page, True

    def loaded(self) -> None:
        self.sides = list(self.page.evaluate(_SIDE_AREAS))

    def reset(self) -> bool:
        """Close the finished test's tabs, dismiss its dialogs, release its keys; False when
        the page does not answer."""
        page = self.page
        try:
            page.evaluate(_RESET_PAGE, self.sides)
            for key in ("Shift", "Control", "Alt", "Meta"):  # held by a test: key-up to the body
                page.keyboard.up(key)
            for _ in range(5):  # "Save your work?" and the like: Escape answers "cancel"
                if not page.locator(".jp-Dialog").count():
                    return True
                page.keyboard.press("Escape")
                page.wait_for_timeout(100)
            return not page.locator(".jp-Dialog").count()
        except Exception:
            return False

    def drop(self) -> None:
        context, self.context, self.page = self.context, None, None
        if context is not None:
            with contextlib.suppress(Exception):
                context.close()


_KEPT = _KeptPage()


def write_notebook(path: Path, cells: Sequence[str]) -> None:
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = KERNELSPEC
    nb.cells = [nbformat.v4.new_code_cell(source) for source in cells]
    path.write_text(json.dumps(nb, indent=1))


@pytest.fixture
def notebook(lab: Lab, browser: Any, request: pytest.FixtureRequest) -> Generator[Any, None, None]:
    """`notebook(cells, width=1400, height=1000, fresh_page=False) -> NotebookPage`: writes
    the cells as a notebook and opens it in the process's kept JupyterLab page (`_KeptPage`),
    or, with `fresh_page=True` (and for a test's second notebook), in a page loaded for it."""
    shots = REPO / "test-output" / "ui" / re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.name)
    shutil.rmtree(shots, ignore_errors=True)
    shots.mkdir(parents=True)
    contexts: list[Any] = []
    pages: list[NotebookPage] = []
    kept: list[NotebookPage] = []

    def open_notebook(
        cells: Sequence[str], width: int = 1400, height: int = 1000, fresh_page: bool = False
    ) -> NotebookPage:
        name = f"{request.node.name.replace('[', '_').replace(']', '')}_{len(pages)}.ipynb"
        write_notebook(lab.root / name, cells)
        if fresh_page or kept:
            context = browser.new_context(viewport={"width": width, "height": height})
            contexts.append(context)
            driver = NotebookPage(context.new_page(), lab, name, shots)
            pages.append(driver)
            driver.open()
            return driver
        page, load = _KEPT.take(browser, width, height)
        driver = NotebookPage(page, lab, name, shots)
        pages.append(driver)
        kept.append(driver)
        if load:
            driver.open()
            _KEPT.loaded()
        else:
            driver.open_in_place()
        return driver

    yield open_notebook
    failed = _failed(request.node)
    for driver in pages:
        if failed or FINAL_SHOTS:
            with contextlib.suppress(Exception):
                driver.screenshot("final")
        driver.detach()
    for context in contexts:
        context.close()
    # a failed test may have left its page in any state: the next one loads a fresh page
    if kept and (failed or not _KEPT.reset()):  # its tabs closed first: none sees its kernel go
        _KEPT.drop()
    _shut_kernels_down(lab)  # the test's kernels: they would pile up over a run


_CALL_FAILED = pytest.StashKey[bool]()


def _failed(item: pytest.Item) -> bool:
    return item.stash.get(_CALL_FAILED, False)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.failed:  # the set-up or the test itself; read by `notebook`'s teardown
        item.stash[_CALL_FAILED] = True
    return report
