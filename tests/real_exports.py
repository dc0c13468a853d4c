"""Real torch exports (torchvision, transformers) kept in git without their weights.

`scripts/export_real_models.py` made every file in `FOLDER` (its docstring says how;
`manifest.json` beside the files names the torch and transformers versions and each export's
status). A stored file is the exporter's own ModelProto, unchanged except that every
floating-point tensor with more than `STRIP_ABOVE` elements (initializers and Constant-node
values, in the main graph, its subgraphs and the model's functions) has its data cleared, its
dims and data_type kept, and a fill description as JSON in its doc_string:

    {"nsdl_fill": {"value": 0.0}}                             every element equal (0.0, 1.0, ...)
    {"nsdl_fill": {"mean": m, "std": s, "seed": k}}           k = zlib.crc32(tensor name)

`load` puts the data back: the value, or `default_rng(k).standard_normal(float32) * s + m`
cast to the tensor's dtype; a doc_string the exporter had is kept under "doc" and restored.
Integer and bool tensors (shapes, indices, position ids) and small ones stay verbatim, and so
does a float tensor holding inf or nan (a mask). Refilled models are deterministic.

No pytest here: benchmarks import it too, with the repository root on sys.path:

    from tests import real_exports
    model = real_exports.load("bert_base_dynamo")
    path = real_exports.save("resnet50_torchscript", tmp_dir)
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import os
import zlib
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import helper, numpy_helper

FOLDER = Path(__file__).resolve().parent / "fixtures" / "exports"
MANIFEST = FOLDER / "manifest.json"
STRIP_ABOVE = 256  # elements: tensors this small or smaller stay verbatim
FILL_KEY = "nsdl_fill"
_FILL_PREFIX = '{"' + FILL_KEY + '"'
_FLOAT_TYPES = frozenset(
    {
        onnx.TensorProto.FLOAT,
        onnx.TensorProto.FLOAT16,
        onnx.TensorProto.DOUBLE,
        onnx.TensorProto.BFLOAT16,
    }
)
_DATA_FIELDS = (
    "raw_data",
    "float_data",
    "double_data",
    "int32_data",
    "int64_data",
    "uint64_data",
    "string_data",
    "external_data",
)
_INLINE_LIMIT = 1_800_000_000  # bytes of tensor data; protobuf cannot serialize 2 GiB
# A folder where `load` keeps refilled models, named by the content of the stored file and of
# this module (tests/conftest.py sets it to one folder per test run, shared by its workers):
# refilling BERT or GPT-2 draws ~100 M normal numbers, reading the refilled file back is a
# fraction of that. Unset (benchmarks, a plain import): every load refills.
CACHE_ENV = "NSDL_EXPORT_CACHE"


# export -> cuts, each (the output of the last block of a run of identical blocks, the output
# of the second): `short=True` keeps the first two blocks of each run (`cut`), the same
# weights, every op type of the whole model (tests/test_real_exports.py checks it), for tests
# whose subject does not depend on depth. Transformers: 2 of their 12 layers; ResNet-50: 2 of
# the 3, 4, 6, 3 bottlenecks of each stage (each stage's first one downsamples).
SHORT: dict[str, tuple[tuple[str, str], ...]] = {
    "bert_base_dynamo": (("last_hidden_state", "layer_norm_4"),),
    "bert_base_torchscript": (
        (
            "last_hidden_state",
            "/model/encoder/layer.1/output/LayerNorm/LayerNormalization_output_0",
        ),
    ),
    "gpt2_dynamo": (("add_1923", "add_393"),),
    "gpt2_torchscript": (("/model/h.11/Add_1_output_0", "/model/h.1/Add_1_output_0"),),
    "resnet50_dynamo": tuple(
        (f"relu_{last}", f"relu_{second}")
        for last, second in ((9, 6), (21, 15), (39, 27), (48, 45))
    ),
    "resnet50_torchscript": tuple(
        (
            f"/layer{stage}/layer{stage}.{last}/relu_2/Relu_output_0",
            f"/layer{stage}/layer{stage}.1/relu_2/Relu_output_0",
        )
        for stage, last in ((1, 2), (2, 3), (3, 5), (4, 2))
    ),
    "vit_b_16_dynamo": (("add_24", "add_4"),),
    "vit_b_16_torchscript": (
        (
            "/encoder/layers/encoder_layer_11/Add_1_output_0",
            "/encoder/layers/encoder_layer_1/Add_1_output_0",
        ),
    ),
}


def names() -> list[str]:
    """The corpus, `<model>_<exporter>`, sorted."""
    return sorted(path.stem for path in FOLDER.glob("*.onnx"))


def load(name: str, *, short: bool = False) -> onnx.ModelProto:
    """The export `name` with its weights refilled (same bytes on every call); with `short`,
    only the first two of each run of repeated blocks (see SHORT). From the cache folder named by
    $NSDL_EXPORT_CACHE when set and filled by an earlier load."""
    path = FOLDER / f"{name}.onnx"
    if not path.is_file():
        raise FileNotFoundError(f"no corpus export {name!r} in {FOLDER}: pick one of {names()}")
    if short and name not in SHORT:
        raise KeyError(f"{name!r} has no short form: pick one of {sorted(SHORT)}")
    cache = os.environ.get(CACHE_ENV)
    stem = f"{name}-short" if short else name
    cached = Path(cache) / f"{stem}-{_content_key(path)}.onnx" if cache else None
    if cached is not None and cached.is_file():
        return onnx.load(cached)
    model = stored(name, short=short)
    refill(model)
    if cached is not None and _data_bytes(model) <= _INLINE_LIMIT:
        cached.parent.mkdir(parents=True, exist_ok=True)
        partial = cached.with_name(f"{cached.name}.{os.getpid()}.partial")
        onnx.save_model(model, partial)
        os.replace(partial, cached)  # atomic: a parallel worker reads a whole file or none
    return model


def stored(name: str, *, short: bool = False) -> onnx.ModelProto:
    """The stored file of `name` as it is (weights stripped); `short`: cut (see SHORT)."""
    model = onnx.load(FOLDER / f"{name}.onnx", load_external_data=False)
    for last, new_last in SHORT[name] if short else ():
        cut(model, last, new_last)
    return model


@functools.cache
def _content_key(path: Path) -> str:
    """What a refilled model depends on: the stored file and the refill code (this module)."""
    digest = hashlib.sha256(path.read_bytes())
    digest.update(Path(__file__).read_bytes())
    return digest.hexdigest()[:16]


def save(
    name: str, folder: str | Path, *, short: bool = False, external_data: bool | None = None
) -> Path:
    """Write the refilled export (`short`: cut, see SHORT) to `folder/<name>.onnx`; return
    its path.

    Weights go inline, or to `<name>.onnx.data` beside it when `external_data` is true (by
    default only when they would not fit in one protobuf).
    """
    model = load(name, short=short)
    path = Path(folder) / f"{name}.onnx"
    path.parent.mkdir(parents=True, exist_ok=True)
    if external_data is None:
        external_data = _data_bytes(model) > _INLINE_LIMIT
    if external_data:
        onnx.save_model(
            model,
            path,
            save_as_external_data=True,
            all_tensors_to_one_file=True,
            location=f"{name}.onnx.data",
            size_threshold=1024,
        )
    else:
        onnx.save_model(model, path)
    return path


def manifest() -> dict[str, object]:
    """The export script's record: versions, and per export its status, sizes and counts."""
    loaded: dict[str, object] = json.loads(MANIFEST.read_text())
    return loaded


