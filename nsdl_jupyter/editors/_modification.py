"""State logic of the Designer's Global Modifications dialog: which modifications there are,
their options, and one run of one of them on a document.

A run snapshots the document (a clone that shares the weights), then in a worker thread
saves the snapshot, applies the transform (or the user tool) to it, runs the source and the
result with onnxruntime on the same random inputs (`Validator`, in a child process) and
finally, on the kernel's event loop when there is one, makes the result the document's
contents as ONE undoable edit. FP16 with `validate` runs as `convert_to_fp16` does: on files,
with its bisection keeping the nodes that break accuracy float32, and its last validation is
the run's comparison. Cancel ends the run at once: nothing is applied, and the worker stops
at its next step (before the next validation round; a user tool's process is ended). The
document is never touched before the last step, and an edit made meanwhile makes the run
refuse to apply a result computed from an older model.
"""

from __future__ import annotations

import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import onnx
import onnx_ir as ir

from nsdl_jupyter._walk import every_node
from nsdl_jupyter.document import ChangeEvent, ModelDocument, open_model
from nsdl_jupyter.editors._errors import EditorError
from nsdl_jupyter.editors._type_check import _kernel_loop
from nsdl_jupyter.transforms import (
    DEFAULT_MAX_ROUNDS,
    DEFAULT_OP_BLOCK_LIST,
    DEFAULT_PROVIDER,
    FP16_TOLERANCE,
    OPSET_TOLERANCE,
    Fp16Pass,
    OpsetPass,
    OutputError,
    SanitizePass,
    TensorDtypePass,
    ToolError,
    ToolStore,
    TransformPass,
    TransformStatus,
    UserTool,
    ValidationResult,
    Validator,
    data_type,
    replace_document_model,
    run_tool,
    transform_file,
)

OptionValue = bool | int | float | str
RunState = Literal["running", "done", "failed", "cancelled"]
TOOL = "tool"  # the modification that runs a user tool
DTYPES = ("float32", "float16", "bfloat16", "float64", "int64", "int32", "int8", "uint8")
# max |difference| allowed relative to max(1, |output|) before the summary flags an output
_TOLERANCE = {"fp16": FP16_TOLERANCE, "opset": OPSET_TOLERANCE}
_DEFAULT_TOLERANCE = 1e-4
# where each phase starts on the progress bar
_PHASES = {"saving": 0.05, "transform": 0.15, "comparing": 0.55, "applying": 0.95, "done": 1.0}
_VALIDATION_SPAN = 0.75  # FP16 with validate: its rounds fill the bar from "transform" on


@dataclass(frozen=True)
class OptionSpec:
    """One option of a modification: a checkbox (bool), a number (int, float), a choice or
    text."""

    name: str
    label: str
    default: OptionValue
    choices: tuple[str, ...] = ()
    help: str = ""


@dataclass(frozen=True)
class Modification:
    """A modification the dialog offers: its name, label, one-line help and options."""

    name: str
    label: str
    help: str
    options: tuple[OptionSpec, ...]


