"""Convert a model's weights and compute from float32 to float16.

Written on onnx_ir rather than wrapping onnxconverter-common, whose converter (measured on
real architectures, issue 6) leaves If/Loop subgraphs and local-function bodies in float32,
turns `Cast(to=FLOAT)` into `Cast(to=FLOAT16)`, converts Resize scales, inserts Casts out of
topological order with kept IO types and leaves chains of redundant Casts.

How it works: every node gets a plan that depends only on the node itself. A node runs in
float16 when its operator schema allows float16 for the type parameter bound to its float32
tensors (so `Resize.scales`, typed `tensor(float)`, stays float32 by construction); blocked
operators and nodes, unknown operators and nodes whose tensor types cannot be told keep
float32. The plan gives the dtype each input slot needs; walking the graph in order, a Cast
is inserted only where the tensor at hand has another dtype, shared by all consumers in the
same graph. Subgraphs and function bodies are converted the same way, their signatures
following the node that owns them. Weights and constants are converted in place when every
consumer wants float16, clamped to float16's finite range (never to inf: `0 * inf` is NaN).
Attributes that reference a function's parameter (`value_float=@epsilon`) have no value to
convert: such a Constant stays float32 and its users get a Cast.

A converted model is only useful if it runs: by default the result is validated against the
source with onnxruntime in a child process (`_validate`), and nodes that make onnxruntime
crash or go out of tolerance are found by bisection (`_bisect`) and kept float32.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import onnx_ir as ir

from nsdl_jupyter._walk import every_node, nodes_in, subgraphs
from nsdl_jupyter.transforms._bisect import BisectionResult, bisect_nodes, node_role
from nsdl_jupyter.transforms._dtypes import (
    DtypeInference,
    FunctionId,
    formal_index,
    node_schema,
    tensor_dtype,
)
from nsdl_jupyter.transforms._passes import TransformPass, register, transform_file
from nsdl_jupyter.transforms._status import TransformStatus
from nsdl_jupyter.transforms._tensor_dtype import saturate_to_float
from nsdl_jupyter.transforms._validate import (
    DEFAULT_PROVIDER,
    ValidationResult,
    Validator,
    check_validation_arguments,
)
from nsdl_jupyter.transforms._working_copy import (
    ModelSource,
    TransformError,
    check_output_path,
    working_copy,
)

FLOAT = ir.DataType.FLOAT
FLOAT16 = ir.DataType.FLOAT16
_FP16_MAX = float(np.finfo(np.float16).max)
# Validation: max abs error per output <= FP16_TOLERANCE * max(1, max |source output|).
FP16_TOLERANCE = 1e-2
DEFAULT_MAX_ROUNDS = 40
# Converted weights of at least this many elements are reused between validation rounds.
_CACHED_SIZE = 4096
Fp16Cache = dict[tuple[str, tuple[int, ...], float], tuple[np.ndarray, TransformStatus]]

# Operators whose float inputs decide counts, boxes or long accumulations: float16 would
# change the result's meaning, not just its precision.
# MeanVarianceNormalization: onnxruntime runs it as its ONNX function body, whose float32
# epsilon constant then meets float16 ("T bound to different types").
DEFAULT_OP_BLOCK_LIST: frozenset[str] = frozenset(
    {
        "Range",
        "CumSum",
        "NonMaxSuppression",
        "RoiAlign",
        "TopK",
        "STFT",
        "DFT",
        "MeanVarianceNormalization",
    }
)

# Never converted, whatever the block lists say: BitCast reinterprets bits (float16 would
# change the bit width); the classic-ML domain has tensor attributes typed like its inputs.
_NEVER_CONVERTED = frozenset({"BitCast"})
_NEVER_CONVERTED_DOMAINS = frozenset({"ai.onnx.ml", "ai.onnx.preview.training"})
# Scatter reductions accumulate; onnxruntime's CPU kernels refuse them in float16.
_REDUCING_SCATTERS = frozenset({"ScatterElements", "ScatterND"})

# Input slots that must keep their float32 type even when their type parameter allows
# float16 (Resize's `roi` shares no parameter with X; onnxruntime reads it as float).
_KEEP_FLOAT_INPUTS: Mapping[str, frozenset[int]] = {
    "Resize": frozenset({1, 2}),
    "Upsample": frozenset({1}),
}

# Operators whose output dtype does not depend on the input dtype: they accept any input.
_ANY_INPUT = frozenset({"Cast", "CastLike", "Shape", "Size"})
_CONSTANT_SOURCES = frozenset({"Constant", "ConstantOfShape"})
_CONTROL_FLOW = frozenset({"If", "Loop", "Scan"})


@dataclass
class _Plan:
    """What a node needs: a dtype per input slot (None: any) and which outputs turn float16."""

    converted: bool
    inputs: list[ir.DataType | None]
    outputs: list[bool]
    reason: str = ""


def convert_to_fp16(
    model: ModelSource,
    output: str | os.PathLike[str],
    keep_io_types: bool | Collection[str] = False,
    op_block_list: Iterable[str] | None = None,
    node_block_list: Iterable[str] | None = None,
    *,
    validate: bool = True,
    tolerance: float = FP16_TOLERANCE,
    provider: str = DEFAULT_PROVIDER,
    max_rounds: int = DEFAULT_MAX_ROUNDS,
    overwrite: bool = False,
) -> TransformStatus:
    """Write `model` with float32 weights and compute converted to float16 to `output`.

    `keep_io_types`: True keeps every float32 graph input/output float32 (Casts at the
    border), or a collection of input/output names to keep. `op_block_list`: operator types
    (or ``domain::op``, or local function names) that stay float32; None means
    `DEFAULT_OP_BLOCK_LIST`. `node_block_list`: node names that stay float32.

    `validate`: run the source and the result with onnxruntime (`provider`, default graph
    optimizations) in a child process on random inputs and compare each output (max abs
    error <= `tolerance` * max(1, max |source output|)); when the result crashes, cannot be
    loaded or is out of tolerance, bisect for the nodes to keep float32 (at most `max_rounds`
    validation rounds). Returns a TransformStatus: counts, per-output errors, nodes kept.
    """
    target = check_output_path(output)
    fp16 = Fp16Pass(
        keep_io_types,
        op_block_list,
        node_block_list,
        validate=validate,
        tolerance=tolerance,
        provider=provider,
        max_rounds=max_rounds,
    )
    return transform_file(fp16, model, target, overwrite=overwrite)


@register("fp16", "convert weights and compute to float16")
class Fp16Pass(TransformPass):
    """Float32 weights and compute to float16 (see `convert_to_fp16` for the options); on a
    file, the result is validated and nodes that fail are kept float32.

    After `validate`: `last_validation` holds the last validation of the written result,
    `kept_float32` the nodes the bisection kept (node -> why; empty when none). Set
    `before_round` to be called with each validation round's number (raise to stop)."""

    operation = "convert_to_fp16"
    before_round: Callable[[int], None] | None = None

    def __init__(
        self,
        keep_io_types: bool | Collection[str] = False,
        op_block_list: Iterable[str] | None = None,
        node_block_list: Iterable[str] | None = None,
        *,
        validate: bool = True,
        tolerance: float = FP16_TOLERANCE,
        provider: str = DEFAULT_PROVIDER,
        max_rounds: int = DEFAULT_MAX_ROUNDS,
        status: TransformStatus | None = None,
    ) -> None:
        super().__init__(status=status)
        if validate:
            check_validation_arguments(tolerance, provider)
            if isinstance(max_rounds, bool) or not isinstance(max_rounds, int) or max_rounds < 1:
                raise TransformError(f"max_rounds must be an int >= 1, not {max_rounds!r}")
        if isinstance(op_block_list, str) or isinstance(node_block_list, str):
            raise TransformError("op_block_list and node_block_list take lists of names, not a str")
        if isinstance(keep_io_types, str):
            raise TransformError("keep_io_types takes True/False or a list of names, not a str")
        blocked_ops = frozenset(DEFAULT_OP_BLOCK_LIST if op_block_list is None else op_block_list)
        self.settings = _Settings(keep_io_types, blocked_ops, frozenset(node_block_list or ()))
        self.validation = (tolerance, provider, max_rounds) if validate else None
        self.converter: _Fp16Converter | None = None
        self.last_validation: ValidationResult | None = None
        self.kept_float32: dict[str, str] = {}

    def apply(self, model: ir.Model) -> bool:
        keep_io_types = self.settings.keep_io_types
        io_names = _io_names(model)
        if not isinstance(keep_io_types, bool):
            unknown = sorted(set(keep_io_types) - io_names)
            if unknown:
                raise TransformError(
                    f"keep_io_types names {unknown} are not graph inputs or outputs; "
                    f"they are: {sorted(io_names)}"
                )
        all_nodes = {node.name for node in every_node(model)}
        missing = sorted(self.settings.blocked_nodes - all_nodes)
        if missing:
            raise TransformError(f"node_block_list names unknown nodes {missing}")
        self.converter = self.settings.convert(model, self.status)
        return True

    def validate(self, source: ModelSource, target: Path, saved: Path) -> Path:
        if self.validation is None or self.converter is None:
            return saved
        tolerance, provider, max_rounds = self.validation
        with Validator(
            source, tolerance=tolerance, provider=provider, before_round=self.before_round
        ) as validator:
            saved, self.last_validation, found = _validate_and_fix(
                source,
                target,
                saved,
                converter=self.converter,
                settings=self.settings,
                validator=validator,
                status=self.status,
                max_rounds=max_rounds,
            )
        if found is not None and found.kept is not None:
            self.kept_float32 = {
                name: found.culprits.get(name, "not tried within max_rounds")
                for name in sorted(found.kept)
            }
        return saved


