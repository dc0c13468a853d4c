"""`sweep()` / `start_sweep()`: a grid of settings, profiled as Dask tasks, into one table.

Everything that can be wrong is checked in the kernel first (grid, targets, model variants),
where each CPU run's share of its machine's cores is fixed too (`_threads`); rows the cache
holds are served from it; the rest become Dask futures (retries, placement and
queueing are Dask's). A background thread collects the answers, writes each finished row to
the cache at once, and shows progress. Cancel raises a Dask `Event` that every running task
watches: it ends its profile's child process and queued tasks end at once, so no process is
left behind; the SSH targets' in-process cluster then closes, the embedded one (threads of the
kernel) stays for the next sweep.
"""

from __future__ import annotations

import contextlib
import math
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nsdl_jupyter.profiling import ProfileReport
from nsdl_jupyter.sweeps._cache import SweepCache, default_cache_dir, run_key
from nsdl_jupyter.sweeps._cluster import (
    Cluster,
    attempts,
    cancel_event,
    embedded_cluster,
    prepare_cluster,
    ssh_cluster,
    user_cluster,
)
from nsdl_jupyter.sweeps._errors import SweepCancelledError, SweepSettingsError
from nsdl_jupyter.sweeps._grid import expand_grid
from nsdl_jupyter.sweeps._identity import TargetIdentity, target_identity
from nsdl_jupyter.sweeps._progress import ProgressDisplay, SweepProgress
from nsdl_jupyter.sweeps._result import SweepResult, tidy
from nsdl_jupyter.sweeps._task import (
    TaskSpec,
    register_target,
    run_task,
    unregister_target,
    worker_identity,
)
from nsdl_jupyter.sweeps._threads import with_threads
from nsdl_jupyter.sweeps._variants import SourceModel, make_variant, source_model, variant_id
from nsdl_jupyter.targets import LocalTarget, SshTarget, Target, connections

POLL_S = 0.25
# how often the running count is asked of the scheduler: two requests each time, which on a
# busy machine cost the tasks CPU time when asked at every poll
RUNNING_EVERY_S = 1.0
DRAIN_S = 30.0  # after cancel: how long running tasks get to end their child processes


@dataclass(frozen=True)
class _Placement:
    """Where a task runs: an SSH target (token, resource) or a worker of the cluster."""

    token: str | None
    identity: TargetIdentity | None  # None: each worker reports its own (a user's cluster)
    identity_key: str
    resource: str | None = None
    cores: int = 0  # the machine's cores (0: unknown) ...
    concurrent: int = 0  # ... shared by this many runs at once (0: unknown)


def _check_options(retries: Any, workers: Any, targets: Any, client: Any) -> list[Target]:
    """The options checked, and the targets as objects (saved connections looked up)."""
    if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
        raise SweepSettingsError(f"retries={retries!r}: use an integer >= 0")
    if workers is not None and (
        isinstance(workers, bool) or not isinstance(workers, int) or workers < 1
    ):
        raise SweepSettingsError(f"workers={workers!r}: use an integer >= 1, or None")
    if targets is None:
        return []
    if client is not None:
        raise SweepSettingsError(
            "give targets= (SSH machines driven from here) or client= (your Dask cluster, "
            "whose workers profile where they run), not both"
        )
    found = (
        list(targets)
        if isinstance(targets, Sequence) and not isinstance(targets, str)
        else [targets]
    )
    saved = connections()
    found = [saved.get(t) if isinstance(t, str) else t for t in found]  # saved connection names
    if not found or not all(isinstance(t, (SshTarget, LocalTarget)) for t in found):
        raise SweepSettingsError(
            "targets= takes a list of SshTarget (or LocalTarget) objects or names of saved "
            "connections (nj.connections())"
        )
    names = [t.name for t in found]
    if len(set(names)) != len(names):
        raise SweepSettingsError(f"targets have the same name twice ({names}): name=... each")
    return found


