"""Run a function in a fresh child process, so a runtime crash, hang or OOM spares the kernel.

onnxruntime and onnx's reference evaluator run native code on model data the user did not
write: a segfault or a runaway allocation there must end one child, never the notebook. Any
layer may use this (transforms fold constants and validate FP16 results through it).

The function and its arguments are pickled to a spawned interpreter (not forked: the kernel
has threads and an event loop), its address space is capped with RLIMIT_AS where the OS
allows, and the result or the exception comes back through a pipe.
"""

from __future__ import annotations

import contextlib
import importlib
import multiprocessing
import multiprocessing.connection
import multiprocessing.process
import signal
import sys
import threading
import traceback
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from nsdl_jupyter._errors import NsdlError

_T = TypeVar("_T")

DEFAULT_MEMORY_LIMIT = 8 * 2**30


_HIDE_LOCK = threading.Lock()


class IsolatedRunError(NsdlError, RuntimeError):
    """The child process died (signal, exit, out of memory) or ran past its time limit."""

    def __init__(self, message: str, *, crashed: bool = False, timed_out: bool = False) -> None:
        super().__init__(message)
        self.crashed = crashed
        self.timed_out = timed_out


class ChildRaisedError(NsdlError, RuntimeError):
    """The function raised in the child; `kind` is the exception's type name."""

    def __init__(self, kind: str, message: str, child_traceback: str) -> None:
        super().__init__(f"{kind}: {message}")
        self.kind = kind
        self.child_traceback = child_traceback


def run_isolated(
    function: Callable[..., _T],
    *args: Any,
    timeout: float | None = None,
    memory_limit: int | None = DEFAULT_MEMORY_LIMIT,
) -> _T:
    """`function(*args)` in a spawned child process; its return value must be picklable.

    `function` must be importable by name (a module-level function). Raises
    `ChildRaisedError` when the function raised, `IsolatedRunError` when the child died or
    ran longer than `timeout` seconds (it is then killed). `memory_limit` caps the child's
    address space in bytes (None: no cap); an allocation past it fails in the child.
    """
    with IsolatedWorker(memory_limit=memory_limit) as worker:
        return worker.call(function, *args, timeout=timeout)


class IsolatedWorker:
    """One spawned child that runs calls one after another, so a job of many small calls
    pays for the spawn and the imports once. The child starts on the first call; a crash,
    an out-of-memory death or a timeout ends it and the next call starts a fresh one.

        with IsolatedWorker(memory_limit=2**31) as worker:
            a = worker.call(evaluate, batch_a)
            b = worker.call(evaluate, batch_b)
    """

    def __init__(
        self, *, memory_limit: int | None = DEFAULT_MEMORY_LIMIT, preload: tuple[str, ...] = ()
    ) -> None:
        """`preload`: modules the child imports as soon as it starts (while the parent works
        on, before the first call needs them)."""
        self.memory_limit = memory_limit
        self.preload = preload
        self.starts = 0  # children spawned so far (a crash costs one more)
        self._process: multiprocessing.process.BaseProcess | None = None
        self._connection: multiprocessing.connection.Connection | None = None

    def __enter__(self) -> IsolatedWorker:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def call(self, function: Callable[..., _T], *args: Any, timeout: float | None = None) -> _T:
        """`function(*args)` in the child; raises like `run_isolated`."""
        connection = self.start()
        try:
            connection.send((function, args))
            if not connection.poll(timeout):
                self.close()
                raise IsolatedRunError(
                    f"{_name(function)} ran past its {timeout:g} s limit and was stopped",
                    timed_out=True,
                )
            ok, payload = connection.recv()
        except (EOFError, OSError):
            process = self._process
            self.close()
            code = process.exitcode if process is not None else None
            raise IsolatedRunError(
                f"{_name(function)} crashed its child process ({_exit_text(code)})",
                crashed=True,
            ) from None
        if ok:
            return payload  # type: ignore[no-any-return]
        kind, message, child_traceback = payload
        raise ChildRaisedError(kind, message, child_traceback)

    def raise_memory_limit(self, limit: int) -> None:
        """Let the child use up to `limit` bytes of address space: the running one raises
        its own cap (no new spawn), a later one starts with it. A lower limit is ignored."""
        if self.memory_limit is None or limit <= self.memory_limit:
            return
        self.memory_limit = limit
        if self._connection is not None:
            try:
                self.call(_limit_memory, limit, timeout=60)
            except (IsolatedRunError, ChildRaisedError):
                self.close()  # the next call starts a child with the new cap

    def close(self) -> None:
        """End the child (if any); a later call starts a new one."""
        connection, process = self._connection, self._process
        self._connection = self._process = None
        if connection is not None:
            connection.close()
        if process is not None:
            # Between calls the child holds nothing worth a clean exit, and a runtime's
            # teardown (thread pools, arenas) can take a second: kill it.
            process.kill()
            process.join(5)

    def start(self) -> multiprocessing.connection.Connection:
        """Spawn the child now (it imports in the background); calls start it anyway."""
        if self._connection is not None:
            return self._connection
        context = multiprocessing.get_context("spawn")
        here, there = context.Pipe(duplex=True)
        process = context.Process(
            target=_child_main, args=(there, self.memory_limit, self.preload), daemon=True
        )
        with _main_script_hidden():
            process.start()
        there.close()
        self._process, self._connection = process, here
        self.starts += 1
        return here


def _child_main(
    connection: multiprocessing.connection.Connection,
    memory_limit: int | None,
    preload: tuple[str, ...],
) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # interrupting the kernel is not for us
    if memory_limit is not None:
        _limit_memory(memory_limit)
    for module in preload:
        with contextlib.suppress(Exception):  # a call that needs it will say what is wrong
            importlib.import_module(module)
    while True:
        try:
            request = connection.recv()
        except EOFError:  # the parent went away
            break
        function, args = request
        try:
            result = (True, function(*args))
        except BaseException as error:  # everything goes back to the parent as data
            result = (False, (type(error).__name__, str(error), traceback.format_exc()))
        try:
            connection.send(result)
        except Exception as error:  # an unpicklable result
            connection.send((False, (type(error).__name__, str(error), traceback.format_exc())))
        del request, function, args, result  # free the arguments before waiting again
    connection.close()


def _limit_memory(limit: int) -> None:
    try:
        import resource
    except ImportError:  # not on Windows
        return
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


def _exit_text(code: int | None) -> str:
    if code is None:
        return "still running"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


def _name(function: Callable[..., Any]) -> str:
    return getattr(function, "__qualname__", repr(function))


@contextlib.contextmanager
def _main_script_hidden() -> Iterator[None]:
    """Start a spawned child without it importing the parent's `__main__` again.

    spawn re-imports the main script in the child (so functions defined there resolve); ours
    all live in nsdl_jupyter, and a user's script without `if __name__ == "__main__":` would
    run again in the child (and fail there). Hiding the script's path and spec while the child
    is prepared skips that; both are restored at once.
    """
    main = sys.modules.get("__main__")
    if main is None:
        yield
        return
    saved = {name: getattr(main, name) for name in ("__file__", "__spec__") if hasattr(main, name)}
    with _HIDE_LOCK:
        try:
            if "__file__" in saved:
                del main.__file__
            main.__spec__ = None
            yield
        finally:
            for name, value in saved.items():
                setattr(main, name, value)
            if "__spec__" not in saved:
                del main.__spec__
