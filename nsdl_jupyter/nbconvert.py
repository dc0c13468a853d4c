"""Notebooks exported to HTML show our widgets without JavaScript: the GraphView as SVG, the
ProfileView's figures and table, the tool windows as static controls, each in its last state.

- `StaticWidgetsPreprocessor`: an nbconvert preprocessor that replaces each widget output by
  its static picture (from the widget state saved in the notebook, else from the picture
  stored in the output at display time) and drops the widget state, so the page loads no
  widget manager: ``jupyter nbconvert --to html --execute
  --Exporter.preprocessors='["nsdl_jupyter.nbconvert.StaticWidgetsPreprocessor"]' NB.ipynb``
- `StaticHTMLExporter`: the HTML exporter with that preprocessor built in
  (``jupyter nbconvert --to nsdl_jupyter.nbconvert.StaticHTMLExporter NB.ipynb``).
- `export_notebook_html(notebook, html, execute=False)`: the same in one call (`nsdl html`).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from nsdl_jupyter._errors import NsdlError, input_path

try:
    from nbconvert.exporters import HTMLExporter
    from nbconvert.preprocessors import Preprocessor
except ImportError as error:  # pragma: no cover - nbconvert ships with every Jupyter install
    raise ImportError(
        "nsdl_jupyter.nbconvert needs nbconvert (and nbclient to execute): "
        "pip install nbconvert nbclient"
    ) from error

from nsdl_jupyter._atomic import atomic_write_bytes
from nsdl_jupyter._output_guard import guard_output, output_path, starts_with
from nsdl_jupyter._static_export import Replaced, replace_widget_outputs

__all__ = [
    "NotebookExportError",
    "NotebookPathError",
    "StaticHTMLExporter",
    "StaticWidgetsPreprocessor",
    "export_notebook_html",
]


class NotebookExportError(NsdlError):
    """A notebook could not be exported; the message says why and what to do."""


class NotebookPathError(NotebookExportError, ValueError):
    """The paths given cannot work (the HTML would overwrite the notebook)."""


class StaticWidgetsPreprocessor(Preprocessor):  # type: ignore[misc]
    """Replaces widget outputs by static HTML pictures of the widgets' last state."""

    def preprocess(self, nb: Any, resources: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
        done: Replaced = replace_widget_outputs(nb)
        resources.setdefault("nsdl_static_widgets", done)
        resources["nsdl_uses_math"], resources["nsdl_uses_mermaid"] = _uses_math_and_mermaid(nb)
        return nb, resources


def _uses_math_and_mermaid(nb: Any) -> tuple[bool, bool]:
    """Whether the page needs MathJax (TeX in markdown or LaTeX outputs) and mermaid."""
    math = mermaid = False
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            math = math or "$" in cell.source or "\\begin{" in cell.source
            mermaid = mermaid or "```mermaid" in cell.source
        for output in cell.get("outputs", ()):
            data = output.get("data", {})
            math = math or "text/latex" in data
            mermaid = mermaid or "text/vnd.mermaid" in data
    return math, mermaid


# The lab template loads require.js (for widget JavaScript, which the static pictures replace),
# MathJax and mermaid from a CDN: an offline reader gets console errors and a page that waits.
# MathJax and mermaid stay only for a notebook that has math or diagrams.
_TEMPLATE = "nsdl_static.html.j2"
_TEMPLATE_SOURCE = """{%- extends 'index.html.j2' -%}
{%- block html_head_js_requirejs -%}{%- endblock html_head_js_requirejs -%}
{%- block html_head_js_mathjax -%}
{%- if resources.nsdl_uses_math -%}{{ super() }}{%- endif -%}
{%- endblock html_head_js_mathjax -%}
{%- block html_head_js_mermaidjs -%}
{%- if resources.nsdl_uses_mermaid -%}{{ super() }}{%- endif -%}
{%- endblock html_head_js_mermaidjs -%}
"""


class StaticHTMLExporter(HTMLExporter):  # type: ignore[misc]
    """HTML export (lab template) in which our widgets and standard ipywidgets are pictures."""

    export_from_notebook = "HTML with static widgets"

    def __init__(self, **kwargs: Any) -> None:
        from jinja2 import DictLoader

        kwargs.setdefault("extra_loaders", [DictLoader({_TEMPLATE: _TEMPLATE_SOURCE})])
        kwargs.setdefault("template_file", _TEMPLATE)
        super().__init__(**kwargs)  # type: ignore[no-untyped-call]
        # registered after the defaults, so it runs after an ExecutePreprocessor (--execute)
        self.register_preprocessor(StaticWidgetsPreprocessor, enabled=True)  # type: ignore[no-untyped-call]


def export_notebook_html(
    notebook_path: str | os.PathLike[str],
    html_path: str | os.PathLike[str] | None = None,
    execute: bool = False,
    *,
    timeout: int = 600,
    kernel_name: str | None = None,
    overwrite: bool = False,
) -> Path:
    """Write `notebook_path` as a self-contained HTML page that shows every widget's last state
    (GraphView as SVG, ProfileView figures and table) with no widget JavaScript; returns the
    path written (default: the notebook's path with .html).

    `execute=True` runs the notebook first in a fresh kernel (in the notebook's folder); the
    notebook file itself is never modified. An earlier page at `html_path` is replaced; another
    file only with `overwrite=True`, never a model's file (OutputPathError).
    """
    import nbformat

    source = input_path(notebook_path, "notebook (.ipynb file)")
    target = (
        output_path(html_path, "HTML path")
        if html_path is not None
        else source.with_suffix(".html")
    )
    if target.resolve() == source.resolve():
        raise NotebookPathError(
            f"the HTML would overwrite the notebook {source}: choose another path"
        )
    guard_output(target, overwrite=overwrite, earlier=_is_page, what="HTML path")
    try:
        nb = nbformat.read(source, as_version=4)  # type: ignore[no-untyped-call]
    except Exception as error:
        raise NotebookExportError(f"{source} is not a readable notebook: {error}") from error
    if execute:
        _execute(nb, source, timeout, kernel_name)
    resources = {"metadata": {"name": source.stem, "path": str(source.parent)}}
    body, _resources = StaticHTMLExporter().from_notebook_node(nb, resources=resources)
    atomic_write_bytes(target, body.encode("utf-8"))
    return target


def _execute(nb: Any, source: Path, timeout: int, kernel_name: str | None) -> None:
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    options: dict[str, Any] = {"timeout": timeout, "store_widget_state": True}
    if kernel_name:
        options["kernel_name"] = kernel_name
    client = NotebookClient(nb, resources={"metadata": {"path": str(source.parent)}}, **options)
    try:
        client.execute()
    except CellExecutionError as error:
        raise NotebookExportError(
            f"a cell of {source.name} failed while executing, so nothing was written; fix the "
            f"cell, or export the saved outputs without execute=True:\n{error}"
        ) from error


class _HtmlCommand:
    """`nsdl html NOTEBOOK [-o PAGE.html] [--execute]` (registered in nsdl_jupyter.cli)."""

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("notebook", type=Path, help="the .ipynb file")
        parser.add_argument(
            "-o", "--output", type=Path, help="HTML file to write (default: NOTEBOOK.html)"
        )
        parser.add_argument(
            "--execute", action="store_true", help="run the notebook in a fresh kernel first"
        )
        parser.add_argument(
            "--timeout", type=int, default=600, help="seconds per cell with --execute"
        )
        parser.add_argument(
            "--overwrite", action="store_true", help="replace an existing file that is no page"
        )

    def run(self, args: argparse.Namespace) -> int:
        from nsdl_jupyter.cli import UsageError

        try:
            written = export_notebook_html(
                args.notebook,
                args.output,
                execute=args.execute,
                timeout=args.timeout,
                overwrite=args.overwrite,
            )
        except (NotebookExportError, FileNotFoundError, ValueError) as error:
            raise UsageError(str(error)) from error
        print(written)
        return 0


HTML = _HtmlCommand()


def _is_page(path: Path) -> bool:
    """An HTML page (an earlier export), which a new export replaces."""
    return starts_with(path, b"<!DOCTYPE html", b"<!doctype html", b"<html")
