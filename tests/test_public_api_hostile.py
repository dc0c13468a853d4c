"""A walk over the public API with hostile inputs (issue 22): wrong types, NUL bytes, huge
numbers, NaN, empty strings, files that are not ONNX, missing files and folders. Whatever
goes wrong must be one of the package's own errors (`NsdlError` and its subclasses, which
also subclass the built-in a user would catch); a raw error from protobuf, onnx, onnx_ir,
numpy, paramiko or the OS is a defect. Unknown keyword arguments raise `ArgumentError`
(an NsdlError and a TypeError, tests/test_public_api.py).

Cases owned by other work of issue 22 are marked xfail(strict=True) with their item number:
they turn into failures (XPASS) when that item lands, and the mark is then removed.
"""

from __future__ import annotations

import math
import resource
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import onnx
import pytest

import nsdl_jupyter as nj
from tests._document_models import conv_relu_model

NUL = "bad\x00name"
HUGE = 10**400  # beyond every integer and float type
NAN = math.nan


@dataclass(frozen=True)
class Arena:
    """Files the cases point at: a real model, a text file and an empty file named .onnx,
    a folder, a path that does not exist, a JSON file that is no profile."""

    model: Path
    not_onnx: Path
    empty: Path
    folder: Path
    missing: Path
    junk_json: Path
    out: Path

    def doc(self) -> nj.ModelDocument:
        return nj.open_model(self.model)

    def paths(self) -> Iterator[tuple[str, Any]]:
        yield from (
            ("not_onnx", self.not_onnx),
            ("empty", self.empty),
            ("folder", self.folder),
            ("missing", self.missing),
            ("nul", str(self.folder / NUL)),
            ("empty_string", ""),
            ("int", 3),
            ("none", None),
            ("object", object()),
        )


@pytest.fixture(scope="module")
def arena(tmp_path_factory: pytest.TempPathFactory) -> Arena:
    root = tmp_path_factory.mktemp("hostile")
    model = root / "model.onnx"
    onnx.save(conv_relu_model(), model)
    not_onnx = root / "notes.onnx"
    not_onnx.write_text("these are notes, not a model\n" * 20)
    empty = root / "empty.onnx"
    empty.write_bytes(b"")
    folder = root / "folder.onnx"
    folder.mkdir()
    junk_json = root / "junk.json"
    junk_json.write_text('{"traceEvents": 5, "Layers": {"a": NaN}}')
    out = root / "out"
    out.mkdir()
    return Arena(model, not_onnx, empty, folder, root / "absent.onnx", junk_json, out)


Case = Callable[[Arena], object]
CASES: dict[str, Case] = {}
# case id -> why it is expected to fail for now (another item of issue 22)
PENDING: dict[str, str] = {}


def case(name: str, pending: str | None = None) -> Callable[[Case], Case]:
    def register(fn: Case) -> Case:
        assert name not in CASES, name
        CASES[name] = fn
        if pending:
            PENDING[name] = pending
        return fn

    return register


def cases_over_paths(prefix: str, call: Callable[[Arena, Any], object], **pending: str) -> None:
    """One case per hostile path for `call(arena, path)`."""
    kinds = ("not_onnx", "empty", "folder", "missing", "nul", "empty_string", "int", "none")
    for kind in (*kinds, "object"):
        case(f"{prefix}[{kind}]", pending.get(kind))(
            lambda a, kind=kind: call(a, dict(a.paths())[kind])
        )


# ---- opening ----------------------------------------------------------------------------
cases_over_paths("open_model", lambda a, p: nj.open_model(p))
cases_over_paths("GraphView", lambda a, p: nj.GraphView(p))
cases_over_paths("open_engine_graph", lambda a, p: nj.open_engine_graph(p))
cases_over_paths("ModelDocument", lambda a, p: nj.ModelDocument(p))


@case("open_model[unknown keyword]")
def _(a: Arena) -> object:
    return nj.open_model(a.model, mode="r")  # type: ignore[call-arg]


for label, value in (("nan", NAN), ("huge", HUGE), ("text", "17"), ("zero", 0), ("none", None)):
    case(f"new_model[opset={label}]")(lambda a, v=value: nj.new_model(opset=v))
case("new_model[name=nul]")(lambda a: nj.new_model(name=NUL))
case("new_model[name=int]")(lambda a: nj.new_model(name=3))  # type: ignore[arg-type]


