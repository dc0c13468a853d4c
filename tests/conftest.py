"""Shared pytest fixtures and the suite-wide rules.

- Strict mode (`CI` or `NSDL_STRICT` set to anything but ""/0/false/no): a skipped test
  FAILS, so a missing prerequisite (chromium, sshd, a build tool) can never turn CI green by
  skipping. A test whose skip is legitimate on some machines says so with
  `@pytest.mark.may_skip` (e.g. it needs the optional `tensorrt` module).
- `gpu`-marked tests are deselected where no NVIDIA GPU answers `nvidia-smi -L`, and the
  summary says how many.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
from collections.abc import Generator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def _is_on(value: str | None) -> bool:
    return (value or "").strip().lower() not in ("", "0", "false", "no")


STRICT = _is_on(os.environ.get("CI")) or _is_on(os.environ.get("NSDL_STRICT"))
_collect_skips: list[str] = []  # test files skipped whole at collection, in strict mode


@functools.cache
def has_nvidia_gpu() -> bool:
    """True when `nvidia-smi -L` lists a GPU."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return False
    try:
        listing = subprocess.run(
            [smi, "-L"], check=False, capture_output=True, text=True, timeout=30
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return listing.returncode == 0 and "GPU" in listing.stdout


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "may_skip: a skip of this test is legitimate on some machines; strict mode keeps it a skip",
    )
    _refuse_a_loadgroup_that_groups_nothing(config)


def _slow_modules_first(items: list[pytest.Item]) -> None:
    """Modules holding `slow`-marked tests run first, the others after, each module's tests
    in their own order: parallel workers (pytest-xdist, one module at a time) then start on
    the long units and fill in with the short ones, instead of one worker running a long
    module alone at the end. Every worker sorts the same collection the same way."""
    slow = {item.path for item in items if item.get_closest_marker("slow") is not None}
    items.sort(key=lambda item: item.path not in slow)


def _group_by_own_fixtures(items: list[pytest.Item]) -> None:
    """The tests of a module that defines its own module- or session-scoped fixture (a wheel
    build, an sshd lab) go to one pytest-xdist worker together (`--dist loadgroup`), so that
    fixture is built once; every other test goes wherever a worker is free. The browser tests
    too: each worker has its own JupyterLab and Chromium (tests/ui/conftest.py), and Playwright
    leaves no event loop behind for the other tests."""
    for item in items:
        module = item.nodeid.split("::")[0]
        info = getattr(item, "_fixtureinfo", None)
        definitions = info.name2fixturedefs.values() if info is not None else ()
        if any(d[-1].scope != "function" and d[-1].baseid == module for d in definitions):
            item.add_marker(pytest.mark.xdist_group(module))


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist tags grouped IDs with @<group>
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    _slow_modules_first(items)
    _group_by_own_fixtures(items)
    if has_nvidia_gpu():
        return
    gpu = [item for item in items if item.get_closest_marker("gpu") is not None]
    if gpu:
        config.hook.pytest_deselected(items=gpu)
        items[:] = [item for item in items if item.get_closest_marker("gpu") is None]
        config.stash[_GPU_DESELECTED] = len(gpu)


_GPU_DESELECTED = pytest.StashKey[int]()


def _refuse_a_loadgroup_that_groups_nothing(config: pytest.Config) -> None:
    """`--dist loadgroup` needs pytest-xdist to tag a grouped test's ID with `@<group>`;
    pytest 9.2 made that edit a no-op with xdist 3.8 (pytest-dev/pytest-xdist#1386), so a
    group is spread over every worker and each builds the module's fixture again, silently.
    Stop instead of running the suite slower."""
    if getattr(config.option, "dist", "no") != "loadgroup" or hasattr(config, "workerinput"):
        return
    from importlib.metadata import version

    def release(name: str) -> tuple[int, ...]:
        return tuple(int(part) for part in re.findall(r"\d+", version(name))[:3])

    if release("pytest") >= (9, 2) and release("pytest-xdist") <= (3, 8, 0):
        raise pytest.UsageError(
            f"pytest {version('pytest')} with pytest-xdist {version('pytest-xdist')} ignores "
            "--dist loadgroup (pytest-dev/pytest-xdist#1386): install 'pytest<9.2' "
            "(the dev extra pins it)"
        )