def modifications(doc: ModelDocument, store: ToolStore | None = None) -> list[Modification]:
    """The dialog's choices for `doc`: FP16, sanitize, opset, tensor dtype, user tools."""
    opset = int(doc.opset_imports.get("", onnx.defs.onnx_opset_version()))
    tools = tuple(tool.name for tool in (store or ToolStore()).load())
    return [
        Modification(
            "fp16",
            "FP16 conversion",
            "float32 weights and compute to float16",
            (
                OptionSpec("keep_io_types", "keep float32 inputs/outputs", False),
                OptionSpec(
                    "op_block_list",
                    "operators kept float32",
                    ", ".join(DEFAULT_OP_BLOCK_LIST),
                    help="comma separated op types",
                ),
                OptionSpec(
                    "node_block_list", "nodes kept float32", "", help="comma separated node names"
                ),
                OptionSpec(
                    "validate",
                    "validate; keep the nodes that break accuracy float32",
                    True,
                    help="run the source and the result with onnxruntime; when the result is "
                    "out of tolerance, bisect for the nodes to keep float32",
                ),
                OptionSpec(
                    "tolerance",
                    "tolerance",
                    FP16_TOLERANCE,
                    help="max abs error per output, times max(1, max |source output|)",
                ),
                OptionSpec("provider", "validation provider", DEFAULT_PROVIDER, _providers()),
                OptionSpec("max_rounds", "most validation rounds", DEFAULT_MAX_ROUNDS),
            ),
        ),
        Modification(
            "sanitize",
            "Sanitize",
            "fold constants, remove no-op and dead nodes",
            (
                OptionSpec("fold_constants", "fold constants", True),
                OptionSpec("simplify", "remove no-op nodes", True),
                OptionSpec("remove_dead_nodes", "remove dead nodes", True),
                OptionSpec("infer_shapes", "infer shapes", True),
                OptionSpec("fuse_batchnorm", "fuse BatchNormalization into Conv", False),
            ),
        ),
        Modification(
            "opset",
            "Opset conversion",
            f"from opset {opset} to another",
            (
                OptionSpec("target", "target opset", opset),
                OptionSpec("inline_functions", "inline local functions", False),
            ),
        ),
        Modification(
            "tensor_dtype",
            "Tensor dtype conversion",
            "every initializer and tensor attribute of one dtype to another",
            (
                OptionSpec("from_dtype", "tensors of dtype", "float32", DTYPES),
                OptionSpec("to_dtype", "convert to", "float16", DTYPES),
            ),
        ),
        Modification(
            TOOL,
            "User tool",
            "run a saved user tool on the model, take its output",
            (
                OptionSpec(
                    "tool",
                    "tool",
                    tools[0] if tools else "",
                    tools,
                    help="nj.ToolStore().add(nj.UserTool(...)) saves one",
                ),
            ),
        ),
    ]


def _providers() -> tuple[str, ...]:
    """onnxruntime's execution providers here (validation runs in a child of this Python)."""
    import onnxruntime

    found = onnxruntime.get_available_providers()
    return tuple(dict.fromkeys([DEFAULT_PROVIDER, *found]))


def _names(text: object) -> list[str]:
    return [part.strip() for part in str(text).split(",") if part.strip()]


def make_pass(name: str, values: dict[str, OptionValue]) -> TransformPass:
    """The transform pass of modification `name` with the dialog's `values` (checked)."""
    if name == "fp16":
        return Fp16Pass(
            bool(values["keep_io_types"]),
            _names(values["op_block_list"]),
            _names(values["node_block_list"]),
            validate=bool(values.get("validate", False)),  # else the run compares itself
            tolerance=float(values.get("tolerance", FP16_TOLERANCE)),
            provider=str(values.get("provider", DEFAULT_PROVIDER)),
            max_rounds=int(values.get("max_rounds", DEFAULT_MAX_ROUNDS)),
        )
    if name == "sanitize":
        return SanitizePass(
            fold_constants=bool(values["fold_constants"]),
            simplify=bool(values["simplify"]),
            remove_dead_nodes=bool(values["remove_dead_nodes"]),
            infer_shapes=bool(values["infer_shapes"]),
            fuse_batchnorm=bool(values["fuse_batchnorm"]),
        )
    if name == "opset":
        return OpsetPass(
            int(values["target"]),
            inline_functions=bool(values["inline_functions"]),
            validate=False,
        )
    if name == "tensor_dtype":
        source, to = str(values["from_dtype"]), str(values["to_dtype"])
        if source == to:
            raise EditorError(f"tensors of dtype {source} are already {to}: pick another dtype")
        wanted = data_type(source)
        return TensorDtypePass(lambda ref: ref.dtype == wanted, to)
    raise EditorError(f"no modification named {name!r}")


@dataclass(frozen=True)
class ModelCounts:
    """Nodes (every graph, body and function) and initializers (main graph) of a model."""

    nodes: int
    initializers: int

    @classmethod
    def of(cls, model: ir.Model) -> ModelCounts:
        return cls(sum(1 for _ in every_node(model)), len(model.graph.initializers))


