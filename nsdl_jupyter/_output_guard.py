"""The one output guard: which files a writer of the package may replace.

Every file the package writes at a path a user chose (saved models, transform and extraction
results, tools' outputs, profile traces and reports, TensorRT engines and their side files)
is checked here before any work starts. An output never replaces
- a model being read, a data file it references (external data) or its companion
  `<model>.nsdl.json`;
- another model's data file or companion (a model beside the path reads it, or is named by it);
and any other existing file is replaced only with `overwrite=True` (another model's `.onnx`
file only by a writer of models: never by a trace, report or engine), or when the writer
recognises it as its own earlier output (`earlier`).
Paths are compared after resolving symlinks, and by inode, so a link to a protected file is
that file.
"""

from __future__ import annotations

import contextlib
import mmap
import os
from collections.abc import Callable, Iterable
from pathlib import Path

import onnx

from nsdl_jupyter._errors import OutputPathError
from nsdl_jupyter._walk import all_tensors

COMPANION_SUFFIX = ".nsdl.json"
MODEL_SUFFIX = ".onnx"

PathLike = str | os.PathLike[str]


def companion_of(model: PathLike) -> Path:
    """The companion file of a model: `<model>.nsdl.json` beside it."""
    path = Path(model)
    return path.with_name(path.name + COMPANION_SUFFIX)


def data_files_of(model: Path) -> set[Path]:
    """The external data files the ONNX file `model` names (resolved; missing ones too).

    A byte search first: a model without external data never says `location`.
    """
    if not _mentions(model, b"location"):
        return set()
    try:
        proto = onnx.load(str(model), load_external_data=False)
    except Exception:  # not an ONNX file after all: it names no data file
        return set()
    found = set()
    for tensor in all_tensors(proto):
        if tensor.data_location != onnx.TensorProto.EXTERNAL:
            continue
        for entry in tensor.external_data:
            if entry.key == "location":
                with contextlib.suppress(OSError, ValueError):  # a NUL byte, a loop
                    found.add((model.parent / entry.value).resolve())
    return found


def references(model: Path, data: Path) -> bool:
    """True when the ONNX file `model` names `data` (resolved) as external data."""
    try:
        relative = os.path.relpath(data, model.parent)
    except ValueError:
        return False
    return _mentions(model, relative.encode()) and data in data_files_of(model)


def models_referencing(folder: Path, data: Path, *, besides: Path | None) -> list[Path]:
    """ONNX files in `folder` (other than `besides`) whose external data is `data`."""
    skip = besides.resolve() if besides is not None else None
    return [
        candidate
        for candidate in sorted(folder.glob(f"*{MODEL_SUFFIX}"))
        if candidate.resolve() != skip and candidate.is_file() and references(candidate, data)
    ]


def model_files(model: PathLike) -> dict[Path, str]:
    """A model's own files, resolved, each with what it is: the model, its data, companion."""
    path = Path(model).absolute()
    files = {path.resolve(): f"the model {path.name}"}
    for companion in (companion_of(path), companion_of(path.resolve())):
        files[companion.resolve()] = f"the companion of {path.name}"
    for data in data_files_of(path):
        files.setdefault(data, f"the external data of {path.name}")
    return files


def protected_because(path: PathLike, reading: Iterable[PathLike | None] = ()) -> str | None:
    """What `path` is when no output may replace it (a file of a model in `reading`, or another
    model's data or companion), else None: the one definition of a protected path."""
    path = Path(path).absolute()
    resolved = path.resolve()
    exists = os.path.lexists(path)
    for model in reading:
        if model is None or "\0" in os.fspath(model):  # no file has that name: nothing to keep
            continue
        for file, what in model_files(model).items():
            if _same_file(file, resolved):
                return f"{what}, the model being read"
    if not exists:
        return None
    for folder in dict.fromkeys([path.parent, resolved.parent]):
        for other in sorted(folder.glob(f"*{MODEL_SUFFIX}")):
            if not other.is_file():
                continue
            for file, what in model_files(other).items():
                if file != other.resolve() and _same_file(file, resolved):
                    return f"{what}, another model's file"
    return None


def output_path(value: object, what: str = "output") -> Path:
    """`value` as a path a file could be written at, else OutputPathError: a value that is no
    path (an int, None) or a name no file can have (a NUL byte). Writers that work on the
    path before `guard_output` check it here first."""
    if not isinstance(value, (str, os.PathLike)):
        raise OutputPathError(
            f"the {what} must be a path (str or os.PathLike), not {type(value).__name__}", None
        )
    text = os.fspath(value)
    if not isinstance(text, str) or "\0" in text:
        raise OutputPathError(f"{what} path {text!r} holds a NUL byte: no file can have it", None)
    return Path(text)


def guard_output(
    path: PathLike,
    *,
    reading: Iterable[PathLike | None] = (),
    overwrite: bool = False,
    earlier: Callable[[Path], bool] | None = None,
    writes_model: bool = False,
    what: str = "output",
) -> Path:
    """The absolute `path` if a writer may write there (see the module docstring), else
    OutputPathError naming the path, what it would destroy and what to do instead.

    `reading`: the models the writer reads (their files are never replaced). `earlier`: true
    for a file that is this writer's own earlier output (replaced without `overwrite`).
    `writes_model`: the output is an ONNX model, which may replace another model's file.
    """
    target = Path(os.path.abspath(output_path(path, what).expanduser()))
    because = protected_because(target, reading)
    if because is not None:
        raise OutputPathError(
            f"{what} {target} is {because}: writing there would destroy it; choose another path",
            target,
        )
    replaced = os.path.lexists(target) and not target.is_dir()  # a folder: the writer says
    if replaced and target.name.endswith(MODEL_SUFFIX) and not writes_model:
        raise OutputPathError(
            f"{what} {target} is another ONNX model, which only a model may replace: "
            "choose another path",
            target,
        )
    if replaced and not overwrite and not (earlier and earlier(target)):
        kind = "another ONNX model" if target.name.endswith(MODEL_SUFFIX) else "an existing file"
        raise OutputPathError(
            f"{what} {target} is {kind}: pass overwrite=True to replace it, or choose another path",
            target,
        )
    return target


def starts_with(path: Path, *prefixes: bytes) -> bool:
    """True when the file's first bytes (after blanks) begin with one of `prefixes`: how a
    writer recognises its own earlier output."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(4096).lstrip()
    except OSError:
        return False
    return head.startswith(prefixes)


def _mentions(path: Path, needle: bytes) -> bool:
    try:
        with open(path, "rb") as handle:
            if os.fstat(handle.fileno()).st_size == 0:
                return False
            with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
                return data.find(needle) >= 0
    except (OSError, ValueError):
        return False


def _same_file(a: Path, b: Path) -> bool:
    """Equal resolved paths, or one inode (a hard link)."""
    if a == b:
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False
