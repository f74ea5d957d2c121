#!/usr/bin/env bash
# Sets up and runs the whole test suite against real PostgreSQL, Redis, a Celery worker and
# Chromium, failing (not skipping) when one of them is missing.
#   bash scripts/test.sh                 everything
#   bash scripts/test.sh -k import       extra arguments go to pytest
# On a machine without the services: REJUDGE_DB=sqlite bash scripts/test.sh (service tests skip).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --dev

if [ "${REJUDGE_DB:-postgres}" = "sqlite" ]; then
  export REJUDGE_REQUIRE_SERVICES=0
  unset DATABASE_URL
else
  REJUDGE_REQUIRE_SERVICES=1 bash scripts/services.sh
  export REJUDGE_REQUIRE_SERVICES=1 REJUDGE_REQUIRE_NLP=1
  export REJUDGE_TEST_S3_ENDPOINT=${REJUDGE_TEST_S3_ENDPOINT:-http://127.0.0.1:${REJUDGE_TEST_S3_PORT:-5055}}
  export DATABASE_URL=${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/rejudge}
  [ -x /usr/bin/chromium ] || { echo "Chromium is missing (/usr/bin/chromium): apt-get install -y chromium" >&2; exit 1; }
fi
export REJUDGE_TEST_BROKER_URL=${REJUDGE_TEST_BROKER_URL:-redis://127.0.0.1:6379/15}
# Each session gets its own queue so a stray worker from another run never takes its jobs.
export CELERY_TASK_DEFAULT_QUEUE="rejudge-test-$$"
export REJUDGE_VAR_DIR=$(mktemp -d)
# Settings refuse DEBUG off without a key; the suite runs with DEBUG off, so it gets a throwaway one.
export SECRET_KEY=${SECRET_KEY:-$(.venv/bin/python -c 'import secrets; print(secrets.token_urlsafe(50))')}
# The test client and the live server speak plain http: no redirect to https, no secure-only cookies.
export REJUDGE_HTTPS=${REJUDGE_HTTPS:-0}
# One pytest process per core (pytest-xdist), each with its own test database, Celery queue and worker,
# and run folder (tests/parallel.py). Tests are handed out one by one (`--dist load`), not by file:
# schemathesis gives the API fuzz run's 117 operations one node id, which xdist's per-file
# scheduling keys its work by, so it ran one of them. REJUDGE_TEST_WORKERS=1 runs everything here.
workers=${REJUDGE_TEST_WORKERS:-$(nproc)}
parallel=()
if [ "$workers" -gt 1 ]; then
  parallel=(-p tests.parallel -n "$workers" --dist load)
fi
exec .venv/bin/python -m pytest "${parallel[@]}" "$@"