@dataclass(frozen=True)
class _Settings:
    """The user's choices, applied the same way in every validation round."""

    keep_io_types: bool | Collection[str]
    blocked_ops: frozenset[str]
    blocked_nodes: frozenset[str]
    cache: Fp16Cache | None = None

    def convert(
        self, model: ir.Model, status: TransformStatus, kept: frozenset[str] = frozenset()
    ) -> _Fp16Converter:
        blocked = self.blocked_nodes | kept
        converter = _Fp16Converter(
            model, self.keep_io_types, self.blocked_ops, blocked, status, cache=self.cache
        )
        converter.run()
        return converter


def _validate_and_fix(
    model: ModelSource,
    target: Path,
    saved: Path,
    *,
    converter: _Fp16Converter,
    settings: _Settings,
    validator: Validator,
    status: TransformStatus,
    max_rounds: int,
) -> tuple[Path, ValidationResult, BisectionResult | None]:
    """Validate the written result; when it fails, bisect for nodes to keep float32 and
    write the result again with them kept. Returns where the result is, its last validation
    and the bisection (None when there was none)."""
    first = validator.check(saved)
    if first.passed or first.outcome == "not_validated":
        validator.report(status, first)
        return saved, first, None

    # Rounds start from a copy with external data: it opens without reading the weights,
    # and candidates are written without serializing them into a protobuf (seconds a round).
    base = validator.folder / "base.onnx"
    ir.save(working_copy(model).model, base, external_data="base.onnx.data")
    rounds = replace(settings, cache={})

    def attempt(kept: frozenset[str]) -> ValidationResult:
        trial = working_copy(base).model
        rounds.convert(trial, TransformStatus("convert_to_fp16"), kept)
        candidate = validator.folder / "candidate.onnx"
        ir.save(trial, candidate, external_data="candidate.onnx.data")
        return validator.check(candidate)

    roles = {node.name or "": _role(node) for node in converter.converted_nodes()}
    found = bisect_nodes(list(roles), attempt, max_rounds - 1, roles)
    if found.kept is None:
        _report_unfixable(status, validator, first, found)
        return saved, first, found
    for part in (status.log, status.warnings, status.counts):
        part.clear()  # the final conversion logs and counts afresh
    copy = working_copy(model)
    settings.convert(copy.model, status, found.kept)
    saved = copy.save(target, status, model, overwrite=True)  # its own first result
    _report_bisection(status, validator, first, found)
    assert found.passing is not None
    return saved, found.passing, found