# ---- engine layer JSON ------------------------------------------------------------------
_LAYER = {"Name": "conv", "LayerType": "Convolution"}
for label, source in (
    ("dims huge", {"Layers": [{**_LAYER, "Outputs": [{"Name": "t", "Dimensions": [HUGE]}]}]}),
    ("field huge", {"Layers": [{**_LAYER, "Weights": HUGE}]}),
    ("field nan", {"Layers": [{**_LAYER, "Alpha": NAN}]}),
    ("field list huge", {"Layers": [{**_LAYER, "Kernel": [HUGE, 1]}]}),
    ("field key int", {"Layers": [{**_LAYER, 3: "x"}]}),
    ("name nul", {"Layers": [{**_LAYER, "Name": NUL}]}),
    ("name dict", {"Layers": [{**_LAYER, "Name": {"a": 1}}]}),
    ("tensor name nul", {"Layers": [{**_LAYER, "Inputs": [{"Name": NUL}]}]}),
    ("bindings text", {"Layers": [_LAYER], "Bindings": "t"}),
    ("text nan", '{"Layers": [{"Name": "a", "Alpha": NaN}]}'),
    ("text huge", '{"Layers": [{"Name": "a", "Weights": 1' + "0" * 400 + "}]}"),
    ("text deep", '{"Layers": ' + "[" * 100_000 + "]" * 100_000 + "}"),
    ("bytes", b'{"Layers": []}'),
):
    case(f"open_engine_graph[{label}]")(lambda a, s=source: nj.open_engine_graph(s))
case("open_engine_graph[model=not_onnx]")(
    lambda a: nj.open_engine_graph({"Layers": [_LAYER]}, model=a.not_onnx)
)
case("open_engine_graph[model=missing]")(
    lambda a: nj.open_engine_graph({"Layers": [_LAYER]}, model=a.missing)
)
case("open_engine_graph[model=folder]")(
    lambda a: nj.open_engine_graph({"Layers": [_LAYER]}, model=a.folder)
)


