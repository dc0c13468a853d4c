"""Where the package keeps the user's files: settings (config dir) and downloads (cache dir)."""

from __future__ import annotations

import os
from pathlib import Path


def _user_dir(explicit_variable: str, xdg_variable: str, default: str) -> Path:
    explicit = os.environ.get(explicit_variable)
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get(xdg_variable)
    base = Path(xdg).expanduser() if xdg else Path.home() / default
    return base / "nsdl_jupyter"


def config_dir() -> Path:
    """`NSDL_CONFIG_DIR`, else `$XDG_CONFIG_HOME/nsdl_jupyter`, else `~/.config/nsdl_jupyter`:
    user tools, saved connections, trusted SSH host keys."""
    return _user_dir("NSDL_CONFIG_DIR", "XDG_CONFIG_HOME", ".config")


def cache_dir() -> Path:
    """`NSDL_CACHE_DIR`, else `$XDG_CACHE_HOME/nsdl_jupyter`, else `~/.cache/nsdl_jupyter`:
    downloads kept between sessions (wheels for targets)."""
    return _user_dir("NSDL_CACHE_DIR", "XDG_CACHE_HOME", ".cache")
