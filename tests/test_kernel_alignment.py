"""The pairing of two passes' kernel sequences (profiling/_kernel_alignment.py)."""

from __future__ import annotations

from nsdl_jupyter.profiling.gpu._kernel_alignment import align_kernels

GEMM = ("sm90_gemm", "64x8x1", "384x1x1")
RELU = ("relu", "128x1x1", "256x1x1")
ADD = ("add", "128x1x1", "256x1x1")
COPY = ("Memcpy HTOD", "0x0x0", "0x0x0")


def test_equal_sequences_pair_position_by_position() -> None:
    keys = [COPY, GEMM, RELU, GEMM, ADD]
    found = align_kernels(keys, list(keys))
    assert found.exact
    assert found.pairs.tolist() == [[i, i] for i in range(5)]


def test_an_extra_kernel_is_unmatched_and_the_rest_keep_their_partners() -> None:
    reference = [GEMM, RELU, GEMM, ADD]
    measured = [GEMM, RELU, ("reduce", "1x1x1", "32x1x1"), GEMM, ADD]
    found = align_kernels(reference, measured)
    assert not found.exact
    assert found.unmatched_measured.tolist() == [2]
    assert found.unmatched_reference.tolist() == []
    assert found.pairs.tolist() == [[0, 0], [1, 1], [2, 3], [3, 4]]
    # the other way round: a kernel missing from the measured pass
    back = align_kernels(measured, reference)
    assert back.unmatched_reference.tolist() == [2]
    assert back.pairs.tolist() == [[0, 0], [1, 1], [3, 2], [4, 3]]


def test_a_different_kernel_is_never_given_its_neighbours_node() -> None:
    reference = [GEMM, RELU, ADD]
    measured = [GEMM, ("relu_v2", "128x1x1", "256x1x1"), ADD]
    found = align_kernels(reference, measured)
    assert found.pairs.tolist() == [[0, 0], [2, 2]]
    assert found.unmatched_reference.tolist() == [1]
    assert found.unmatched_measured.tolist() == [1]


def test_reordered_streams_pair_within_each_stream() -> None:
    # stream 7 copies while stream 3 computes; the two interleave differently in each pass,
    # and the stream ids differ between the processes
    reference = [COPY, GEMM, COPY, RELU, GEMM, ADD]
    ref_streams = [7, 3, 7, 3, 3, 3]
    measured = [GEMM, RELU, COPY, GEMM, COPY, ADD]
    meas_streams = [21, 21, 30, 21, 30, 21]
    found = align_kernels(
        reference, measured, reference_streams=ref_streams, measured_streams=meas_streams
    )
    assert found.exact
    assert found.pairs.tolist() == [[0, 2], [1, 0], [2, 4], [3, 1], [4, 3], [5, 5]]
    # without the streams, the same sequences lose kernels to the interleaving
    assert not align_kernels(reference, measured).exact


def test_a_stream_without_partner_leaves_its_kernels_unmatched() -> None:
    found = align_kernels(
        [GEMM, ADD], [GEMM, ADD, COPY], reference_streams=[1, 1], measured_streams=[5, 5, 6]
    )
    assert found.pairs.tolist() == [[0, 0], [1, 1]]
    assert found.unmatched_measured.tolist() == [2]
