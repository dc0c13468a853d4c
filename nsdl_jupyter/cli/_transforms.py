"""`nsdl` subcommands of the transforms: fp16, opset, sanitize, extract, tensors, tools.

Each object is registered in `nsdl_jupyter.cli.COMMANDS`; it declares its arguments and
runs with the parsed namespace, printing the status log and returning an exit code (0 ok,
1 the modification reported a failure, 2 a usage error raised as TransformError).
"""

from __future__ import annotations

import argparse
import ast
import signal
import sys
import threading
from types import FrameType

from nsdl_jupyter.cli import UsageError
from nsdl_jupyter.document import open_model
from nsdl_jupyter.transforms import (
    DEFAULT_OP_BLOCK_LIST,
    TRANSFORMS,
    ToolRun,
    ToolStore,
    TransformStatus,
    UserTool,
    convert_opset,
    convert_tensors,
    convert_to_fp16,
    extract_body,
    extract_function,
    extract_subgraph,
    list_tensors,
    preview_tensor_conversion,
    run_tool,
    sanitize,
    transform_file,
    transform_named,
)


def _report(status: TransformStatus) -> int:
    print(status)
    return 0 if status.ok else 1


def _model_and_output(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model", help="the ONNX model to read")
    parser.add_argument("-o", "--output", required=True, help="where to write the result")
    _overwrite(parser)


def _overwrite(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="replace an existing output file (never the model read, its data or companion)",
    )


def _validation_arguments(parser: argparse.ArgumentParser, default_tolerance: float) -> None:
    parser.add_argument(
        "--no-validate",
        action="store_true",
        help="do not run the source and the result with onnxruntime to compare their outputs",
    )
    parser.add_argument(
        "--tolerance",
        type=float,
        default=default_tolerance,
        help="largest max abs error per output, times max(1, max |source output|) "
        f"(default {default_tolerance:g})",
    )
    parser.add_argument(
        "--provider",
        default="CPUExecutionProvider",
        help="onnxruntime execution provider for the validation (default CPUExecutionProvider)",
    )


class _Fp16:
    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        _model_and_output(parser)
        parser.add_argument(
            "--keep-io-types",
            action="store_true",
            help="keep float32 graph inputs and outputs (Casts at the border)",
        )
        parser.add_argument(
            "--keep-io", nargs="+", default=[], metavar="NAME", help="keep these inputs/outputs"
        )
        parser.add_argument(
            "--block-op", nargs="+", default=None, metavar="OP", help="operator types to keep"
        )
        parser.add_argument(
            "--no-default-block-list",
            action="store_true",
            help="do not keep the default operators (Range, CumSum, TopK, ...) in float32",
        )
        parser.add_argument(
            "--block-node", nargs="+", default=[], metavar="NODE", help="node names to keep"
        )
        _validation_arguments(parser, default_tolerance=1e-2)
        parser.add_argument(
            "--max-rounds",
            type=int,
            default=40,
            help="validation rounds at most when bisecting for nodes to keep float32",
        )

    def run(self, args: argparse.Namespace) -> int:

        blocked = list(args.block_op or [])
        if not args.no_default_block_list:
            blocked += sorted(DEFAULT_OP_BLOCK_LIST)
        keep: bool | list[str] = args.keep_io if args.keep_io else bool(args.keep_io_types)
        status = convert_to_fp16(
            args.model,
            args.output,
            overwrite=args.overwrite,
            keep_io_types=keep,
            op_block_list=blocked,
            node_block_list=args.block_node,
            validate=not args.no_validate,
            tolerance=args.tolerance,
            provider=args.provider,
            max_rounds=args.max_rounds,
        )
        return _report(status)


class _Opset:
    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        _model_and_output(parser)
        parser.add_argument("--target", type=int, required=True, help="the ONNX opset to reach")
        parser.add_argument(
            "--inline-functions",
            action="store_true",
            help="inline model-local functions first (the converter cannot convert them)",
        )
        _validation_arguments(parser, default_tolerance=1e-4)

    def run(self, args: argparse.Namespace) -> int:

        status = convert_opset(
            args.model,
            args.output,
            args.target,
            overwrite=args.overwrite,
            inline_functions=args.inline_functions,
            validate=not args.no_validate,
            tolerance=args.tolerance,
            provider=args.provider,
        )
        return _report(status)


class _Sanitize:
    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        _model_and_output(parser)
        parser.add_argument(
            "--fold-size-threshold",
            type=int,
            default=None,
            metavar="BYTES",
            help="do not fold tensors larger than this (default: no limit)",
        )
        parser.add_argument(
            "--passes", type=int, default=None, help="number of passes (default: until stable)"
        )
        parser.add_argument("--no-fold", action="store_true", help="no constant folding")
        parser.add_argument("--no-simplify", action="store_true", help="keep no-op nodes")
        parser.add_argument("--keep-dead", action="store_true", help="keep unused nodes")
        parser.add_argument("--no-shape-inference", action="store_true")
        parser.add_argument(
            "--fuse-batchnorm",
            action="store_true",
            help="fold BatchNormalization into Conv (changes rounding slightly)",
        )

    def run(self, args: argparse.Namespace) -> int:

        status = sanitize(
            args.model,
            args.output,
            overwrite=args.overwrite,
            fold_size_threshold=args.fold_size_threshold,
            passes=args.passes,
            fold_constants=not args.no_fold,
            simplify=not args.no_simplify,
            remove_dead_nodes=not args.keep_dead,
            infer_shapes=not args.no_shape_inference,
            fuse_batchnorm=args.fuse_batchnorm,
        )
        return _report(status)


class _Extract:
    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        _model_and_output(parser)
        what = parser.add_mutually_exclusive_group(required=True)
        what.add_argument(
            "--outputs", nargs="+", metavar="TENSOR", help="subgraph: tensors to compute"
        )
        what.add_argument("--body", metavar="NODE", help="the If/Loop/Scan node whose body")
        what.add_argument("--function", metavar="NAME", help="a model-local function")
        parser.add_argument(
            "--inputs", nargs="*", default=[], metavar="TENSOR", help="subgraph: where to cut"
        )
        parser.add_argument(
            "--attribute", default="body", help="--body: body, then_branch or else_branch"
        )
        parser.add_argument("--domain", default=None, help="--function: its domain")

    def run(self, args: argparse.Namespace) -> int:

        if args.outputs:
            status = extract_subgraph(
                args.model,
                args.output,
                inputs=args.inputs,
                outputs=args.outputs,
                overwrite=args.overwrite,
            )
        elif args.body:
            status = extract_body(
                args.model,
                args.output,
                node=args.body,
                attribute=args.attribute,
                overwrite=args.overwrite,
            )
        else:
            status = extract_function(
                args.model,
                args.output,
                name=args.function,
                domain=args.domain,
                overwrite=args.overwrite,
            )
        return _report(status)


class _Tensors:
    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("model", help="the ONNX model to read")
        parser.add_argument("--dtype", help="only tensors of this dtype (e.g. float32)")
        parser.add_argument(
            "--convert", nargs="+", metavar="NAME", help="tensors to convert (node.attr for attrs)"
        )
        parser.add_argument("--to", help="target dtype of --convert (e.g. float16)")
        parser.add_argument("-o", "--output", help="where to write the converted model")
        _overwrite(parser)
        parser.add_argument(
            "--preview", action="store_true", help="only print what the conversion would lose"
        )

    def run(self, args: argparse.Namespace) -> int:

        doc = open_model(args.model)
        selection = list(args.convert or [])
        if args.dtype and args.convert:
            wanted = {ref.name for ref in list_tensors(doc, args.dtype)}
            selection = [name for name in selection if name in wanted]
        if not args.convert:
            for ref in list_tensors(doc, args.dtype):
                shape = "x".join(map(str, ref.shape)) or "scalar"
                print(f"{ref.name}\t{ref.kind}\t{ref.dtype.name.lower()}\t{shape}")
            return 0
        if not args.to:
            raise UsageError("--convert needs --to DTYPE")
        if args.preview:
            print(preview_tensor_conversion(doc, selection, args.to))
            return 0
        if not args.output:
            raise UsageError("--convert needs -o OUTPUT (or --preview)")
        status = convert_tensors(doc, selection, args.to)
        doc.save(args.output, overwrite=args.overwrite)
        status.output = doc.path
        return _report(status)


class _Tools:
    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
        actions.add_parser("list", help="list the saved tools")
        add = actions.add_parser(
            "add",
            help="save a tool",
            description="Save a tool. Quote $Model and $Output so the shell keeps them: "
            "nsdl tools add simplify onnxsim '$Model' '$Output'",
        )
        add.add_argument("name")
        add.add_argument("application", help="program path or name on PATH")
        add.add_argument("arguments", nargs=argparse.REMAINDER, help="arguments ($Model, $Output)")
        add.add_argument("--prompt-output", action="store_true", help="ask for the output path")
        add.add_argument("--no-open", action="store_true", help="do not open the output")
        add.add_argument("--replace", action="store_true", help="overwrite a tool of that name")
        remove = actions.add_parser("remove", help="delete a saved tool")
        remove.add_argument("name")
        run = actions.add_parser("run", help="run a saved tool on a model")
        run.add_argument("name")
        run.add_argument("model")
        run.add_argument("-o", "--output", help="the $Output path")
        _overwrite(run)

    def run(self, args: argparse.Namespace) -> int:

        store = ToolStore()
        if args.action == "list":
            for tool in store.load():
                flags = " [prompts for output]" if tool.prompt_for_output else ""
                print(f"{tool.name}: {tool.application} {' '.join(tool.arguments)}{flags}")
            return 0
        if args.action == "add":
            tool = UserTool(
                args.name,
                args.application,
                list(args.arguments),
                prompt_for_output=args.prompt_output,
                open_output=not args.no_open,
            )
            tool.resolve_application()
            store.add(tool, replace=args.replace)
            print(f"saved tool {tool.name!r} in {store.path}")
            return 0
        if args.action == "remove":
            store.remove(args.name)
            print(f"removed tool {args.name!r}")
            return 0
        return self._run(store, args)

    def _run(self, store: ToolStore, args: argparse.Namespace) -> int:

        def echo(stream: str, line: str) -> None:
            print(line, file=sys.stderr if stream == "stderr" else sys.stdout, flush=True)

        # Handlers first: a Ctrl-C that comes while the tool starts must end it too.
        runs: list[ToolRun] = []
        early = threading.Event()
        if threading.current_thread() is threading.main_thread():

            def interrupted(_signum: int, _frame: FrameType | None) -> None:
                if runs:
                    runs[0].cancel()
                else:
                    early.set()

            signal.signal(signal.SIGINT, interrupted)
            signal.signal(signal.SIGTERM, interrupted)
        tool_run = run_tool(
            args.name,
            args.model,
            args.output,
            on_output=echo,
            store=store,
            overwrite=args.overwrite,
        )
        runs.append(tool_run)
        if early.is_set():
            tool_run.cancel()
        code = tool_run.wait()
        if tool_run.cancelled:
            print(f"tool {args.name!r} cancelled", file=sys.stderr)
            return 130
        if tool_run.error:
            print(f"{tool_run.error} (output: {tool_run.output})", file=sys.stderr)
        if code == 0 and tool_run.output is not None and tool_run.output.exists():
            print(f"output: {tool_run.output}")
        if code is not None and code < 0:
            return 128 - code  # ended by signal -code
        return int(code or 0)


FP16 = _Fp16()
OPSET = _Opset()
SANITIZE = _Sanitize()
EXTRACT = _Extract()
TENSORS = _Tensors()
TOOLS = _Tools()


class _Transform:
    """Any registered transform pass, options given as `--set name=value` (Python literals)."""

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--list", action="store_true", help="list the registered transforms")
        parser.add_argument("name", nargs="?", help="the transform (see --list)")
        parser.add_argument("model", nargs="?", help="the ONNX model to read")
        parser.add_argument("-o", "--output", help="where to write the result")
        _overwrite(parser)
        parser.add_argument(
            "--set",
            dest="options",
            action="append",
            default=[],
            metavar="OPTION=VALUE",
            help="a keyword argument of the pass (repeatable), e.g. --set target=17 or "
            "--set \"outputs=['y']\"",
        )

    def run(self, args: argparse.Namespace) -> int:
        if args.list:
            for entry in TRANSFORMS.values():
                print(f"{entry.name}\t{entry.help}")
            return 0
        if not (args.name and args.model and args.output):
            raise UsageError("give NAME MODEL -o OUTPUT (nsdl transform --list names them)")
        factory = transform_named(args.name).factory
        try:
            pass_ = factory(**dict(_option(text) for text in args.options))
        except TypeError as error:
            raise UsageError(f"{args.name}: {error}") from None
        return _report(transform_file(pass_, args.model, args.output, overwrite=args.overwrite))


def _option(text: str) -> tuple[str, object]:
    name, equals, value = text.partition("=")
    if not equals or not name.isidentifier():
        raise UsageError(f"options are NAME=VALUE, not {text!r}")
    try:
        return name, ast.literal_eval(value)
    except (ValueError, SyntaxError):
        return name, value  # a bare word is a string: provider=CPUExecutionProvider


TRANSFORM = _Transform()