def pytest_report_header(config: pytest.Config) -> list[str]:
    lines = [f"nsdl: strict skips={'on' if STRICT else 'off'} (CI / NSDL_STRICT)"]
    lines.append(f"nsdl: NVIDIA GPU={'yes' if has_nvidia_gpu() else 'no: gpu tests deselected'}")
    return lines


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    for line in _collect_skips:
        terminalreporter.write_line(
            f"FAILED (skipped in strict mode at collection) {line}", red=True
        )
    count = terminalreporter.config.stash.get(_GPU_DESELECTED, 0)
    if count:
        terminalreporter.write_line(
            f"nsdl: {count} gpu-marked test(s) deselected: no NVIDIA GPU on this machine"
        )


def _strict_failure(report: pytest.TestReport | pytest.CollectReport) -> None:
    longrepr = report.longrepr
    reason = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
    report.outcome = "failed"
    report.longrepr = (
        f"skipped in strict mode (CI / NSDL_STRICT): {reason}\n"
        "Install the prerequisite (bash scripts/setup.sh does it), or mark the test "
        "@pytest.mark.may_skip if skipping is legitimate on some machines."
    )


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if (
        STRICT
        and report.skipped
        and not hasattr(report, "wasxfail")
        and item.get_closest_marker("may_skip") is None
    ):
        _strict_failure(report)
    return report


def pytest_collectreport(report: pytest.CollectReport) -> None:
    # A module-level importorskip skips a whole file at collection; failing the report there
    # would interrupt the session, so it is recorded here and fails the run at the end.
    if STRICT and report.skipped:
        longrepr = report.longrepr
        reason = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
        _collect_skips.append(f"{report.nodeid}: {reason}")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if _collect_skips and exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture(scope="session", autouse=True)
def own_user_folders(tmp_path_factory: pytest.TempPathFactory) -> Generator[Path, None, None]:
    """The package's settings and cache folders (NSDL_CONFIG_DIR, NSDL_CACHE_DIR) in this
    test process's own temporary folder: the suite never touches the user's ~/.config or
    ~/.cache, and parallel workers (pytest-xdist) never share a settings or cache file.
    Tests that need an empty folder of their own still set theirs (`settings_dir`).
    NSDL_EXPORT_CACHE: where tests/real_exports.py keeps refilled exports during the run."""
    folder = tmp_path_factory.mktemp("user")
    # the refilled real exports (tests/real_exports.py), once per run: a worker's temporary
    # folder lies in the run's, which all workers share
    run = tmp_path_factory.getbasetemp()
    run = run.parent if os.environ.get("PYTEST_XDIST_WORKER") else run
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("NSDL_CONFIG_DIR", str(folder / "config"))
        patch.setenv("NSDL_CACHE_DIR", str(folder / "cache"))
        patch.setenv("NSDL_EXPORT_CACHE", str(run / "exports"))
        yield folder


@pytest.fixture(scope="session")
def test_output_dir() -> Path:
    """`test-output/` in the repo (gitignored): lists and artifacts a run leaves for people."""
    folder = REPO / "test-output"
    folder.mkdir(exist_ok=True)
    return folder


@pytest.fixture
def settings_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The user settings (NSDL_CONFIG_DIR) in the test's own folder."""
    folder = tmp_path / "config"
    monkeypatch.setenv("NSDL_CONFIG_DIR", str(folder))
    return folder


@pytest.fixture(scope="module")
def resnet18_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The ResNet-18 built in code (nsdl_jupyter.examples), saved once per test module."""
    import onnx

    from nsdl_jupyter.examples import resnet18

    path = tmp_path_factory.mktemp("model") / "resnet18.onnx"
    onnx.save(resnet18(), str(path))
    return path
