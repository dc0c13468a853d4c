"""User tools: external programs run on the current model (the seed's Custom Tools).

A tool has a name, an application and arguments where `$Model` stands for the current
model's path and `$Output` for the output path (asked for when "prompt for output" is set,
else a temporary file). Tools are saved as JSON in the user's config directory
(`NSDL_CONFIG_DIR`, else `$XDG_CONFIG_HOME/nsdl_jupyter`, else `~/.config/nsdl_jupyter`).

Running never goes through a shell: the argument list goes to `subprocess.Popen` as is, in
a new session, so `cancel()` ends the tool and every child it started, and a background
child that keeps the tool's pipes open cannot keep the run going. Output lines are streamed
to a callback (or to an ipywidgets Output in a notebook, throttled) and the last
MAX_LOG_LINES are kept; on success the output is opened as a new ModelDocument when "open
output when done" is set.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import shlex
import shutil
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nsdl_jupyter._atomic import atomic_write_bytes
from nsdl_jupyter._display import html_text, shown_path
from nsdl_jupyter._output_guard import output_path
from nsdl_jupyter._paths import config_dir
from nsdl_jupyter._process import Stream, end_session, run_to_end, start_session
from nsdl_jupyter.transforms._status import TransformStatus
from nsdl_jupyter.transforms._working_copy import (
    ModelSource,
    TransformError,
    guard_result_path,
    working_copy,
)

if TYPE_CHECKING:
    from nsdl_jupyter.document import ModelDocument

_FORMAT_VERSION = 1
_PLACEHOLDER = re.compile(r"\$(?:\{(Model|Output)\}|(Model|Output))")
TERMINATE_GRACE_S = 3.0  # SIGTERM, then SIGKILL
PIPE_GRACE_S = 0.5  # after the program exits, how long pipes a background child holds are read
MAX_LOG_LINES = 2000  # lines of output kept (and shown) per run; earlier ones are counted
MAX_LINE_BYTES = 16384  # a longer line is kept in pieces
REDRAW_S = 0.25  # the notebook's output view is redrawn at most this often

LineCallback = Callable[[Stream, str], None]


class ToolError(TransformError):
    """A tool cannot be saved or started: bad definition, missing application or output."""


@dataclass
class UserTool:
    """One user tool. `arguments` is a list (a string is split like a shell would, but no
    shell ever runs it)."""

    name: str
    application: str
    arguments: list[str] = field(default_factory=list)
    prompt_for_output: bool = False
    open_output: bool = True
    output_suffix: str = ".onnx"

    def __post_init__(self) -> None:
        if isinstance(self.arguments, str):
            self.arguments = shlex.split(self.arguments)
        if not isinstance(self.name, str) or not self.name.strip():
            raise ToolError("a tool needs a name")
        if not isinstance(self.application, str) or not self.application.strip():
            raise ToolError(f"tool {self.name!r} needs an application (a program path or name)")
        if not all(isinstance(arg, str) for arg in self.arguments):
            raise ToolError(f"tool {self.name!r}: every argument must be a string")
        if _is_path(self.application):
            # a relative path means the folder it was defined in, not wherever it runs later
            self.application = os.path.abspath(os.path.expanduser(self.application))

    @property
    def uses_output(self) -> bool:
        return any("$Output" in arg or "${Output}" in arg for arg in self.arguments)

    def resolve_application(self) -> str:
        """The executable's full path; a clear error when it does not exist."""
        app = self.application
        if _is_path(app):
            if not os.path.isfile(app):
                raise ToolError(
                    f"tool {self.name!r}: application {app} does not exist: fix the path"
                )
            if not os.access(app, os.X_OK):
                raise ToolError(
                    f"tool {self.name!r}: application {app} is not executable: chmod +x it"
                )
            return app
        found = shutil.which(app)
        if found is None:
            raise ToolError(
                f"tool {self.name!r}: application {app!r} was not found on PATH: install it "
                "or give its full path"
            )
        return found

    def command(self, model: Path, output: Path | None) -> list[str]:
        """The argument list with `$Model` and `$Output` substituted, in one pass (a model
        path that contains "$Output" reaches the tool as it is)."""
        values = {"Model": str(model)}
        if output is not None:
            values["Output"] = str(output)

        def substitute(match: re.Match[str]) -> str:
            return values.get(match.group(1) or match.group(2), match.group())

        args = [_PLACEHOLDER.sub(substitute, arg) for arg in self.arguments]
        return [self.resolve_application(), *args]


