"""The dependency table of a target: what it offers for profiling, each row with a status.

One runner request ("target_check") answers everything, so checking a remote GPU box costs
one round trip after the connection: OS, architecture, Python, onnxruntime and its providers,
TensorRT, trtexec, GPUs and driver, free space in the deploy directory.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Any, Literal

from nsdl_jupyter._errors import ArgumentError
from nsdl_jupyter.profiling._job import check_timeout
from nsdl_jupyter.profiling._runners import ask_runner
from nsdl_jupyter.targets import LocalTarget, Target, TargetError

Status = Literal["ok", "missing", "warning"]
_ARCHES = ("x86_64", "aarch64", "amd64", "arm64")
LOW_DISK_BYTES = 1 << 30


@dataclass(frozen=True)
class CheckRow:
    item: str
    status: Status
    detail: str
    required: bool = False


@dataclass(frozen=True)
class TargetCheck:
    """`rows` for people (`_repr_html_`, `to_frame()`), `raw` for programs; `ok` when every
    required row is ok."""

    target: str
    rows: list[CheckRow]
    raw: dict[str, Any]

    @property
    def ok(self) -> bool:
        return all(row.status == "ok" for row in self.rows if row.required)

    def to_frame(self) -> Any:
        import pandas as pd

        return pd.DataFrame(
            [(r.item, r.status, r.detail, r.required) for r in self.rows],
            columns=["item", "status", "detail", "required"],
        )

    def _repr_html_(self) -> str:
        body = "".join(
            f"<tr><td>{html.escape(r.item)}</td><td>{html.escape(r.status)}</td>"
            f"<td>{html.escape(r.detail)}</td></tr>"
            for r in self.rows
        )
        return (
            f"<b>{html.escape(self.target)}</b><table><tr><th>item</th><th>status</th>"
            f"<th>detail</th></tr>{body}</table>"
        )


def _rows(raw: dict[str, Any]) -> list[CheckRow]:
    rows = [
        CheckRow("OS", "ok" if raw.get("system") == "Linux" else "warning", str(raw.get("os"))),
        CheckRow(
            "architecture",
            "ok" if str(raw.get("arch")).lower() in _ARCHES else "warning",
            str(raw.get("arch")),
        ),
        CheckRow("Python", "ok", f"{raw.get('python')} ({raw.get('python_executable')})", True),
    ]
    ort = raw.get("onnxruntime") or {}
    if ort.get("available"):
        failing = ort.get("load_errors") or {}
        providers = [p for p in ort.get("available", []) if p not in failing]
        detail = f"{ort.get('ort_version')}; providers: {', '.join(providers)}"
        if failing:
            detail += "; failing to load: " + ", ".join(f"{k} ({v})" for k, v in failing.items())
        rows.append(CheckRow("onnxruntime", "warning" if failing else "ok", detail, True))
    else:
        rows.append(CheckRow("onnxruntime", "missing", str(ort.get("message")), True))
    for item in ("tensorrt", "tensorrt_rtx", "trtexec"):
        value = raw.get(item)
        rows.append(CheckRow(item, "ok" if value else "missing", str(value or "not found")))
    smi = raw.get("nvidia_smi") or {}
    if smi.get("available"):
        gpus = "; ".join(f"{g[0]} (driver {g[1]}, {g[2]})" for g in smi.get("gpus", []) if g)
        cuda = f"; the driver runs CUDA \u2264 {smi['cuda']}" if smi.get("cuda") else ""
        rows.append(CheckRow("GPUs", "ok", (gpus or "none listed") + cuda))
    else:
        rows.append(CheckRow("GPUs", "missing", str(smi.get("message"))))
    free = int(raw.get("disk_free_bytes", 0))
    rows.append(
        CheckRow(
            "free space (deploy dir)",
            "ok" if free >= LOW_DISK_BYTES else "warning",
            f"{free / 2**30:.1f} GiB",
        )
    )
    return rows


def _runtime_rows(target: Target, raw: dict[str, Any], rows: list[CheckRow]) -> list[CheckRow]:
    """`rows` with what the target's runtime set (SshTarget(runtimes=)) has there, will deploy
    or cannot: a runtime it will deploy counts as there."""
    plan_of = getattr(target, "plan_from_check", None)
    if plan_of is None or not getattr(target, "runtimes", ()):
        return rows
    try:
        plan = plan_of(raw)
    except TargetError as exc:
        return [*rows, CheckRow("runtime set", "missing", f"cannot be deployed: {exc}", True)]
    extra = [
        CheckRow(f"wheel {w.requirement}", "ok", f"{w.path.name}: on the target")
        for w in plan.on_target.values()
    ] + [
        CheckRow(
            f"wheel {w.requirement}",
            "ok",
            f"{w.path.name}: will be deployed ({w.size / 2**20:.1f} MiB from the local cache)",
        )
        for w in plan.to_upload.values()
    ]
    state = "ready" if plan.ready else "will be made by the first run"
    extra.append(CheckRow("runtime set", "ok", f"venv {plan.venv}: {state}", True))
    if not plan.ready:
        names = [w.path.name for w in [*plan.on_target.values(), *plan.to_upload.values()]]
        ort = next((n for n in names if n.startswith("onnxruntime")), None)
        rows = [
            CheckRow(r.item, "ok", f"{ort}: will be deployed", True)
            if r.item == "onnxruntime" and ort
            else r
            for r in rows
        ]
    return rows + extra


def check_target(target: Target | None = None, *, timeout: float = 120.0) -> TargetCheck:
    """Check what `target` (default: this machine) offers for profiling, in one runner call;
    a target with a runtime set also says what it will deploy (nothing is deployed here)."""
    if target is not None and not callable(getattr(target, "make_workdir", None)):
        raise ArgumentError(
            f"target must be a target (LocalTarget(), SshTarget(...) or "
            f"nsdl_jupyter.connections().get(name)), not {type(target).__name__}"
        )
    check_timeout(timeout, optional=False)
    target = target or LocalTarget()
    fields = getattr(target, "check_fields", None)  # what an SshTarget's runtime set asks
    request = {"kind": "target_check", "protocol": 1, **(fields() if fields else {})}
    return ask_runner(
        target,
        request,
        "check the target",
        timeout,
        lambda raw: TargetCheck(target.name, _runtime_rows(target, raw, _rows(raw)), raw),
    )
