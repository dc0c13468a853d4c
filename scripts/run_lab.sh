#!/usr/bin/env bash
# Set up (scripts/setup.sh), then open example_notebooks/quickstart.ipynb in JupyterLab on
# 127.0.0.1 and print its URL. Ctrl-C stops the server.
# Environment: NSDL_LAB_PORT (default 8888), JUPYTER_TOKEN (default: a fresh random one).
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
bash scripts/setup.sh
notebook=example_notebooks/quickstart.ipynb
if [[ ! -f "$notebook" ]]; then
  echo "run_lab: $notebook is missing: pull the latest main" >&2
  exit 1
fi
port="${NSDL_LAB_PORT:-8888}"
# jupyter_server reads the token from the environment: it stays out of `ps` listings
JUPYTER_TOKEN="${JUPYTER_TOKEN:-$(.venv/bin/python -c 'import secrets; print(secrets.token_hex(24))')}"
export JUPYTER_TOKEN
extra=()
[[ "$(id -u)" == 0 ]] && extra+=(--allow-root)
echo "run_lab: JupyterLab on http://127.0.0.1:$port/lab/tree/$notebook?token=$JUPYTER_TOKEN"
exec .venv/bin/jupyter lab --ip=127.0.0.1 --port="$port" --port-retries=0 --no-browser \
  --ServerApp.root_dir="$repo" "${extra[@]}" "$notebook"