class SweepJob:
    """A running sweep: `progress`, `cancel()`, `wait()` -> SweepResult."""

    def __init__(
        self,
        model: Any,
        grid: Mapping[str, Sequence[Any]] | Sequence[Mapping[str, Any]],
        *,
        targets: Sequence[Target | str] | None = None,
        client: Any = None,
        retries: int = 2,
        cache_dir: str | Path | None = None,
        workers: int | None = None,
        progress: bool = True,
        _blocking: bool = False,
    ) -> None:
        configs, self.axes = expand_grid(grid)
        target_list = _check_options(retries, workers, targets, client)
        self.retries = retries
        self.cache = SweepCache(Path(cache_dir) if cache_dir is not None else default_cache_dir())
        source = source_model(model, self.cache.models)
        variants = _variants(configs, source, self.cache.models)
        self._id = uuid.uuid4().hex[:12]
        self._tokens: list[str] = []
        self._cluster: Cluster | None = None
        self._rows: dict[str, dict[str, Any]] = {}
        self._order: list[str] = []
        if client is None:  # Dask's import and the cluster's start overlap the target check
            prepare_cluster(workers if not target_list else None, retries)
        try:
            placements = self._placements(target_list, client, workers)
            pending = self._plan(configs, variants, placements, source.name, remote=client)
        except BaseException:
            self._close()
            raise
        self.from_cache = len(self._order) - len(pending)
        self.ran = len(pending)
        self._cancel = threading.Event()
        self._finished = threading.Event()
        self._started = time.perf_counter()
        self._futures: dict[Any, str] = {}
        self._failed = 0
        self._done = self.from_cache
        self._running = 0
        self._display = (
            ProgressDisplay(len(self._order), None if _blocking else self.cancel)
            if progress and self._order
            else None
        )
        if not pending:
            self._finish()
            return
        try:
            self._cluster = self._start_cluster(placements, client)
            for spec, place in pending:
                future = self._cluster.client.submit(
                    run_task,
                    spec,
                    key=f"nsdl-sweep-{self._id}-{spec.key[:16]}",
                    retries=retries,
                    resources={place.resource: 1} if place.resource else None,
                    pure=False,
                )
                self._futures[future] = spec.key
        except BaseException:
            self._close()
            raise
        self._thread = threading.Thread(target=self._collect, daemon=True, name="nsdl-sweep")
        self._thread.start()

    def _plan(
        self,
        configs: list[dict[str, Any]],
        variants: Mapping[tuple[Any, str], tuple[Path, str]],
        placements: list[_Placement],
        name: str,
        *,
        remote: Any,
    ) -> list[tuple[TaskSpec, _Placement]]:
        """Rows in order (configuration x placement), cached ones filled in; the tasks to run.
        A user's cluster (`remote`) gets the model's bytes, others its path here."""
        pending = []
        for grid_config in configs:
            path, vid = variants[(grid_config["batch"], grid_config["precision"])]
            for place in placements:
                config = with_threads(grid_config, cores=place.cores, concurrent=place.concurrent)
                key = run_key(vid, config, place.identity_key)
                if key in self._rows:
                    continue
                self._order.append(key)
                cached = self.cache.get(key)
                if cached is not None:
                    self._rows[key] = {**cached, "cached": True}
                    continue
                row: dict[str, Any] = {**config, "key": key, "status": "queued", "cached": False}
                if place.identity is not None:
                    row.update(place.identity.columns())
                self._rows[key] = row
                model: str | bytes = path.read_bytes() if remote is not None else str(path)
                spec = TaskSpec(
                    key, config, model, name, place.token, place.identity,
                    f"nsdl-sweep-cancel-{self._id}",
                )  # fmt: skip
                pending.append((spec, place))
        return pending

    # ---- where ----------------------------------------------------------------------------

    def _placements(
        self, targets: list[Target], client: Any, workers: int | None
    ) -> list[_Placement]:
        """Where the tasks go, and how many share each machine's cores: an SSH target's GPU
        slots, the embedded cluster's workers (a user's cluster: unknown)."""
        if targets:
            placements = []
            for target in targets:
                identity = target_identity(target)
                token = f"{self._id}-{len(self._tokens)}"
                register_target(token, target, identity.gpus)
                self._tokens.append(token)
                placements.append(_Placement(
                    token, identity, identity.key(), f"nsdl-gpu-{token}", identity.cores,
                    identity.slots,
                ))  # fmt: skip
            return placements
        if client is not None:
            cluster = user_cluster(client)
            found = cluster.client.run(worker_identity)
            if not found:
                raise SweepSettingsError("the Dask cluster of client= has no worker: start some")
            identities = {identity.key(): identity for identity in found.values()}
            if len(identities) == 1:
                (identity,) = identities.values()
                return [_Placement(None, identity, identity.key())]
            return [_Placement(None, None, "+".join(sorted(identities)))]
        identity = target_identity()
        concurrent = workers or identity.slots
        return [_Placement(None, identity, identity.key(), None, identity.cores, concurrent)]

    def _start_cluster(self, placements: list[_Placement], client: Any) -> Cluster:
        if client is not None:
            return user_cluster(client)
        if placements[0].token is not None:
            slots = {p.resource: p.identity.slots for p in placements if p.resource and p.identity}
            return ssh_cluster(slots, self.retries)
        return embedded_cluster(placements[0].concurrent, self.retries)

    @property
    def client(self) -> Any:
        """The Dask client running the sweep (None once the sweep ended, or when the cache held
        every row)."""
        cluster = self._cluster
        return cluster.client if cluster is not None and not self.done else None

    @property
    def dashboard(self) -> str | None:
        """The Dask dashboard of the cluster running the sweep."""
        return self._cluster.dashboard if self._cluster is not None else None

    # ---- collecting -----------------------------------------------------------------------

    @property
    def progress(self) -> SweepProgress:
        done = self._done
        elapsed = time.perf_counter() - self._started
        ran = done - self.from_cache
        left = len(self._order) - done
        eta = elapsed / ran * left if ran > 0 and left > 0 else None
        return SweepProgress(
            len(self._order), done, self._running, self._failed, self.from_cache, eta
        )

    def _collect(self) -> None:
        assert self._cluster is not None
        client = self._cluster.client
        ours = {future.key for future in self._futures}
        left = dict(self._futures)
        deadline = math.inf
        counted = -math.inf
        try:
            while left:
                for future in [f for f in left if f.done()]:
                    self._take(future, left.pop(future))
                if self._cancel.is_set() and deadline == math.inf:
                    self._raise_cancel(client)
                    deadline = time.monotonic() + DRAIN_S
                if time.monotonic() > deadline:
                    client.cancel(list(left))
                    for key in left.values():
                        self._rows[key].update(status="cancelled", error="did not end in time")
                    break
                if time.monotonic() >= counted + RUNNING_EVERY_S:
                    counted = time.monotonic()
                    self._running = _running(client, ours)
                if self._display is not None:
                    self._display.update(self.progress)
                time.sleep(POLL_S)
        finally:
            self._running = 0
            self._close()
            self._finish()

    def _raise_cancel(self, client: Any) -> None:
        cancel_event(f"nsdl-sweep-cancel-{self._id}", client).set()

    def _take(self, future: Any, key: str) -> None:
        row = self._rows[key]
        try:
            answer = future.result()
        except Exception as error:  # lost workers beyond the retries, a dropped link, ...
            answer = {"status": "error", "error": f"{type(error).__name__}: {error}"}
        assert self._cluster is not None
        row["attempts"] = attempts(self._cluster.client, future.key, self.retries)
        row.update(answer.get("identity") or {})
        row.update(answer.get("figures") or {})
        row.update(status=answer["status"], error=answer.get("error", ""))
        row.update({k: answer.get(k) for k in ("wall_s", "started", "ended")})
        self._done += 1
        if answer["status"] != "ok":
            self._failed += 1
            return
        report = ProfileReport.from_json(answer["report"], where=f"the answer of {key[:12]}")
        self.cache.put(key, _plain(row), report)

    def _close(self) -> None:
        for token in self._tokens:
            unregister_target(token)
        self._tokens = []
        if self._cluster is not None:
            with contextlib.suppress(Exception):
                self._cluster.close()

    def _finish(self) -> None:
        if self._display is not None:
            self._display.close(self.progress)
        self._finished.set()

    # ---- control --------------------------------------------------------------------------

    @property
    def done(self) -> bool:
        return self._finished.is_set()

    def cancel(self) -> None:
        """Stop the sweep: running profiles end their child processes, queued ones never
        start; the finished rows stay (and stay cached)."""
        self._cancel.set()

    def wait(self, timeout: float | None = None) -> SweepResult:
        """The result once every task has ended (cancelled ones as rows that say so)."""
        if not self._finished.wait(timeout):
            raise TimeoutError(f"the sweep is still running after {timeout} s")
        rows = [self._rows[key] for key in self._order]
        return SweepResult(
            tidy(rows), self.cache, self.axes, ran=self.ran, from_cache=self.from_cache,
            dashboard=None,
        )  # fmt: skip


