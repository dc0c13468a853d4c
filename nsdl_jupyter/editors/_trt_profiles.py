"""State of the optimization-profile form: one row of min/opt/max text per dynamic input.

Text is parsed here ("1x3x224x224", "1, 3, 224, 224" or "[1, 3, 224, 224]"); applying a
profile sets every filled row through `doc.tensorrt` as one undo step, all or nothing.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from nsdl_jupyter.document import ModelDocument, TensorRtPropertyError

KEYS = ("min", "opt", "max")
_SPLIT = re.compile(r"[xX,\s]+")


@dataclass(frozen=True)
class ProfileRow:
    """One dynamic input in the form: its model dims and the min/opt/max text shown."""

    input: str
    dims: str
    min: str
    opt: str
    max: str


def format_dims(dims: list[int] | list[int | str | None]) -> str:
    return "x".join("?" if d is None else str(d) for d in dims)


def parse_dims(text: str, where: str) -> list[int]:
    """`[1, 3, 224, 224]` from "1x3x224x224", "1,3,224,224" or "[1, 3, 224, 224]"."""
    parts = [p for p in _SPLIT.split(text.strip().strip("[]()")) if p]
    if not parts or not all(p.isdigit() for p in parts):
        raise TensorRtPropertyError(
            f"{where}: {text!r} is not a shape; write sizes like 1x3x224x224 or 1, 3, 224, 224"
        )
    return [int(p) for p in parts]


def profile_rows(doc: ModelDocument, profile: int) -> list[ProfileRow]:
    """The rows of profile `profile` (a new one when past the end): its shapes where set, else
    the model's dims with each free dimension at 1."""
    profiles = doc.tensorrt.profiles
    current = profiles[profile] if 0 <= profile < len(profiles) else {}
    rows = []
    for name, dims in doc.tensorrt.dynamic_inputs().items():
        shapes = current.get(name)
        if shapes is None:
            default = format_dims([d if isinstance(d, int) else 1 for d in dims]) if dims else ""
            texts = dict.fromkeys(KEYS, default)
        else:
            texts = {key: format_dims(list(shapes[key])) for key in KEYS}
        rows.append(ProfileRow(name, format_dims(dims) or "unknown rank", **texts))
    return rows


def apply_profile(
    doc: ModelDocument, profile: int, texts: Mapping[str, tuple[str, str, str]]
) -> None:
    """Set profile `profile` from `{input: (min, opt, max) text}` as one undo step; rows left
    empty are skipped. Every text is parsed before anything changes."""
    parsed = {
        name: {key: parse_dims(text, f"{name} {key}") for key, text in zip(KEYS, row, strict=True)}
        for name, row in texts.items()
        if any(t.strip() for t in row)
    }
    if not parsed:
        raise TensorRtPropertyError("fill min, opt and max of at least one input")
    with doc.batch(f"optimization profile {profile}"):
        for name, shapes in parsed.items():
            doc.tensorrt.set_profile(name, **shapes, profile=profile)
