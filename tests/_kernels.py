"""Notebooks the tests run through nbclient, in kernels that talk over Unix sockets.

Over TCP, jupyter_client picks five free ports per kernel and lets them go before the kernel
binds them; in a full parallel run another process can take one in between, and the kernel
dies with "Address already in use" (the UI harness met it in a CI run: tests/ui/conftest.py).
Over Unix sockets there is no port to lose. The sockets get a short folder of their own: a
socket path has at most 107 bytes, and two kernels in one folder could pick the same names.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

from nbclient import NotebookClient
from traitlets.config import Config


def execute_notebook(nb: Any, folder: Path, *, timeout: int, **options: Any) -> None:
    """Run every cell of `nb` (in place) in a fresh `python3` kernel working in `folder`;
    `options` go to nbclient's NotebookClient."""
    sockets = Path(tempfile.mkdtemp(prefix="nsdl-k-"))
    ipc = Config({"KernelManager": {"transport": "ipc", "ip": str(sockets / "kernel")}})
    try:
        NotebookClient(
            nb,
            timeout=timeout,
            kernel_name="python3",
            resources={"metadata": {"path": str(folder)}},
            config=ipc,
            **options,
        ).execute()
    finally:
        shutil.rmtree(sockets, ignore_errors=True)