def strip(model: onnx.ModelProto) -> int:
    """Replace the data of every large float tensor by its fill description, in place.

    Returns the number of tensors stripped. Used by scripts/export_real_models.py.
    """
    count = 0
    for key, tensor in tensors(model):
        if tensor.data_type not in _FLOAT_TYPES or math.prod(tensor.dims) <= STRIP_ABOVE:
            continue
        values = numpy_helper.to_array(tensor).astype(np.float64).ravel()
        if not np.isfinite(values).all():
            continue
        first = float(values[0])
        if (values == first).all():
            fill: dict[str, object] = {"value": first}
        else:
            fill = {
                "mean": float(values.mean()),
                "std": float(values.std()),
                "seed": zlib.crc32(key.encode()),
            }
        if tensor.doc_string:
            fill["doc"] = tensor.doc_string
        for field in _DATA_FIELDS:
            tensor.ClearField(field)
        tensor.ClearField("data_location")
        tensor.doc_string = json.dumps({FILL_KEY: fill}, sort_keys=True)
        count += 1
    return count


def refill(model: onnx.ModelProto) -> int:
    """Put data back into every stripped tensor of `model`, in place; return how many.

    numpy's generators release the GIL while filling, so threads draw tensors in parallel.
    """
    fills = ((tensor, fill_of(tensor)) for _key, tensor in tensors(model))
    stripped = [(tensor, fill) for tensor, fill in fills if fill is not None]
    with ThreadPoolExecutor(max_workers=min(8, os.cpu_count() or 1)) as pool:
        arrays = pool.map(lambda item: _fill_values(*item), stripped)
        for (tensor, fill), values in zip(stripped, arrays, strict=True):
            tensor.raw_data = values.tobytes()
            tensor.doc_string = fill.get("doc", "")
    return len(stripped)


