"""State of the TypeCheckPanel: the document's checks, refreshed after edits.

Checks are debounced (a burst of edits gives one check). Small models are checked on the
kernel's thread; for big ones a worker thread reads the model without changing it (a check
that overlapped an edit is thrown away and redone), a child process runs onnx's checks (they
hold the GIL), and the result is applied on the kernel's event loop, so widgets are only
touched from the thread that owns them. Node names
in the diagnostics are the names the views use (generated names included).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import concurrent.futures.process
import multiprocessing
import signal
import threading
from collections.abc import Callable

import onnx

from nsdl_jupyter.document import ChangeEvent, Diagnostic, ModelDocument, check_proto

BACKGROUND_NODES = 2000
DEBOUNCE_S = 0.4

ResultListener = Callable[[list[Diagnostic]], None]


def marks_of(diagnostics: list[Diagnostic]) -> dict[str, str]:
    """``{node: "error" | "warning"}`` for the graph's problem icons (errors win)."""
    marks: dict[str, str] = {}
    for diagnostic in diagnostics:
        if diagnostic.node is None or diagnostic.severity not in ("error", "warning"):
            continue
        if marks.get(diagnostic.node) != "error":
            marks[diagnostic.node] = diagnostic.severity
    return marks


def summary_of(diagnostics: list[Diagnostic]) -> str:
    errors = sum(1 for d in diagnostics if d.severity == "error")
    warnings = sum(1 for d in diagnostics if d.severity == "warning")
    if not errors and not warnings:
        return "no problems found"
    parts = []
    if errors:
        parts.append(f"{errors} error{'s' * (errors != 1)}")
    if warnings:
        parts.append(f"{warnings} warning{'s' * (warnings != 1)}")
    return ", ".join(parts)


def diagnostic_label(diagnostic: Diagnostic) -> str:
    icon = {"error": "✖", "warning": "⚠"}.get(diagnostic.severity, "\u2139")
    where = diagnostic.node or "model"
    return f"{icon} {where}: {diagnostic.message}"


# onnx's checker and shape inference hold the GIL for their whole run (0.5 s on a 20,000-node
# model), which would freeze the kernel even from a worker thread: big models are checked in
# one child process (spawned once, reused), which also keeps a crash in onnx away from the kernel.
_CHILD: dict[str, concurrent.futures.ProcessPoolExecutor] = {}
_CHILD_LOCK = threading.Lock()


def _child_pool() -> concurrent.futures.ProcessPoolExecutor:
    with _CHILD_LOCK:
        pool = _CHILD.get("pool")
        if pool is None:
            pool = _CHILD["pool"] = concurrent.futures.ProcessPoolExecutor(
                max_workers=1,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=_ignore_interrupts,
            )
        return pool