# ---- document edits ---------------------------------------------------------------------
EDITS: dict[str, Callable[[nj.ModelDocument, Arena], object]] = {
    "add_node[op int]": lambda d, a: d.add_node(3),  # type: ignore[arg-type]
    "add_node[op nul]": lambda d, a: d.add_node(NUL),
    "add_node[op empty]": lambda d, a: d.add_node(""),
    "add_node[name nul]": lambda d, a: d.add_node("Relu", name=NUL),
    "add_node[inputs int]": lambda d, a: d.add_node("Relu", inputs=3),  # type: ignore[arg-type]
    "add_node[attr huge]": lambda d, a: d.add_node("Gelu", attributes={"approximate": HUGE}),
    "add_node[attr nan int]": lambda d, a: d.add_node("Flatten", attributes={"axis": NAN}),
    "add_node[attr huge int]": lambda d, a: d.add_node("Flatten", attributes={"axis": HUGE}),
    "add_node[num_outputs huge]": lambda d, a: d.add_node("Split", num_outputs=HUGE),
    "add_node[num_inputs nan]": lambda d, a: d.add_node("Concat", num_inputs=NAN),  # type: ignore[arg-type]
    "add_node[domain nul]": lambda d, a: d.add_node("Op", NUL),
    "set_attribute[int huge]": lambda d, a: d.set_attribute("conv", "group", HUGE),
    "set_attribute[ints huge]": lambda d, a: d.set_attribute("conv", "pads", [HUGE, 0, 0, 0]),
    "set_attribute[ints nan]": lambda d, a: d.set_attribute("conv", "pads", [NAN, 0, 0, 0]),
    "set_attribute[ints text]": lambda d, a: d.set_attribute("conv", "pads", "[1, 2"),
    "set_attribute[name nul]": lambda d, a: d.set_attribute("conv", NUL, 1),
    "set_attribute[node int]": lambda d, a: d.set_attribute(3, "group", 1),  # type: ignore[arg-type]
    "set_attribute[value object]": lambda d, a: d.set_attribute("conv", "group", object()),
    "rename_node[nul]": lambda d, a: d.rename_node("conv", NUL),
    "rename_node[empty]": lambda d, a: d.rename_node("conv", ""),
    "rename_node[int]": lambda d, a: d.rename_node("conv", 3),  # type: ignore[arg-type]
    "rename_tensor[nul]": lambda d, a: d.rename_tensor("c", NUL),
    "rename_tensor[none]": lambda d, a: d.rename_tensor(None, "z"),  # type: ignore[arg-type]
    "remove_node[missing]": lambda d, a: d.remove_node("nope"),
    "remove_nodes[int]": lambda d, a: d.remove_nodes(3),  # type: ignore[arg-type]
    "connect[index huge]": lambda d, a: d.connect("x", "add", HUGE),
    "connect[index nan]": lambda d, a: d.connect("x", "add", NAN),  # type: ignore[arg-type]
    "connect[index negative]": lambda d, a: d.connect("x", "add", -1),
    "disconnect[index huge]": lambda d, a: d.disconnect("add", HUGE),
    "disconnect[index text]": lambda d, a: d.disconnect("add", "0"),  # type: ignore[arg-type]
    "add_graph_input[name nul]": lambda d, a: d.add_graph_input(NUL, "float", [1]),
    "add_graph_input[dtype junk]": lambda d, a: d.add_graph_input("z", "floaty", [1]),
    "add_graph_input[dtype huge]": lambda d, a: d.add_graph_input("z", HUGE, [1]),
    "add_graph_input[shape huge]": lambda d, a: d.add_graph_input("z", "float", [HUGE]),
    "add_graph_input[shape nan]": lambda d, a: d.add_graph_input("z", "float", [NAN]),
    "add_graph_input[shape int]": lambda d, a: d.add_graph_input("z", "float", 3),  # type: ignore[arg-type]
    "add_graph_output[missing]": lambda d, a: d.add_graph_output("nope"),
    "set_tensor_type[shape huge]": lambda d, a: d.set_tensor_type("c", "float", [HUGE]),
    "set_tensor_type[shape negative]": lambda d, a: d.set_tensor_type("c", "float", [-5]),
    "set_tensor_type[dtype nan]": lambda d, a: d.set_tensor_type("c", NAN, [1]),  # type: ignore[arg-type]
    "create_initializer[name nul]": lambda d, a: d.create_initializer(NUL, [1.0]),
    "create_initializer[value huge]": lambda d, a: d.create_initializer("k", [HUGE]),
    "create_initializer[value huge int64]": lambda d, a: d.create_initializer(
        "k", [HUGE], dtype="int64"
    ),
    "create_initializer[value object]": lambda d, a: d.create_initializer("k", object()),
    "create_initializer[value text junk]": lambda d, a: d.create_initializer("k", "[1, 2"),
    "create_initializer[npy missing]": lambda d, a: d.create_initializer("k", str(a.missing)),
    "create_initializer[npy not numpy]": lambda d, a: d.create_initializer(
        "k", str(a.not_onnx.with_suffix(".npy"))
    ),
    "create_initializer[npy folder]": lambda d, a: d.create_initializer("k", a.folder),
    "create_initializer[shape huge]": lambda d, a: d.create_initializer(
        "k", generate="zeros", dtype="float", shape=[HUGE]
    ),
    "create_initializer[shape enormous]": lambda d, a: d.create_initializer(
        "k", generate="zeros", dtype="float", shape=[2**40, 2**40]
    ),
    "create_initializer[shape nan]": lambda d, a: d.create_initializer(
        "k", generate="zeros", dtype="float", shape=[NAN]
    ),
    "create_initializer[generate junk]": lambda d, a: d.create_initializer(
        "k", generate="lots", dtype="float", shape=[2]
    ),
    "create_initializer[seed nan]": lambda d, a: d.create_initializer(
        "k", generate="normal", dtype="float", shape=[2], seed=NAN
    ),
    "create_initializer[dtype junk]": lambda d, a: d.create_initializer("k", [1], dtype="f33"),
    "delete_initializer[missing]": lambda d, a: d.delete_initializer("nope"),
    "set_external[location nul]": lambda d, a: d.set_external("w", NUL),
    "set_external[offset huge]": lambda d, a: d.set_external("w", "w.bin", offset=HUGE),
    "set_external[offset nan]": lambda d, a: d.set_external("w", "w.bin", offset=NAN),  # type: ignore[arg-type]
    "set_external[location folder]": lambda d, a: d.set_external("w", "folder.onnx"),
    "import_domain[int]": lambda d, a: d.import_domain(3),  # type: ignore[arg-type]
    "import_domain[version huge]": lambda d, a: d.import_domain("vendor", HUGE),
    "import_domain[nul]": lambda d, a: d.import_domain(NUL),
    "remove_domain[int]": lambda d, a: d.remove_domain(3),  # type: ignore[arg-type]
    "create_function[name int]": lambda d, a: d.create_function(3, "local", ["a"], ["b"]),  # type: ignore[arg-type]
    "create_function[domain none]": lambda d, a: d.create_function("F", None, ["a"], ["b"]),  # type: ignore[arg-type]
    "create_function[inputs text]": lambda d, a: d.create_function("F", "local", "a", ["b"]),
    "create_function[input nul]": lambda d, a: d.create_function("F", "local", [NUL], ["b"]),
    "create_function[attribute nan]": lambda d, a: d.create_function(
        "F", "local", ["a"], ["b"], attributes={"k": NAN, NUL: 1}
    ),
    "create_function[opset huge]": lambda d, a: d.create_function(
        "F", "local", ["a"], ["b"], opset=HUGE
    ),
    "open_function[none]": lambda d, a: d.open_function(None, None),  # type: ignore[arg-type]
    "open_subgraph[missing]": lambda d, a: d.open_subgraph("conv", "body"),
    "set_output_count[huge]": lambda d, a: d.set_output_count("conv", HUGE),
    "update_companion[key int]": lambda d, a: d.update_companion(3, 1),  # type: ignore[arg-type]
    "update_companion[nan]": lambda d, a: d.update_companion("zoom", NAN),
    "tensorrt precision junk": lambda d, a: d.tensorrt.set_layer_precisions(["conv"], "fp7"),
    "tensorrt precision node int": lambda d, a: d.tensorrt.set_layer_precisions(3, "fp16"),  # type: ignore[arg-type]
    "save[nul]": lambda d, a: d.save(a.out / NUL),
    "save[folder]": lambda d, a: d.save(a.folder),
    "save[missing folder]": lambda d, a: d.save(a.out / "no" / "m.onnx"),
    "save[int]": lambda d, a: d.save(3),  # type: ignore[arg-type]
    "save[empty string]": lambda d, a: d.save(""),
    "save[external nul]": lambda d, a: d.save(a.out / "e.onnx", external_data=NUL),
    "save[threshold nan]": lambda d, a: d.save(
        a.out / "t.onnx",
        external_data=True,
        size_threshold=NAN,  # type: ignore[arg-type]
    ),
    "undo[nothing]": lambda d, a: d.undo() or d.redo(),
}
for name, edit in EDITS.items():
    case(f"doc.{name}")(lambda a, edit=edit: edit(a.doc(), a))


