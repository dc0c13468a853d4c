"""Errors of targets; each message says what to do. None ever quotes a password or passphrase."""

from __future__ import annotations

from nsdl_jupyter._errors import NsdlError


class TargetError(NsdlError, RuntimeError):
    """A target cannot be reached, used or deployed to."""


class TargetSettingsError(NsdlError, ValueError):
    """A target setting is malformed (port, ProxyJump spec, connection name)."""


class TargetConnectionError(TargetError):
    """The host (or a jump host, or the ProxyCommand) cannot be reached, or the link dropped."""


class TargetAuthError(TargetError):
    """The host refused every credential offered (key file, agent, password)."""


class HostKeyError(TargetError):
    """The host's key is not trusted; `fingerprint` is what `trust_host_key` takes."""

    def __init__(self, message: str, host: str, fingerprint: str) -> None:
        super().__init__(message)
        self.host = host
        self.fingerprint = fingerprint


class UnknownHostKeyError(HostKeyError):
    """known_hosts has no key for the host."""


class HostKeyChangedError(HostKeyError):
    """known_hosts has another key for the host: possibly a man in the middle."""


class HostKeyRevokedError(HostKeyError):
    """known_hosts marks the host's key `@revoked`: it is refused, and cannot be trusted."""


class TargetWarning(UserWarning):
    """Part of a file of the user's (a known_hosts line, a saved connection's field) cannot be
    used by this version and is skipped."""


class DeployDirError(TargetError):
    """The deployment directory on the target cannot be created or written."""


class UnknownConnectionError(TargetSettingsError, KeyError):
    """No saved connection of that name (a KeyError too: the name was looked up)."""
