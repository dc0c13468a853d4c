#!/usr/bin/env bash
# Set up (scripts/setup.sh), then open a copy of example_notebooks/quickstart.ipynb (all the
# example notebooks are copied into lab-work/, or $NSDL_LAB_DIR) in JupyterLab on 127.0.0.1
# and print its URL. Ctrl-C stops the server.
# Environment: NSDL_LAB_PORT (default 8888), JUPYTER_TOKEN (default: a fresh random one).
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
bash scripts/setup.sh
if [[ ! -f example_notebooks/quickstart.ipynb ]]; then
  echo "run_lab: example_notebooks/quickstart.ipynb is missing: pull the latest main" >&2
  exit 1
fi
# The lab works on copies in a scratch folder (git-ignored), so the tracked notebooks stay as
# they are and the models, traces and engines the notebooks write land there, not in the
# repository. A copy you already have is kept (your edits stay); delete it to get a fresh one.
work="${NSDL_LAB_DIR:-$repo/lab-work}"
mkdir -p "$work"
for source in example_notebooks/*.ipynb; do
  [[ -e "$work/$(basename "$source")" ]] || cp "$source" "$work/"
done
notebook=quickstart.ipynb
port="${NSDL_LAB_PORT:-8888}"
# jupyter_server reads the token from the environment: it stays out of `ps` listings
JUPYTER_TOKEN="${JUPYTER_TOKEN:-$(.venv/bin/python -c 'import secrets; print(secrets.token_hex(24))')}"
export JUPYTER_TOKEN
extra=()
[[ "$(id -u)" == 0 ]] && extra+=(--allow-root)
echo "run_lab: JupyterLab on http://127.0.0.1:$port/lab/tree/$notebook?token=$JUPYTER_TOKEN"
exec .venv/bin/jupyter lab --ip=127.0.0.1 --port="$port" --port-retries=0 --no-browser \
  --ServerApp.root_dir="$work" "${extra[@]}" "$work/$notebook"
