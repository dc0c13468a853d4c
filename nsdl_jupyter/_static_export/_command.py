"""`nsdl html NOTEBOOK`: a notebook as static HTML that shows the widgets' last state."""

from __future__ import annotations

import argparse
from pathlib import Path


class _HtmlCommand:
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

    def run(self, args: argparse.Namespace) -> int:
        from nsdl_jupyter.cli import UsageError
        from nsdl_jupyter.nbconvert import NotebookExportError, export_notebook_html

        try:
            written = export_notebook_html(
                args.notebook, args.output, execute=args.execute, timeout=args.timeout
            )
        except (NotebookExportError, FileNotFoundError, ValueError) as error:
            raise UsageError(str(error)) from error
        print(written)
        return 0


HTML = _HtmlCommand()
