"""Where the package keeps the user's files: settings (config dir) and downloads (cache dir)."""

from __future__ import annotations

import os
from pathlib import Path


def config_dir() -> Path:
    """`NSDL_CONFIG_DIR`, else `$XDG_CONFIG_HOME/nsdl_jupyter`, else `~/.config/nsdl_jupyter`:
    user tools, saved connections, trusted SSH host keys."""
    explicit = os.environ.get("NSDL_CONFIG_DIR")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CONFIG_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".config"
    return base / "nsdl_jupyter"


def cache_dir() -> Path:
    """`NSDL_CACHE_DIR`, else `$XDG_CACHE_HOME/nsdl_jupyter`, else `~/.cache/nsdl_jupyter`:
    downloads kept between sessions (wheels for targets)."""
    explicit = os.environ.get("NSDL_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "nsdl_jupyter"
