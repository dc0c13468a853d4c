"""The fleet: every saved target's GPUs, driver (and the CUDA version it runs), runtimes and
cache size in one table.

Each GPU of a host is a slot (its index is the `CUDA_VISIBLE_DEVICES` value that picks it).
What was found is kept beside the saved connections (`fleet.json`, no secrets), so the table
shows without connecting; `refresh=` checks targets again (all, or those named). A target that
cannot be reached (it needs a password, it is off) gets a row that says why.
"""

from __future__ import annotations

import html
import json
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from nsdl_jupyter._atomic import atomic_write_bytes
from nsdl_jupyter._errors import NsdlError
from nsdl_jupyter.profiling._target_check import TargetCheck, check_target
from nsdl_jupyter.targets import Connections, SshTarget, connections

COLUMNS = (
    "name", "slot", "gpu", "driver", "cuda", "memory", "runtimes", "cache_bytes", "checked",
    "error",
)  # fmt: skip


@dataclass(frozen=True)
class FleetRow:
    name: str
    slot: int | None  # the GPU's index on its host; None: no GPU seen
    gpu: str
    driver: str
    cuda: str  # the newest CUDA version the driver runs ("" where not known)
    memory: str
    runtimes: str
    cache_bytes: int | None
    checked: float  # when (seconds since the epoch, this machine's clock)
    error: str | None = None


@dataclass(frozen=True)
class Fleet:
    rows: list[FleetRow]

    def to_frame(self) -> Any:
        import pandas as pd

        return pd.DataFrame([asdict(row) for row in self.rows], columns=list(COLUMNS))

    def _repr_html_(self) -> str:
        head = "".join(f"<th>{c}</th>" for c in COLUMNS)
        cells = [
            "".join(f"<td>{html.escape(str(v))}</td>" for v in asdict(r).values())
            for r in self.rows
        ]
        body = "".join(f"<tr>{row}</tr>" for row in cells)
        return f"<table><tr>{head}</tr>{body}</table>"


def _runtimes(check: TargetCheck) -> str:
    raw = check.raw
    found = []
    ort = raw.get("onnxruntime") or {}
    if ort.get("ort_version"):
        providers = ", ".join(str(p) for p in ort.get("available") or [])
        found.append(f"onnxruntime {ort['ort_version']} ({providers})")
    found += [f"{item} {raw[item]}" for item in ("tensorrt", "tensorrt_rtx") if raw.get(item)]
    return "; ".join(found) or "none"


def _probe(saved: Connections, name: str) -> list[FleetRow]:
    now = time.time()
    try:
        target: SshTarget = saved.get(name)
        with target:
            check = check_target(target)
            cache = target.cache_info().total_bytes
    except NsdlError as exc:
        return [FleetRow(name, None, "", "", "", "", "", None, now, str(exc))]
    runtimes = _runtimes(check)
    smi = check.raw.get("nvidia_smi") or {}
    gpus = [g for g in smi.get("gpus") or [] if isinstance(g, list) and len(g) >= 3]
    if not gpus:
        return [FleetRow(name, None, "none", "", "", "", runtimes, cache, now)]
    cuda = str(smi.get("cuda") or "")
    return [
        FleetRow(name, slot, str(g[0]), str(g[1]), cuda, str(g[2]), runtimes, cache, now)
        for slot, g in enumerate(gpus)
    ]


def fleet(saved: Connections | None = None, *, refresh: bool | Sequence[str] = False) -> Fleet:
    """The saved targets' GPUs (one row per GPU slot), driver, CUDA, runtimes and cache size,
    as last checked; `refresh=True` checks every target again, a list of names those; a target never
    checked is checked now."""
    saved = saved or connections()
    store = saved.path.with_name("fleet.json")
    try:
        known: dict[str, list[dict[str, Any]]] = json.loads(store.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        known = {}
    names = saved.names()
    wanted = set(names) if refresh is True else set(refresh or ())
    table: dict[str, list[FleetRow]] = {}
    for name in names:
        rows = known.get(name) if isinstance(known, dict) else None
        try:
            cached = [FleetRow(**row) for row in rows or []] if name not in wanted else []
        except TypeError:  # written by another version
            cached = []
        table[name] = cached or _probe(saved, name)
    data = {name: [asdict(row) for row in rows] for name, rows in table.items()}
    atomic_write_bytes(store, json.dumps(data, indent=1).encode("utf-8"))
    return Fleet([row for rows in table.values() for row in rows])
