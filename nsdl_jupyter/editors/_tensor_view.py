"""State of the tensor editor: statistics and one page of values of a tensor.

Only the current page (a few dozen cells) and the statistics ever reach the browser. A
tensor of any rank is shown as a 2-D grid: rows are the leading dimensions flattened (each
row labelled with its index, e.g. ``[0, 2, :]``), columns the last dimension.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import onnx_ir as ir

from nsdl_jupyter.editors._errors import EditorError
from nsdl_jupyter.ops import LiteralSyntaxError, format_literal, parse_literal

ROWS_PER_PAGE = 12
COLUMNS_PER_PAGE = 8


class TensorEditError(EditorError):
    """A cell value that does not fit the tensor's dtype; the tensor is unchanged."""


@dataclass(frozen=True)
class TensorStats:
    """Summary of a tensor; numeric fields are None for strings and empty tensors."""

    dtype: str
    shape: tuple[int, ...]
    size: int
    nbytes: int
    minimum: float | None = None
    maximum: float | None = None
    mean: float | None = None
    std: float | None = None
    zeros: int | None = None
    nans: int | None = None
    infs: int | None = None

    def lines(self) -> list[tuple[str, str]]:
        """(label, text) pairs for display."""
        out = [
            ("dtype", self.dtype),
            ("shape", str(list(self.shape))),
            ("elements", f"{self.size:,}"),
            ("bytes", f"{self.nbytes:,}"),
        ]
        for label, value in (
            ("min", self.minimum),
            ("max", self.maximum),
            ("mean", self.mean),
            ("std", self.std),
        ):
            if value is not None:
                out.append((label, f"{value:.6g}"))
        for label, count in (("zeros", self.zeros), ("NaN", self.nans), ("inf", self.infs)):
            if count is not None:
                out.append((label, f"{count:,}"))
        return out


def as_array(source: Any) -> np.ndarray:
    """A numpy view of an onnx_ir tensor/Value (its const value), an array or a list."""
    if isinstance(source, ir.Value):
        if source.const_value is None:
            raise TensorEditError(f"tensor {source.name!r} has no constant value to show")
        source = source.const_value
    if isinstance(source, ir.TensorProtocol):
        array = np.asarray(source.numpy())
        if source.dtype == ir.DataType.STRING:
            array = (
                np.vectorize(
                    lambda b: b.decode("utf-8", "replace") if isinstance(b, bytes) else b,
                    otypes=[object],
                )(array)
                if array.size
                else array.astype(object)
            )
        return array
    return np.asarray(source)


def tensor_stats(array: np.ndarray, dtype_name: str | None = None) -> TensorStats:
    """Statistics over the whole tensor (computed in numpy; nothing is sent but the numbers)."""
    base = TensorStats(
        dtype=dtype_name or str(array.dtype),
        shape=tuple(int(d) for d in array.shape),
        size=int(array.size),
        nbytes=int(array.nbytes),
    )
    values = _numeric(array)
    if values is None or values.size == 0:
        return base
    nans = infs = None
    pool = values
    if values.dtype.kind == "f":
        nan_mask = np.isnan(values)
        inf_mask = np.isinf(values)
        nans, infs = int(nan_mask.sum()), int(inf_mask.sum())
        if nans or infs:
            pool = values[~(nan_mask | inf_mask)]
    found = pool.size > 0
    return TensorStats(
        dtype=base.dtype,
        shape=base.shape,
        size=base.size,
        nbytes=base.nbytes,
        minimum=float(pool.min()) if found else None,
        maximum=float(pool.max()) if found else None,
        mean=float(pool.mean(dtype=np.float64)) if found else None,
        std=float(pool.std(dtype=np.float64)) if found else None,
        zeros=int(values.size - np.count_nonzero(values)),
        nans=nans,
        infs=infs,
    )


def _numeric(array: np.ndarray) -> np.ndarray | None:
    """The array in a dtype numpy can reduce (bool as int, float16/bfloat16/float8 as float32)."""
    kind = array.dtype.kind
    if kind in "iu":
        return array
    if kind == "b":
        return array.astype(np.int8)
    if kind == "f":
        return array if array.dtype.itemsize >= 4 else array.astype(np.float32)
    if kind == "V":  # ml_dtypes (bfloat16, float8, int4) as onnx_ir returns them
        try:
            return array.astype(np.float32)
        except (TypeError, ValueError):
            return None
    return None


