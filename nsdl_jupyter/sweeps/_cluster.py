"""Where a sweep's tasks run, all of it Dask's: an embedded LocalCluster (one worker per local
GPU, one on a machine without a GPU), an in-process cluster that drives SSH targets (one
resource slot per target GPU, so two profiles never share a GPU), or the user's own
`distributed.Client`.

The embedded cluster's workers are threads of the kernel, not processes: each profile runs in
its own child process anyway (the runner isolates onnxruntime), so worker processes would
only add their start (each importing the package: seconds) and their close. It is started
once, on the first sweep, kept for the kernel's session (later sweeps reuse it) and closed
at exit, or by `close_sweep_cluster()`.
"""

from __future__ import annotations

import atexit
import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from nsdl_jupyter._errors import ArgumentError
from nsdl_jupyter.sweeps._errors import SweepError

# Dask's scheduler re-runs a task whose worker died at most this many times (then the task
# is marked failed); sweep() sets it to `retries` on the clusters it starts.
ALLOWED_FAILURES = "distributed.scheduler.allowed-failures"


def _dask() -> Any:
    try:
        import distributed
    except ImportError as error:
        raise SweepError(
            "sweeps run on Dask: install it with `pip install distributed` (and restart the kernel)"
        ) from error
    return distributed


@dataclass
class Cluster:
    """A Dask client and, when the sweep started it, the cluster it closes afterwards."""

    client: Any
    kind: str  # "embedded", "ssh" or "client"
    cluster: Any = None
    kept: bool = False  # the session's embedded cluster: later sweeps reuse it

    @property
    def dashboard(self) -> str | None:
        link = getattr(self.client, "dashboard_link", None)
        return str(link) if link else None

    def close(self) -> None:
        if self.cluster is None or self.kept:
            return  # the user's cluster stays theirs; the session's stays for the next sweep
        self.shutdown()

    def shutdown(self) -> None:
        self.client.close()
        self.cluster.close()

    @property
    def alive(self) -> bool:
        return bool(self.client.status == "running" and self.cluster.status.name == "running")


def _start(processes: bool, workers: int, threads: int, retries: int, **kwargs: Any) -> Cluster:
    distributed = _dask()
    import dask

    try:
        with dask.config.set({ALLOWED_FAILURES: retries}):
            cluster = distributed.LocalCluster(
                n_workers=workers,
                threads_per_worker=threads,
                processes=processes,
                dashboard_address=":0",
                silence_logs=logging.ERROR,
                **kwargs,
            )
    except Exception as error:
        raise SweepError(f"the sweep's Dask cluster did not start: {error}") from error
    return Cluster(distributed.Client(cluster), "embedded" if processes else "ssh", cluster)


_SESSION: dict[int, Cluster] = {}  # the kept embedded cluster, by its number of workers
_SESSION_LOCK = threading.Lock()


def embedded_cluster(workers: int, retries: int) -> Cluster:
    """The session's LocalCluster of `workers` in-process workers with one thread each: one
    profile per worker at a time (a worker per GPU: the task uses the GPU its worker is
    numbered for). Started on first use, then reused; another worker count replaces it."""
    with _SESSION_LOCK:
        held = _SESSION.get(workers)
        if held is not None and held.alive:
            return held
        _close_session()
        cluster = _start(False, workers, 1, retries)
        cluster.kind, cluster.kept = "embedded", True
        _SESSION[workers] = cluster
        return cluster


def prepare_cluster(workers: int | None, retries: int) -> None:
    """Begin, in a background thread, what a sweep's cluster needs: Dask's import and, with
    `workers` given, the start of the session's embedded cluster, so that the first sweep's
    cluster comes up while the sweep checks its target (a runner call: about a second) rather
    than after it. `embedded_cluster` then finds it started (or waits under the lock); a
    failure here is raised again, with its fix, where the sweep starts its cluster."""

    def prepare() -> None:
        try:
            _dask()
            if workers is not None:
                embedded_cluster(workers, retries)
        except Exception:
            logging.getLogger(__name__).debug("preparing the sweep cluster", exc_info=True)

    threading.Thread(target=prepare, daemon=True, name="nsdl-sweep-prepare").start()


def _close_session() -> None:
    for workers in list(_SESSION):
        held = _SESSION.pop(workers)
        try:
            held.shutdown()
        except Exception:  # closing at exit: a half-closed cluster is closed enough
            logging.getLogger(__name__).debug("closing the sweep cluster", exc_info=True)


def sweep_cluster() -> Any:
    """The Dask client of the session's embedded sweep cluster (for its dashboard), or None
    when no sweep started one."""
    with _SESSION_LOCK:
        held = next((c for c in _SESSION.values() if c.alive), None)
    return held.client if held is not None else None


def close_sweep_cluster() -> None:
    """Close the session's embedded sweep cluster now (the next sweep starts another); it
    closes by itself when the kernel exits."""
    with _SESSION_LOCK:
        _close_session()


atexit.register(close_sweep_cluster)


def ssh_cluster(slots: Mapping[str, int], retries: int) -> Cluster:
    """One in-process worker that drives the SSH targets (the runtimes run on the targets):
    `slots[resource]` GPU slots per target, as Dask worker resources."""
    return _start(False, 1, sum(slots.values()), retries, resources=dict(slots))


def user_cluster(client: Any) -> Cluster:
    """The user's Client, used as it is (never closed by the sweep)."""
    distributed = _dask()
    if not isinstance(client, distributed.Client):
        raise ArgumentError(
            f"client= takes a distributed.Client, not a {type(client).__name__}: "
            "client = distributed.Client(cluster)"
        )
    return Cluster(client, "client")


def attempts(client: Any, key: str, retries: int) -> int:
    """How many times Dask ran the task `key`: once, plus each worker lost while running it,
    plus each retry after an error (read from the scheduler's task state)."""

    def count(dask_scheduler: Any, key: str, retries: int) -> int:
        state = dask_scheduler.tasks.get(key)
        if state is None:
            return 1
        retried = max(0, retries - int(state.retries or 0))
        return 1 + int(state.suspicious or 0) + retried

    try:
        return int(client.run_on_scheduler(count, key=key, retries=retries))
    except Exception:  # an old or locked-down scheduler: the count is unknown
        return 0


def cancel_event(name: str, client: Any = None) -> Any:
    """The sweep's cancel flag: a Dask Event every task of the sweep watches."""
    from distributed import Event

    return Event(name, client=client)  # type: ignore[no-untyped-call]
