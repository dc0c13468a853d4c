"""A TensorRT engine as a graph: its layer JSON (engine inspector or trtexec
`--exportLayerInfo`, the same format) as a read-only onnx_ir model that GraphView draws.

Layers become nodes (domain "trt.engine", op type the layer type), tensors become edges, and
each layer's fields (precision, formats, tactic, kernel, padding...) become attributes, so the
parameter pane shows them. TensorRT names a fused layer after what it fused
("features.0.0.weight + QuantizeLinear_8 + Conv_12 + PWN(Clip_16)", "/conv1/Conv + /relu/Relu")
and, from TensorRT 10 on, records `[ONNX Layer: ...]` in its `Metadata`: both are read back into
the ONNX node names of each layer (`trt_layer_nodes`). The JSON is untrusted input.

Why an onnx_ir model and not a view of its own: everything that takes a model takes it as it
is, with no widget code: GraphView (layout, grouping by the ONNX nodes' name scopes, overlays
by layer name), the Designer's parameter pane through `ModelDocument(engine_graph)`, the SVG
export, `onnx_ir.save`.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from typing import Any

import onnx
import onnx_ir as ir

from nsdl_jupyter._errors import ArgumentError, NsdlError, input_path
from nsdl_jupyter._gc import gc_paused
from nsdl_jupyter.document import load_model

_ONNX_LAYER = re.compile(r"\[ONNX Layer: ([^\]\x1f]+)\]")
_FOREIGN = re.compile(r"^\{?ForeignNode\[(.*)\]\}?$")
_TENSOR_SUFFIXES = (".weight", ".bias", ".scale", ".zero_point", "_scale", "_zero_point")
_INSERTED_PREFIXES = ("copied_squeeze_after_", "unsqueeze_node_after_", "squeeze_after_")


def _split_top_level(text: str, separators: tuple[str, ...]) -> list[str]:
    """Split on separators that are outside parentheses/brackets."""
    parts: list[str] = []
    depth = 0
    start = 0
    i = 0
    while i < len(text):
        ch = text[i]
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth = max(depth - 1, 0)
        elif depth == 0:
            for sep in separators:
                if text.startswith(sep, i):
                    parts.append(text[start:i])
                    i += len(sep)
                    start = i
                    break
            else:
                i += 1
                continue
            continue
        i += 1
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def _tokens(name: str) -> list[str]:
    """The pieces a fused layer name is made of, PWN(...) and ForeignNode[...] unwrapped."""
    if name.startswith("Reformatting CopyNode"):
        return []  # a layout conversion TensorRT inserted: no ONNX node of its own
    out: list[str] = []
    for part in _split_top_level(name, (" + ",)):
        foreign = _FOREIGN.match(part)
        if foreign:
            out.extend(t.strip() for t in foreign.group(1).split("...") if t.strip())
        elif part.startswith("PWN(") and part.endswith(")"):
            out.extend(_tokens_inner(part[4:-1]))
        else:
            out.append(part)
    return out


def _tokens_inner(text: str) -> list[str]:
    found: list[str] = []
    for piece in _split_top_level(text, (", ", " + ", ",")):
        if piece.startswith("PWN(") and piece.endswith(")"):
            found.extend(_tokens_inner(piece[4:-1]))
        else:
            found.append(piece)
    return found


def trt_layer_nodes(
    layer_name: str, metadata: str | None = None, graph_nodes: set[str] | None = None
) -> list[str]:
    """ONNX node names a TensorRT layer covers, from its Metadata or its fused name.

    With `graph_nodes` (the model's node names) only real nodes are kept; without, tokens that
    name tensors (weights, biases) or nodes TensorRT inserted are dropped.
    """
    if metadata:
        named = _ONNX_LAYER.findall(metadata)
        if named:
            return [n for n in named if graph_nodes is None or n in graph_nodes]
    tokens = _tokens(layer_name)
    if graph_nodes is not None:
        return [t for t in tokens if t in graph_nodes]
    return [
        t
        for t in tokens
        if "(Unnamed Layer*" not in t
        and not t.endswith(_TENSOR_SUFFIXES)
        and not t.startswith(_INSERTED_PREFIXES)
    ]


def precision_of(datatype: str) -> str:
    """ "INT8", "FP16", "FP32"... from a TensorRT format text ("Row major linear FP32")."""
    text = datatype.lower()
    for needle, label in (
        ("int8", "INT8"),
        ("fp8", "FP8"),
        ("int4", "INT4"),
        ("bf16", "BF16"),
        ("fp16", "FP16"),
        ("half", "FP16"),
        ("fp32", "FP32"),
        ("float", "FP32"),
        ("int32", "INT32"),
        ("int64", "INT64"),
        ("bool", "BOOL"),
    ):
        if needle in text:
            return label
    return ""


# ---- the engine as a graph -------------------------------------------------------------------

ENGINE_DOMAIN = "trt.engine"
_MAX_JSON_BYTES = 256 << 20
_DTYPES = {
    "INT8": ir.DataType.INT8,
    "FP8": ir.DataType.FLOAT8E4M3FN,
    "INT4": ir.DataType.INT4,
    "BF16": ir.DataType.BFLOAT16,
    "FP16": ir.DataType.FLOAT16,
    "FP32": ir.DataType.FLOAT,
    "INT32": ir.DataType.INT32,
    "INT64": ir.DataType.INT64,
    "BOOL": ir.DataType.BOOL,
}
_TENSOR_LISTS = ("Inputs", "Outputs")


class EngineGraphError(NsdlError, ValueError):
    """The layer JSON is not an engine inspector / trtexec --exportLayerInfo export."""


class UnknownLayerError(EngineGraphError, KeyError):
    """No layer of that name in the engine (a KeyError too)."""


class EngineGraph(ir.Model):
    """A TensorRT engine as a read-only graph: one node per layer (named as the layer), one
    edge per tensor; draw it with `GraphView(engine_graph)`.

    `onnx_nodes` maps each layer to the ONNX nodes it was built from; `layer(name)` is the
    layer's JSON record as TensorRT wrote it.
    """

    __slots__ = ("_records", "onnx_nodes")

    def __init__(
        self, graph: ir.Graph, records: dict[str, dict[str, Any]], links: dict[str, list[str]]
    ) -> None:
        super().__init__(graph, ir_version=10, producer_name="TensorRT engine")
        self._records = records
        self.onnx_nodes: dict[str, list[str]] = links

    def layer(self, name: str) -> dict[str, Any]:
        """The layer's fields as TensorRT exported them."""
        try:
            return dict(self._records[name])
        except KeyError:
            raise UnknownLayerError(
                f"no layer named {name!r}; layers: {list(self._records)[:5]}..."
            ) from None

    def layers_of(self, onnx_node: str) -> list[str]:
        """The engine layers built from `onnx_node` (several when TensorRT split it)."""
        return [layer for layer, nodes in self.onnx_nodes.items() if onnx_node in nodes]

    @property
    def layer_names(self) -> list[str]:
        return list(self._records)


def _attribute(name: str, value: Any) -> ir.Attr:
    """A layer field as an attribute of its node: numbers and lists as such, the rest as
    JSON text (weights counts, nested records)."""
    if isinstance(value, bool):
        return ir.AttrInt64(name, int(value))
    if isinstance(value, int):
        return ir.AttrInt64(name, value)
    if isinstance(value, float):
        return ir.AttrFloat32(name, value)
    if isinstance(value, str):
        return ir.AttrString(name, value)
    if isinstance(value, list) and value:
        if all(isinstance(v, int) and not isinstance(v, bool) for v in value):
            return ir.AttrInt64s(name, value)
        if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
            return ir.AttrFloat32s(name, [float(v) for v in value])
        if all(isinstance(v, str) for v in value):
            return ir.AttrStrings(name, value)
    return ir.AttrString(name, json.dumps(value, sort_keys=True))


def _tensor_records(layer: Mapping[str, Any], key: str) -> list[Mapping[str, Any]]:
    entries = layer.get(key)
    if not isinstance(entries, list):
        return []
    return [e for e in entries if isinstance(e, Mapping) and isinstance(e.get("Name"), str)]


def _scope(onnx_nodes: list[str]) -> str:
    """The layer's name scope: the scope its ONNX nodes share ("/" for none), so the engine
    graph groups like the model's (`namespace` metadata, read by `scope_of`)."""
    scopes = [n.split("/")[:-1] for n in onnx_nodes if "/" in n]
    if not scopes or len(scopes) != len(onnx_nodes):
        return "/"
    common = scopes[0]
    for parts in scopes[1:]:
        keep = 0
        while keep < min(len(common), len(parts)) and common[keep] == parts[keep]:
            keep += 1
        common = common[:keep]
    return "/" + "/".join(p for p in common if p) if any(common) else "/"


def _read_layers(source: Any) -> tuple[list[Any], list[str], str]:
    """(layer records, engine bindings, a name) from a path, JSON text, or parsed JSON."""
    name = "engine"
    data = source
    inspector = getattr(source, "inspector", None)  # an EngineExport from export_engine
    if inspector is not None or hasattr(source, "engine_bytes"):
        if inspector is None:
            raise EngineGraphError(
                "this engine export has no layer JSON (the engine inspector needs a GPU that "
                "can load the engine): export with trtexec --exportLayerInfo on that GPU"
            )
        data = inspector
    if isinstance(data, str) and data.lstrip()[:1] in ("{", "["):
        data = _parse(data, "the layer JSON text")
    elif isinstance(data, (str, os.PathLike)):
        path = input_path(data, "layer JSON file")
        if path.stat().st_size > _MAX_JSON_BYTES:
            raise EngineGraphError(f"{path} is over {_MAX_JSON_BYTES >> 20} MiB: not a layer JSON")
        name = path.name.removesuffix(".json").removesuffix(".graph").removesuffix(".layers")
        data = _parse(path.read_text(encoding="utf-8", errors="replace"), str(path))
    if isinstance(data, Mapping):
        layers, bindings = data.get("Layers"), data.get("Bindings", [])
    else:
        layers, bindings = data, []
    if not isinstance(layers, list):
        raise EngineGraphError(
            "not an engine layer JSON: expected {'Layers': [...]} as written by "
            "IEngineInspector.get_engine_information(LayerInformationFormat.JSON) or trtexec "
            "--exportLayerInfo"
        )
    if not isinstance(bindings, list):
        bindings = []
    return layers, [b for b in bindings if isinstance(b, str)], name


def _parse(text: str, what: str) -> Any:
    try:
        return json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise EngineGraphError(f"{what} is not JSON: {exc}") from None


def _graph_nodes(model: Any) -> set[str] | None:
    if model is None:
        return None
    model = getattr(model, "model", model)  # a ModelDocument
    if isinstance(model, (str, os.PathLike)):
        model = load_model(model)  # the package's errors for a missing or damaged file
    if isinstance(model, onnx.ModelProto):
        model = ir.from_proto(model)
    if not isinstance(model, ir.Model):
        raise ArgumentError(
            f"model= must be an ONNX model (path, ModelProto, onnx_ir.Model, ModelDocument), "
            f"not {type(model).__name__}"
        )
    return {node.name for node in model.graph if node.name}


class _UniqueNames:
    """Layer names made unique in the order met: a repeated `x` becomes `x#2`, `x#3`, ...
    Each name remembers its next suffix, so n repeats cost n steps, not n²/2 (the JSON is
    untrusted: 12,000 layers named `x` took 25 s when every repeat counted up from 2)."""

    def __init__(self) -> None:
        self._taken: set[str] = set()
        self._next: dict[str, int] = {}

    def __call__(self, name: str) -> str:
        candidate, k = name, self._next.get(name, 2)
        while candidate in self._taken:
            candidate = f"{name}#{k}"
            k += 1
        if candidate != name:
            self._next[name] = k
        self._taken.add(candidate)
        return candidate


def open_engine_graph(source: Any, *, model: Any = None) -> EngineGraph:
    """A TensorRT engine's layer JSON as a graph GraphView draws (layers as nodes, tensors as
    edges, layer fields in the parameter pane).

    `source`: a path to the JSON (trtexec `--exportLayerInfo`, or the engine inspector's
    `<engine>.graph.json` that `export_engine` writes), the JSON text, the parsed JSON, or an
    EngineExport. `model` (the ONNX model the engine was built from) keeps only the names of
    its real nodes in each layer's `onnx_nodes`.
    """
    with gc_paused():  # 20,000 layers make ~10 objects each, all kept: no GC passes over them
        return _engine_graph(source, model)


def _engine_graph(source: Any, model: Any) -> EngineGraph:
    records, bindings, name = _read_layers(source)
    known = _graph_nodes(model)
    unique = _UniqueNames()
    layers: dict[str, dict[str, Any]] = {}
    for index, raw in enumerate(records):
        # a plain name: exported without detailed profiling verbosity (no tensors, no fields)
        record = {"Name": raw} if isinstance(raw, str) else raw
        if not isinstance(record, Mapping):
            raise EngineGraphError(f"layer {index} is a {type(record).__name__}, not a record")
        layer_name = str(record.get("Name") or f"layer_{index}")
        layers[unique(layer_name)] = dict(record)
    values: dict[str, ir.Value] = {}
    produced: set[str] = set()
    consumed: set[str] = set()

    def value(tensor: Mapping[str, Any]) -> ir.Value:
        found = values.get(tensor["Name"])
        if found is None:
            dims = tensor.get("Dimensions")
            shape = (
                ir.Shape([int(d) for d in dims])
                if isinstance(dims, list) and all(isinstance(d, int) for d in dims)
                else None
            )
            fmt = str(tensor.get("Format/Datatype", ""))
            dtype = _DTYPES.get(precision_of(fmt))
            found = ir.Value(
                name=tensor["Name"],
                shape=shape,
                type=ir.TensorType(dtype) if dtype is not None else None,
                metadata_props={"trt.format": fmt, "trt.location": str(tensor.get("Location", ""))},
            )
            values[tensor["Name"]] = found
        return found

    nodes: list[ir.Node] = []
    links: dict[str, list[str]] = {}
    for layer_name, record in layers.items():
        inputs = [value(t) for t in _tensor_records(record, "Inputs")]
        consumed.update(v.name or "" for v in inputs)
        output_records = [
            t for t in _tensor_records(record, "Outputs") if t["Name"] not in produced
        ]
        outputs = [value(t) for t in output_records]
        produced.update(v.name or "" for v in outputs)
        linked = trt_layer_nodes(str(record.get("Name", "")), _text(record.get("Metadata")), known)
        links[layer_name] = linked
        attributes = _derived(record, linked) + [
            _attribute(k, v)
            for k, v in record.items()
            if isinstance(k, str) and k not in ("Name", *_TENSOR_LISTS)
        ]
        nodes.append(
            ir.Node(
                ENGINE_DOMAIN,
                str(record.get("LayerType") or record.get("ParameterType") or "Layer"),
                inputs,
                attributes,
                outputs=outputs,
                name=layer_name,
                metadata_props={"namespace": _scope(linked)},
            )
        )
    graph_inputs = [values[n] for n in values if n in consumed and n not in produced]
    graph_outputs = [
        values[n] for n in values if n in produced and (n not in consumed or n in bindings)
    ]
    graph = ir.Graph(
        graph_inputs,
        graph_outputs,
        nodes=nodes,
        opset_imports={"": 21, ENGINE_DOMAIN: 1},
        name=name,
    )
    return EngineGraph(graph, layers, links)


def _text(value: Any) -> str | None:
    return str(value) if value else None


def _derived(record: Mapping[str, Any], linked: list[str]) -> list[ir.Attr]:
    """What the parameter pane shows first: precision, formats, tactic, the ONNX nodes."""
    outputs = _tensor_records(record, "Outputs")
    inputs = _tensor_records(record, "Inputs")
    derived: list[ir.Attr] = []
    if outputs:
        precision = precision_of(str(outputs[0].get("Format/Datatype", "")))
        if precision:
            derived.append(ir.AttrString("precision", precision))
    for key, tensors in (("input_formats", inputs), ("output_formats", outputs)):
        formats = [str(t.get("Format/Datatype", "")) for t in tensors]
        if formats:
            derived.append(ir.AttrStrings(key, formats))
    tactic = record.get("TacticName") or record.get("TacticValue")
    if tactic:
        derived.append(ir.AttrString("tactic", str(tactic)))
    if linked:
        derived.append(ir.AttrStrings("onnx_nodes", linked))
    return derived
