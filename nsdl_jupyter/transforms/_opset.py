"""Convert a model to another ONNX opset with onnx's version converter, then validate it.

onnx's converter rewrites each operator through its adapters (Softmax 11 -> 13, Split's
attribute -> input, ...). What it cannot do is refused with a TransformError that says what
to do instead: a target outside the opsets onnx knows, an operator it has no adapter for,
and model-local functions (the converter fails on them with an IndexError; inlining them
first is offered). Nodes of other domains (ORT contrib ops) pass through unchanged. The
result is checked by onnx's checker and, by default, run beside the source with onnxruntime
in a child process (see `_validate`): its outputs must match to float tolerance.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import onnx
import onnx.inliner
import onnx.version_converter
import onnx_ir as ir

from nsdl_jupyter.transforms._passes import TransformPass, register, transform_file
from nsdl_jupyter.transforms._status import TransformStatus
from nsdl_jupyter.transforms._validate import (
    DEFAULT_PROVIDER,
    Validator,
    check_validation_arguments,
)
from nsdl_jupyter.transforms._working_copy import ModelSource, TransformError, check_output_path

# Max abs error per output <= OPSET_TOLERANCE * max(1, max |source output|): an adapter
# changes the graph, not the arithmetic, so only kernel rounding differences remain.
OPSET_TOLERANCE = 1e-4
_DEFAULT_DOMAINS = ("", "ai.onnx")
_NO_ADAPTER = re.compile(r"No Adapter (From|To) Version \$(\d+) for (\w+)")


def convert_opset(
    model: ModelSource,
    output: str | os.PathLike[str],
    target: int,
    *,
    inline_functions: bool = False,
    validate: bool = True,
    tolerance: float = OPSET_TOLERANCE,
    provider: str = DEFAULT_PROVIDER,
    overwrite: bool = False,
) -> TransformStatus:
    """Write `model` converted to ONNX opset `target` (the default domain) to `output`.

    `inline_functions`: inline model-local functions first (onnx's converter cannot convert
    them). `validate`: run source and result with onnxruntime (`provider`, default graph
    optimizations) in a child process on random inputs; every output must be within
    `tolerance` * max(1, max |source output|), else the status fails.
    """
    destination = check_output_path(output)
    opset = OpsetPass(
        target,
        inline_functions=inline_functions,
        validate=validate,
        tolerance=tolerance,
        provider=provider,
    )
    return transform_file(opset, model, destination, overwrite=overwrite)


@register("opset", "convert to another ONNX opset (onnx's version converter), validated")
class OpsetPass(TransformPass):
    """The model converted to ONNX opset `target` by onnx's version converter; on a file, the
    result is run beside the source with onnxruntime (see `convert_opset`)."""

    operation = "convert_opset"
    replaces_model = True

    def __init__(
        self,
        target: int,
        *,
        inline_functions: bool = False,
        validate: bool = True,
        tolerance: float = OPSET_TOLERANCE,
        provider: str = DEFAULT_PROVIDER,
        status: TransformStatus | None = None,
    ) -> None:
        super().__init__(status=status)
        latest = onnx.defs.onnx_opset_version()
        if isinstance(target, bool) or not isinstance(target, int) or not 1 <= target <= latest:
            raise TransformError(
                f"target opset must be an int from 1 to {latest} (the opsets onnx "
                f"{onnx.__version__} knows), not {target!r}"
            )
        if validate:
            check_validation_arguments(tolerance, provider)
        self.target = target
        self.inline_functions = inline_functions
        self.validation = (tolerance, provider) if validate else None

    def apply(self, model: ir.Model) -> ir.Model:
        status, target = self.status, self.target
        current = _default_opset(model)
        proto = ir.serde.serialize_model(model)
        if proto.functions:
            if not self.inline_functions:
                names = sorted(f"{f.domain}::{f.name}" for f in proto.functions)
                raise TransformError(
                    f"onnx's version converter cannot convert model-local functions ({names}): "
                    "pass inline_functions=True (--inline-functions) to inline them first"
                )
            count = len(proto.functions)
            proto = onnx.inliner.inline_local_functions(proto)
            status.info(f"inlined {count} local function(s) first")
        if current == target:
            status.info(f"the model is already at opset {target}: written unchanged")
            converted = proto
        else:
            converted = _convert(proto, current, target)
            status.info(f"converted from opset {current} to {target}")
            _raise_ir_version(converted, status)
        status.counts["opset_from"] = current
        status.counts["opset_to"] = target
        return ir.serde.deserialize_model(converted)

    def validate(self, source: ModelSource, target: Path, saved: Path) -> Path:
        if self.validation is None:
            return saved
        tolerance, provider = self.validation
        with Validator(source, tolerance=tolerance, provider=provider) as validator:
            outcome = validator.check(saved)
            validator.report(self.status, outcome)
            if not outcome.passed and outcome.outcome != "not_validated":
                self.status.fail(f"the converted model fails validation: {outcome.reason()}")
        return saved


def _default_opset(model: ir.Model) -> int:
    imports = model.graph.opset_imports
    for domain in _DEFAULT_DOMAINS:
        if domain in imports:
            return imports[domain]
    raise TransformError(
        "the model imports no ONNX opset (only other domains): there is nothing to convert"
    )


def _convert(proto: onnx.ModelProto, current: int, target: int) -> onnx.ModelProto:
    try:
        return onnx.version_converter.convert_version(proto, target)
    except Exception as error:  # the converter raises RuntimeError, IndexError, ...
        text = str(error)
        missing = _NO_ADAPTER.search(text)
        if missing:
            _, version, op = missing.groups()
            raise TransformError(
                f"onnx's version converter has no adapter for {op} at opset {version} on the "
                f"way from opset {current} to {target}: pick a target between {current} and "
                f"{version}, or replace the {op} nodes first"
            ) from None
        first = text.strip().splitlines()[-1] if text.strip() else type(error).__name__
        raise TransformError(
            f"onnx's version converter cannot convert this model from opset {current} to "
            f"{target}: {first}"
        ) from None


def _raise_ir_version(proto: onnx.ModelProto, status: TransformStatus) -> None:
    """A newer opset needs a newer IR version (opset 21 needs IR 10); the converter keeps
    the old one and onnxruntime then refuses the model."""
    needed = onnx.helper.find_min_ir_version_for(list(proto.opset_import), ignore_unknown=True)
    if proto.ir_version < needed:
        status.info(f"IR version raised from {proto.ir_version} to {needed} for the new opset")
        proto.ir_version = needed