def _fill_values(tensor: onnx.TensorProto, fill: dict[str, Any]) -> np.ndarray:
    dtype = helper.tensor_dtype_to_np_dtype(tensor.data_type)
    size = math.prod(tensor.dims)
    if "value" in fill:
        return np.full(size, fill["value"], dtype=dtype)
    values = np.random.default_rng(fill["seed"]).standard_normal(size, dtype=np.float32)
    values *= np.float32(fill["std"])
    values += np.float32(fill["mean"])
    cast: np.ndarray = values.astype(dtype, copy=False)
    return cast


def fill_of(tensor: onnx.TensorProto) -> dict[str, Any] | None:
    """The fill description of a stripped tensor; None for one stored verbatim."""
    if not tensor.doc_string.startswith(_FILL_PREFIX):
        return None
    fill: dict[str, Any] = json.loads(tensor.doc_string)[FILL_KEY]
    return fill


def _data_bytes(model: onnx.ModelProto) -> int:
    return sum(len(tensor.raw_data) for _key, tensor in tensors(model))


def tensors(model: onnx.ModelProto) -> Iterator[tuple[str, onnx.TensorProto]]:
    """(seed key, tensor) for every initializer and Constant value, subgraphs and functions
    included; the key is the tensor's name, or the Constant's output name when it has none."""
    yield from _graph_tensors(model.graph)
    for function in model.functions:
        yield from _node_tensors(function.node)


def _graph_tensors(graph: onnx.GraphProto) -> Iterator[tuple[str, onnx.TensorProto]]:
    for tensor in graph.initializer:
        yield tensor.name, tensor
    yield from _node_tensors(graph.node)


def _node_tensors(nodes: Iterable[onnx.NodeProto]) -> Iterator[tuple[str, onnx.TensorProto]]:
    for node in nodes:
        owner = node.output[0] if node.output else node.name
        for attribute in node.attribute:
            if attribute.type == onnx.AttributeProto.TENSOR:
                yield attribute.t.name or owner, attribute.t
            elif attribute.type == onnx.AttributeProto.TENSORS:
                for index, tensor in enumerate(attribute.tensors):
                    yield tensor.name or f"{owner}:{index}", tensor
            elif attribute.type == onnx.AttributeProto.GRAPH:
                yield from _graph_tensors(attribute.g)
            elif attribute.type == onnx.AttributeProto.GRAPHS:
                for graph in attribute.graphs:
                    yield from _graph_tensors(graph)


def cut(model: onnx.ModelProto, last: str, new_last: str) -> int:
    """Leave out the repeated blocks after the one whose output is `new_last`: every reader
    of `last` (the last block's output) reads `new_last` instead, and the nodes, initializers
    and value_infos no graph output needs any more go (graph inputs stay). A stripped model
    cut before `refill` refills only what is left, with the same values. Returns the number
    of nodes removed. When `last` is a graph output, the output keeps its name: the tensor
    `new_last` takes it."""
    graph = model.graph
    if last in {output.name for output in graph.output}:
        last, new_last = _take_name(graph, new_last, last), last
    for node in graph.node:
        node.input[:] = [new_last if name == last else name for name in node.input]
    needed = {output.name for output in graph.output}
    kept: list[onnx.NodeProto] = []
    for node in reversed(graph.node):
        if any(output in needed for output in node.output):
            kept.append(node)
            needed.update(_reads(node))
    removed = len(graph.node) - len(kept)
    for field, keep in (
        (graph.node, kept[::-1]),
        (graph.initializer, [t for t in graph.initializer if t.name in needed]),
        (graph.value_info, [v for v in graph.value_info if v.name in needed]),
    ):
        chosen = list(keep)
        del field[:]
        field.extend(chosen)
    return removed


def _take_name(graph: onnx.GraphProto, tensor: str, name: str) -> str:
    """Rename `tensor` to `name` (a graph output) and the tensor that had that name to a new
    name, which this returns."""
    old = f"{name}__before_cut"
    renames = {name: old, tensor: name}
    for node in graph.node:
        node.input[:] = [renames.get(n, n) for n in node.input]
        node.output[:] = [renames.get(n, n) for n in node.output]
    kept = [v for v in graph.value_info if v.name not in renames]
    del graph.value_info[:]
    graph.value_info.extend(kept)
    return old


def _reads(node: onnx.NodeProto) -> set[str]:
    """The tensors `node` reads: its inputs and what its subgraphs take from outside."""
    names = {name for name in node.input if name}
    for attribute in node.attribute:
        graphs = [attribute.g] if attribute.type == onnx.AttributeProto.GRAPH else attribute.graphs
        for graph in graphs:
            for inner in graph.node:
                names.update(_reads(inner))
    return names