# ---- transforms -------------------------------------------------------------------------
def _transforms() -> dict[str, Callable[[Any, Any], object]]:
    return {
        "sanitize": nj.sanitize,
        "convert_to_fp16": lambda m, o: nj.convert_to_fp16(m, o, validate=False),
        "convert_opset": lambda m, o: nj.convert_opset(m, o, 18, validate=False),
        "extract_subgraph": lambda m, o: nj.extract_subgraph(m, o, ["c"], ["y"]),
    }


for tname, transform in _transforms().items():
    cases_over_paths(tname, lambda a, p, t=transform: t(p, a.out / "t.onnx"))
    for kind, output in (("nul", NUL), ("int", 3), ("empty", ""), ("folder", None)):
        case(f"{tname}[output={kind}]")(
            lambda a, t=transform, o=output: t(a.model, a.folder if o is None else o)
        )
for label, target in (("huge", HUGE), ("nan", NAN), ("text", "18"), ("zero", 0)):
    case(f"convert_opset[target={label}]")(
        lambda a, t=target: nj.convert_opset(a.model, a.out / "o.onnx", t, validate=False)
    )
case("sanitize[passes=nan]")(lambda a: nj.sanitize(a.model, a.out / "s.onnx", passes=NAN))  # type: ignore[arg-type]
case("sanitize[fold_size_threshold=huge]")(
    lambda a: nj.sanitize(a.model, a.out / "s.onnx", fold_size_threshold=HUGE)
)
case("extract_subgraph[inputs nul]")(
    lambda a: nj.extract_subgraph(a.model, a.out / "e.onnx", [NUL], ["y"])
)
case("extract_subgraph[inputs int]")(
    lambda a: nj.extract_subgraph(a.model, a.out / "e.onnx", 3, ["y"])  # type: ignore[arg-type]
)
case("extract_function[name nul]")(lambda a: nj.extract_function(a.model, a.out / "f.onnx", NUL))
case("extract_body[node missing]")(lambda a: nj.extract_body(a.model, a.out / "b.onnx", "x"))
case("convert_tensors[selection int]")(lambda a: nj.convert_tensors(a.doc(), 3, "float16"))  # type: ignore[arg-type]
case("convert_tensors[dtype huge]")(lambda a: nj.convert_tensors(a.doc(), ["w"], HUGE))
case("convert_tensors[dtype nan]")(lambda a: nj.convert_tensors(a.doc(), ["w"], NAN))  # type: ignore[arg-type]
case("convert_tensors[name nul]")(lambda a: nj.convert_tensors(a.doc(), [NUL], "float16"))
case("list_tensors[dtype junk]")(lambda a: nj.list_tensors(a.doc(), "f33"))
case("list_tensors[doc path]")(lambda a: nj.list_tensors(a.model))  # type: ignore[arg-type]
case("preview_tensor_conversion[dtype junk]")(
    lambda a: nj.preview_tensor_conversion(a.doc(), ["w"], "f33")
)
case("UserTool[application nul]")(lambda a: nj.UserTool("t", NUL))
case("UserTool[name empty]")(lambda a: nj.UserTool("", "python"))
case("UserTool[arguments text]")(lambda a: nj.UserTool("t", "python", "-c"))  # type: ignore[arg-type]
cases_over_paths("ToolStore", lambda a, p: nj.ToolStore(p).load())
case("run_tool[unknown tool]")(
    lambda a: nj.run_tool("no such tool", a.model, store=nj.ToolStore(a.out / "tools.json"))
)


