"""Targets: where activities run their runner modules (this machine, or a host over SSH)."""

from __future__ import annotations

from nsdl_jupyter.targets._base import EventListener, JobResult, RunnerJob, Target
from nsdl_jupyter.targets._connections import Connections, ConnectionTest, connections
from nsdl_jupyter.targets._errors import (
    DeployDirError,
    HostKeyChangedError,
    HostKeyError,
    HostKeyRevokedError,
    TargetAuthError,
    TargetConnectionError,
    TargetError,
    TargetSettingsError,
    TargetWarning,
    UnknownConnectionError,
    UnknownHostKeyError,
)
from nsdl_jupyter.targets._local import LocalJob, LocalTarget
from nsdl_jupyter.targets._runtimes import PROBE_FILE, RuntimeSetError
from nsdl_jupyter.targets._ssh import SshJob, SshTarget
from nsdl_jupyter.targets._wire import MALFORMED

__all__ = [
    "MALFORMED",
    "PROBE_FILE",
    "ConnectionTest",
    "Connections",
    "DeployDirError",
    "EventListener",
    "HostKeyChangedError",
    "HostKeyError",
    "HostKeyRevokedError",
    "JobResult",
    "LocalJob",
    "LocalTarget",
    "RunnerJob",
    "RuntimeSetError",
    "SshJob",
    "SshTarget",
    "Target",
    "TargetAuthError",
    "TargetConnectionError",
    "TargetError",
    "TargetSettingsError",
    "TargetWarning",
    "UnknownConnectionError",
    "UnknownHostKeyError",
    "connections",
]