@dataclass
class ModificationResult:
    """What a finished run did: counts before and after, the per-output difference of the
    result from the source (onnxruntime, random inputs) and the transform's status."""

    label: str
    before: ModelCounts
    after: ModelCounts | None = None
    differences: list[OutputError] = field(default_factory=list)
    comparison: str = ""  # why there are no differences (the source cannot run, ...)
    status: TransformStatus | None = None
    changed: bool = True
    seconds: float = 0.0
    kept_float32: dict[str, str] = field(default_factory=dict)  # FP16 validation: node -> why

    def compared(self, checked: ValidationResult) -> None:
        """Take the result's comparison with the source."""
        self.differences = checked.errors
        if not checked.errors:
            self.comparison = checked.reason()

    def summary(self) -> str:
        """One line: nodes and initializers before -> after, the largest output difference."""
        after = self.after or self.before
        text = (
            f"{self.label}: nodes {self.before.nodes} → {after.nodes}, initializers "
            f"{self.before.initializers} → {after.initializers}"
        )
        if not self.changed:
            return f"{text}; the model did not change"
        if self.differences:
            worst = max(self.differences, key=lambda d: d.max_abs)
            text += f"; max abs diff {worst.max_abs:.3g}, max rel diff {worst.max_rel:.3g}"
        elif self.comparison:
            text += f"; {self.comparison}"
        if self.kept_float32:
            text += f"; {len(self.kept_float32)} node(s) kept float32 by validation"
        return text