# ---- profiling --------------------------------------------------------------------------
cases_over_paths("profile_ort", lambda a, p: nj.profile_ort(p, iterations=1))
for label, value in (("nan", NAN), ("zero", 0), ("text", "5"), ("huge", HUGE), ("big", 10**9)):
    case(f"profile_ort[iterations={label}]")(
        lambda a, v=value: nj.profile_ort(a.model, iterations=v)
    )
case("profile_ort[unknown keyword]")(lambda a: nj.profile_ort(a.model, iteration=3))  # type: ignore[call-arg]
case("profile_ort[provider nul]")(lambda a: nj.profile_ort(a.model, provider=NUL))  # type: ignore[call-arg]
case("profile_ort[warmup huge]")(lambda a: nj.profile_ort(a.model, warmup=HUGE))
case("profile_ort[timeout nan]")(lambda a: nj.profile_ort(a.model, timeout=NAN))
case("profile_ort[input_folder missing]")(
    lambda a: nj.profile_ort(a.model, input_folder=a.missing)  # type: ignore[call-arg]
)
cases_over_paths("export_engine", lambda a, p: nj.export_engine(p, a.out / "e.engine"))
case("export_engine[output=model]")(
    lambda a: _refused_without_writing(a, lambda: nj.export_engine(a.model, a.model))
)
case("export_engine[output nul]")(lambda a: nj.export_engine(a.model, a.out / NUL))
case("export_engine[output folder]")(lambda a: nj.export_engine(a.model, a.folder))
case("export_engine[fp16 text]")(lambda a: nj.export_engine(a.model, a.out / "e", fp16="yes"))  # type: ignore[call-arg]
cases_over_paths("check_trt_capability", lambda a, p: nj.check_trt_capability(p))
for label, kwargs in (
    ("device nan", {"device_index": NAN}),
    ("device huge", {"device_index": HUGE}),
    ("workspace nan", {"workspace_mib": NAN}),
    ("backend junk", {"backend": "cuda"}),
    ("unknown", {"fp17": True}),
):
    case(f"TrtSettings[{label}]")(lambda a, k=kwargs: nj.TrtSettings(**k))
