"""Runtime sets (issue 27, item 1): a target whose Python has no onnxruntime gets it from the
host's wheel cache, into a venv in its deploy folder, uploaded once per content hash.

The wheels (onnxruntime and numpy for this machine's platform, about 45 MB) are fetched once
into the host's wheel cache (NSDL_CACHE_DIR, else ~/.cache/nsdl_jupyter) and reused by later
runs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import onnxruntime
import pytest

from nsdl_jupyter.profiling import check_target, profile_ort
from nsdl_jupyter.targets import SshTarget, TargetSettingsError
from nsdl_jupyter.targets._runtimes import RuntimeSetError, TargetPlatform
from tests._sshd import Sshd
from tests.test_targets_ssh import small_model
from tests.test_targets_ssh_stream import servers, target_of

__all__ = ["servers"]  # the sshd fixture, shared

pytestmark = pytest.mark.slow
RUNTIME = f"onnxruntime=={onnxruntime.__version__}"


def bare_python(folder: Path) -> str:
    """A venv's python without onnxruntime or numpy: the target's interpreter."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True)
    python = folder / "bin" / "python"
    probe = subprocess.run([python, "-c", "import onnxruntime"], check=False, capture_output=True)
    assert probe.returncode != 0
    return str(python)


@pytest.mark.parametrize("sftp", [True, False], ids=["sftp", "no-sftp"])
def test_a_runtime_is_deployed_once_from_the_local_cache(
    servers: tuple[Path, Sshd, Sshd], tmp_path: Path, sftp: bool
) -> None:
    key, with_sftp, without = servers
    model = small_model(tmp_path / "small.onnx")
    server = with_sftp if sftp else without
    target = target_of(key, server, tmp_path, python=bare_python(tmp_path / "b"), runtimes=RUNTIME)
    with target:
        check = check_target(target)
        rows = {row.item: row.detail for row in check.rows}
        assert check.ok, check.rows
        assert "will be deployed" in rows["onnxruntime"]
        assert "will be deployed" in rows[f"wheel {RUNTIME}"]
        assert "will be made" in rows["runtime set"]
        report = profile_ort(model, target=target, iterations=2, trace_path=tmp_path / "t.json")
        first = target.bytes_uploaded
        plan = target.runtime_plan()
    wheel_bytes = sum(w.size for w in plan.on_target.values())
    assert plan.ready and not plan.to_upload
    assert first > wheel_bytes > 20 << 20
    assert report.metadata["runtime_version"] == onnxruntime.__version__
    assert list(report.layers["name"]) == ["mm1", "relu", "mm2"]

    with target:  # a new connection: everything is found on the target
        again = profile_ort(model, target=target, iterations=2, trace_path=tmp_path / "u.json")
        second = target.bytes_uploaded - first
        check = check_target(target)
    assert second < 4096  # the requests alone
    assert list(again.layers["name"]) == ["mm1", "relu", "mm2"]
    assert "ready" in {r.item: r.detail for r in check.rows}["runtime set"]
    stored = sorted(p.parent.name for p in Path(target.deploy_root, "wheels").glob("*/*"))
    assert stored == sorted(w.sha256 for w in plan.on_target.values())  # one copy per hash
    assert len(stored) == 2
    assert len(list(Path(target.deploy_root, "runtimes").iterdir())) == 1


def test_a_requirement_that_is_not_one_is_refused_before_anything_runs() -> None:
    for bad in ("--index-url=http://x onnxruntime", "onnxruntime @ file:///tmp/x.whl", "; rm"):
        with pytest.raises(TargetSettingsError, match="not a package requirement"):
            SshTarget("127.0.0.1", runtimes=bad, ssh_config=False)


def test_a_platform_without_wheels_says_so() -> None:
    musl = TargetPlatform("x86_64", None, (3, 11), "cpython", "/usr/bin/python3")
    with pytest.raises(RuntimeSetError, match="leave runtimes= out"):
        musl.pip_arguments()


def test_a_runtime_without_a_wheel_is_reported_before_anything_runs(
    servers: tuple[Path, Sshd, Sshd], tmp_path: Path
) -> None:
    key, with_sftp, _ = servers
    model = small_model(tmp_path / "small.onnx")
    python = bare_python(tmp_path / "b")
    with target_of(key, with_sftp, tmp_path, python=python, runtimes="onnxruntime==0.0.1") as t:
        check = check_target(t)
        row = {r.item: r for r in check.rows}["runtime set"]
        with pytest.raises(RuntimeSetError, match="pick a version that has a wheel"):
            profile_ort(model, target=t, iterations=2)
        deployed = {p.name for p in Path(t.deploy_root).iterdir()}
    assert not check.ok
    assert row.status == "missing" and "cannot be deployed" in row.detail
    assert "wheels" not in deployed and "runtimes" not in deployed