def _role(node: ir.Node) -> str:
    return node_role(node.op_type, node.name or "", node.metadata_props.get("namespace"))


def _report_unfixable(
    status: TransformStatus, validator: Validator, first: ValidationResult, found: BisectionResult
) -> None:
    validator.report(status, first)
    if found.capped:
        status.fail(
            f"the result fails validation ({first.reason()}) and max_rounds={validator.rounds} "
            "was too few to try keeping nodes float32: raise max_rounds"
        )
        return
    last = found.last_failure.reason() if found.last_failure is not None else first.reason()
    status.fail(
        f"the result fails validation ({first.reason()}), and still does with every converted "
        f"node kept float32 ({last}): the written model is not valid; check the source model, "
        "or keep the inputs and outputs float32 (keep_io_types=True)"
    )


def _report_bisection(
    status: TransformStatus, validator: Validator, first: ValidationResult, found: BisectionResult
) -> None:
    assert found.kept is not None
    assert found.passing is not None
    names = sorted(found.kept)
    shown = ", ".join(names[:20]) + (f" and {len(names) - 20} more" if len(names) > 20 else "")
    status.warn(
        f"kept {len(names)} node(s) float32 so the result passes validation "
        f"({validator.rounds} rounds; the full conversion: {first.reason()}): {shown}"
    )
    for name, why in sorted(found.culprits.items()):
        status.info(f"kept {name} float32: converting it gave: {why}")
    if found.capped:
        status.warn(
            f"validation stopped at max_rounds={validator.rounds}: the nodes not yet tried "
            "were all kept float32; a larger max_rounds may keep fewer"
        )
    status.counts["nodes_kept_by_validation"] = len(names)
    validator.report(status, found.passing)


