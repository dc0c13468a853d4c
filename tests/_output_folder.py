"""A folder like a user's, for the output guard's tests: a model with external data and a
companion, another model with its own, and an unrelated file."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tests._document_models import conv_relu_model, save_with_external


@dataclass(frozen=True)
class Folder:
    model: Path
    data: Path
    companion: Path
    other: Path
    other_data: Path
    other_companion: Path
    unrelated: Path


def make_folder(root: Path) -> Folder:
    """model.onnx (+ weights.bin, + companion), other.onnx (+ other.bin, + companion), notes.txt."""
    model = root / "model.onnx"
    save_with_external(conv_relu_model(), model, "weights.bin")
    (root / "model.onnx.nsdl.json").write_text('{"version": 1}')
    other = root / "other.onnx"
    save_with_external(conv_relu_model(), other, "other.bin")
    (root / "other.onnx.nsdl.json").write_text('{"version": 1}')
    notes = root / "notes.txt"
    notes.write_text("my notes")
    return Folder(
        model,
        root / "weights.bin",
        root / "model.onnx.nsdl.json",
        other,
        root / "other.bin",
        root / "other.onnx.nsdl.json",
        notes,
    )


def snapshot(root: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(root.iterdir()) if p.is_file()}
