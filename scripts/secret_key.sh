#!/usr/bin/env bash
# Makes var/secret_key (or $REJUDGE_VAR_DIR/secret_key) once: a random key readable by its owner
# only, which config/settings.py reads when SECRET_KEY is not set. Keeps an existing key, so that
# sessions survive restarts; does nothing when SECRET_KEY is set.
#   bash scripts/secret_key.sh
set -euo pipefail
cd "$(dirname "$0")/.."
KEY_FILE=${REJUDGE_VAR_DIR:-var}/secret_key
if [ -z "${SECRET_KEY:-}" ] && [ ! -s "$KEY_FILE" ]; then
  mkdir -p "$(dirname "$KEY_FILE")"
  (umask 077; "${PYTHON:-.venv/bin/python}" -c 'import secrets; print(secrets.token_urlsafe(50))' > "$KEY_FILE.tmp")
  mv "$KEY_FILE.tmp" "$KEY_FILE"
fi
