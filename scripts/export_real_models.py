"""Export the real-model corpus in tests/fixtures/exports/: how those fixtures were made.

Run with a Python that has torch, torchvision, transformers, onnx and onnxscript, not the
project's venv (torch is no dependency of nsdl_jupyter or of its tests), e.g. a separate
venv with `pip install torch torchvision transformers onnx onnxscript`:

    TORCH_PYTHON scripts/export_real_models.py              # every model
    TORCH_PYTHON scripts/export_real_models.py bert_base    # some of them

where TORCH_PYTHON is that venv's `bin/python`.

Every model is built with random weights (`weights=None`, `BertModel(BertConfig())`; nothing
is downloaded; torch.manual_seed(0)), put in eval mode and exported twice: TorchScript
(`dynamo=False`, opset 17) and dynamo (`dynamo=True`, the exporter's default opset). The
ONNX file is stripped of its weights (tests/real_exports.py describes the format and refills
it) and saved as `<model>_<exporter>.onnx`. manifest.json beside the files records the
versions of torch, transformers and the rest, and per export its status (with the error when
the exporter failed: the run records it and goes on), opset, counts and file size.
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import re
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import onnx
import torch

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from tests.real_exports import FOLDER, MANIFEST, strip  # noqa: E402 (needs REPO on sys.path)

TORCHSCRIPT_OPSET = 17
EXPORTERS = ("torchscript", "dynamo")
VERSIONS_OF = ("torch", "torchvision", "transformers", "onnx", "onnxscript", "onnxruntime", "numpy")


@dataclass(frozen=True)
class Spec:
    """One model: how to build it, its example inputs and the names the export gives them."""

    build: Callable[[], torch.nn.Module]
    inputs: Callable[[], tuple[torch.Tensor, ...]]
    input_names: tuple[str, ...]
    output_names: tuple[str, ...]
    dynamic: dict[str, dict[int, str]] | None = None  # input name -> {axis: dim name}
    note: str = ""  # copied into the manifest entries
    script: bool = False  # TorchScript exporter: torch.jit.script first (keeps if/for as If/Loop)


def _image(size: int = 224) -> Callable[[], tuple[torch.Tensor, ...]]:
    return lambda: (torch.randn(1, 3, size, size),)


def _tokens(with_mask: bool) -> Callable[[], tuple[torch.Tensor, ...]]:
    # Batch 2, not 1: the dynamo exporter specializes an axis whose example size is 1.
    def make() -> tuple[torch.Tensor, ...]:
        ids = torch.randint(0, 1000, (2, 16))
        return (ids, torch.ones_like(ids)) if with_mask else (ids,)

    return make


def _torchvision(name: str) -> Callable[[], torch.nn.Module]:
    def build() -> torch.nn.Module:
        import torchvision

        module: torch.nn.Module = getattr(torchvision.models, name)(weights=None)
        return module

    return build


def _bert() -> torch.nn.Module:
    from transformers import BertConfig, BertModel

    return BertModel(BertConfig())


def _gpt2() -> torch.nn.Module:
    from transformers import GPT2Config, GPT2Model

    return GPT2Model(GPT2Config(use_cache=False))


def _tiny_vit() -> torch.nn.Module:
    from transformers import ViTConfig, ViTModel

    config = ViTConfig(
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=128,
        image_size=64,
        patch_size=16,
    )
    return ViTModel(config)


_TEXT_AXES = {0: "batch", 1: "sequence"}


class _ControlFlow(torch.nn.Module):
    """If and Loop as torch users write them: scripted, data-dependent `if` and `for` become
    ONNX If and Loop (TorchScript exporter); `torch.cond` becomes If (dynamo exporter)."""

    def __init__(self) -> None:
        super().__init__()
        self.then_proj = torch.nn.Linear(32, 32)
        self.else_proj = torch.nn.Linear(32, 32)
        self.step = torch.nn.Linear(32, 32)

    def forward(self, x: torch.Tensor, n: torch.Tensor) -> torch.Tensor:
        if torch.jit.is_scripting():
            if bool(x.sum() > 0):
                y = torch.relu(self.then_proj(x))
            else:
                y = torch.tanh(self.else_proj(x))
            for _ in range(int(n)):
                y = y + torch.sigmoid(self.step(y))
            return y
        return self._exported(x, n)

    @torch.jit.unused
    def _exported(self, x: torch.Tensor, n: torch.Tensor) -> torch.Tensor:
        y = torch.cond(
            x.sum() > 0,
            lambda t: torch.relu(self.then_proj(t)),
            lambda t: torch.tanh(self.else_proj(t)),
            (x,),
        )
        return y + torch.sigmoid(self.step(y)) * n


MODELS: dict[str, Spec] = {
    "resnet50": Spec(_torchvision("resnet50"), _image(), ("input",), ("output",)),
    "vit_b_16": Spec(_torchvision("vit_b_16"), _image(), ("input",), ("output",)),
    "bert_base": Spec(
        _bert,
        _tokens(with_mask=True),
        ("input_ids", "attention_mask"),
        ("last_hidden_state", "pooler_output"),
        {"input_ids": _TEXT_AXES, "attention_mask": _TEXT_AXES},
    ),
    "efficientnet_b0": Spec(_torchvision("efficientnet_b0"), _image(), ("input",), ("output",)),
    "convnext_tiny": Spec(_torchvision("convnext_tiny"), _image(), ("input",), ("output",)),
    "mobilenet_v3_large": Spec(
        _torchvision("mobilenet_v3_large"), _image(), ("input",), ("output",)
    ),
    "gpt2": Spec(
        _gpt2,
        _tokens(with_mask=True),
        ("input_ids", "attention_mask"),
        ("last_hidden_state",),
        {"input_ids": _TEXT_AXES, "attention_mask": _TEXT_AXES},
        note=(
            "with input_ids alone the TorchScript export fails (torch 2.14, transformers 5.24): "
            "transformers' packed-sequence check calls aten::diff, which has no ONNX symbolic; "
            "with the attention_mask, as tokenizers give it, both exporters succeed"
        ),
    ),
    "vit_tiny_hf": Spec(
        _tiny_vit, _image(64), ("pixel_values",), ("last_hidden_state", "pooler_output")
    ),
    "control_flow": Spec(
        _ControlFlow,
        lambda: (torch.randn(2, 32), torch.tensor(3)),
        ("x", "n"),
        ("y",),
        script=True,
    ),
}


class _KeywordCall(torch.nn.Module):
    """Calls a transformers model with its inputs by keyword and returns a tuple.

    The TorchScript exporter passes every forward parameter positionally, defaults included,
    and transformers 5's input-checking decorator then sets `use_cache` again as a keyword:
    "forward() got multiple values for argument 'use_cache'". The dynamo exporter needs no help.
    """

    def __init__(self, model: torch.nn.Module, input_names: tuple[str, ...]) -> None:
        super().__init__()
        self.model = model
        self.input_names = input_names

    def forward(self, *inputs: torch.Tensor) -> tuple[torch.Tensor, ...]:
        outputs = self.model(**dict(zip(self.input_names, inputs, strict=True)))
        return tuple(outputs.to_tuple())


def export(spec: Spec, exporter: str, path: Path) -> None:
    """Export `spec` with `exporter` to `path` (weights possibly in a .data file beside it)."""
    torch.manual_seed(0)
    module = spec.build().eval()
    inputs = spec.inputs()
    common: dict[str, Any] = {
        "input_names": list(spec.input_names),
        "output_names": list(spec.output_names),
    }
    by_keyword = type(module).__module__.startswith("transformers.")
    if exporter == "torchscript":
        if by_keyword:
            module = _KeywordCall(module, spec.input_names)
        if spec.script:
            module = torch.jit.script(module)
        torch.onnx.export(
            module,
            inputs,
            path,
            dynamo=False,
            opset_version=TORCHSCRIPT_OPSET,
            dynamic_axes=spec.dynamic,
            **common,
        )
    else:
        # transformers models take their inputs by keyword (GPT2Model's second parameter is
        # past_key_values, not attention_mask), as HF users pass them.
        named = dict(zip(spec.input_names, inputs, strict=True)) if by_keyword else None
        shapes = None
        if spec.dynamic is not None:
            axes = [spec.dynamic.get(name) for name in spec.input_names]
            shapes = dict(zip(spec.input_names, axes, strict=True)) if by_keyword else tuple(axes)
        torch.onnx.export(
            module,
            () if by_keyword else inputs,
            path,
            kwargs=named,
            dynamo=True,
            dynamic_shapes=shapes,
            **common,
        )


def describe(model: onnx.ModelProto) -> dict[str, Any]:
    """Counts for the manifest, taken before stripping."""
    opset = next(op.version for op in model.opset_import if op.domain in ("", "ai.onnx"))
    initializers = model.graph.initializer
    return {
        "opset": opset,
        "ir_version": model.ir_version,
        "nodes": len(model.graph.node),
        "function_nodes": sum(len(function.node) for function in model.functions),
        "functions": len(model.functions),
        "initializers": len(initializers),
        "parameters": sum(math.prod(tensor.dims) for tensor in initializers),
    }


_SITE_PACKAGES = re.compile(r'File "[^"]*?/(?:site|dist)-packages/')
_ABSOLUTE_FILE = re.compile(r'File "/(?:[^"]*/)?([^"/]+)"')


def forget_local_paths(model: onnx.ModelProto) -> None:
    """The dynamo exporter's stack traces name files of the machine that exported: keep them
    as `<site-packages>/torchvision/...` and bare file names, never its folders."""
    for node in model.graph.node:
        for prop in node.metadata_props:
            if prop.key == "pkg.torch.onnx.stack_trace":
                text = _SITE_PACKAGES.sub('File "<site-packages>/', prop.value)
                prop.value = _ABSOLUTE_FILE.sub(r'File "\1"', text)


def run_one(name: str, exporter: str, scratch: Path) -> dict[str, Any]:
    """Export, strip and save one model; the manifest entry, a failure included."""
    entry: dict[str, Any] = {"model": name, "exporter": exporter}
    if MODELS[name].note:
        entry["note"] = MODELS[name].note
    target = FOLDER / f"{name}_{exporter}.onnx"
    started = time.perf_counter()
    try:
        raw = scratch / f"{name}_{exporter}.onnx"
        export(MODELS[name], exporter, raw)
        entry["export_seconds"] = round(time.perf_counter() - started, 1)
        model = onnx.load(raw)
        entry.update(describe(model))
        entry["stripped_tensors"] = strip(model)
        forget_local_paths(model)
        onnx.save_model(model, target)
    except Exception as error:  # a failed exporter is a result to record
        target.unlink(missing_ok=True)
        entry["status"] = "failed"
        entry["error"] = f"{type(error).__name__}: {error}"[:2000]
        entry["traceback_tail"] = traceback.format_exc()[-2000:]
        print(f"{name} {exporter}: FAILED {entry['error'][:300]}", flush=True)
        return entry
    entry["status"] = "ok"
    entry["file"] = target.name
    entry["bytes"] = target.stat().st_size
    print(
        f"{name} {exporter}: {entry['nodes']} nodes, {entry['parameters']:,} parameters, "
        f"{entry['bytes']:,} bytes, {entry['export_seconds']} s",
        flush=True,
    )
    return entry


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", help=f"default: all of {', '.join(MODELS)}")
    parser.add_argument("--exporter", choices=EXPORTERS, action="append", help="default: both")
    options = parser.parse_args(argv)
    unknown = sorted(set(options.models) - set(MODELS))
    if unknown:
        parser.error(f"unknown models {unknown}: pick from {list(MODELS)}")
    FOLDER.mkdir(parents=True, exist_ok=True)
    manifest: dict[str, Any] = json.loads(MANIFEST.read_text()) if MANIFEST.is_file() else {}
    exports: dict[str, Any] = manifest.get("exports", {})
    with tempfile.TemporaryDirectory() as scratch:
        for name in options.models or MODELS:
            for exporter in options.exporter or EXPORTERS:
                exports[f"{name}_{exporter}"] = run_one(name, exporter, Path(scratch))
    manifest = {
        "made_by": "scripts/export_real_models.py",
        "python": platform.python_version(),
        "versions": {package: metadata.version(package) for package in VERSIONS_OF},
        "torchscript_opset": TORCHSCRIPT_OPSET,
        "exports": dict(sorted(exports.items())),
    }
    ok = [entry for entry in exports.values() if entry["status"] == "ok"]
    manifest["total_bytes"] = sum(entry["bytes"] for entry in ok)
    MANIFEST.write_text(json.dumps(manifest, indent=1) + "\n")
    failed = sorted(key for key, entry in exports.items() if entry["status"] != "ok")
    print(f"{len(ok)} exports, {manifest['total_bytes']:,} bytes; failed: {failed or 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
