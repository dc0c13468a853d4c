"""TensorRT engines and timing caches in an SSH target's cache (issue 27, item 2): a build on
the target is kept in its deploy folder, keyed by (model, settings, TensorRT version, GPU); an
identical export or profile later reuses the engine instead of building, another setting builds
anew, and cache_info / clear_cache cover the engines and the timing caches.

trtexec here is the stand-in that replays real exports (tests/_trtexec_standin.py): it checks
the keying and the reuse, not TensorRT."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest
from _trtexec_standin import calls, write_standin

from nsdl_jupyter.profiling import TrtSettings, export_engine, profile_trt
from tests._sshd import ssh_lab
from tests.test_targets_ssh import small_model

pytestmark = [
    pytest.mark.may_skip,  # the stand-in reads ../shared/fixtures: skipped, saying so, where absent
    pytest.mark.skipif(
        not Path("/usr/sbin/sshd").exists() or os.geteuid() != 0,
        reason="needs OpenSSH's sshd (bash scripts/setup.sh installs it) and root to run it",
    ),
]


def builds(log: Path) -> list[list[str]]:
    """The stand-in's calls that built an engine."""
    return [argv for argv in calls(log) if any(a.startswith("--saveEngine=") for a in argv)]


def test_an_identical_build_on_a_target_reuses_its_engine(tmp_path: Path) -> None:
    script, log = write_standin(tmp_path)
    model = small_model(tmp_path / "m.onnx")
    settings = TrtSettings(backend="trtexec", trtexec_path=str(script))
    other = dataclasses.replace(settings, optimization_level=5)
    deploy = tmp_path / "deploy"
    with ssh_lab(tmp_path / "lab") as lab, lab.target(deploy_dir=str(deploy)) as target:
        first = export_engine(model, tmp_path / "a.engine", settings, target=target)
        second = export_engine(model, tmp_path / "b.engine", settings, target=target)
        assert len(builds(log)) == 1
        third = export_engine(model, tmp_path / "c.engine", other, target=target)
        assert len(builds(log)) == 2
        profile_trt(model, settings, target=target, passes=2, timeout=120)
        assert len(builds(log)) == 2  # the profile's build came from the cache too
        info = target.cache_info(["engines", "tensorrt"])
        freed = target.clear_cache("engines")
        export_engine(model, tmp_path / "d.engine", settings, target=target)
    assert len(builds(log)) == 3  # cleared: built again
    assert first.answer["engine_cache"]["hit"] is False
    assert second.answer["engine_cache"]["hit"] is True
    assert third.answer["engine_cache"]["hit"] is False
    assert (tmp_path / "b.engine").read_bytes() == (tmp_path / "a.engine").read_bytes()
    assert second.log.read_text() == first.log.read_text()  # the kept build's log
    assert second.metadata.exists() and second.engine == tmp_path / "b.engine"
    engines = [e for e in info.entries if e.kind == "engines"]
    assert len(engines) == 2 and freed == sum(e.bytes for e in engines) > 0
    # the timing cache goes to the deploy folder's tensorrt/ (trtexec writes it there)
    cache_flag = next(a for a in builds(log)[0] if a.startswith("--timingCacheFile="))
    assert cache_flag.startswith(f"--timingCacheFile={deploy / 'tensorrt'}/timing-trtexec-")
