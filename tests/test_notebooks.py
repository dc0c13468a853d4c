"""Every example notebook runs top to bottom in a real kernel without an error.

Executed with nbclient (kernel `python3`: jupyter_client starts it with this interpreter,
so the venv's packages); a cell error, or a traceback printed to stderr (e.g. by a widget
callback), fails the test. Executed copies land in test-output/notebooks/ to look at.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

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


def test_quickstart_notebook_exists() -> None:
    assert (REPO / "example_notebooks" / "quickstart.ipynb") in NOTEBOOKS


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs_without_errors(path: Path, tmp_path: Path, test_output_dir: Path) -> None:
    # run in a copy of the folder: notebooks may write files next to themselves
    folder = tmp_path / "example_notebooks"
    shutil.copytree(path.parent, folder, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    notebook = nbformat.read(folder / path.name, as_version=4)
    client = NotebookClient(
        notebook,
        kernel_name="python3",
        timeout=600,
        allow_errors=True,  # collect every error below instead of stopping at the first
        resources={"metadata": {"path": str(folder)}},
    )
    client.execute()
    out = test_output_dir / "notebooks"
    out.mkdir(exist_ok=True)
    nbformat.write(notebook, out / path.name)
    problems = _problems(notebook)
    assert not problems, f"{path.name} (executed copy: {out / path.name}):\n" + "\n".join(problems)
    assert all(cell.get("execution_count") for cell in notebook.cells if cell.cell_type == "code")