def _io_names(model: ir.Model) -> set[str]:
    return {v.name or "" for v in [*model.graph.inputs, *model.graph.outputs]}


class _Fp16Converter:
    def __init__(
        self,
        model: ir.Model,
        keep_io_types: bool | Collection[str],
        blocked_ops: frozenset[str],
        blocked_nodes: frozenset[str],
        status: TransformStatus,
        *,
        cache: Fp16Cache | None = None,
    ) -> None:
        self.model = model
        self.cache = cache
        self.keep_io = keep_io_types
        self.blocked_ops = blocked_ops
        self.blocked_nodes = blocked_nodes
        self.status = status
        model.graph.sort()
        for function in model.functions.values():
            function.sort()
        self.types = DtypeInference(model).run()
        self.original: dict[ir.Value, ir.DataType | None] = dict(self.types.dtypes)
        self.current: dict[ir.Value, ir.DataType | None] = {}
        self.plans: dict[ir.Node, _Plan] = {}
        self.casts: dict[tuple[int, ir.Value, ir.DataType], ir.Value] = {}
        self.inserted: list[ir.Node] = []
        self.names = _taken_names(model)
        self.functions = self._convertible_functions()
        self.kept_reasons: dict[str, int] = {}

    # ---------------------------------------------------------------- decisions
    def _convertible_functions(self) -> set[FunctionId]:
        """Local functions to convert: not blocked, called, one call signature, and only
        called from places that are converted themselves (fixpoint)."""
        candidates: set[FunctionId] = set()
        for fid, function in self.model.functions.items():
            signatures = self.types.call_signatures.get(fid, set())
            if function.name in self.blocked_ops or f"{function.domain}::{function.name}" in (
                self.blocked_ops
            ):
                self.status.info(f"function {function.domain}::{function.name} kept float32")
            elif len(signatures) > 1:
                self.status.warn(
                    f"function {function.domain}::{function.name} is called with different "
                    "input types: kept float32"
                )
            elif signatures:
                candidates.add(fid)
        changed = True
        while changed:
            changed = False
            for fid in sorted(candidates):
                for caller, node in self._call_sites(fid):
                    if node.name in self.blocked_nodes or (
                        caller is not None and caller not in candidates
                    ):
                        candidates.discard(fid)
                        changed = True
                        break
        return candidates

    def _call_sites(self, fid: FunctionId) -> Iterator[tuple[FunctionId | None, ir.Node]]:
        for node in nodes_in(self.model.graph):
            if node.op_identifier() == fid:
                yield None, node
        for caller, function in self.model.functions.items():
            for node in nodes_in(function):
                if node.op_identifier() == fid:
                    yield caller, node

    def plan(self, node: ir.Node, imports: Mapping[str, int]) -> _Plan:
        cached = self.plans.get(node)
        if cached is None:
            cached = self.plans[node] = self._make_plan(node, imports)
            if not cached.converted and cached.reason:
                self.kept_reasons[cached.reason] = self.kept_reasons.get(cached.reason, 0) + 1
        return cached

    def _kept(self, node: ir.Node, reason: str) -> _Plan:
        inputs = [self.original.get(v) if v is not None else None for v in node.inputs]
        return _Plan(False, inputs, [False] * len(node.outputs), reason)

    def _make_plan(self, node: ir.Node, imports: Mapping[str, int]) -> _Plan:
        op = node.op_type
        standard = node.domain in ("", "ai.onnx")
        if node.name in self.blocked_nodes:
            return self._kept(node, "in node_block_list")
        if op in self.blocked_ops or f"{node.domain}::{op}" in self.blocked_ops:
            return self._kept(node, f"{op} in op_block_list")
        if node.domain in _NEVER_CONVERTED_DOMAINS or (standard and op in _NEVER_CONVERTED):
            return self._kept(node, f"{node.domain or 'ai.onnx'}::{op} is never converted")
        reduction = node.attributes.get("reduction")
        reducing = reduction is not None and reduction.as_string() != "none"
        if standard and op in _REDUCING_SCATTERS and reducing:
            return self._kept(node, f"{op} with a reduction")
        if any(_is_container(v) for v in [*node.inputs, *node.outputs]):
            return self._kept(node, f"{op} with sequence, optional or map tensors")
        if standard and op in _ANY_INPUT:
            return _Plan(False, [None] * len(node.inputs), [False] * len(node.outputs))
        if standard and op in _CONSTANT_SOURCES:
            return _Plan(False, [None] * len(node.inputs), [False] * len(node.outputs))
        if node.op_identifier() in self.model.functions or (standard and op in _CONTROL_FLOW):
            if node.op_identifier() in self.model.functions and (
                node.op_identifier() not in self.functions
            ):
                return self._kept(node, f"function {op} kept float32")
            inputs = [self._wanted(v) for v in node.inputs]
            outputs = [self.original.get(v) == FLOAT for v in node.outputs]
            return _Plan(any(outputs) or FLOAT16 in inputs, inputs, outputs)
        schema = node_schema(node, imports)
        if schema is None:
            return self._kept(node, f"no schema for {node.domain or 'ai.onnx'}::{op}")
        return self._schema_plan(node, schema)

    def _wanted(self, value: ir.Value | None) -> ir.DataType | None:
        if value is None:
            return None
        dtype = self.original.get(value)
        return FLOAT16 if dtype == FLOAT else dtype

    def _schema_plan(self, node: ir.Node, schema: object) -> _Plan:
        from nsdl_jupyter.ops import OpSchemaInfo

        assert isinstance(schema, OpSchemaInfo)
        keep_slots = _KEEP_FLOAT_INPUTS.get(node.op_type, frozenset())
        params: dict[str, set[ir.DataType | None]] = {}
        blocked_params: set[str] = set()
        for index, value in enumerate(node.inputs):
            formal = formal_index(schema, index)
            if value is None or formal is None:
                continue
            type_str = schema.inputs[formal].type_str
            params.setdefault(type_str, set()).add(self.original.get(value))
            if index in keep_slots:
                blocked_params.add(type_str)
        bound_by_inputs = set(params)
        for index, value in enumerate(node.outputs):
            formal = formal_index(schema, index, outputs=True)
            if formal is None:
                continue
            type_str = schema.outputs[formal].type_str
            params.setdefault(type_str, set()).add(self.original.get(value))
        for type_str, dtypes in params.items():
            allowed = schema.type_constraints.get(type_str, ())
            # a sequence/optional whose element type we cannot tell (SequenceConstruct's S)
            if None in dtypes and any(not t.startswith("tensor(") for t in allowed):
                return self._kept(node, f"{node.op_type} with sequence or optional tensors")
        converted = {
            type_str
            for type_str, dtypes in params.items()
            if dtypes == {FLOAT}
            and "tensor(float16)" in schema.type_constraints.get(type_str, ())
            and type_str not in blocked_params
            and type_str in bound_by_inputs
        }
        if not converted:
            has_float = any(FLOAT in dtypes for dtypes in params.values())
            reason = f"{node.op_type} has no float16 kernel type" if has_float else ""
            return self._kept(node, reason)
        inputs: list[ir.DataType | None] = []
        for index, value in enumerate(node.inputs):
            formal = formal_index(schema, index)
            dtype = self.original.get(value) if value is not None else None
            if formal is not None and schema.inputs[formal].type_str in converted:
                dtype = FLOAT16
            inputs.append(dtype)
        outputs = []
        output_only = False
        for index in range(len(node.outputs)):
            formal = formal_index(schema, index, outputs=True)
            type_str = schema.outputs[formal].type_str if formal is not None else ""
            outputs.append(type_str in converted)
            output_only |= type_str in schema.type_constraints and type_str not in bound_by_inputs
        if output_only and schema.source == "onnx":
            # A parameter seen only on outputs is set by an attribute (EyeLike's dtype) or by
            # the operator's inference (LinearAttention's state follows T): ask onnx.
            inferred = _inferred_outputs(node, inputs, schema.since_version)
            for index, dtype in enumerate(inferred):
                if dtype == FLOAT16 and self.original.get(node.outputs[index]) == FLOAT:
                    outputs[index] = True
        return _Plan(True, inputs, outputs)

    def converted_nodes(self) -> list[ir.Node]:
        """Named nodes that run float16 after `run`, in graph order (function bodies last)."""
        return [
            node
            for node in every_node(self.model)
            if node.name and node in self.plans and self.plans[node].converted
        ]

    # ------------------------------------------------------------------ walking
    def run(self) -> None:
        graph = self.model.graph
        imports = graph.opset_imports
        for value in graph.inputs:
            self._set_source(value, FLOAT16 if self._io_converted(value) else None)
        self._convert_initializers(graph, imports)
        self._walk(graph, imports, main=True)
        for fid in sorted(self.functions):
            self._convert_function(self.model.functions[fid])
        self._drop_round_trips()
        self._import_default_domain()
        for reason, count in sorted(self.kept_reasons.items()):
            self.status.info(f"kept float32: {count} node(s): {reason}")

    def _import_default_domain(self) -> None:
        """Cast lives in the default domain: a model importing only ai.onnx.ml needs it."""
        if not self.inserted:
            return
        main = self.model.graph.opset_imports
        if "" not in main:
            main[""] = 13
            self.status.info("added an import of ONNX opset 13 for the inserted Cast nodes")
        for function in self.model.functions.values():
            uses_cast = any(node in self.inserted for node in function)
            if uses_cast and "" not in function.opset_imports:
                function.opset_imports[""] = main[""]

    def _io_converted(self, value: ir.Value) -> bool:
        if self.keep_io is True:
            return False
        if self.keep_io is False:
            return True
        return (value.name or "") not in self.keep_io

    def _set_source(self, value: ir.Value, new: ir.DataType | None) -> None:
        original = self.original.get(value)
        if new is not None and original == FLOAT:
            _retype(value, FLOAT16)
            self.current[value] = FLOAT16
        else:
            self.current[value] = original

    def _convert_initializers(self, graph: ir.Graph, imports: Mapping[str, int]) -> None:
        for value in list(graph.initializers.values()):
            if self.original.get(value) == FLOAT and self._every_use_wants_fp16(value, imports):
                assert value.const_value is not None
                value.const_value = ir.tensor(
                    self._to_fp16(value.const_value.numpy(), value.name or ""), name=value.name
                )
                _retype(value, FLOAT16)
                self.current[value] = FLOAT16
                self.status.count("initializers_converted")
            else:
                self.current[value] = self.original.get(value)

    def _every_use_wants_fp16(self, value: ir.Value, imports: Mapping[str, int]) -> bool:
        if value in self.model.graph.outputs and not self._io_converted(value):
            return False
        for user, index in value.uses():
            wanted = self.plan(user, imports).inputs[index]
            if wanted is not None and wanted != FLOAT16:
                return False
        return True

    def _walk(
        self,
        graph: ir.Graph | ir.Function,
        imports: Mapping[str, int],
        *,
        main: bool = False,
        io_converted: bool = True,
    ) -> None:
        for node in list(graph):
            plan = self.plan(node, imports)
            for index, value in enumerate(node.inputs):
                wanted = plan.inputs[index] if index < len(plan.inputs) else None
                if value is None or wanted is None:
                    continue
                have = self.current.get(value, self.original.get(value))
                if have is not None and have != wanted and {have, wanted} <= {FLOAT, FLOAT16}:
                    node.replace_input_with(index, self._cast(value, wanted, graph, node))
            self._walk_subgraphs(node, imports, plan.converted)
            self._set_outputs(node, plan, imports)
        self._fix_outputs(graph, main=main, io_converted=io_converted)

    def _walk_subgraphs(self, node: ir.Node, imports: Mapping[str, int], converted: bool) -> None:
        for subgraph in subgraphs(node):
            for value in subgraph.inputs:
                self._set_source(value, FLOAT16 if converted else None)
            self._convert_initializers(subgraph, imports)
            self._walk(subgraph, imports, io_converted=converted)

    def _set_outputs(self, node: ir.Node, plan: _Plan, imports: Mapping[str, int]) -> None:
        standard = node.domain in ("", "ai.onnx")
        if standard and node.op_type in _CONSTANT_SOURCES:
            value = node.outputs[0]
            # `value_float=@epsilon` in a function body has no value until the call: it stays
            # float32 and its users get a Cast.
            if (
                self.original.get(value) == FLOAT
                and not any(attr.is_ref() for attr in node.attributes.values())
                and self._every_use_wants_fp16(value, imports)
            ):
                self._convert_constant(node)
                _retype(value, FLOAT16)
                self.current[value] = FLOAT16
                return
        if standard and node.op_type == "CastLike" and len(node.inputs) > 1:
            like = node.inputs[1]
            dtype = self.current.get(like) if like is not None else None
            if dtype is not None:
                _retype(node.outputs[0], dtype)
            self.current[node.outputs[0]] = dtype
            return
        for value, converted in zip(node.outputs, plan.outputs, strict=False):
            if converted and self.original.get(value) == FLOAT:
                _retype(value, FLOAT16)
                self.current[value] = FLOAT16
            else:
                self.current[value] = self.original.get(value)
        if plan.converted:
            self.status.count("nodes_converted")

    def _fix_outputs(
        self, graph: ir.Graph | ir.Function, *, main: bool, io_converted: bool
    ) -> None:
        """Graph outputs get the dtype the signature promises (Casts at the end if needed)."""
        for position, value in enumerate(list(graph.outputs)):
            original = self.original.get(value)
            if original != FLOAT:
                continue
            keep = not self._io_converted(value) if main else not io_converted
            wanted = FLOAT if keep else FLOAT16
            have = self.current.get(value, original)
            if have == wanted or have not in (FLOAT, FLOAT16):
                continue
            cast = self._new_cast(value, wanted, value.name or "output")
            graph.append(cast)
            # The graph output keeps its name (the model's interface); the inner tensor is renamed.
            public = value.name
            value.name = self._unique(f"{public}_{'fp16' if have == FLOAT16 else 'fp32'}")
            cast.outputs[0].name = public
            graph.outputs[position] = cast.outputs[0]
            self.current[cast.outputs[0]] = wanted

    def _convert_function(self, function: ir.Function) -> None:
        fid = function.identifier()
        (signature,) = self.types.call_signatures[fid]
        self.types.function_body(function, signature)
        self.original.update(self.types.dtypes)
        for node in nodes_in(function):
            self.plans.pop(node, None)
        for value in function.inputs:
            self._set_source(value, FLOAT16)
        self._walk(function, function.opset_imports, io_converted=True)
        self.status.count("functions_converted")

    # -------------------------------------------------------------------- edits
    def _cast(
        self, value: ir.Value, to: ir.DataType, graph: ir.Graph | ir.Function, before: ir.Node
    ) -> ir.Value:
        key = (id(graph), value, to)
        cached = self.casts.get(key)
        if cached is None:
            cast = self._new_cast(value, to, value.name or "tensor")
            graph.insert_before(before, cast)
            cached = self.casts[key] = cast.outputs[0]
            self.current[cached] = to
        return cached

    def _new_cast(self, value: ir.Value, to: ir.DataType, stem: str) -> ir.Node:
        suffix = "fp16" if to == FLOAT16 else "fp32"
        out = ir.Value(
            name=self._unique(f"{stem}_to_{suffix}"),
            type=ir.TensorType(to),
            shape=value.shape.copy() if value.shape is not None else None,
        )
        node = ir.Node(
            "",
            "Cast",
            [value],
            attributes=[ir.AttrInt64("to", int(to))],
            outputs=[out],
            name=self._unique(re.sub(r"\W", "_", f"{stem}_cast_{suffix}")),
        )
        self.inserted.append(node)
        self.status.count("casts_inserted")
        return node

    def _unique(self, stem: str) -> str:
        name, serial = stem, 0
        while name in self.names:
            serial += 1
            name = f"{stem}_{serial}"
        self.names.add(name)
        return name

    def _convert_constant(self, node: ir.Node) -> None:
        """Constant(value/value_float/value_floats) or ConstantOfShape(value) -> float16."""
        if node.op_type == "ConstantOfShape":
            attr = node.attributes.get("value")
            array = attr.as_tensor().numpy() if attr is not None else np.zeros(1, np.float32)
            node.attributes["value"] = ir.AttrTensor(
                "value", ir.tensor(self._to_fp16(array, node.name or ""))
            )
        else:
            (attr,) = node.attributes.values()
            if attr.type == ir.AttributeType.TENSOR:
                array = attr.as_tensor().numpy()
            elif attr.type == ir.AttributeType.FLOAT:
                array = np.array(attr.as_float(), dtype=np.float32)
            else:
                array = np.array(attr.as_floats(), dtype=np.float32)
            node.attributes.clear()
            node.attributes["value"] = ir.AttrTensor(
                "value", ir.tensor(self._to_fp16(array, node.name or ""))
            )
        self.status.count("constants_converted")

    def _to_fp16(self, array: np.ndarray, name: str) -> np.ndarray:
        if self.cache is None or array.size < _CACHED_SIZE:
            return _clamped_fp16(array, name, self.status)
        # validation rounds convert the same weights again and again (2 s a round on ViT-B/16)
        key = (name, array.shape, float(np.sum(array, dtype=np.float64)))
        cached = self.cache.get(key)
        if cached is None:
            log = TransformStatus("cache")
            converted = _clamped_fp16(array, name, log)
            cached = self.cache[key] = (converted, log)
        converted, log = cached
        for line in log.warnings:
            self.status.warn(line)
        for key_name, amount in log.counts.items():
            self.status.count(key_name, amount)
        return converted

    def _drop_round_trips(self) -> None:
        """Cast(float16->float) followed by our Cast(->float16): use the float16 tensor."""
        for cast in list(self.inserted):
            source = cast.inputs[0]
            producer = source.producer() if source is not None else None
            if (
                source is None
                or producer is None
                or producer.op_type != "Cast"
                or producer.domain not in ("", "ai.onnx")
                or cast.outputs[0].is_graph_output()
            ):
                continue
            origin = producer.inputs[0]
            target = cast.attributes["to"].as_int()
            if origin is None or self.current.get(origin, tensor_dtype(origin)) != target:
                continue
            widened = self.current.get(source)
            if not (target == FLOAT16 and widened == FLOAT):
                continue
            cast.outputs[0].replace_all_uses_with(origin)
            graph = cast.graph
            assert graph is not None
            graph.remove(cast, safe=True)
            self.status.count("casts_inserted", -1)
            self.status.count("round_trip_casts_removed")
            if not source.uses() and not source.is_graph_output():
                owner = producer.graph
                assert owner is not None
                owner.remove(producer, safe=True)
                self.status.info(f"removed {producer.name}: float16->float->float16 round trip")


