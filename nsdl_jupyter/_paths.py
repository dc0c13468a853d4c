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


_output_root: list[Path] = []  # set_output_folder's choice, when there is one


def set_output_folder(path: str | os.PathLike[str] | None) -> None:
    """Where profile traces, engines and their logs go by default from now on, in this kernel:
    `<path>/<model>/`. None goes back to `NSDL_OUTPUT_DIR`, else `./nsdl_output`."""
    _output_root[:] = [] if path is None else [Path(os.fspath(path)).expanduser()]


def output_folder(model: str | None = None) -> Path:
    """The default folder for generated files: `<root>/<model>/`, one per model, where the
    root is `set_output_folder`'s, else `NSDL_OUTPUT_DIR`, else `nsdl_output` in the working
    directory. Generated files never land beside the notebooks (a repository stays clean).
    Not created here: the writer creates it when it writes."""
    variable = os.environ.get("NSDL_OUTPUT_DIR") or "nsdl_output"
    root = _output_root[0] if _output_root else Path(variable).expanduser()
    if not root.is_absolute():
        root = Path(os.getcwd()) / root
    return root if model is None else root / safe_file_name(model)


def safe_file_name(name: str) -> str:
    """`name` with every character but letters, digits and `-_.` as `_` (torch names hold
    slashes and colons), never empty."""
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name).strip(".") or "model"
