"""A reference from a function-body attribute to an attribute of the calling node."""

from __future__ import annotations

from dataclasses import dataclass

import onnx_ir as ir


@dataclass(frozen=True)
class AttributeReference:
    """What `attribute_to_python` gives for ``alpha = @my_alpha`` in a function body."""

    name: str
    type: ir.AttributeType

    def __str__(self) -> str:
        return f"@{self.name}"