@dataclass(frozen=True)
class GridPage:
    """One page of cells: `cells[i][j]` is the text of grid cell (row0 + i, col0 + j)."""

    row0: int
    col0: int
    rows: int
    columns: int
    row_labels: tuple[str, ...]
    column_labels: tuple[str, ...]
    cells: tuple[tuple[str, ...], ...]

    def describe(self) -> str:
        shown_rows = len(self.row_labels)
        shown_cols = len(self.column_labels)
        if not shown_rows or not shown_cols:
            return "empty tensor"
        return (
            f"rows {self.row0 + 1}-{self.row0 + shown_rows} of {self.rows}, "
            f"columns {self.col0 + 1}-{self.col0 + shown_cols} of {self.columns}"
        )


class TensorGrid:
    """Paging over a tensor seen as a 2-D grid, and single-cell edits that return a new array."""

    def __init__(
        self,
        array: np.ndarray,
        rows_per_page: int = ROWS_PER_PAGE,
        columns_per_page: int = COLUMNS_PER_PAGE,
    ) -> None:
        self.array = array
        self.rows_per_page = max(1, rows_per_page)
        self.columns_per_page = max(1, columns_per_page)
        shape = array.shape
        if array.ndim == 0:
            self.rows, self.columns = 1, 1
        elif array.ndim == 1:
            self.rows, self.columns = 1, int(shape[0])
        else:
            self.rows, self.columns = int(math.prod(shape[:-1])), int(shape[-1])
        self.row0 = 0
        self.col0 = 0

    # ------------------------------------------------------------------ paging
    @property
    def pages(self) -> tuple[int, int]:
        """Number of pages down and across."""
        return (
            max(1, math.ceil(self.rows / self.rows_per_page)),
            max(1, math.ceil(self.columns / self.columns_per_page)),
        )

    def move(self, rows: int = 0, columns: int = 0) -> None:
        """Move by whole pages (negative: back); stops at the edges."""
        self.go(self.row0 + rows * self.rows_per_page, self.col0 + columns * self.columns_per_page)

    def go(self, row: int, column: int = 0) -> None:
        """Show the page holding grid cell (row, column)."""
        last_row = max(0, self.rows - 1)
        last_col = max(0, self.columns - 1)
        row = min(max(0, row), last_row)
        column = min(max(0, column), last_col)
        self.row0 = row - row % self.rows_per_page
        self.col0 = column - column % self.columns_per_page

    def page(self) -> GridPage:
        rows = range(self.row0, min(self.rows, self.row0 + self.rows_per_page))
        cols = range(self.col0, min(self.columns, self.col0 + self.columns_per_page))
        grid = self.array.reshape(self.rows, self.columns) if self.array.size else None
        cells = tuple(
            tuple(_cell_text(grid[r, c]) for c in cols) if grid is not None else () for r in rows
        )
        return GridPage(
            row0=self.row0,
            col0=self.col0,
            rows=self.rows,
            columns=self.columns,
            row_labels=tuple(self.row_label(r) for r in rows),
            column_labels=tuple(str(c) for c in cols),
            cells=cells,
        )

    def row_label(self, row: int) -> str:
        if self.array.ndim <= 1:
            return "[:]" if self.array.ndim == 1 else "[]"
        index = np.unravel_index(row, self.array.shape[:-1])
        return "[" + ", ".join(str(int(i)) for i in index) + ", :]"

    # ------------------------------------------------------------------ editing
    def with_cell(self, row: int, column: int, text: str) -> np.ndarray:
        """A copy of the tensor with grid cell (row, column) set from literal text."""
        return self.edit_cell(row, column, text).array

    def edit_cell(self, row: int, column: int, text: str) -> CellEdit:
        """A copy of the tensor with grid cell (row, column) set from literal text, and a note
        when the dtype stores the number rounded (0.1 in float16 is 0.0999755859375)."""
        if not (0 <= row < self.rows and 0 <= column < self.columns):
            raise TensorEditError(
                f"cell ({row}, {column}) is outside the {self.rows}x{self.columns} grid"
            )
        value = _parse_cell(text, self.array.dtype)
        result = np.array(self.array, copy=True)
        cells = result.reshape(self.rows, self.columns)
        cells[row, column] = value
        return CellEdit(result, _rounding_note(text, cells[row, column], self.array.dtype))

    def find(self, text: str) -> tuple[int, int]:
        """The grid cell of an element index typed as numbers (``2, 0, 17`` or ``[2, 0, 17]``):
        shows its page and returns (row, column)."""
        inner = text.strip().removeprefix("[").removesuffix("]")
        parts = [p.strip() for p in inner.split(",") if p.strip()]
        shape = self.array.shape
        if len(parts) != len(shape) or not all(p.isdigit() for p in parts):
            example = ", ".join("0" for _ in shape) or "(a scalar has one element)"
            raise TensorEditError(
                f"index {text.strip()!r}: give {len(shape)} whole number(s) >= 0, e.g. {example}"
            )
        index = tuple(int(p) for p in parts)
        for axis, (i, size) in enumerate(zip(index, shape, strict=True)):
            if i >= size:
                raise TensorEditError(f"index {i} on axis {axis} is past its size {size}")
        if self.array.ndim <= 1:
            row, column = 0, index[0] if index else 0
        else:
            row = int(np.ravel_multi_index(index[:-1], shape[:-1]))
            column = index[-1]
        self.go(row, column)
        return row, column


