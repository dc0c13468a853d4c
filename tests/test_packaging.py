"""The package as users get it: the wheel carries the widget bundles, installs and imports.

Builds without isolation (hatchling and hatch-jupyter-builder come with the dev extra), so
the test needs no network; the fresh venv borrows the dependencies of this environment
through a .pth file but gets nsdl_jupyter only from the wheel.
"""

from __future__ import annotations

import json
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from pathlib import Path

import pytest

from nsdl_jupyter import __version__

REPO = Path(__file__).resolve().parent.parent
STATIC = REPO / "nsdl_jupyter" / "static"


def _run(*args: str | Path, cwd: Path = REPO) -> str:
    done = subprocess.run(
        [str(a) for a in args], cwd=cwd, capture_output=True, text=True, check=False, timeout=600
    )
    assert done.returncode == 0, f"{args} failed:\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
    return done.stdout


def _build(kind: str, outdir: Path) -> Path:
    _run(sys.executable, "-m", "build", f"--{kind}", "--no-isolation", "--outdir", outdir)
    (artifact,) = outdir.iterdir()
    return artifact


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    assert (STATIC / "graph_view.js").is_file(), (
        "nsdl_jupyter/static/graph_view.js is missing: run `bash scripts/setup.sh`"
    )
    return _build("wheel", tmp_path_factory.mktemp("wheel"))


def test_version_is_one_source() -> None:
    package = json.loads((REPO / "js" / "package.json").read_text())
    assert package["version"] == __version__, (
        f"js/package.json says {package['version']}, nsdl_jupyter/_version.py says {__version__}"
    )


@pytest.mark.slow
def test_wheel_carries_every_bundle(wheel: Path) -> None:
    assert wheel.name.startswith(f"nsdl_jupyter-{__version__}-py3-none-any")
    names = set(zipfile.ZipFile(wheel).namelist())
    bundles = sorted(path.name for path in STATIC.glob("*.js"))
    assert "graph_view.js" in bundles
    missing = [b for b in bundles if f"nsdl_jupyter/static/{b}" not in names]
    assert not missing, f"bundles not in the wheel: {missing}"
    # drawing.json: the drawing vocabulary the SVG renderer reads at import
    assert {
        "nsdl_jupyter/py.typed",
        "nsdl_jupyter/examples/__init__.py",
        "nsdl_jupyter/graph/drawing.json",
    } <= names
    assert not [n for n in names if n.startswith(("tests/", "js/", "bench/"))]


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with the wheel installed (dependencies borrowed); returns the venv."""
    venv = tmp_path_factory.mktemp("fresh") / "venv"
    _run(sys.executable, "-m", "venv", "--without-pip", venv)
    python = venv / "bin" / "python"
    purelib = Path(
        _run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])").strip()
    )
    # dependencies from this environment; no .pth processing there, so no editable checkout
    paths = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    (purelib / "_nsdl_test_deps.pth").write_text("\n".join(sorted(paths)) + "\n")
    pip = [sys.executable, "-m", "pip", "--python", python, "install", "-q", "--no-deps"]
    _run(*pip, "--no-index", wheel)
    return venv


PROBE = """
import importlib.resources, json, sys
import nsdl_jupyter as nj
from nsdl_jupyter.examples import small_transformer
bundle = importlib.resources.files("nsdl_jupyter") / "static" / "graph_view.js"
nodes = len(small_transformer().graph.node)
found = {"file": nj.__file__, "version": nj.__version__, "bundle": len(bundle.read_bytes())}
print(json.dumps({**found, "nodes": nodes}))
"""


@pytest.mark.slow
def test_wheel_installs_and_imports_in_a_fresh_venv(installed: Path, tmp_path: Path) -> None:
    found = json.loads(_run(installed / "bin" / "python", "-c", PROBE, cwd=tmp_path))
    assert Path(found["file"]).is_relative_to(installed), f"imported the checkout: {found}"
    assert found["version"] == __version__
    assert found["bundle"] == (STATIC / "graph_view.js").stat().st_size
    assert found["nodes"] > 100


@pytest.mark.slow
def test_console_script_runs_from_the_wheel(installed: Path, tmp_path: Path) -> None:
    # `nsdl` is declared in pyproject.toml [project.scripts]: its entry point must import
    assert "usage" in _run(installed / "bin" / "nsdl", "--help", cwd=tmp_path).lower()


@pytest.mark.slow
def test_sdist_carries_the_sources_to_rebuild(tmp_path: Path) -> None:
    sdist = _build("sdist", tmp_path)
    with tarfile.open(sdist) as archive:
        names = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    expected = {
        "js/package.json",
        "js/package-lock.json",
        "js/build.mjs",
        "nsdl_jupyter/graph/drawing.json",  # the canvas bundle imports it
        "README.md",
        "pyproject.toml",
    }
    assert expected <= names, f"missing from the sdist: {sorted(expected - names)}"
    assert any(name.startswith("js/src/graph_view/") for name in names)
    assert "nsdl_jupyter/static/graph_view.js" in names