def _is_path(application: str) -> bool:
    """A program path (`./fix.sh`, `~/bin/fix`), not a name looked up on PATH."""
    return application.startswith("~") or any(
        sep in application for sep in (os.sep, os.altsep) if sep
    )


# ------------------------------------------------------------------- storage
class ToolStore:
    """The saved tools (a JSON file, written atomically)."""

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.path = (
            output_path(path, "tools file") if path is not None else config_dir() / "tools.json"
        )

    def load(self) -> list[UserTool]:
        if not self.path.exists():
            return []
        try:
            data = json.loads(self.path.read_text())
            entries = data["tools"] if isinstance(data, dict) else data
            return [UserTool(**entry) for entry in entries]
        except (OSError, ValueError, KeyError, TypeError) as error:
            raise ToolError(
                f"cannot read the tools file {self.path}: {error}; fix or delete it"
            ) from error

    def save(self, tools: Iterable[UserTool]) -> None:
        tools = list(tools)
        names = [tool.name for tool in tools]
        duplicates = sorted({name for name in names if names.count(name) > 1})
        if duplicates:
            raise ToolError(f"tool names must be unique: {duplicates} appear twice")
        payload = {"version": _FORMAT_VERSION, "tools": [asdict(tool) for tool in tools]}
        atomic_write_bytes(self.path, json.dumps(payload, indent=1).encode())

    def get(self, name: str) -> UserTool:
        for tool in self.load():
            if tool.name == name:
                return tool
        known = [tool.name for tool in self.load()]
        raise ToolError(f"no tool named {name!r}; saved tools: {known or 'none'}")

    def add(self, tool: UserTool, *, replace: bool = False) -> None:
        tools = self.load()
        if any(t.name == tool.name for t in tools) and not replace:
            raise ToolError(f"a tool named {tool.name!r} exists: pass replace=True to overwrite")
        self.save([*(t for t in tools if t.name != tool.name), tool])

    def remove(self, name: str) -> None:
        tools = self.load()
        if not any(t.name == name for t in tools):
            raise ToolError(f"no tool named {name!r}")
        self.save(t for t in tools if t.name != name)


# ------------------------------------------------------------------- running
class ToolLog:
    """The last `limit` lines a tool wrote (a ring buffer) and how many came before them."""

    def __init__(self, limit: int = MAX_LOG_LINES) -> None:
        self._lines: deque[tuple[Stream, str]] = deque(maxlen=limit)
        self._total = 0
        self._lock = threading.Lock()

    def append(self, stream: Stream, line: str) -> None:
        with self._lock:
            self._lines.append((stream, line))
            self._total += 1

    def snapshot(self) -> tuple[list[tuple[Stream, str]], int]:
        """The kept lines, oldest first, and the number of lines dropped before them."""
        with self._lock:
            return list(self._lines), self._total - len(self._lines)

    @property
    def total(self) -> int:
        return self._total


class Throttle:
    """Calls `action` (from a timer thread) at most every `interval` seconds however often
    `poke` is called: a burst of pokes costs one call, not one per poke."""

    def __init__(self, action: Callable[[], None], interval: float = REDRAW_S) -> None:
        self._action = action
        self._interval = interval
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None
        self._last = 0.0

    def poke(self) -> None:
        """Schedule one call unless one is pending."""
        with self._lock:
            if self._timer is not None:
                return
            delay = max(0.0, self._last + self._interval - time.monotonic())
            self._timer = threading.Timer(delay, self._action)
            self._timer.daemon = True
            self._timer.start()

    def ran(self) -> None:
        """`action` is running now (scheduled or called directly): the interval starts again."""
        with self._lock:
            self._timer = None
            self._last = time.monotonic()