def _ignore_interrupts() -> None:
    """In the child: interrupting the kernel (its process group gets SIGINT) is not for us."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _check_serialized(data: bytes) -> list[Diagnostic]:
    """In the child process: the checks of a serialized snapshot."""
    return check_proto(onnx.ModelProto.FromString(data))


def check_in_child(proto: onnx.ModelProto) -> list[Diagnostic]:
    """`check_proto` in the child process; on this thread if no child can run."""
    data = proto.SerializeToString()
    try:
        return _child_pool().submit(_check_serialized, data).result()
    except concurrent.futures.process.BrokenProcessPool:
        with _CHILD_LOCK:
            _CHILD.pop("pool", None)  # a new child next time
        return check_proto(proto)


class TypeCheckRunner:
    """Runs the document's checks after edits and hands the diagnostics to `on_result`."""

    def __init__(
        self,
        doc: ModelDocument,
        on_result: ResultListener,
        *,
        delay: float = DEBOUNCE_S,
        background_nodes: int = BACKGROUND_NODES,
        on_start: Callable[[], None] | None = None,
        auto: bool = True,
    ) -> None:
        self.doc = doc
        self.delay = delay
        self.background_nodes = background_nodes
        self.diagnostics: list[Diagnostic] = []
        self.checks = 0
        self._on_result = on_result
        self._on_start = on_start
        self._version = 0
        self._lock = threading.Lock()
        self._loop = _kernel_loop()
        self._handle: asyncio.TimerHandle | threading.Timer | None = None
        self._executor: concurrent.futures.ThreadPoolExecutor | None = None
        self._running: concurrent.futures.Future[None] | None = None
        self._unsubscribe = doc.subscribe(self._on_change) if auto else None

    # ------------------------------------------------------------------ scheduling
    def _on_change(self, event: ChangeEvent) -> None:
        if event.source == "save":
            return
        self.schedule()

    def schedule(self) -> None:
        """Check after `delay` seconds without further edits, wherever the edit came from:
        the kernel's thread (a cell, a pane, the canvas) or another (a subshell, a worker)."""
        with self._lock:
            self._version += 1
            version = self._version
            self._cancel_timer()
            loop = self._loop
            if loop is None:
                timer = threading.Timer(self.delay, self._start)
                timer.daemon = True
                self._handle = timer
                timer.start()
                return
            if _kernel_loop() is loop:
                self._handle = loop.call_later(self.delay, self._start)
                return
        # call_later is not thread-safe: from another thread it neither wakes the loop nor
        # is sure to be seen, so the check waited for the next cell (issue 25). Arm it on
        # the loop's own thread instead.
        if not loop.is_closed():
            loop.call_soon_threadsafe(self._arm, version)

    def _arm(self, version: int) -> None:
        """On the loop's thread: start the debounce timer of edit `version`, unless a later
        edit has armed its own."""
        with self._lock:
            if version != self._version or self._loop is None:
                return
            self._cancel_timer()
            self._handle = self._loop.call_later(self.delay, self._start)

    def _cancel_timer(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def run_now(self) -> list[Diagnostic]:
        """Check at once on this thread (what the "check now" button does for small models)."""
        with self._lock:
            self._cancel_timer()
            self._version += 1
        result = self._checked(self._check_here)
        self._deliver(result)
        return result

    def _check_here(self) -> list[Diagnostic]:
        return check_proto(self.doc.check_snapshot())

    def _start(self) -> None:
        with self._lock:
            self._handle = None
            version = self._version
        if self._on_start is not None:
            self._on_start()
        if len(self.doc.graph) < self.background_nodes and self._loop is not None:
            self._deliver(self._checked(self._check_here))
            return
        if self._executor is None:
            self._executor = concurrent.futures.ThreadPoolExecutor(1, "nsdl-type-check")
        self._running = self._executor.submit(self._background, version)

    def _background(self, version: int) -> None:
        try:
            result = check_in_child(self.doc.check_snapshot())
        except Exception as error:  # may be a read that overlapped an edit: judged below
            result = [Diagnostic("error", None, f"type check failed: {error}")]
        with self._lock:
            stale = version != self._version
        if stale:
            return  # an edit came in meanwhile; its own check is already scheduled
        if self._loop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._deliver_if_current, version, result)
        else:
            self._deliver_if_current(version, result)

    def _deliver_if_current(self, version: int, result: list[Diagnostic]) -> None:
        with self._lock:
            if version != self._version:
                return
        self._deliver(result)

    def _checked(self, check: Callable[[], list[Diagnostic]]) -> list[Diagnostic]:
        try:
            return check()
        except Exception as error:
            return [Diagnostic("error", None, f"type check failed: {error}")]

    def _deliver(self, result: list[Diagnostic]) -> None:
        self.diagnostics = result
        self.checks += 1
        self._on_result(result)

    # ------------------------------------------------------------------ lifecycle
    def wait(self, timeout: float = 60.0) -> None:
        """Block until the scheduled check (if any) has run: for scripts and tests without a
        running event loop."""
        handle = self._handle
        if isinstance(handle, threading.Timer):
            handle.join(timeout)
        running = self._running
        if running is not None:
            running.result(timeout)

    @property
    def pending(self) -> bool:
        running = self._running
        return self._handle is not None or (running is not None and not running.done())

    def close(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        with self._lock:
            self._cancel_timer()
            self._version += 1
        if self._executor is not None:
            self._executor.shutdown(wait=False, cancel_futures=True)
            self._executor = None


def _kernel_loop() -> asyncio.AbstractEventLoop | None:
    """The running event loop of this thread (the kernel's, in a notebook), else None."""
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None
