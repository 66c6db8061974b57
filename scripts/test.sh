#!/usr/bin/env bash
# Set up everything the test suite needs on a fresh Debian machine, then run it.
# Usage: bash scripts/test.sh [pytest args...]
set -euo pipefail
cd "$(dirname "$0")/.."

# Headless Chromium for the browser tests (Debian's package; Playwright cannot download browsers here).
if ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
  else
    echo "scripts/test.sh: chromium is missing; install it with: sudo apt-get install -y chromium" >&2
  fi
fi

python3 -m venv .venv
.venv/bin/pip install -q --upgrade pip
.venv/bin/pip install -q -e '.[test]'
# torch for the capture tests (compilescope run, capture(), demo): always this exact pin.
.venv/bin/pip install -q torch==2.13.0
# Lint and type checks first (configured in pyproject.toml): a failure stops the run.
.venv/bin/ruff check src tests bench
.venv/bin/mypy
exec .venv/bin/python -m pytest -n 2 -q "$@"
