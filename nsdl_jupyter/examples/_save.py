"""Write an example model to disk by name."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import onnx

from nsdl_jupyter._output_guard import guard_output
from nsdl_jupyter.examples._bert import bert_base, small_transformer
from nsdl_jupyter.examples._errors import ExampleError
from nsdl_jupyter.examples._resnet import resnet18, resnet50
from nsdl_jupyter.examples._synthetic import synthetic_dag

#: example name -> builder; every builder returns an `onnx.ModelProto` with random weights
EXAMPLES: dict[str, Callable[..., onnx.ModelProto]] = {
    "resnet50": resnet50,
    "resnet18": resnet18,
    "bert_base": bert_base,
    "small_transformer": small_transformer,
    "synthetic_dag": synthetic_dag,
}


def save_example(
    name: str, path: str | os.PathLike[str], *, overwrite: bool = False, **kwargs: Any
) -> Path:
    """Build the example `name` (keyword arguments go to its builder) and save it atomically.

    `save_example("synthetic_dag", "big.onnx", num_nodes=20_000)`; returns the path written.
    An existing file is replaced only with `overwrite=True` (the output guard), or when it is
    this very example already (a notebook cell run again).
    """
    builder = EXAMPLES.get(name)
    if builder is None:
        raise ExampleError(f"unknown example {name!r}; choose one of {', '.join(EXAMPLES)}")
    target = Path(path)
    if not target.parent.is_dir():
        raise FileNotFoundError(f"folder {target.parent} does not exist; create it first")
    data = builder(**kwargs).SerializeToString()  # seeded: the same bytes every time

    def same_example(existing: Path) -> bool:  # a re-run cell finds its own earlier file
        return existing.stat().st_size == len(data) and existing.read_bytes() == data

    guard_output(
        target, overwrite=overwrite, earlier=same_example, writes_model=True, what="example path"
    )
    partial = target.with_name(f".{target.name}.{os.getpid()}.partial")
    try:
        with partial.open("wb") as stream:
            stream.write(data)
        os.replace(partial, target)
    finally:
        partial.unlink(missing_ok=True)
    return target