class ModificationRun:
    """One modification of `doc` running in a worker thread (see the module docstring).

    `on_progress(phase, fraction)` and `on_done(run)` are called from the worker (on_done on
    the kernel's loop when there is one); `wait()` blocks until the run has ended.
    """

    def __init__(
        self,
        doc: ModelDocument,
        modification: Modification,
        values: dict[str, OptionValue],
        *,
        on_progress: Callable[[str, float], None] | None = None,
        on_done: Callable[[ModificationRun], None] | None = None,
        store: ToolStore | None = None,
    ) -> None:
        self.doc = doc
        self.modification = modification
        self.state: RunState = "running"
        self.error: BaseException | None = None
        self._on_progress = on_progress
        self._on_done = on_done
        self._cancelled = threading.Event()
        self._finished = threading.Event()
        self._lock = threading.Lock()
        # everything the user can get wrong is refused here, before any work starts
        self._tool: UserTool | None = None
        self._pass: TransformPass | None = None
        self._validated: Fp16Pass | None = None  # FP16 that validates and bisects itself
        if modification.name == TOOL:
            chosen = str(values.get("tool") or "")
            if not chosen:
                raise ToolError("no user tool is saved: nj.ToolStore().add(nj.UserTool(...))")
            self._tool = (store or ToolStore()).get(chosen)
            self._tool.resolve_application()
            if not self._tool.uses_output:
                raise ToolError(f"tool {chosen!r} has no $Output argument: it gives no model back")
        else:
            self._pass = make_pass(modification.name, values)
            if isinstance(self._pass, Fp16Pass) and self._pass.validation is not None:
                self._validated = self._pass
                self._pass.before_round = self._validation_round
        doc._check_editable()  # an open body refuses edits: say so now, not at the end
        self._snapshot = doc.model.clone()
        self.result = ModificationResult(modification.label, ModelCounts.of(self._snapshot))
        self._edited = False
        self._unsubscribe = doc.subscribe(self._on_edit)
        self._loop = _kernel_loop()
        self._started = time.perf_counter()
        self._thread = threading.Thread(target=self._work, daemon=True, name="nsdl-modify")
        self._thread.start()

    # ------------------------------------------------------------------ worker
    def _on_edit(self, event: ChangeEvent) -> None:
        if event.source != "save":
            self._edited = True

    def _progress(self, phase: str, fraction: float | None = None) -> None:
        if self._cancelled.is_set():
            raise _CancelledError
        if self._on_progress is not None:
            self._on_progress(phase, _PHASES[phase] if fraction is None else fraction)

    def _validation_round(self, number: int) -> None:
        """Before each FP16 validation round: a cancelled run stops here."""
        assert self._validated is not None
        assert self._validated.validation is not None
        share = min(1.0, (number - 1) / self._validated.validation[2])
        self._progress(
            f"validation round {number}", _PHASES["transform"] + _VALIDATION_SPAN * share
        )

    def _work(self) -> None:
        try:
            with tempfile.TemporaryDirectory(prefix="nsdl-modify-") as folder:
                model = self._compute(Path(folder))
        except _CancelledError:
            return
        except Exception as error:  # shown by the dialog: this thread has no caller
            self._end("failed", error)
            return
        if self._loop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._apply, model)
        else:
            self._apply(model)

    def _compute(self, folder: Path) -> ir.Model | None:
        """The changed copy (None: no change), its counts and its output differences."""
        self._progress("saving")
        source = folder / "source.onnx"
        ir.save(self._snapshot, source, external_data="source.onnx.data")
        self._progress("transform")
        if self._validated is not None:
            return self._validated_fp16(self._validated, source, folder)
        model = self._transformed(source)
        if model is None:
            self.result.changed = False
            return None
        self.result.after = ModelCounts.of(model)
        self._progress("comparing")
        result = folder / "result.onnx"
        ir.save(model, result, external_data="result.onnx.data")
        tolerance = _TOLERANCE.get(self.modification.name, _DEFAULT_TOLERANCE)
        with Validator(source, tolerance=tolerance) as validator:
            self.result.compared(validator.check(result))
        return model

    def _validated_fp16(self, fp16: Fp16Pass, source: Path, folder: Path) -> ir.Model:
        """`convert_to_fp16` on the saved snapshot: validated, the nodes that break accuracy
        kept float32; its last validation is the comparison."""
        status = transform_file(fp16, source, folder / "fp16.onnx")
        self.result.status = status
        assert status.output is not None
        assert fp16.last_validation is not None
        self.result.compared(fp16.last_validation)
        self.result.kept_float32 = dict(fp16.kept_float32)
        model = ir.load(status.output)
        ir.external_data.load_to_model(model)  # the folder goes when the run ends
        self.result.after = ModelCounts.of(model)
        return model

    def _transformed(self, source: Path) -> ir.Model | None:
        if self._pass is not None:
            outcome = self._pass(self._snapshot)
            self.result.status = self._pass.status
            return outcome.model if outcome.modified else None
        assert self._tool is not None
        run = run_tool(self._tool, source)
        while not run.done:
            if self._cancelled.is_set():
                run.cancel()
            run.wait(0.1)
        self.result.status = run.status
        if self._cancelled.is_set():
            raise _CancelledError
        if run.returncode != 0 or run.output is None or not run.output.is_file():
            last = run.lines[-1][1] if run.lines else "no output"
            why = f"exit code {run.returncode}" if run.returncode else "it wrote no model"
            raise ToolError(f"tool {self._tool.name!r} failed ({why}): {last}")
        return open_model(run.output).model

    def _apply(self, model: ir.Model | None) -> None:
        """On the kernel's thread: the result becomes the document's contents (one edit)."""
        with self._lock:
            if self._cancelled.is_set():
                return
            try:
                if self._edited:
                    raise EditorError(
                        "the model was edited while the modification ran: run it again"
                    )
                if model is not None:
                    self._progress("applying")
                    replace_document_model(self.doc, model, self.modification.label)
            except _CancelledError:
                return
            except Exception as error:
                self._end("failed", error, locked=True)
                return
            self._end("done", None, locked=True)

    def _end(self, state: RunState, error: BaseException | None, *, locked: bool = False) -> None:
        if not locked:
            with self._lock:
                self._end(state, error, locked=True)
            return
        if self._finished.is_set():
            return
        self.result.seconds = time.perf_counter() - self._started
        self.state, self.error = state, error
        self._unsubscribe()
        self._finished.set()
        if self._on_done is not None:
            self._on_done(self)

    # ------------------------------------------------------------------ control
    def cancel(self) -> None:
        """End the run now: nothing is applied and the document stays as it was; the worker
        stops at its next step (FP16 validation before its next round, a user tool's process
        is ended; a pass's own step finishes unseen)."""
        self._cancelled.set()
        self._end("cancelled", None)

    @property
    def done(self) -> bool:
        return self._finished.is_set()

    def wait(self, timeout: float | None = None) -> RunState:
        """Block until the run has ended (scripts and tests without a running event loop)."""
        self._finished.wait(timeout)
        return self.state


class _CancelledError(Exception):
    """The run was cancelled: the worker stops at its next step."""
