"""The `nsdl` command: the notebook's jobs from a terminal (`nsdl fp16 model.onnx -o ...`).

Subcommands are registered in `COMMANDS` by name, with their one-line help and the place of
an object that implements them (imported only when that subcommand runs, so `nsdl --help`
stays fast). To add one, write an object with `add_arguments(parser)` and
`run(args) -> int` (exit code) and add one line to `COMMANDS`.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from nsdl_jupyter._errors import NsdlError
from nsdl_jupyter._version import __version__


class Subcommand(Protocol):
    def add_arguments(self, parser: argparse.ArgumentParser) -> None: ...

    def run(self, args: argparse.Namespace) -> int: ...


@dataclass(frozen=True)
class Entry:
    help: str
    target: str  # "package.module:attribute"


COMMANDS: dict[str, Entry] = {
    "fp16": Entry("convert weights and compute to float16", "nsdl_jupyter.cli._transforms:FP16"),
    "opset": Entry(
        "convert to another ONNX opset (onnx's version converter), validated",
        "nsdl_jupyter.cli._transforms:OPSET",
    ),
    "sanitize": Entry(
        "fold constants, remove no-op and dead nodes, infer shapes",
        "nsdl_jupyter.cli._transforms:SANITIZE",
    ),
    "extract": Entry(
        "extract a subgraph, an If/Loop/Scan body or a local function as a model",
        "nsdl_jupyter.cli._transforms:EXTRACT",
    ),
    "tensors": Entry(
        "list tensors or convert initializers/attributes to another dtype",
        "nsdl_jupyter.cli._transforms:TENSORS",
    ),
    "tools": Entry("list, add, remove and run user tools", "nsdl_jupyter.cli._transforms:TOOLS"),
    "transform": Entry(
        "run any registered transform pass (--list names them)",
        "nsdl_jupyter.cli._transforms:TRANSFORM",
    ),
    "html": Entry("notebook as HTML showing its widgets offline", "nsdl_jupyter.nbconvert:HTML"),
}


class UsageError(NsdlError):
    """A user error a subcommand reports as `nsdl <command>: error: ...` (exit code 2)."""


def _load(entry: Entry) -> Subcommand:
    module, _, attribute = entry.target.partition(":")
    command: Subcommand = getattr(importlib.import_module(module), attribute)
    return command


def _parser(selected: str | None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="nsdl",
        description="Nsight Deep Learning Designer jobs on ONNX models, without a notebook.",
    )
    parser.add_argument("--version", action="version", version=f"nsdl {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, entry in COMMANDS.items():
        sub = commands.add_parser(name, help=entry.help, description=entry.help)
        if name == selected:
            _load(entry).add_arguments(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `nsdl` console script; returns the exit code."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    selected = next((arg for arg in arguments if not arg.startswith("-")), None)
    parser = _parser(selected if selected in COMMANDS else None)
    args = parser.parse_args(arguments)
    if args.command is None:
        parser.print_help()
        return 2
    command = _load(COMMANDS[args.command])
    from nsdl_jupyter._errors import OutputPathError
    from nsdl_jupyter.document import DocumentError
    from nsdl_jupyter.transforms import TransformError

    try:
        return command.run(args)
    except (UsageError, TransformError, DocumentError, OutputPathError) as error:
        print(f"nsdl {args.command}: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"nsdl {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # the reader (e.g. `| head`) left: stop quietly, as other command-line tools do
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
