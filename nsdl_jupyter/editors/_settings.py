"""User settings of the editors (e.g. whether the LayerExplorer shows constants by default).

Kept in ``$NSDL_CONFIG_DIR/settings.json``, else ``~/.config/nsdl_jupyter/settings.json``:
one small JSON object shared by every notebook of the user. A missing or unreadable file
means "all defaults"; writes are atomic so two kernels never leave a torn file behind.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from nsdl_jupyter._atomic import atomic_write_bytes

SETTINGS_FILE = "settings.json"


def settings_path() -> Path:
    """Where the settings live (the folder is created on the first write)."""
    folder = os.environ.get("NSDL_CONFIG_DIR")
    base = Path(folder) if folder else Path.home() / ".config" / "nsdl_jupyter"
    return base / SETTINGS_FILE


def load_settings() -> dict[str, Any]:
    try:
        data = json.loads(settings_path().read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def get_setting(key: str, default: Any) -> Any:
    """The stored value of `key`, or `default` when unset or of another type."""
    value = load_settings().get(key, default)
    if default is not None and not isinstance(value, type(default)):
        return default
    return value


def set_setting(key: str, value: Any) -> None:
    """Store `key` (a JSON-serializable value), keeping the other settings."""
    path = settings_path()
    data = load_settings()
    data[key] = value
    atomic_write_bytes(path, json.dumps(data, indent=1, sort_keys=True).encode())