class ToolRun:
    """A running tool: stream its lines, `cancel()` it, `wait()` for it.

    The tool runs in its own session. It is done when its program has exited: pipes a
    background child inherited are read for PIPE_GRACE_S more, then that child and whatever
    else the tool left in its process group are ended.
    """

    def __init__(
        self,
        tool: UserTool,
        command: Sequence[str],
        output: Path | None,
        *,
        on_output: LineCallback | None,
        on_done: Callable[[ToolRun], None] | None,
        cwd: Path | None,
        cleanup: Path | None,
    ) -> None:
        self.tool = tool
        self.command = list(command)
        self.output = output
        self.log = ToolLog()
        self.document: ModelDocument | None = None
        self.cancelled = False
        self.error: str | None = None
        self._on_output = on_output
        self._on_done = on_done
        self._cleanup = cleanup
        self._finished = threading.Event()
        # no shell: the argument list is passed as is; own session: cancel reaches children
        self.process = start_session(self.command, cwd=cwd)
        self._thread = threading.Thread(target=self._run, daemon=True, name="nsdl-tool")
        self._thread.start()

    @property
    def lines(self) -> list[tuple[Stream, str]]:
        """The last MAX_LOG_LINES lines, oldest first (`dropped_lines` came before them)."""
        return self.log.snapshot()[0]

    @property
    def dropped_lines(self) -> int:
        return self.log.snapshot()[1]

    def _run(self) -> None:
        try:
            run_to_end(
                self.process,
                self._emit,
                pipe_grace=PIPE_GRACE_S,
                terminate_grace=TERMINATE_GRACE_S,
                max_line_bytes=MAX_LINE_BYTES,
            )
            if self.returncode == 0 and not self.cancelled:
                self._open_output()
        finally:
            if self._cleanup is not None:
                shutil.rmtree(self._cleanup, ignore_errors=True)
            try:
                if self._on_done is not None:
                    self._on_done(self)
            finally:
                self._finished.set()

    def _emit(self, stream: Stream, line: str) -> None:
        self.log.append(stream, line)
        if self._on_output is not None:
            try:
                self._on_output(stream, line)
            except Exception as error:  # a broken display must not stop the tool
                self.error = f"output callback failed: {error}"

    def _open_output(self) -> None:
        if not self.tool.open_output or self.output is None:
            return
        if not self.output.is_file():
            self.error = "the tool succeeded but wrote no output file"
            return
        from nsdl_jupyter.document import open_model

        try:
            self.document = open_model(self.output)
        except Exception as error:  # the tool wrote something that is not a model
            self.error = f"cannot open the output: {error}"

    @property
    def returncode(self) -> int | None:
        return self.process.returncode

    @property
    def done(self) -> bool:
        return self._finished.is_set()

    def wait(self, timeout: float | None = None) -> int | None:
        """Wait until the tool has ended and its output is handled; returns its exit code."""
        self._finished.wait(timeout)
        return self.returncode

    def cancel(self) -> None:
        """End the tool and everything it started (SIGTERM to its process group, SIGKILL
        after TERMINATE_GRACE_S), also when only a background child of it still runs."""
        if self.done:
            return
        self.cancelled = True
        end_session(self.process, TERMINATE_GRACE_S)

    @property
    def status(self) -> TransformStatus:
        """The run as a TransformStatus (ok, output, the kept lines as its log)."""
        status = TransformStatus(f"tool {self.tool.name}")
        lines, dropped = self.log.snapshot()
        if dropped:
            status.info(f"({dropped} earlier lines of output dropped)")
        for stream, line in lines:
            status.info(f"{stream}: {line}")
        if self.cancelled:
            status.fail("cancelled")
        elif self.returncode not in (0, None):
            status.fail(f"exit code {self.returncode}")
        if self.error:
            status.warn(self.error)
        return status.finish(self.output if self.output and self.output.exists() else None)


def run_tool(
    tool: UserTool | str,
    model: ModelSource,
    output: str | os.PathLike[str] | None = None,
    *,
    on_output: LineCallback | None = None,
    on_done: Callable[[ToolRun], None] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    store: ToolStore | None = None,
    overwrite: bool = False,
) -> ToolRun:
    """Start `tool` (a UserTool or a saved tool's name) on `model`; returns at once.

    `model`: a path or a ModelDocument (unsaved edits are written to a temporary copy).
    `output`: where `$Output` points; required when the tool prompts for output, else a
    temporary file; an existing file only with `overwrite=True`, never one of the model's
    files (the output guard). Everything is checked before the process starts.
    """
    if isinstance(tool, str):
        tool = (store or ToolStore()).get(tool)
    tool.resolve_application()
    if tool.prompt_for_output and output is None and tool.uses_output:
        raise ToolError(f"tool {tool.name!r} asks for an output path: pass output=...")
    scratch = Path(tempfile.mkdtemp(prefix="nsdl-tool-"))
    try:
        model_path = _model_path(model, scratch)
        if output is not None:
            output_path: Path | None = Path(output).expanduser().absolute()
            assert output_path is not None
            if not output_path.parent.is_dir():
                raise ToolError(f"output folder {output_path.parent} does not exist")
            guard_result_path(output_path, model, overwrite=overwrite)
        elif tool.uses_output:
            output_path = Path(tempfile.mkdtemp(prefix="nsdl-tool-output-")) / (
                f"{Path(model_path).stem}_{_slug(tool.name)}{tool.output_suffix}"
            )
        else:
            output_path = None
        command = tool.command(model_path, output_path)
        return ToolRun(
            tool,
            command,
            output_path,
            on_output=on_output,
            on_done=on_done,
            cwd=Path(cwd) if cwd is not None else None,
            cleanup=scratch,
        )
    except BaseException:
        shutil.rmtree(scratch, ignore_errors=True)
        raise


