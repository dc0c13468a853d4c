"""CUDA driver against runtime (issue 27, item 1): `check_target` reads the target's driver and
the CUDA version it runs (nvidia-smi on the target's PATH) and says which runtime of the set
needs a newer CUDA, before anything is uploaded; a profile refuses the same way.

The target's nvidia-smi is a script printing what a real one prints (`--query-gpu` CSV and the
`-q` header); the onnxruntime-gpu wheel is a real wheel built here whose metadata requires the
CUDA 13 runtime packages, placed in the host's wheel cache as a user would."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from nsdl_jupyter.profiling import check_target, profile_ort
from nsdl_jupyter.targets import RuntimeSetError
from nsdl_jupyter.targets._runtimes import TargetPlatform, Wheel, WheelCache, cuda_major_needed
from nsdl_jupyter.targets._target_probe import platform_facts
from tests._nvidia_smi import driver, fake_nvidia_smi
from tests._sshd import SshLab, ssh_lab
from tests.test_targets_ssh import small_model

pytestmark = pytest.mark.skipif(
    not Path("/usr/sbin/sshd").exists() or os.geteuid() != 0,
    reason="needs OpenSSH's sshd (bash scripts/setup.sh installs it) and root to run it",
)

RUNTIME = "onnxruntime-gpu==1.31.1"


def gpu_wheel(folder: Path, cuda_major: int) -> Path:
    """A real wheel of onnxruntime-gpu 1.31.1 whose metadata requires CUDA `cuda_major`."""
    folder.mkdir(parents=True, exist_ok=True)
    facts = platform_facts()
    tag = f"cp{facts['python'][0]}{facts['python'][1]}"
    path = folder / f"onnxruntime_gpu-1.31.1-{tag}-{tag}-manylinux_2_28_{facts['arch']}.whl"
    with zipfile.ZipFile(path, "w") as wheel:
        wheel.writestr("onnxruntime/__init__.py", "__version__ = '1.31.1'\n")
        wheel.writestr(
            "onnxruntime_gpu-1.31.1.dist-info/METADATA",
            "Metadata-Version: 2.1\nName: onnxruntime-gpu\nVersion: 1.31.1\n"
            "Requires-Dist: numpy>=1.21\n"
            f"Requires-Dist: nvidia-cuda-runtime-cu{cuda_major}~={cuda_major}.0; extra == 'cuda'\n"
            f"Requires-Dist: nvidia-cudnn-cu{cuda_major}~=9.0; extra == 'cuda'\n",
        )
    return path


def cache_with(root: Path, platform: TargetPlatform, wheel: Path) -> WheelCache:
    """A host wheel cache for `platform` holding `wheel` for RUNTIME, and numpy (the real
    wheel, from the user's cache, fetched there once)."""
    folder = root / platform.key
    folder.mkdir(parents=True, exist_ok=True)
    resolved = {}
    (numpy,) = WheelCache().wheels(["numpy"], platform)
    for requirement, source in ((RUNTIME, wheel), ("numpy", numpy.path)):
        placed = folder / source.name
        shutil.copyfile(source, placed)
        digest = hashlib.sha256(placed.read_bytes()).hexdigest()
        resolved[requirement] = {"file": placed.name, "sha256": digest}
    (folder / "resolved.json").write_text(json.dumps(resolved))
    return WheelCache(root)


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[SshLab, Path]]:
    folder = tmp_path_factory.mktemp("driver")
    bin_dir = folder / "gpu-bin"
    path = fake_nvidia_smi(bin_dir, "535.104.05", "12.2")
    with ssh_lab(folder / "lab", {"env": {"PATH": path}}) as started:
        yield started, bin_dir


def test_a_driver_too_old_for_the_runtime_is_reported_before_anything_runs(
    lab: tuple[SshLab, Path], tmp_path: Path
) -> None:
    started, bin_dir = lab
    driver(bin_dir, "535.104.05", "12.2")
    model = small_model(tmp_path / "small.onnx")
    target = started.target(runtimes=RUNTIME, deploy_dir=str(tmp_path / "deploy"))
    with target:
        platform = target.read_platform()
        target.wheel_cache = cache_with(tmp_path / "wheels", platform, gpu_wheel(tmp_path, 13))
        check = check_target(target)
        rows = {row.item: row for row in check.rows}
        with pytest.raises(RuntimeSetError) as refused:
            profile_ort(model, target=target, iterations=2)
    expected = "driver 535.104.05 supports CUDA \u2264 12.2, onnxruntime-gpu 1.31.1 needs CUDA 13"
    assert not check.ok
    assert rows["runtime set"].status == "missing"
    assert expected in rows["runtime set"].detail
    assert "CUDA \u2264 12.2" in rows["GPUs"].detail and "A100" in rows["GPUs"].detail
    assert expected in str(refused.value) and "branch 580 or newer" in str(refused.value)
    deployed = {p.name for p in (tmp_path / "deploy").iterdir()}
    assert "wheels" not in deployed and "runtimes" not in deployed  # no wheel went there


def test_a_driver_new_enough_lets_the_set_deploy(lab: tuple[SshLab, Path], tmp_path: Path) -> None:
    started, bin_dir = lab
    driver(bin_dir, "580.65.06", "13.0")
    target = started.target(runtimes=RUNTIME, deploy_dir=str(tmp_path / "deploy"))
    with target:
        platform = target.read_platform()
        target.wheel_cache = cache_with(tmp_path / "wheels", platform, gpu_wheel(tmp_path, 13))
        check = check_target(target)
    rows = {row.item: row for row in check.rows}
    assert rows["runtime set"].status == "ok", rows["runtime set"]
    assert "will be deployed" in rows[f"wheel {RUNTIME}"].detail
    assert check.raw["nvidia_smi"]["cuda"] == "13.0"


def test_the_cuda_a_wheel_needs_comes_from_its_name_or_its_metadata(tmp_path: Path) -> None:
    named = tmp_path / "tensorrt_cu12-10.13.0-py2.py3-none-manylinux_2_28_x86_64.whl"
    assert cuda_major_needed(Wheel("tensorrt-cu12", named, "")) == 12
    wheel = gpu_wheel(tmp_path / "w", 13)
    assert cuda_major_needed(Wheel(RUNTIME, wheel, "")) == 13
    both = tmp_path / "cupti_python-13.0.1-py3-none-any.whl"  # extras for either CUDA
    with zipfile.ZipFile(both, "w") as archive:
        archive.writestr(
            "cupti_python-13.0.1.dist-info/METADATA",
            "Name: cupti-python\nRequires-Dist: nvidia-cuda-cupti-cu12; extra == 'cu12'\n"
            "Requires-Dist: nvidia-cuda-cupti-cu13; extra == 'cu13'\n",
        )
    assert cuda_major_needed(Wheel("cupti-python", both, "")) == 12
    plain = TargetPlatform("x86_64", (2, 36), (3, 11), "cpython", "/usr/bin/python3")
    assert plain.cuda is None  # no nvidia-smi: nothing to check against
