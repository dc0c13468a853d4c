"""The tests' nbclient kernels talk over Unix sockets in a folder of their own (tests/_kernels.py),
and leave nothing behind: a TCP port cannot be lost to another process of a parallel run."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat

from tests._kernels import execute_notebook


def test_a_notebook_kernel_talks_over_unix_sockets_and_leaves_none(tmp_path: Path) -> None:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("from ipykernel import get_connection_info\n"
                                          "print(get_connection_info())")]  # fmt: skip
    execute_notebook(nb, tmp_path, timeout=120)
    info = json.loads(nb.cells[0].outputs[0]["text"])
    assert info["transport"] == "ipc"
    assert Path(info["ip"]).parent.name.startswith("nsdl-k-")
    assert not Path(info["ip"]).parent.exists()  # removed with its sockets
    assert list(tmp_path.iterdir()) == []  # no socket in the working folder
