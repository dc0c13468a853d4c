"""User tools: external programs run on the current model (the seed's Custom Tools).

A tool has a name, an application and arguments where `$Model` stands for the current
model's path and `$Output` for the output path (asked for when "prompt for output" is set,
else a temporary file). Tools are saved as JSON in the user's config directory
(`NSDL_CONFIG_DIR`, else `$XDG_CONFIG_HOME/nsdl_jupyter`, else `~/.config/nsdl_jupyter`).

Running never goes through a shell: the argument list goes to `subprocess.Popen` as is, in
a new process group, so `cancel()` ends the tool and every child it started. Output lines
are streamed to a callback (or to an ipywidgets Output in a notebook); on success the output
is opened as a new ModelDocument when "open output when done" is set.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import signal
import subprocess
import tempfile
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Literal

from nsdl_jupyter._atomic import atomic_write_bytes
from nsdl_jupyter.transforms._status import TransformStatus
from nsdl_jupyter.transforms._working_copy import ModelSource, TransformError, working_copy

if TYPE_CHECKING:
    from nsdl_jupyter.document import ModelDocument

_FORMAT_VERSION = 1
_PLACEHOLDERS = ("$Model", "${Model}", "$Output", "${Output}")
_TERMINATE_GRACE_S = 3.0

Stream = Literal["stdout", "stderr"]
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

    @property
    def uses_output(self) -> bool:
        return any("$Output" in arg or "${Output}" in arg for arg in self.arguments)

    def resolve_application(self) -> str:
        """The executable's full path; a clear error when it does not exist."""
        app = os.path.expanduser(self.application)
        if os.sep in app or (os.altsep and os.altsep in app):
            if not os.path.isfile(app):
                raise ToolError(
                    f"tool {self.name!r}: application {app} does not exist: fix the path"
                )
            if not os.access(app, os.X_OK):
                raise ToolError(
                    f"tool {self.name!r}: application {app} is not executable: chmod +x it"
                )
            return os.path.abspath(app)
        found = shutil.which(app)
        if found is None:
            raise ToolError(
                f"tool {self.name!r}: application {app!r} was not found on PATH: install it "
                "or give its full path"
            )
        return found

    def command(self, model: Path, output: Path | None) -> list[str]:
        """The argument list with `$Model` and `$Output` substituted."""
        args = []
        for arg in self.arguments:
            text = arg.replace("${Model}", str(model)).replace("$Model", str(model))
            if output is not None:
                text = text.replace("${Output}", str(output)).replace("$Output", str(output))
            args.append(text)
        return [self.resolve_application(), *args]


# ------------------------------------------------------------------- storage
def config_dir() -> Path:
    """Where user tools are saved."""
    explicit = os.environ.get("NSDL_CONFIG_DIR")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CONFIG_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".config"
    return base / "nsdl_jupyter"


