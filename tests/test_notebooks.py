"""Every example notebook runs top to bottom in a real kernel without an error, and shows
what it is for (SHOWS: the quickstart's GraphView, the profiling notebook's figures and panel).

Executed with nbclient (kernel `python3`: jupyter_client starts it with this interpreter,
so the venv's packages); a cell error, or a traceback printed to stderr (e.g. by a widget
callback), fails the test. Executed copies land in test-output/notebooks/ to look at.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import nbformat
import pytest

from tests._kernels import execute_notebook

REPO = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((REPO / "example_notebooks").glob("*.ipynb"))


def _problems(notebook: nbformat.NotebookNode) -> list[str]:
    found = []
    for index, cell in enumerate(notebook.cells):
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                found.append(f"cell {index}: {output.get('ename')}: {output.get('evalue')}")
            elif output.get("name") == "stderr" and "Traceback" in output.get("text", ""):
                found.append(f"cell {index}: traceback on stderr:\n{output['text'][-2000:]}")
    return found


def _outputs(notebook: nbformat.NotebookNode) -> list[dict[str, Any]]:
    return [o for cell in notebook.cells if cell.cell_type == "code" for o in cell.outputs]


def _quickstart_shows_a_graph_view(notebook: nbformat.NotebookNode) -> None:
    outputs = _outputs(notebook)
    views = [o for o in outputs if "application/vnd.jupyter.widget-view+json" in o.get("data", {})]
    assert views, "the notebook shows a GraphView"
    text = "".join(o.get("text", "") for o in outputs)
    assert "groups" in text and ".svg" in text


def _profiling_shows_figures_and_the_panel(notebook: nbformat.NotebookNode) -> None:
    outputs = _outputs(notebook)
    html_figures = [o for o in outputs if "plotly-graph-div" in str(o.get("data", {}))]
    assert len(html_figures) >= 4  # timeline, top-N, share, comparison: in static HTML form
    widgets = [
        o for o in outputs if "application/vnd.jupyter.widget-view+json" in o.get("data", {})
    ]
    assert widgets  # the ActivityPanel


# what a notebook must show beyond running cleanly (each notebook is executed once, here)
SHOWS: dict[str, Callable[[nbformat.NotebookNode], None]] = {
    "quickstart": _quickstart_shows_a_graph_view,
    "profiling": _profiling_shows_figures_and_the_panel,
}


def test_quickstart_notebook_exists() -> None:
    assert (REPO / "example_notebooks" / "quickstart.ipynb") in NOTEBOOKS
    assert set(SHOWS) <= {path.stem for path in NOTEBOOKS}


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs_without_errors(path: Path, tmp_path: Path, test_output_dir: Path) -> None:
    # run in a copy of the folder: notebooks may write files next to themselves
    folder = tmp_path / "example_notebooks"
    shutil.copytree(path.parent, folder, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    notebook = nbformat.read(folder / path.name, as_version=4)
    assert notebook.metadata["kernelspec"]["name"] == "python3"  # a kernel dialog would block
    # allow_errors: collect every error below instead of stopping at the first
    execute_notebook(notebook, folder, timeout=600, allow_errors=True)
    out = test_output_dir / "notebooks"
    out.mkdir(exist_ok=True)
    nbformat.write(notebook, out / path.name)
    problems = _problems(notebook)
    assert not problems, f"{path.name} (executed copy: {out / path.name}):\n" + "\n".join(problems)
    assert all(cell.get("execution_count") for cell in notebook.cells if cell.cell_type == "code")
    SHOWS.get(path.stem, lambda _notebook: None)(notebook)
