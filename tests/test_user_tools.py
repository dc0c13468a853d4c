"""User tools with real processes: store, run without a shell, streamed lines, output opened
as a document, cancel that ends the tool and its children, clear errors."""

from __future__ import annotations

import html
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
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
from nsdl_jupyter.transforms._tools import MAX_LINE_BYTES, MAX_LOG_LINES
from tests._hostile_models import IMG, SCRIPT, hostile_model, raw_markers
from tests._processes import alive, wait_gone

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
def _own_temp_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Tool scratch and outputs without an explicit path go to fresh temp folders: make them
    in this test's own folder (removed with it). Removing "the nsdl-tool-* folders that
    appeared during the test" from the shared temp folder removed a parallel worker's too."""
    temp = tmp_path / "temp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))


@pytest.fixture
def model(tmp_path: Path) -> Path:
    path = tmp_path / "model.onnx"
    onnx.save(small_transformer(), str(path))
    return path


def _script(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


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
    assert alive(child)
    run.cancel()
    run.wait(30)
    assert run.cancelled and run.done
    assert not alive(run.process.pid)
    assert wait_gone(child, 10), "the child survived the cancel"
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


# ------------------------------------------------------------------ issue 9, item 7


def test_a_background_child_does_not_keep_the_run_going(tmp_path: Path, model: Path) -> None:
    """`sleep 1000 &` inherits the tool's pipes: the run still ends when the tool exits,
    and the child it left behind is ended with it."""
    tool = UserTool("bg", "/bin/sh", ["-c", "sleep 1000 & echo $!; echo bye"], open_output=False)
    start = time.monotonic()
    run = run_tool(tool, model)
    assert run.wait(20) == 0 and run.done, "the run waited on pipes the background child holds"
    assert time.monotonic() - start < 10
    assert [line for _stream, line in run.lines][1:] == ["bye"]
    assert wait_gone(int(run.lines[0][1]), 5), "the background child outlived the run"


def test_cancel_ends_a_tool_whose_children_ignore_sigterm(tmp_path: Path, model: Path) -> None:
    script = "trap '' TERM; sleep 1000 & echo $!; sleep 1000 & wait"
    run = run_tool(UserTool("stubborn", "/bin/sh", ["-c", script], open_output=False), model)
    deadline = time.monotonic() + 30
    while not run.lines and time.monotonic() < deadline:
        time.sleep(0.05)
    child = int(run.lines[0][1])
    start = time.monotonic()
    run.cancel()
    assert run.wait(10) is not None and run.done
    assert time.monotonic() - start < 8  # SIGTERM is ignored: SIGKILL after 3 s
    assert run.cancelled and wait_gone(child, 2)


def test_cli_tools_run_ends_the_tool_on_ctrl_c(tmp_path: Path, model: Path) -> None:
    config = tmp_path / "config"
    env = {**os.environ, "NSDL_CONFIG_DIR": str(config), "PYTHONUNBUFFERED": "1"}
    ToolStore(config / "tools.json").add(
        UserTool("hang", "/bin/sh", ["-c", "sleep 1000 & echo $!; wait"], open_output=False)
    )
    nsdl = [sys.executable, "-m", "nsdl_jupyter.cli"]
    cli = subprocess.Popen(
        [*nsdl, "tools", "run", "hang", str(model)], env=env, stdout=subprocess.PIPE, text=True
    )
    assert cli.stdout is not None
    child = int(cli.stdout.readline())
    cli.send_signal(signal.SIGINT)
    assert cli.wait(15) == 130
    assert wait_gone(child, 2), "Ctrl-C left the tool's child running"


def test_output_is_kept_as_a_ring_buffer(tmp_path: Path, model: Path) -> None:
    lines = MAX_LOG_LINES * 10
    code = f"import sys\nfor i in range({lines}): print(i)\nsys.stdout.write('x' * 100000)"
    run = run_tool(UserTool("loud", sys.executable, ["-c", code], open_output=False), model)
    assert run.wait(60) == 0
    kept = [line for _stream, line in run.lines]
    assert len(kept) == MAX_LOG_LINES
    pieces = -(-100000 // MAX_LINE_BYTES)  # the endless last line, in pieces
    assert run.dropped_lines == lines + pieces - MAX_LOG_LINES
    assert kept[-pieces - 1] == str(lines - 1)
    assert "".join(kept[-pieces:]) == "x" * 100000
    assert f"{run.dropped_lines} earlier lines of output dropped" in str(run.status)


def test_notebook_log_is_capped_and_redrawn_a_few_times(tmp_path: Path, model: Path) -> None:
    # 1,500 lines on each pipe: however the two readers interleave them, the last 2,000
    # arrivals hold the last 500 of each stream (a fixed count, not a race between readers)
    lines = 3000
    code = f"import sys\nfor i in range({lines}): print(i, file=sys.stderr if i % 2 else None)"
    box = run_tool_in_notebook(UserTool("loud", sys.executable, ["-c", code]), model)
    log = box.children[1]
    redraws: list[object] = []
    log.observe(redraws.append, names="outputs")
    assert box.run.wait(60) == 0
    shown = "".join(item["text"] for item in log.outputs).splitlines()
    assert shown[0] == f"... {lines - MAX_LOG_LINES} earlier lines not shown"
    # the two pipes interleave as they arrive: the view shows exactly the kept lines
    assert shown[1:] == [line for _stream, line in box.run.lines]
    assert len(shown) == MAX_LOG_LINES + 1 and {str(lines - 2), str(lines - 1)} <= set(shown)
    assert {item["name"] for item in log.outputs} == {"stdout", "stderr"}
    assert len(redraws) < 100, f"{len(redraws)} redraws for {lines} lines"


def test_model_path_holding_placeholders_reaches_the_tool_as_is(tmp_path: Path) -> None:
    folder = tmp_path / "$Output ${Model}"
    folder.mkdir()
    model = folder / "m$Output.onnx"
    onnx.save(small_transformer(), str(model))
    script = _script(tmp_path, "echo.py", "import sys; print(repr(sys.argv[1:]), flush=True)")
    output = tmp_path / "out$Model.onnx"
    tool = UserTool("echo", sys.executable, [str(script), "$Model", "-o=${Output}"])
    run = run_tool(tool, model, output)
    run.wait(60)
    assert run.lines[0][1] == repr([str(model), f"-o={output}"])


def test_relative_tool_path_is_resolved_when_defined(
    tmp_path: Path, model: Path, config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tools = tmp_path / "tools"
    tools.mkdir()
    script = _script(tools, "fix.sh", "#!/bin/sh\necho fixed\n")
    script.chmod(0o755)
    monkeypatch.chdir(tools)
    tool = UserTool("fix", "./fix.sh", ["$Model"], open_output=False)
    ToolStore().add(tool)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert tool.application == str(script)
    for defined in (tool, "fix"):
        run = run_tool(defined, model)
        assert run.wait(60) == 0 and run.lines == [("stdout", "fixed")]


# ------------------------------------------------------------------ issue 9, item 6
def test_notebook_status_line_escapes_name_output_and_error(tmp_path: Path) -> None:
    """The output model's graph name is quoted by the error that opening it raises."""
    broken = hostile_model()
    broken.graph.node[1].output[0] = broken.graph.node[0].output[0]  # two producers
    source = tmp_path / "hostile.onnx"
    onnx.save(broken, str(source))
    script = _script(tmp_path, "copy.py", COPY_SCRIPT)
    box = run_tool_in_notebook(
        UserTool(IMG, sys.executable, [str(script), "$Model", "$Output"]),
        source,
        tmp_path / f"{SCRIPT.replace('/', '_')}.onnx",
    )
    state = box.children[0].children[0]
    assert raw_markers(state.value) == []  # while running: the tool's name
    assert box.run.wait(60) == 0
    assert box.run.error is not None and IMG in box.run.error  # the error quotes the model
    assert raw_markers(state.value) == []
    assert html.escape(IMG) in state.value and "cannot open the output" in state.value