def _variants(
    configs: list[dict[str, Any]], source: SourceModel, folder: Path
) -> dict[tuple[Any, str], tuple[Path, str]]:
    """(batch, precision) -> (file, content id) of each model variant the grid needs."""
    found: dict[tuple[Any, str], tuple[Path, str]] = {}
    for config in configs:
        batch, precision = config["batch"], config["precision"]
        if (batch, precision) not in found:
            path = make_variant(source, batch, precision, folder)
            found[batch, precision] = (path, variant_id(source, batch, precision))
    return found


def _running(client: Any, ours: set[Any]) -> int:
    """How many of the sweep's tasks the scheduler has on a worker thread now."""
    try:
        processing = client.processing()
        assigned = sum(1 for keys in processing.values() for k in keys if k in ours)
        return min(assigned, int(sum(client.nthreads().values())))
    except Exception:  # a scheduler going away: the count is unknown this time
        return 0


def _plain(row: Mapping[str, Any]) -> dict[str, Any]:
    """A row as strict JSON values (NaN -> None)."""
    return {k: None if isinstance(v, float) and not math.isfinite(v) else v for k, v in row.items()}


def start_sweep(model: Any, grid: Any, **kwargs: Any) -> SweepJob:
    """Start a sweep (see `sweep`); returns the running SweepJob."""
    return SweepJob(model, grid, **kwargs)