class ToolStore:
    """The saved tools (a JSON file, written atomically)."""

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.path = Path(path) if path is not None else config_dir() / "tools.json"

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
class ToolRun:
    """A running tool: stream its lines, `cancel()` it, `wait()` for it."""

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
        self.lines: list[tuple[Stream, str]] = []
        self.document: ModelDocument | None = None
        self.cancelled = False
        self.error: str | None = None
        self._on_output = on_output
        self._on_done = on_done
        self._cleanup = cleanup
        self._lock = threading.Lock()
        self._finished = threading.Event()
        self.process = subprocess.Popen(  # no shell: the argument list is passed as is
            self.command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            start_new_session=True,  # own process group: cancel reaches the children
        )
        readers = [
            threading.Thread(target=self._pump, args=("stdout", self.process.stdout), daemon=True),
            threading.Thread(target=self._pump, args=("stderr", self.process.stderr), daemon=True),
        ]
        for reader in readers:
            reader.start()
        self._watcher = threading.Thread(target=self._watch, args=(readers,), daemon=True)
        self._watcher.start()

    def _pump(self, stream: Stream, pipe: IO[bytes] | None) -> None:
        assert pipe is not None
        for raw in iter(pipe.readline, b""):
            line = raw.decode(errors="replace").rstrip("\n")
            with self._lock:
                self.lines.append((stream, line))
            if self._on_output is not None:
                try:
                    self._on_output(stream, line)
                except Exception as error:  # a broken display must not stop the tool
                    self.error = f"output callback failed: {error}"
        pipe.close()

    def _watch(self, readers: list[threading.Thread]) -> None:
        self.process.wait()
        for reader in readers:
            reader.join()
        try:
            if self.returncode == 0 and not self.cancelled:
                self._open_output()
        finally:
            if self._cleanup is not None:
                shutil.rmtree(self._cleanup, ignore_errors=True)
            self._finished.set()
            if self._on_done is not None:
                self._on_done(self)

    def _open_output(self) -> None:
        if not self.tool.open_output or self.output is None:
            return
        if not self.output.is_file():
            self.error = f"the tool succeeded but wrote no output at {self.output}"
            return
        from nsdl_jupyter.document import open_model

        try:
            self.document = open_model(self.output)
        except Exception as error:  # the tool wrote something that is not a model
            self.error = f"cannot open the output {self.output}: {error}"

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
        """End the tool and all its children (SIGTERM to the group, SIGKILL after 3 s)."""
        if self.process.poll() is not None:
            return
        self.cancelled = True
        _signal_group(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(_TERMINATE_GRACE_S)
        except subprocess.TimeoutExpired:
            _signal_group(self.process.pid, signal.SIGKILL)
            self.process.wait()
        # children that outlived the leader are still in the group
        _signal_group(self.process.pid, signal.SIGKILL)

    @property
    def status(self) -> TransformStatus:
        """The run as a TransformStatus (ok, output, the lines as its log)."""
        status = TransformStatus(f"tool {self.tool.name}")
        for stream, line in list(self.lines):
            status.info(f"{stream}: {line}")
        if self.cancelled:
            status.fail("cancelled")
        elif self.returncode not in (0, None):
            status.fail(f"exit code {self.returncode}")
        if self.error:
            status.warn(self.error)
        return status.finish(self.output if self.output and self.output.exists() else None)


def _signal_group(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


def run_tool(
    tool: UserTool | str,
    model: ModelSource,
    output: str | os.PathLike[str] | None = None,
    *,
    on_output: LineCallback | None = None,
    on_done: Callable[[ToolRun], None] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    store: ToolStore | None = None,
) -> ToolRun:
    """Start `tool` (a UserTool or a saved tool's name) on `model`; returns at once.

    `model`: a path or a ModelDocument (unsaved edits are written to a temporary copy).
    `output`: where `$Output` points; required when the tool prompts for output, else a
    temporary file. Everything is checked before the process starts.
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


def run_tool_in_notebook(
    tool: UserTool | str,
    model: ModelSource,
    output: str | os.PathLike[str] | None = None,
    **kwargs: Any,
) -> Any:
    """Run a tool with its output streamed into an ipywidgets Output and a Cancel button.

    Returns the widget box; its `.run` attribute is the ToolRun.
    """
    import ipywidgets as widgets

    log = widgets.Output(layout={"max_height": "240px", "overflow": "auto"})
    state = widgets.HTML(value=f"<b>{getattr(tool, 'name', tool)}</b>: running")
    cancel = widgets.Button(description="Cancel", button_style="warning", icon="stop")

    def show(stream: Stream, line: str) -> None:
        if stream == "stderr":
            log.append_stderr(line + "\n")
        else:
            log.append_stdout(line + "\n")

    def finished(run: ToolRun) -> None:
        cancel.disabled = True
        outcome = "cancelled" if run.cancelled else f"exit code {run.returncode}"
        opened = f"; opened {run.output}" if run.document is not None else ""
        problem = f"; {run.error}" if run.error else ""
        state.value = f"<b>{run.tool.name}</b>: {outcome}{opened}{problem}"

    run = run_tool(tool, model, output, on_output=show, on_done=finished, **kwargs)
    cancel.on_click(lambda _button: run.cancel())
    box = widgets.VBox([widgets.HBox([state, cancel]), log])
    box.run = run  # type: ignore[attr-defined]
    return box
