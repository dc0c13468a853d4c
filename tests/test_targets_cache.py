"""Caches on the target (issue 27, item 2): `cache_info()`, `clear_cache()`, and a size cap
that evicts the least recently used entries first (a deploy that finds a file touches it)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from nsdl_jupyter.profiling import profile_ort
from nsdl_jupyter.targets import SshTarget, TargetSettingsError
from tests._sshd import Sshd
from tests.test_targets_ssh import small_model
from tests.test_targets_ssh_stream import servers, target_of

__all__ = ["servers"]  # the sshd fixture, shared
MIB = 1 << 20


def blob(path: Path) -> Path:
    path.write_bytes(os.urandom(MIB))
    return path


def age(remote: str, seconds_ago: float) -> None:
    """Make a deployed file look last used `seconds_ago` (the target is this machine)."""
    then = time.time() - seconds_ago
    os.utime(remote, (then, then))


def test_cache_info_lists_what_runs_left_and_clear_cache_removes_it(
    servers: tuple[Path, Sshd, Sshd], tmp_path: Path
) -> None:
    key, with_sftp, _ = servers
    model = small_model(tmp_path / "small.onnx")
    with target_of(key, with_sftp, tmp_path) as target:
        profile_ort(model, target=target, iterations=2, trace_path=tmp_path / "t.json")
        info = target.cache_info()
        runner_bytes = info.bytes_of("runners")
        freed = target.clear_cache("runners")
        after = target.cache_info()
        profile_ort(model, target=target, iterations=2, trace_path=tmp_path / "u.json")
        again = target.cache_info()
    assert {e.kind for e in info.entries} == {"files", "runners"}
    assert info.bytes_of("files") >= model.stat().st_size
    assert freed == runner_bytes > 0
    assert {e.kind for e in after.entries} == {"files"}
    assert again.bytes_of("runners") == runner_bytes  # deployed again when needed
    assert list(info.to_frame().columns) == ["kind", "key", "bytes", "last_used"]
    with pytest.raises(TargetSettingsError, match="choose from files, runners"):
        target.clear_cache("models")


def test_a_size_cap_evicts_the_least_recently_used_first(
    servers: tuple[Path, Sshd, Sshd], tmp_path: Path
) -> None:
    key, _, without = servers
    first, second, third = (blob(tmp_path / f"{n}.bin") for n in ("a", "b", "c"))
    target = target_of(key, without, tmp_path, cache_limit_bytes=int(2.5 * MIB))
    with target:
        workdir = target.make_workdir()
        a = target.put(first, workdir)
        b = target.put(second, workdir)
        age(a, 300)
        age(b, 200)
    with target:  # a new connection finds `a` there and touches it: now `b` is the oldest
        workdir = target.make_workdir()
        assert target.put(first, workdir) == a
        c = target.put(third, workdir)
        info = target.cache_info()
    assert Path(a).exists() and Path(c).exists()
    assert not Path(b).exists() and not Path(b).parent.exists()
    assert info.total_bytes <= 2.5 * MIB
    assert [e.path for e in info.entries] == [str(Path(a).parent), str(Path(c).parent)]


def test_a_cap_that_is_not_a_size_is_refused() -> None:
    with pytest.raises(TargetSettingsError, match="cache_limit_bytes"):
        SshTarget("127.0.0.1", cache_limit_bytes=-1, ssh_config=False)
