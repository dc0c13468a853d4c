"""Errors of the profiling activities; each message says what to do about it."""

from __future__ import annotations

from nsdl_jupyter._errors import NsdlError


class ProfileError(NsdlError, RuntimeError):
    """A profile run failed; `stderr` holds the tail of the runner's stderr."""

    def __init__(self, message: str, stderr: str = "") -> None:
        super().__init__(message)
        self.stderr = stderr


class RunnerCrashError(ProfileError):
    """The runtime took its child process down (segfault, abort, out-of-memory kill)."""


class TargetLostError(ProfileError):
    """The connection to a remote target dropped during the run (the remote runner ends
    itself when its connection closes)."""


class RunnerProtocolError(ProfileError):
    """A runner's message or result is malformed: not JSON, cut at the size cap, a field missing
    or of the wrong type. The message names the target."""


class ProfileCancelledError(ProfileError):
    """The run was cancelled (cancel button, `job.cancel()`, or a kernel interrupt)."""


class ProfileSettingsError(NsdlError, ValueError):
    """A setting is out of range or names something the model does not have."""


class InputFolderError(NsdlError, ValueError):
    """The input folder lacks a file for an input, or a file does not match its input."""


class ProfileFileError(NsdlError, ValueError):
    """A profile file (saved report, onnxruntime trace, trtexec export) is malformed."""


class ReportFormatError(ProfileFileError):
    """A file given to `ProfileReport.load` is not a report that `ProfileReport.save` wrote."""


class TraceFormatError(ProfileFileError):
    """The file is not an onnxruntime profile trace."""


class TrtexecFormatError(ProfileFileError):
    """A file given to `load_trtexec` is not the trtexec JSON export it should be."""


class TrtSettingsError(ProfileSettingsError):
    """A TensorRT setting is invalid, or the chosen TensorRT lacks it (the message says what
    to do instead)."""


class EngineBuildError(ProfileError):
    """TensorRT could not build the engine (the message quotes TensorRT's errors)."""


class OnnxParseError(EngineBuildError):
    """The TensorRT ONNX parser rejected nodes of the model; `nodes` lists them (node index,
    name, operator and the parser's message)."""

    def __init__(self, message: str, nodes: list[dict[str, object]], stderr: str = "") -> None:
        super().__init__(message, stderr)
        self.nodes = nodes

    def marks(self) -> dict[str, str]:
        """`{node name: "error"}` for `GraphView.set_marks`: the rejected nodes on the graph."""
        return {str(node["name"]): "error" for node in self.nodes if node.get("name")}


class EngineMismatchError(ProfileError):
    """A prebuilt engine does not match the target: another TensorRT version or backend, or
    another GPU model (the message says which, and how to rebuild)."""


class TrtUnavailableError(ProfileError):
    """The target cannot run TensorRT engines: no NVIDIA GPU, or no cuda-python for the
    Python API (the message says what to install or where to run instead)."""
