"""The example notebook example_notebooks/profiling.ipynb runs top to bottom without errors."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOK = Path(__file__).resolve().parent.parent / "example_notebooks" / "profiling.ipynb"


@pytest.mark.slow
def test_profiling_notebook_executes(tmp_path: Path) -> None:
    nb = nbformat.read(NOTEBOOK, as_version=4)
    assert nb.metadata["kernelspec"]["name"] == "python3"
    NotebookClient(nb, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(tmp_path)}}).execute()  # fmt: skip
    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    html_figures = [o for o in outputs if "plotly-graph-div" in str(o.get("data", {}))]
    assert len(html_figures) >= 4  # timeline, top-N, share, comparison: in static HTML form
    widgets = [
        o for o in outputs if "application/vnd.jupyter.widget-view+json" in o.get("data", {})
    ]
    assert widgets  # the ActivityPanel
