#!/usr/bin/env bash
# Sets up and starts Rejudge with demo data on the embedded default (SQLite, Celery eager).
#   bash scripts/demo.sh            then open http://127.0.0.1:8000/
# PORT=8001 bash scripts/demo.sh picks another port.
set -euo pipefail
cd "$(dirname "$0")/.."
# Everything the demo writes (var/: the database with its tokens and password hashes, the key,
# media, uploads, exports) is readable by its owner only; the settings also make the database 0600.
umask 077
bash scripts/setup.sh
export DEBUG=${DEBUG:-1}
PORT=${PORT:-8000}
# A private signing key in var/secret_key, made once (the settings read it from there), so that the
# demo and the admin commands run later never sign sessions with the public development key.
bash scripts/secret_key.sh
echo "demo: the database (SQLite, var/), then the demo data"
.venv/bin/python manage.py migrate --no-input -v0
.venv/bin/python manage.py load_demo
echo
echo "Rejudge is starting at http://127.0.0.1:${PORT}/  (log in with an account above; Ctrl-C stops it)"
exec .venv/bin/python manage.py runserver "127.0.0.1:${PORT}" --noreload
