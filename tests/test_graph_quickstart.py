"""The quickstart notebook runs top to bottom in a real kernel (nbclient, no browser)."""

from __future__ import annotations

from pathlib import Path

import pytest

NOTEBOOK = Path(__file__).resolve().parent.parent / "example_notebooks" / "quickstart.ipynb"


@pytest.mark.slow
def test_quickstart_notebook_executes_without_errors(tmp_path: Path) -> None:
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    nb = nbformat.read(NOTEBOOK, as_version=4)
    assert nb.metadata["kernelspec"]["name"] == "python3"  # a kernel dialog would block users
    nbclient.NotebookClient(
        nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    views = [o for o in outputs if "application/vnd.jupyter.widget-view+json" in o.get("data", {})]
    assert views, "the notebook shows a GraphView"
    text = "".join(o.get("text", "") for o in outputs)
    assert "groups" in text and ".svg" in text