@dataclass(frozen=True)
class CellEdit:
    """The tensor after one cell edit, and what the user should know about the stored value."""

    array: np.ndarray
    note: str | None = None


def _cell_text(value: Any) -> str:
    try:
        return format_literal(value)
    except TypeError:
        return str(value)


def _parse_cell(text: str, dtype: np.dtype) -> Any:
    stripped = text.strip()
    if dtype.kind in "OUS":
        if stripped[:1] in ("'", '"'):
            try:
                parsed = parse_literal(stripped)
            except LiteralSyntaxError as error:
                raise TensorEditError(str(error)) from None
            if not isinstance(parsed, str):
                raise TensorEditError(f"{text!r} is not a string")
            return parsed
        return text
    try:
        parsed = parse_literal(stripped)
    except LiteralSyntaxError as error:
        raise TensorEditError(
            f"{stripped!r} is not a number for this {dtype} tensor: {error}"
        ) from None
    if isinstance(parsed, list | str):
        raise TensorEditError(f"a cell holds one {dtype} number, not {stripped!r}")
    if dtype.kind == "b":
        if not isinstance(parsed, bool) and parsed not in (0, 1):
            raise TensorEditError(f"{stripped!r} is not a bool: use true or false")
        return bool(parsed)
    if dtype.kind in "iu":
        if isinstance(parsed, float):
            if not parsed.is_integer():
                raise TensorEditError(f"{stripped!r} is not an integer ({dtype} tensor)")
            parsed = int(parsed)
        info = np.iinfo(dtype)
        if not info.min <= int(parsed) <= info.max:
            raise TensorEditError(f"{stripped} is outside the {dtype} range {info.min}..{info.max}")
        return int(parsed)
    if dtype.kind in "fV":  # V: bfloat16 and float8 (ml_dtypes)
        number = float(parsed)
        try:
            with np.errstate(over="ignore"):  # too large: checked below, with a clear message
                stored = np.array(number, dtype=dtype)
        except (TypeError, ValueError):
            raise TensorEditError(f"cells of {dtype} tensors cannot be edited here") from None
        if math.isfinite(number) and not math.isfinite(float(stored)):
            raise TensorEditError(f"{stripped} is outside the {dtype} range{_largest(dtype)}")
        return stored[()]
    raise TensorEditError(f"cells of {dtype} tensors cannot be edited here")


def _largest(dtype: np.dtype) -> str:
    return f" (largest {float(np.finfo(dtype).max):g})" if dtype.kind == "f" else ""


def _rounding_note(text: str, stored: Any, dtype: np.dtype) -> str | None:
    if dtype.kind not in "fV":
        return None
    wanted, kept = float(cast("float", parse_literal(text.strip()))), float(stored)
    if not math.isfinite(wanted) or wanted == kept:
        return None
    # float32 keeps ~7 digits: 0.1 -> 0.10000000149 is no news; half and 8-bit floats are
    if dtype.itemsize >= 4 and abs(kept - wanted) <= 1e-6 * abs(wanted):
        return None
    return f"stored as {kept!r}: the nearest {dtype} value"
