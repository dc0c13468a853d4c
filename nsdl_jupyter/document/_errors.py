"""Errors a user of the document can get; each says what to do about it."""

from __future__ import annotations

from nsdl_jupyter._errors import NsdlError


class DocumentError(NsdlError, ValueError):
    """Base class: the edit or file operation was refused and nothing changed."""


class ModelLoadError(DocumentError):
    """The file is not a usable ONNX model (corrupt, truncated, unsafe external data)."""


class ModelSaveError(DocumentError, OSError):
    """The model could not be written; the previous file on disk is intact."""


class InvalidNameError(DocumentError):
    """A node or tensor name is invalid or already taken."""


class GraphEditError(DocumentError):
    """A structural edit is impossible (unknown node, cycle, occupied input, ...)."""


class InitializerError(DocumentError):
    """An initializer cannot be created, replaced, or stored as requested."""


class AttributeEditError(DocumentError):
    """An attribute edit is refused: unknown or required attribute, wrong type, bad literal."""


class UnknownNodeError(GraphEditError, KeyError):
    """No node of that name (a KeyError too: the name was looked up)."""
