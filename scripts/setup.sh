#!/usr/bin/env bash
# All set-up for development, tests and the lab, on a fresh Debian machine that has only
# Python 3.10+, Node and npm: the .venv, `pip install -e ".[dev]"`, the widget bundles (js/
# into nsdl_jupyter/static/, built beside the .venv when missing or older than js/), and the
# Debian packages the tests drive for real (chromium for the UI tests, openssh-server for
# the SSH target tests). Idempotent: a second run only checks and prints one line.
# Environment: PYTHON (interpreter for a new .venv, default python3), NSDL_SKIP_APT=1.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
venv="$repo/.venv"
log="$(mktemp -t nsdl-setup.XXXXXX)"
bundles_log="$(mktemp -t nsdl-setup-npm.XXXXXX)"
trap 'rm -f "$log" "$bundles_log"' EXIT
did=()

say() { echo "setup: $*"; }
die() { echo "setup: ERROR: $*" >&2; exit 1; }
# Run quietly; on failure show the captured output and stop.
quiet() {
  if ! "$@" >"$log" 2>&1; then
    tail -n 60 "$log" >&2
    die "'$*' failed (output above)"
  fi
}

as_root=()
can_apt=0
if [[ "${NSDL_SKIP_APT:-0}" != 1 ]] && command -v apt-get >/dev/null 2>&1; then
  if [[ "$(id -u)" == 0 ]]; then
    can_apt=1
  elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    can_apt=1
    as_root=(sudo -n)
  fi
fi
apt_updated=0
apt_install() {
  ((can_apt)) || return 1
  if ((!apt_updated)); then
    quiet "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 update -qq
    apt_updated=1
  fi
  say "installing Debian packages: $*"
  quiet "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive \
    apt-get -o DPkg::Lock::Timeout=600 install -y -qq "$@"
  did+=("apt: $*")
}

# --- Debian packages the tests need ----------------------------------------------------
missing=()
command -v chromium >/dev/null 2>&1 || [[ -x /usr/bin/chromium ]] || missing+=(chromium)
[[ -x /usr/sbin/sshd ]] || missing+=(openssh-server)
if ((${#missing[@]})); then
  if ! apt_install "${missing[@]}"; then
    say "WARNING: ${missing[*]} missing and apt-get needs root or password-less sudo:"
    say "         run 'sudo apt-get install ${missing[*]}'. Until then the UI (chromium) and"
    say "         SSH (sshd) tests skip, and fail under CI=1 or NSDL_STRICT=1."
  fi
fi
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  apt_install nodejs npm || die "Node and npm are needed to build the widgets: install them"
fi

# --- widget bundles: rebuilt when js/ is newer than what was built -----------------------
# In the background while the virtual environment is made; the package's build hook then
# finds them and skips npm.
bundle=nsdl_jupyter/static/graph_view.js
bundles_pid=""
build_bundles() {
  if [[ ! -d js/node_modules || js/package-lock.json -nt js/node_modules/.package-lock.json ]]; then
    npm --prefix js install --no-audit --no-fund || return 1
  fi
  npm --prefix js run build && [[ -f "$bundle" ]]
}
wait_bundles() {
  [[ -n "$bundles_pid" ]] || return 0
  if ! wait "$bundles_pid"; then
    tail -n 60 "$bundles_log" >&2
    die "building the widget bundles (npm install, npm run build) failed (output above)"
  fi
  bundles_pid=""
}
if [[ -f js/package.json ]]; then
  stale=0
  if [[ ! -f "$bundle" ]]; then
    stale=1
  elif [[ -n "$(find js -path js/node_modules -prune -o -type f -newer "$bundle" -print -quit)" ]]; then
    stale=1
  fi
  if ((stale)); then
    say "building the widget bundles (npm run build) beside the Python set-up"
    build_bundles >"$bundles_log" 2>&1 &
    bundles_pid=$!
    did+=("npm run build")
  fi
fi

# --- Python virtual environment -----------------------------------------------------------
if [[ ! -x "$venv/bin/python" ]]; then
  python="${PYTHON:-python3}"
  command -v "$python" >/dev/null 2>&1 || die "no $python found: install Python 3.10 or newer"
  "$python" -c 'import sys; sys.exit(sys.version_info < (3, 10))' ||
    die "$("$python" --version 2>&1) is too old: install Python 3.10 or newer (or set PYTHON)"
  if ! "$python" -m venv "$venv" >"$log" 2>&1; then
    # Debian's python3 lacks ensurepip until python3-venv is installed
    rm -rf "$venv"
    apt_install python3-venv || die "'$python -m venv' failed: install python3-venv"
    quiet "$python" -m venv "$venv"
  fi
  did+=("created .venv")
fi
py="$venv/bin/python"

# --- the package, editable, with its dev tools (the build hook bundles js/) -------------
stamp="$venv/.nsdl-setup-stamp"
want="$(cat pyproject.toml js/package.json 2>/dev/null | sha256sum | cut -d' ' -f1)"
installed="$(cd / && "$py" -c 'import nsdl_jupyter, os; print(os.path.dirname(nsdl_jupyter.__file__))' 2>/dev/null || true)"
if [[ "$installed" != "$repo/nsdl_jupyter" || "$(cat "$stamp" 2>/dev/null)" != "$want" ]]; then
  say "pip install -e \".[dev]\" (first time: a few minutes)"
  quiet "$py" -m pip install -q --disable-pip-version-check --upgrade pip
  wait_bundles  # built: the build hook skips npm (skip-if-exists in pyproject.toml)
  # --no-compile: pip would byte-compile every installed file (plotly, sympy, pandas: half of
  # the install's CPU); Python compiles the modules a run imports, once, on first import
  quiet "$py" -m pip install -q --no-compile --disable-pip-version-check -e ".[dev]"
  echo "$want" >"$stamp"
  did+=("pip install -e .[dev]")
fi
# TensorRT's type stubs for mypy, beside site-packages, not in it (the script says why)
quiet "$py" scripts/tensorrt_stubs.py "$venv/typing-stubs"  # a no-op once installed
# bytecode of what a first view imports, kept even where PYTHONDONTWRITEBYTECODE is set (the
# script says why); files already compiled are skipped
quiet "$py" scripts/cache_bytecode.py
wait_bundles

if ((${#did[@]})); then
  say "done: $(IFS=';'; echo "${did[*]}")"
else
  say "up to date (.venv, package, widget bundles, chromium, sshd)"
fi
