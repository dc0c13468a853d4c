"""Tensor editor state and widget: statistics, paging of any rank as a 2-D grid, cell edits
checked against the dtype, and a big tensor never sent whole."""

from __future__ import annotations

import numpy as np
import onnx_ir as ir
import pytest

from nsdl_jupyter.editors import TensorEditError, TensorGrid, as_array, tensor_stats
from nsdl_jupyter.widgets.designer._tensor_editor import TensorEditor


def test_stats_skip_nan_and_inf_and_count_them() -> None:
    array = np.array([[1.0, np.nan], [np.inf, -3.0], [0.0, 0.0]], dtype=np.float32)
    stats = tensor_stats(array)
    assert (stats.shape, stats.size, stats.nbytes) == ((3, 2), 6, 24)
    assert (stats.minimum, stats.maximum) == (-3.0, 1.0)
    assert stats.mean == pytest.approx(-0.5) and stats.std == pytest.approx(np.std([1, -3, 0, 0]))
    assert (stats.zeros, stats.nans, stats.infs) == (2, 1, 1)
    labels = dict(stats.lines())
    assert labels["NaN"] == "1" and labels["elements"] == "6"


def test_stats_for_ints_halves_bools_strings_and_empty() -> None:
    ints = tensor_stats(np.array([3, -2, 0], dtype=np.int64))
    assert (ints.minimum, ints.maximum, ints.zeros, ints.nans) == (-2, 3, 1, None)
    half = tensor_stats(np.array([1.5, 2.5], dtype=np.float16))
    assert half.mean == pytest.approx(2.0)
    bools = tensor_stats(np.array([True, False, True]))
    assert (bools.maximum, bools.zeros) == (1, 1)
    strings = tensor_stats(np.array(["a", "b"], dtype=object))
    assert strings.minimum is None and strings.size == 2
    empty = tensor_stats(np.zeros((0, 3), np.float32))
    assert empty.size == 0 and empty.mean is None
    import ml_dtypes

    bf16 = ir.tensor(np.array([1.0, 3.0], dtype=ml_dtypes.bfloat16))
    assert bf16.dtype == ir.DataType.BFLOAT16
    assert tensor_stats(as_array(bf16)).mean == pytest.approx(2.0)


def test_grid_pages_a_rank_3_tensor_with_row_labels() -> None:
    array = np.arange(2 * 15 * 10).reshape(2, 15, 10)
    grid = TensorGrid(array, rows_per_page=12, columns_per_page=8)
    assert (grid.rows, grid.columns, grid.pages) == (30, 10, (3, 2))
    page = grid.page()
    assert page.row_labels[0] == "[0, 0, :]" and page.row_labels[-1] == "[0, 11, :]"
    assert page.column_labels == tuple(str(c) for c in range(8))
    assert page.cells[1][2] == str(array[0, 1, 2])
    assert page.describe() == "rows 1-12 of 30, columns 1-8 of 10"
    grid.move(rows=2, columns=1)
    page = grid.page()
    assert (page.row0, page.col0) == (24, 8)
    assert page.row_labels == tuple(f"[1, {r}, :]" for r in range(9, 15))
    assert page.cells[0] == (str(array[1, 9, 8]), str(array[1, 9, 9]))
    grid.move(rows=5)  # stops at the last page
    assert grid.row0 == 24
    grid.go(-4, -1)
    assert (grid.row0, grid.col0) == (0, 0)


def test_grid_of_scalars_vectors_and_empty() -> None:
    scalar = TensorGrid(np.array(2.5, np.float32)).page()
    assert scalar.cells == (("2.5",),) and scalar.row_labels == ("[]",)
    vector = TensorGrid(np.arange(3)).page()
    assert vector.cells == (("0", "1", "2"),) and vector.row_labels == ("[:]",)
    empty = TensorGrid(np.zeros((0, 4), np.float32)).page()
    assert empty.cells == () and empty.describe() == "empty tensor"


def test_cell_edits_are_checked_against_the_dtype() -> None:
    ints = TensorGrid(np.array([[1, 2], [3, 4]], dtype=np.int8))
    edited = ints.with_cell(1, 0, "-7")
    assert edited.tolist() == [[1, 2], [-7, 4]] and ints.array[1, 0] == 3
    with pytest.raises(TensorEditError, match="outside the int8 range"):
        ints.with_cell(0, 0, "300")
    with pytest.raises(TensorEditError, match="not an integer"):
        ints.with_cell(0, 0, "1.5")
    with pytest.raises(TensorEditError, match="column"):
        ints.with_cell(0, 0, "1 2")
    with pytest.raises(TensorEditError, match="outside"):
        ints.with_cell(2, 0, "1")
    floats = TensorGrid(np.zeros(3, np.float32))
    assert floats.with_cell(0, 1, "inf")[1] == np.inf
    with pytest.raises(TensorEditError, match="one float32 number"):
        floats.with_cell(0, 1, "[1]")
    bools = TensorGrid(np.array([True, False]))
    assert bools.with_cell(0, 1, "true").tolist() == [True, True]
    with pytest.raises(TensorEditError, match="not a bool"):
        bools.with_cell(0, 1, "2")
    strings = TensorGrid(np.array(["a", "b"], dtype=object))
    assert strings.with_cell(0, 0, "It's").tolist() == ["It's", "b"]
    assert strings.with_cell(0, 0, "'quoted \\' text'").tolist()[0] == "quoted ' text"


def test_as_array_reads_initializer_values_and_string_tensors() -> None:
    value = ir.Value(name="w", const_value=ir.tensor(np.ones((2, 2), np.float32)))
    assert as_array(value).sum() == 4
    strings = ir.StringTensor(np.array([b"x", b"yz"], dtype=object))
    assert as_array(strings).tolist() == ["x", "yz"]
    with pytest.raises(TensorEditError, match="no constant value"):
        as_array(ir.Value(name="free"))


def test_widget_sends_one_page_of_a_big_tensor() -> None:
    big = np.arange(1_000_000, dtype=np.float32).reshape(1000, 1000)
    editor = TensorEditor(big, title="big")
    assert not editor.editable and editor.cell_grid.layout.display == "none"
    table = editor.page_html.value
    assert table.count("<tr>") == 13 and table.count("<td>") == 12 * 8
    assert "999999" not in table and "1,000,000" in editor.stats.value
    assert "rows 1-12 of 1000" in editor.position.value
    assert editor.up.disabled and not editor.down.disabled
    editor.down.click()
    editor.right.click()
    assert "rows 13-24 of 1000, columns 9-16" in editor.position.value
    assert f"<td>{int(big[12, 8])}.0</td>" in editor.page_html.value
    editor.clear()
    assert editor.layout.display == "none"


def test_widget_edit_callback_gets_the_new_array_and_errors_show() -> None:
    seen: list[np.ndarray] = []

    def on_edit(array: np.ndarray) -> str | None:
        seen.append(array)
        return "refused by the model" if array[0] > 10 else None

    editor = TensorEditor(np.array([1, 2, 3], np.int64), on_edit=on_edit)
    cells = [c for c in editor.cell_grid.children if hasattr(c, "_grid_at")]
    assert [c.value for c in cells] == ["1", "2", "3"]
    cells[0].value = "5"
    assert seen[-1].tolist() == [5, 2, 3] and editor.error.text == ""
    cells[0].value = "50"
    assert "refused" in editor.error.text
    cells[1].value = "two"
    assert "unknown word" in editor.error.text and len(seen) == 2
