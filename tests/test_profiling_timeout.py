"""A timeout that is no number of seconds above 0 is refused before any child process starts,
the same way by every call that waits for a job (a NaN timeout used to start the run, time
out at once and cancel it)."""

from __future__ import annotations

import math
import pathlib
from collections.abc import Callable
from typing import Any

import onnx
import pytest

import nsdl_jupyter as nj
from nsdl_jupyter.examples import resnet18
from nsdl_jupyter.profiling import ProfileSettingsError

BAD = [math.nan, 0, -1, math.inf, "5", True]


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    path = tmp_path_factory.mktemp("timeout") / "m.onnx"
    onnx.save(resnet18(), path)
    return path


CALLS: dict[str, Callable[[pathlib.Path, Any], object]] = {
    "profile_ort": lambda m, t: nj.profile_ort(m, timeout=t),
    "profile_trt": lambda m, t: nj.profile_trt(m, timeout=t),
    "export_engine": lambda m, t: nj.export_engine(m, m.with_suffix(".engine"), timeout=t),
    "check_target": lambda _m, t: nj.check_target(timeout=t),
}


@pytest.mark.parametrize("call", list(CALLS))
@pytest.mark.parametrize("timeout", BAD, ids=repr)
def test_a_bad_timeout_is_refused_before_anything_starts(
    model: pathlib.Path, call: str, timeout: Any
) -> None:
    before = set(model.parent.iterdir())
    with pytest.raises(ProfileSettingsError, match="timeout must be a number of seconds above 0"):
        CALLS[call](model, timeout)
    assert set(model.parent.iterdir()) == before  # nothing written beside the model


def test_check_target_still_wants_a_timeout() -> None:
    with pytest.raises(ProfileSettingsError, match="above 0, not None"):
        nj.check_target(timeout=None)  # type: ignore[arg-type]
