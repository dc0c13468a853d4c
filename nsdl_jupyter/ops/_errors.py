"""Errors of the operator layer: all are ValueError subclasses with the fix in the message."""

from __future__ import annotations

from nsdl_jupyter._errors import NsdlError


class LiteralSyntaxError(NsdlError, ValueError):
    """A literal such as ``[1, 2`` that does not parse.

    `column` is the 1-based character offset in the whole text (what an editor needs to put the
    caret there); the message says ``column N`` for one-line text and ``line L, column C`` when
    the text spans several lines.
    """

    def __init__(self, message: str, column: int, text: str = "") -> None:
        self.reason = message
        self.column = column
        self.text = text
        before = text[: column - 1]
        self.line = before.count("\n") + 1
        self.line_column = column - (before.rfind("\n") + 1)
        if "\n" in text:
            where = f"line {self.line}, column {self.line_column}"
        else:
            where = f"column {column}"
        super().__init__(f"{where}: {message}")


class AttributeValueError(NsdlError, ValueError):
    """A value that cannot become the requested ONNX attribute type."""

    def __init__(self, message: str, attribute: str = "") -> None:
        self.attribute = attribute
        super().__init__(message)


class AttributeLiteralError(AttributeValueError, LiteralSyntaxError):
    """Literal text given for an attribute does not parse, or holds the wrong kind of value.

    It is both an `AttributeValueError` (what `to_attribute` promises) and a
    `LiteralSyntaxError` (so an editor can place the caret at `column`). The message reads
    ``attribute 'pads' expects INTS (a list of ints, e.g. [1, 2]): column 5: ...``.
    """

    def __init__(self, attribute: str, expectation: str, reason: str, column: int, text: str):
        LiteralSyntaxError.__init__(self, reason, column, text)
        self.attribute = attribute
        self.args = (f"{expectation}: {self.args[0]}",)

    def __str__(self) -> str:
        return str(self.args[0])


class UnknownOperatorError(NsdlError, ValueError):
    """No schema for an operator in the requested domain and opset."""

    def __init__(self, message: str, op_type: str = "", domain: str = "") -> None:
        self.op_type = op_type
        self.domain = domain
        super().__init__(message)


class UnknownDomainError(UnknownOperatorError):
    """The domain itself is not known to the installed onnx / onnxruntime."""
