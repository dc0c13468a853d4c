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
import onnx_ir as ir

from nsdl_jupyter.document import ChangeEvent, Diagnostic, ModelDocument

BACKGROUND_NODES = 2000
_WEIGHT_BYTES = 4096  # as nsdl_jupyter.document's check: bigger initializers become inputs
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


def snapshot(model: ir.Model) -> onnx.ModelProto:
    """The model as a proto for checking, built without changing the model.

    Safe off the kernel's thread (it only reads). As in the document's own check, big
    initializers become typed graph inputs: checking needs their types, not their bytes, and
    external weights are never read.
    """
    graph = model.graph
    small: list[ir.Value] = []
    big: list[ir.Value] = []
    for value in graph.initializers.values():
        tensor = value.const_value
        (small if tensor is not None and tensor.nbytes <= _WEIGHT_BYTES else big).append(value)
    inputs = [*graph.inputs, *(v for v in big if not v.is_graph_input())]
    view = ir.GraphView(
        inputs,
        graph.outputs,
        nodes=list(graph),
        initializers=small,
        opset_imports=dict(graph.opset_imports),
        name=graph.name,
    )
    proto = onnx.ModelProto(ir_version=model.ir_version)
    for domain, version in graph.opset_imports.items():
        proto.opset_import.add(domain=domain, version=version)
    # onnx_ir's GraphView serializes fine but its typing does not match GraphViewProtocol
    ir.serde.serialize_graph_into(proto.graph, view, model_ir_version=model.ir_version)  # type: ignore[arg-type]
    for function in model.functions.values():
        ir.serde.serialize_function_into(proto.functions.add(), from_=function)
    return proto


def check_snapshot(proto: onnx.ModelProto) -> list[Diagnostic]:
    """The document's checks (ONNX checker per node, then strict shape inference) on a proto.

    Unlike a plain checker run, a node so broken that even lenient inference stops (a missing
    required input) is reported on that node instead of failing the whole check.
    """
    # Shim: nsdl_jupyter.document checks an ir.Model; these are its proto-level steps, used
    # here so that a worker thread never needs the live model beyond reading it.
    from nsdl_jupyter.document import _check

    _topological(proto.graph)
    try:
        inferred = onnx.shape_inference.infer_shapes(proto)
    except (onnx.shape_inference.InferenceError, onnx.checker.ValidationError) as error:
        message = _check._first_line(str(error))
        node = _check._node_named_in(message, proto)
        found: list[Diagnostic] = _check._node_diagnostics(proto)
        if not any(d.node == node for d in found):
            found.append(Diagnostic("error", node, message, "shape_inference"))
        return found
    diagnostics: list[Diagnostic] = _check._checker_diagnostics(inferred)
    if any(d.severity == "error" for d in diagnostics):
        return diagnostics
    return diagnostics + _check._inference_diagnostics(inferred)


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
    return check_snapshot(onnx.ModelProto.FromString(data))


def check_in_child(proto: onnx.ModelProto) -> list[Diagnostic]:
    """`check_snapshot` in the child process; on this thread if no child can run."""
    data = proto.SerializeToString()
    try:
        return _child_pool().submit(_check_serialized, data).result()
    except concurrent.futures.process.BrokenProcessPool:
        with _CHILD_LOCK:
            _CHILD.pop("pool", None)  # a new child next time
        return check_snapshot(proto)


def _topological(graph: onnx.GraphProto) -> None:
    """Order nodes so each comes after its producers (ONNX requires it; edits may not keep it)."""
    available = {i.name for i in graph.input} | {i.name for i in graph.initializer} | {""}
    produced_by: dict[str, int] = {}
    for index, node in enumerate(graph.node):
        for name in node.output:
            produced_by[name] = index
    seen = set(available)
    in_order = True
    for node in graph.node:
        if any(name not in seen and name in produced_by for name in node.input):
            in_order = False
            break
        seen.update(node.output)
    if in_order:
        return
    nodes = list(graph.node)
    waiting = [
        {produced_by[n] for n in node.input if n in produced_by and n not in available}
        for node in nodes
    ]
    users: dict[int, list[int]] = {}
    for index, needs in enumerate(waiting):
        for producer in needs:
            users.setdefault(producer, []).append(index)
    ready = [i for i, needs in enumerate(waiting) if not needs]
    order: list[int] = []
    while ready:
        current = ready.pop(0)
        order.append(current)
        for user in users.get(current, ()):
            waiting[user].discard(current)
            if not waiting[user]:
                ready.append(user)
    order += [i for i in range(len(nodes)) if i not in set(order)]  # cycles: keep the rest
    copies = [onnx.NodeProto() for _ in nodes]
    for copy, index in zip(copies, order, strict=True):
        copy.CopyFrom(nodes[index])
    del graph.node[:]
    graph.node.extend(copies)


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
        """Check after `delay` seconds without further edits."""
        with self._lock:
            self._version += 1
            self._cancel_timer()
            if self._loop is not None:
                self._handle = self._loop.call_later(self.delay, self._start)
            else:
                timer = threading.Timer(self.delay, self._start)
                timer.daemon = True
                self._handle = timer
                timer.start()

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
        return check_snapshot(snapshot(self.doc.model))

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
            result = check_in_child(snapshot(self.doc.model))
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
