#!/usr/bin/env bash
# Sets up and runs the whole test suite against real PostgreSQL, Redis, a Celery worker and
# Chromium, failing (not skipping) when one of them is missing.
#   bash scripts/test.sh                 everything
#   bash scripts/test.sh -k import       extra arguments go to pytest
#   bash scripts/test.sh --quick         the inner loop, a few minutes: the domain and page tests
#                                        without browser, worker, object store or PostgreSQL-only
#                                        tests (quick_args below); no Chromium needed
# On a machine without the services: REJUDGE_DB=sqlite bash scripts/test.sh (service tests skip).
set -euo pipefail
cd "$(dirname "$0")/.."
# --quick may come anywhere among the arguments; everything else goes to pytest unchanged.
quick=0
pytest_args=()
for arg in "$@"; do
  if [ "$arg" = "--quick" ]; then quick=1; else pytest_args+=("$arg"); fi
done
bash scripts/setup.sh --dev

if [ "${REJUDGE_DB:-postgres}" = "sqlite" ]; then
  export REJUDGE_REQUIRE_SERVICES=0
  unset DATABASE_URL
else
  # The object store is this run's to stop if this run starts it (services.sh leaves it running in
  # the background): no moto_server outlives the suite. One already answering is someone else's.
  s3_port=${REJUDGE_TEST_S3_PORT:-5055}
  if ! .venv/bin/python -c "import urllib.request, sys; urllib.request.urlopen(sys.argv[1], timeout=2)" \
      "http://127.0.0.1:${s3_port}/moto-api/" 2>/dev/null; then
    stop_s3=1
  fi
  REJUDGE_REQUIRE_SERVICES=1 bash scripts/services.sh
  export REJUDGE_REQUIRE_SERVICES=1 REJUDGE_REQUIRE_NLP=1
  export REJUDGE_TEST_S3_ENDPOINT=${REJUDGE_TEST_S3_ENDPOINT:-http://127.0.0.1:${REJUDGE_TEST_S3_PORT:-5055}}
  export DATABASE_URL=${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/rejudge}
  [ "$quick" = 1 ] || [ -x /usr/bin/chromium ] || { echo "Chromium is missing (/usr/bin/chromium): apt-get install -y chromium" >&2; exit 1; }
fi
export REJUDGE_TEST_BROKER_URL=${REJUDGE_TEST_BROKER_URL:-redis://127.0.0.1:6379/15}
# Each session gets its own queue so a stray worker from another run never takes its jobs.
export CELERY_TASK_DEFAULT_QUEUE="rejudge-test-$$"
# What this run leaves behind goes when it ends, passed, failed or interrupted: the broker's keys
# of its queues (every queue the suite makes is named after the session's, and the cache of its
# worker processes is prefixed with it), its run folder, and the object store if this run started it.
clean_up() {
  .venv/bin/python - "$REJUDGE_TEST_BROKER_URL" "$CELERY_TASK_DEFAULT_QUEUE" <<'PY' 2>/dev/null || true
import re
import sys
import redis
broker, queue = sys.argv[1:]
client = redis.Redis.from_url(broker, socket_timeout=5)
ours = re.compile(rb"(^|\.)" + re.escape(queue.encode()) + rb"($|[-:])")  # not rejudge-test-1234's
keys = [key for key in client.scan_iter(match=f"*{queue}*", count=1000) if ours.search(key)]
for start in range(0, len(keys), 500):
    client.delete(*keys[start:start + 500])
PY
  if [ "${stop_s3:-0}" = 1 ]; then
    local moto="moto_server -H 127.0.0.1 -p ${s3_port}\$"
    pkill -f "$moto" 2>/dev/null || true
    for _ in $(seq 1 20); do pgrep -f "$moto" >/dev/null || break; sleep 0.5; done  # it takes a moment
    pkill -9 -f "$moto" 2>/dev/null || true
  fi
  rm -rf "$var_dir"
}
var_dir=$(mktemp -d)
trap clean_up EXIT
export REJUDGE_VAR_DIR=$var_dir
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
# The quick tier (the inner loop): the domain (tests/annotation: analysis, formats, selectors,
# services), the pages (tests/frontend) and the repository checks (tests/test_*.py) that run on any
# database without a server process of their own. Left out: the API layer (tests/api: the permission
# table, the API fuzz, attack and concurrency tests), the walk of every operation's parameters, the
# browser, the Celery worker, the object store, PostgreSQL-only tests (concurrency, prepared
# statements), the machine-judge runs against judge server processes, observability, deployment,
# multi-host, the researcher's client, and the longest statistical checks (QUICK_SKIPS: Monte Carlo
# coverage and unbiasedness, crowd-kit's MACE as an oracle, Hypothesis properties over whole
# releases). The full run (what CI runs) keeps them all. A caller's own paths narrow the tier
# further; a caller's own -m or -k replaces the tier's.
QUICK_SKIPS=(test_ap_and_ndcg_intervals_cover_with_few_relevant_per_query
             test_r_hat_is_unbiased_only_with_each_documents_own_inclusion_probability
             test_tvr_ranking_excerpt_equals_crowd_kit_called_directly
             test_pool_aggregation_equals_crowd_kit_on_the_same_votes
             test_the_release_leaderboard_equals_trec_eval_on_qrels_and_full_runs
             test_release_json_and_the_datasheet_state_the_counts_the_pairs_were_given)
quick_args=()
if [ "$quick" = 1 ]; then
  skips=$(IFS='|'; echo "${QUICK_SKIPS[*]}")
  quick_args=(-m "not browser and not worker and not objectstore and not postgres"
              -k "not (${skips//|/ or })"
              --ignore=tests/api --ignore=tests/browser --ignore=tests/multihost --ignore=tests/storage
              --ignore=tests/observability --ignore=tests/deploy
              "--ignore-glob=*/machine_judges/test_judge_runner.py"
              "--ignore-glob=*/machine_judges/test_judge_hostile_answers.py"
              "--ignore-glob=*/operations/test_every_operation.py"
              # a testpaths entry is collected whatever --ignore says; --deselect drops its tests
              --deselect=clients/python/tests/)
fi
# Not exec: the EXIT trap above cleans up after this run, whatever pytest returns.
.venv/bin/python -m pytest "${parallel[@]}" "${quick_args[@]}" "${pytest_args[@]}"