def _model_path(model: ModelSource, scratch: Path) -> Path:
    from nsdl_jupyter.document import ModelDocument

    if isinstance(model, ModelDocument):
        if model.path is not None and not model.dirty and model.path.is_file():
            return model.path
        name = model.path.name if model.path is not None else "model.onnx"
        return working_copy(model).save(scratch / name)
    if isinstance(model, (str, os.PathLike)):
        path = Path(model).expanduser().absolute()
        if not path.is_file():
            raise ToolError(f"model file {path} does not exist")
        return path
    return working_copy(model).save(scratch / "model.onnx")


def _slug(name: str) -> str:
    return "".join(ch if ch.isalnum() else "_" for ch in name).strip("_") or "tool"


class _LiveLog:
    """A run's output in an ipywidgets Output, redrawn from the run's ring buffer at most
    every REDRAW_S seconds: each redraw sends at most MAX_LOG_LINES lines, and a burst of
    output costs a few redraws instead of one ever longer one per line."""

    def __init__(self, widget: Any) -> None:
        self.widget = widget
        self.run: ToolRun | None = None
        self._draw_lock = threading.Lock()
        self._throttle = Throttle(self.redraw)
        self._shown = 0  # the log's line count at the last redraw

    def changed(self, _stream: Stream, _line: str) -> None:
        """Called for each line: schedule one redraw unless one is pending."""
        self._throttle.poke()

    def redraw(self) -> None:
        self._throttle.ran()
        with self._draw_lock:  # one snapshot at a time, so an older one never wins
            if self.run is None or self.run.log.total == self._shown:
                return
            lines, dropped = self.run.log.snapshot()
            self._shown = dropped + len(lines)
            outputs = []
            if dropped:
                note = f"... {dropped} earlier lines not shown\n"
                outputs.append({"output_type": "stream", "name": "stdout", "text": note})
            for stream, group in itertools.groupby(lines, key=lambda entry: entry[0]):
                text = "".join(f"{line}\n" for _stream, line in group)
                outputs.append({"output_type": "stream", "name": stream, "text": text})
            self.widget.outputs = tuple(outputs)


def run_tool_in_notebook(
    tool: UserTool | str,
    model: ModelSource,
    output: str | os.PathLike[str] | None = None,
    **kwargs: Any,
) -> Any:
    """Run a tool with its output streamed into an ipywidgets Output and a Cancel button.

    Returns the widget box; its `.run` attribute is the ToolRun. The output shows the last
    MAX_LOG_LINES lines; names, paths and errors in the status line are escaped.
    """
    import ipywidgets as widgets

    log = widgets.Output(layout={"max_height": "240px", "overflow": "auto"})
    live = _LiveLog(log)
    state = widgets.HTML(value=f"<b>{html_text(getattr(tool, 'name', tool))}</b>: running")
    cancel = widgets.Button(description="Cancel", button_style="warning", icon="stop")

    def finished(run: ToolRun) -> None:
        live.run = run
        live.redraw()
        cancel.disabled = True
        outcome = "cancelled" if run.cancelled else f"exit code {run.returncode}"
        if run.document is not None and run.output is not None:
            outcome += f"; opened {shown_path(run.output)}"
        if run.error:
            outcome += f"; {run.error}"
        state.value = f"<b>{html_text(run.tool.name)}</b>: {html_text(outcome)}"

    run = run_tool(tool, model, output, on_output=live.changed, on_done=finished, **kwargs)
    live.run = run
    live.redraw()
    cancel.on_click(lambda _button: run.cancel())
    box = widgets.VBox([widgets.HBox([state, cancel]), log])
    box.run = run  # type: ignore[attr-defined]
    return box