cases_over_paths("load_ort_profile", lambda a, p: nj.load_ort_profile(p))
case("load_ort_profile[junk json]")(lambda a: nj.load_ort_profile(a.junk_json))
case("load_ort_profile[skip_runs nan]")(
    lambda a: nj.load_ort_profile(a.junk_json, skip_runs=NAN)  # type: ignore[arg-type]
)
cases_over_paths("load_trtexec[profile]", lambda a, p: nj.load_trtexec(p))
cases_over_paths("load_trtexec[layer_info]", lambda a, p: nj.load_trtexec(layer_info=p))
case("load_trtexec[junk json]")(lambda a: nj.load_trtexec(a.junk_json, layer_info=a.junk_json))
case("load_trtexec[nothing]")(lambda a: nj.load_trtexec())
cases_over_paths("ProfileReport.load", lambda a, p: nj.ProfileReport.load(p))
case("ProfileReport.load[junk json]")(lambda a: nj.ProfileReport.load(a.junk_json))
case("ProfileReport[layers int]")(lambda a: nj.ProfileReport(3))  # type: ignore[arg-type]


# ---- targets (constructed only: nothing connects) ---------------------------------------
for label, kwargs in (
    ("host int", {"host": 3}),
    ("host empty", {"host": ""}),
    ("host nul", {"host": NUL}),
    ("port huge", {"host": "h", "port": HUGE}),
    ("port nan", {"host": "h", "port": NAN}),
    ("port negative", {"host": "h", "port": -1}),
    ("port text", {"host": "h", "port": "22"}),
    ("user nul", {"host": "h", "user": NUL}),
    ("deploy_dir nul", {"host": "h", "deploy_dir": NUL}),
    ("deploy_dir int", {"host": "h", "deploy_dir": 3}),
    ("key_file missing", {"host": "h", "key_file": "/nonexistent/key"}),
    ("key_file nul", {"host": "h", "key_file": NUL}),
    ("proxy_command int", {"host": "h", "proxy_command": 3}),
    ("proxy_jump nul", {"host": "h", "proxy_jump": NUL}),
    ("connect_timeout nan", {"host": "h", "connect_timeout": NAN}),
    ("unknown", {"host": "h", "hostname": "x"}),
):
    case(f"SshTarget[{label}]")(lambda a, k=kwargs: nj.SshTarget(**k))
for label, kwargs in (
    ("python nul", {"python": NUL}),
    ("python missing", {"python": "/nonexistent/python"}),
    ("python int", {"python": 3}),
    ("env int", {"env": 3}),
    ("env nul", {"env": {"A": NUL}}),
):
    case(f"LocalTarget[{label}]")(lambda a, k=kwargs: nj.LocalTarget(**k))
cases_over_paths("connections", lambda a, p: nj.connections(p).names())
case("check_target[target int]")(lambda a: nj.check_target(3))  # type: ignore[arg-type]
case("check_target[timeout nan]")(lambda a: nj.check_target(timeout=NAN))
cases_over_paths("export_notebook_html", lambda a, p: nj.export_notebook_html(p))
case("export_notebook_html[html_path int]")(
    lambda a: nj.export_notebook_html(a.not_onnx, 3)  # type: ignore[arg-type]
)


def _refused_without_writing(a: Arena, call: Callable[[], object]) -> object:
    before = a.model.read_bytes()
    try:
        return call()
    finally:
        assert a.model.read_bytes() == before, "the model was overwritten"


# ---- the walk ---------------------------------------------------------------------------
def _params() -> Iterator[Any]:
    for name in CASES:
        pending = PENDING.get(name)
        marks = [pytest.mark.xfail(strict=True, reason=pending)] if pending else []
        yield pytest.param(name, id=name, marks=marks)


@pytest.fixture(autouse=True)
def _bounded_memory() -> Iterator[None]:
    """A case that tries to allocate what a huge number asks for fails fast, not the host."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (16 << 30, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


@pytest.mark.parametrize("name", list(_params()))
def test_hostile_input_raises_only_the_packages_errors(arena: Arena, name: str) -> None:
    try:
        CASES[name](arena)
    except nj.NsdlError:
        pass
    except TypeError as error:  # Python's own, for a keyword the signature does not have
        if "unexpected keyword argument" not in str(error):
            pytest.fail(f"{name} raised TypeError: {error}")
    except Exception as error:
        pytest.fail(f"{name} raised {type(error).__module__}.{type(error).__name__}: {error}")
