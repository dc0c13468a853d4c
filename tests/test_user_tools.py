"""User tools with real processes: store, run without a shell, streamed lines, output opened
as a document, cancel that ends the tool and its children, clear errors."""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import ipywidgets
import onnx
import pytest

import nsdl_jupyter as nj
from nsdl_jupyter.examples import small_transformer
from nsdl_jupyter.transforms import (
    ToolError,
    ToolStore,
    UserTool,
    config_dir,
    run_tool,
    run_tool_in_notebook,
)

COPY_SCRIPT = """
import shutil, sys
print("reading", sys.argv[1], flush=True)
print("careful", file=sys.stderr, flush=True)
shutil.copy(sys.argv[1], sys.argv[2])
print("wrote", sys.argv[2], flush=True)
"""

# Starts a child that sleeps, reports both pids, then sleeps itself.
SPAWN_SCRIPT = """
import subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
print(f"pids {child.pid}", flush=True)
time.sleep(120)
"""


@pytest.fixture
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "config"
    monkeypatch.setenv("NSDL_CONFIG_DIR", str(folder))
    return folder


@pytest.fixture(autouse=True)
def _no_leftover_outputs() -> Iterator[None]:
    """Tool outputs without an explicit path go to fresh temp folders: remove ours."""
    before = set(Path(tempfile.gettempdir()).glob("nsdl-tool-*"))
    yield
    for folder in set(Path(tempfile.gettempdir()).glob("nsdl-tool-*")) - before:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def model(tmp_path: Path) -> Path:
    path = tmp_path / "model.onnx"
    onnx.save(small_transformer(), str(path))
    return path


def _script(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie (exited, not yet reaped) counts as gone
    status = Path(f"/proc/{pid}/stat")
    return not (status.exists() and status.read_text().split(")")[-1].split()[0] == "Z")


def test_store_round_trip_in_config_dir(config: Path) -> None:
    assert config_dir() == config
    store = ToolStore()
    tool = UserTool("simplify", "python3", "-m onnxsim $Model $Output", prompt_for_output=True)
    assert tool.arguments == ["-m", "onnxsim", "$Model", "$Output"]
    store.add(tool)
    with pytest.raises(ToolError, match="exists"):
        store.add(tool)
    saved = json.loads((config / "tools.json").read_text())
    assert saved["tools"][0]["name"] == "simplify"
    assert ToolStore().load() == [tool]
    assert sorted(p.name for p in config.iterdir()) == ["tools.json"]  # no temp files left
    store.remove("simplify")
    assert ToolStore().load() == []
    with pytest.raises(ToolError, match="no tool named 'simplify'"):
        store.get("simplify")


def test_run_streams_lines_and_opens_the_output(tmp_path: Path, model: Path, config: Path) -> None:
    script = _script(tmp_path, "copy.py", COPY_SCRIPT)
    ToolStore().add(UserTool("copy", sys.executable, [str(script), "$Model", "${Output}"]))
    seen: list[tuple[str, str]] = []
    run = run_tool("copy", model, on_output=lambda stream, line: seen.append((stream, line)))
    assert run.wait(60) == 0
    assert ("stderr", "careful") in seen
    assert ("stdout", f"reading {model}") in seen
    assert run.output is not None and run.output.suffix == ".onnx"
    assert run.document is not None and run.document.path == run.output
    assert len(run.document.nodes) == len(nj.open_model(model).nodes)
    assert run.status.ok


def test_unsaved_document_edits_reach_the_tool(tmp_path: Path, model: Path, config: Path) -> None:
    script = _script(tmp_path, "copy.py", COPY_SCRIPT)
    doc = nj.open_model(model)
    node = next(name for name, n in doc.nodes.items() if n.op_type == "Softmax")
    doc.rename_node(node, "renamed_softmax")
    run = run_tool(UserTool("copy", sys.executable, [str(script), "$Model", "$Output"]), doc)
    assert run.wait(60) == 0
    assert run.document is not None
    assert "renamed_softmax" in run.document.nodes
    assert run.command[2] != str(model)  # a temporary copy, since the document is dirty


def test_arguments_are_not_interpreted_by_a_shell(tmp_path: Path, model: Path) -> None:
    marker = tmp_path / "pwned"
    script = _script(tmp_path, "echo.py", "import sys; print(sys.argv[1:], flush=True)")
    hostile = f"; touch {marker}"
    tool = UserTool("echo", sys.executable, [str(script), hostile, "$(id)"], open_output=False)
    run = run_tool(tool, model)
    assert run.wait(60) == 0
    assert not marker.exists()
    assert run.lines == [("stdout", str([hostile, "$(id)"]))]


def test_cancel_ends_the_tool_and_its_children(tmp_path: Path, model: Path) -> None:
    script = _script(tmp_path, "spawn.py", SPAWN_SCRIPT)
    run = run_tool(UserTool("spawn", sys.executable, [str(script)]), model)
    deadline = time.monotonic() + 30
    while not run.lines and time.monotonic() < deadline:
        time.sleep(0.05)
    assert run.lines, "the tool did not start"
    child = int(run.lines[0][1].split()[1])
    assert _alive(child)
    run.cancel()
    run.wait(30)
    assert run.cancelled and run.done
    assert not _alive(run.process.pid)
    deadline = time.monotonic() + 10
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child), "the child survived the cancel"
    assert not run.status.ok and "cancelled" in str(run.status)


def test_missing_application_and_missing_output_are_clear_errors(
    tmp_path: Path, model: Path
) -> None:
    with pytest.raises(ToolError, match="'no-such-program-xyz' was not found on PATH"):
        run_tool(UserTool("ghost", "no-such-program-xyz", ["$Model"]), model)
    with pytest.raises(ToolError, match="does not exist: fix the path"):
        run_tool(UserTool("ghost", str(tmp_path / "nothing" / "app"), ["$Model"]), model)
    prompting = UserTool("ask", sys.executable, ["-c", "pass", "$Output"], prompt_for_output=True)
    with pytest.raises(ToolError, match="asks for an output path"):
        run_tool(prompting, model)
    with pytest.raises(ToolError, match=r"model file .* does not exist"):
        run_tool(UserTool("x", sys.executable, ["-c", "pass"]), tmp_path / "none.onnx")


def test_failed_tool_reports_exit_code_and_opens_nothing(tmp_path: Path, model: Path) -> None:
    tool = UserTool("fail", sys.executable, ["-c", "import sys; sys.exit(3)", "$Output"])
    run = run_tool(tool, model)
    assert run.wait(60) == 3
    assert run.document is None
    assert "exit code 3" in str(run.status)


def test_notebook_widget_streams_and_cancels(tmp_path: Path, model: Path) -> None:
    script = _script(tmp_path, "copy.py", COPY_SCRIPT)
    box = run_tool_in_notebook(
        UserTool("copy", sys.executable, [str(script), "$Model", "$Output"]), model
    )
    assert isinstance(box, ipywidgets.VBox)
    assert box.run.wait(60) == 0
    header, log = box.children
    state, cancel = header.children
    assert cancel.disabled and "exit code 0" in state.value
    assert any("wrote" in item["text"] for item in log.outputs)
