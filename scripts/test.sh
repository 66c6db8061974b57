#!/usr/bin/env bash
# Set up everything the test suite needs on a fresh Debian machine, then run it.
# Usage: bash scripts/test.sh [pytest args...]
# Nothing the tests run comes from PATH: child programs use the venv's interpreter and its bin/ (torchrun, tlparse).
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python3}"  # any Python >= 3.10 that can make a venv; torch goes into the venv, never into it

apt_install() {  # Debian packages, when we may install them
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
  else
    echo "scripts/test.sh: missing $*; install it with: sudo apt-get install -y $*" >&2
    return 1
  fi
}

if ! command -v "$PYTHON" >/dev/null 2>&1; then
  apt_install python3 python3-venv
fi
if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 10))'; then
  echo "scripts/test.sh: $PYTHON is $("$PYTHON" --version 2>&1); compilescope needs Python >= 3.10 (set PYTHON=...)" >&2
  exit 1
fi
# Debian's python3 makes venvs only with python3-venv (ensurepip) installed.
if ! "$PYTHON" -c 'import ensurepip, venv' >/dev/null 2>&1; then
  apt_install python3-venv
fi

# Headless Chromium for the browser tests (Debian's package; Playwright cannot download browsers here).
if ! command -v chromium >/dev/null 2>&1 && [ ! -x /usr/bin/chromium ]; then
  apt_install chromium || true  # without it the browser tests fail in CI, and say why
fi

# A venv left by another interpreter (or a half-made one) is rebuilt.
if [ -d .venv ] && ! .venv/bin/python -c 'import sys' >/dev/null 2>&1; then
  rm -rf .venv
fi
"$PYTHON" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
# [torch]: torch==2.13.0 (always this exact pin) and numpy, for the capture tests (run, capture(), diagnose, torchrun).
.venv/bin/python -m pip install -q -e '.[test,torch]'
# Lint and type checks first (configured in pyproject.toml): a failure stops the run.
.venv/bin/ruff check src tests bench
.venv/bin/mypy
exec .venv/bin/python -m pytest -n 2 -q "$@"
