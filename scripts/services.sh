#!/usr/bin/env bash
# Makes sure PostgreSQL, Redis and an S3-compatible object store (moto's server, from
# requirements-dev.txt) answer on 127.0.0.1, starting them if they are installed but down.
# Exits non-zero, naming the service, when one cannot be reached.
set -uo pipefail
ok=1
if ! pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; then
  if command -v pg_ctlcluster >/dev/null && [ -d /etc/postgresql ]; then
    echo "starting PostgreSQL"
    pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -1)" main start || true
    for _ in $(seq 1 30); do pg_isready -q -h 127.0.0.1 -p 5432 && break; sleep 1; done
  fi
  pg_isready -q -h 127.0.0.1 -p 5432 || { echo "PostgreSQL is not reachable on 127.0.0.1:5432" >&2; ok=0; }
fi
if ! redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1; then
  if command -v redis-server >/dev/null; then
    echo "starting Redis"
    mkdir -p /var/lib/redis /var/log/redis
    redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
      --dir /var/lib/redis --logfile /var/log/redis/ci.log || true
    for _ in $(seq 1 20); do redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1 && break; sleep 0.5; done
  fi
  redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1 || { echo "Redis is not reachable on 127.0.0.1:6379" >&2; ok=0; }
fi
# The object store of the storage and multi-host tests: moto's standalone S3 server on
# REJUDGE_TEST_S3_PORT (5055). Before scripts/setup.sh --dev has installed it, it is only missing
# when REJUDGE_REQUIRE_SERVICES=1 (scripts/test.sh), which fails the run.
s3_port=${REJUDGE_TEST_S3_PORT:-5055}
s3_up() { python3 -c "import urllib.request, sys; urllib.request.urlopen(sys.argv[1], timeout=2)" \
  "http://127.0.0.1:${s3_port}/moto-api/" 2>/dev/null; }
if ! s3_up; then
  moto=$(cd "$(dirname "$0")/.." && pwd)/.venv/bin/moto_server
  if [ -x "$moto" ]; then
    echo "starting the object store (moto_server on 127.0.0.1:${s3_port})"
    nohup "$moto" -H 127.0.0.1 -p "$s3_port" >"${TMPDIR:-/tmp}/rejudge-moto-${s3_port}.log" 2>&1 &
    for _ in $(seq 1 40); do s3_up && break; sleep 0.5; done
  fi
  if ! s3_up; then
    if [ "${REJUDGE_REQUIRE_SERVICES:-0}" = 1 ]; then
      echo "the object store is not reachable on 127.0.0.1:${s3_port} (moto_server from requirements-dev.txt)" >&2; ok=0
    else
      echo "object store not started yet (scripts/setup.sh --dev installs moto_server)"
    fi
  fi
fi
[ "$ok" = 1 ]