def _clamped_fp16(array: np.ndarray, name: str, status: TransformStatus) -> np.ndarray:
    """`array` as float16, values beyond its range clamped to its largest (never inf)."""
    converted, over = saturate_to_float(array, np.dtype(np.float16))
    if over.any():
        status.warn(
            f"{name}: {int(over.sum())} value(s) beyond float16's range were clamped to "
            f"+-{_FP16_MAX:g}"
        )
    vanished = int(np.count_nonzero((converted == 0) & (array != 0)))
    if vanished:
        status.count("values_underflowed", vanished)
    return converted


def _inferred_outputs(
    node: ir.Node, inputs: list[ir.DataType | None], opset: int
) -> list[ir.DataType | None]:
    """Output dtypes onnx's own inference gives for `node` with the planned input dtypes."""
    import onnx

    domain = "" if node.domain == "ai.onnx" else node.domain
    try:
        schema = onnx.defs.get_schema(node.op_type, opset, domain)
        proto = ir.serde.serialize_node(node)
        types = {
            value.name: onnx.helper.make_tensor_type_proto(int(dtype), None)
            for value, dtype in zip(node.inputs, inputs, strict=False)
            if value is not None and value.name and dtype is not None
        }
        result = onnx.shape_inference.infer_node_outputs(schema, proto, types)
    except Exception:  # inference needs what we could not give (shapes, constant inputs)
        return [None] * len(node.outputs)
    found: list[ir.DataType | None] = []
    for value in node.outputs:
        inferred = result.get(value.name or "")
        elem = inferred.tensor_type.elem_type if inferred is not None else 0
        found.append(ir.DataType(elem) if elem else None)
    return found


def _is_container(value: ir.Value | None) -> bool:
    """Sequences, optionals and maps: their element type is not ours to change."""
    return (
        value is not None and value.type is not None and not isinstance(value.type, ir.TensorType)
    )


def _retype(value: ir.Value, dtype: ir.DataType) -> None:
    value.type = ir.TensorType(dtype)


def _taken_names(model: ir.Model) -> set[str]:
    names: set[str] = set()
    for node in every_node(model):
        names.add(node.name or "")
        names.update(v.name or "" for v in node.outputs)
        names.update(v.name or "" for v in node.inputs if v is not None)
    for graph in model.graphs():
        names.update(v.name or "" for v in graph.inputs)
        names.update(graph.initializers)
    for function in model.functions.values():
        names.update(v.name or "" for v in function.inputs)
    return names