def sweep(
    model: Any,
    grid: Mapping[str, Sequence[Any]] | Sequence[Mapping[str, Any]],
    *,
    targets: Sequence[Target] | None = None,
    client: Any = None,
    retries: int = 2,
    cache_dir: str | Path | None = None,
    workers: int | None = None,
    progress: bool = True,
) -> SweepResult:
    """Profile `model` over a grid of settings, as Dask tasks; one row per configuration x target.

    `grid`: a dict of setting -> values (`{"batch": [1, 8], "precision": ["fp32", "fp16"],
    "backend": ["ort-cpu", "ort-cuda", "tensorrt"], "optimization_level": [0, 3],
    "iterations": [20], "intra_op_threads": [1, 4]}`), every combination, or a list of setting
    dicts. Batch and precision
    are model variants made with `fix_dims` and `convert_to_fp16` (cached by content hash).

    Where: by default an embedded `distributed.LocalCluster` (one in-process worker per local
    GPU, `workers` to choose; started by the first sweep and kept for the kernel's session,
    see `sweep_cluster()` / `close_sweep_cluster()`); `targets=[SshTarget(...), ...]`: each
    configuration runs on each target over SSH, one at a time per target GPU (Dask worker
    resources); `client=`: your own Dask cluster, its workers profiling where they run.
    CPU runs that share a machine (the embedded cluster's workers, an SSH target's GPU slots)
    each get a fair share of its cores, `intra_op_threads = max(1, cores // runs at once)`,
    rather than onnxruntime's default of every core each; a CPU run alone on its machine, or
    on your own cluster, gets onnxruntime's default (0). The grid's `intra_op_threads` axis
    sets it instead (0: onnxruntime's default). The value applied is the row's
    `intra_op_threads` column (and the report's settings, and part of the cache key), so rows
    profiled with different thread counts are never taken for one another.
    `retries`: how often Dask re-runs a task whose worker died or whose SSH link dropped. Rows
    are cached in `cache_dir` (default `$NSDL_CACHE_DIR/sweeps` or
    `~/.cache/nsdl_jupyter/sweeps`) by model variant, settings and target identity: a second
    call runs only what is new. A failing configuration gives a row with its error.
    Interrupting the kernel cancels: SweepCancelledError holds what finished.
    """
    job = SweepJob(
        model, grid, targets=targets, client=client, retries=retries, cache_dir=cache_dir,
        workers=workers, progress=progress, _blocking=True,
    )  # fmt: skip
    try:
        return job.wait()
    except KeyboardInterrupt:
        job.cancel()
        result = job.wait()
        raise SweepCancelledError(
            "the sweep was interrupted: running profiles were ended; the finished rows are in "
            "this error's `result` (and in the cache)",
            result,
        ) from None
