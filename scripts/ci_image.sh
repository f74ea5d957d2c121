#!/usr/bin/env bash
# CI's image step (.ci/run): build the production image as users build it, check it as its user,
# run the stack as docker-compose.yml describes it, and rehearse a campaign against it. Each phase
# is timed in the log; the stack is taken down at the end, also when a phase fails.
#   bash scripts/ci_image.sh            every phase
#   bash scripts/ci_image.sh prebuild   only the tools, the base and the build (.ci/run starts this in
#                                       the background while the suite runs; the full step then finds
#                                       the layers cached)
# Needs root on Debian (it installs podman, runc, buildah and mmdebstrap itself: CI machines are
# fresh) and the dev virtualenv (scripts/setup.sh --dev: PyYAML, moto, boto3).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-$PWD/.venv/bin/python}
STACK="$PY $PWD/scripts/stack.py"  # absolute: the rehearsal may run its fault commands from anywhere
export REJUDGE_STACK=${REJUDGE_STACK:-rejudge-ci-$$}
step_start=$SECONDS
timings=()
mkdir -p var
REHEARSAL_LOG=$PWD/var/ci-rehearsal.log
: >"$REHEARSAL_LOG"

phase() {  # phase NAME COMMAND...: runs it, logs how long it took
  local name=$1 start=$SECONDS
  shift
  echo "=== image step: $name ==="
  "$@"
  timings+=("$(printf '%-28s %4d s' "$name" $((SECONDS - start)))")
  echo "=== image step: $name took $((SECONDS - start)) s ==="
}

summary() {
  echo "=== image step timings ==="
  printf '  %s\n' "${timings[@]}"
  echo "  total                        $((SECONDS - step_start)) s"
}

install_tools() {
  local missing=""
  for pkg in podman runc buildah mmdebstrap uidmap; do
    dpkg -s "$pkg" >/dev/null 2>&1 || missing="$missing $pkg"
  done
  if [ -n "$missing" ]; then
    echo "installing:$missing"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null
  fi
}

rehearse() {
  if [ ! -f bench/rehearsal.py ]; then
    echo "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!"
    echo "!!! SKIPPED: the campaign rehearsal (bench/rehearsal.py does not exist yet). The stack is up"
    echo "!!! and healthy, but no campaign was run against it and no fault was injected."
    echo "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!"
    return 0
  fi
  local url
  url=$("$PY" scripts/stack.py url)
  # The first admin is the one step outside HTTP: made in the web container, as an operator would.
  # The full MSR-VTT 1K-A when the shared datasets sit beside the checkout (the bench's own default
  # is the repository's 30-caption excerpt).
  local data=()
  for d in ../shared ../../shared; do
    if [ -f "$d/datasets/msrvtt/msrvtt_1ka_test.csv" ]; then data=(--data "$d/datasets/msrvtt/msrvtt_1ka_test.csv"); break; fi
  done
  # Kept in a file too: when a check fails, its report is shown again after the stack's logs, at
  # the end of CI's output (which is often all that is read of it).
  "$PY" -u bench/rehearsal.py --short --base-url "$url" --job-timeout 900 "${data[@]}" \
    --admin-token-cmd "$STACK manage createsuperuser --no-input --username admin --email admin@example.org; $STACK manage drf_create_token admin" \
    --kill-worker-cmd "$STACK kill-worker" \
    --restart-web-cmd "$STACK restart-web" 2>&1 | tee "$REHEARSAL_LOG"
}

teardown() {
  local rc=$?
  if [ "$rc" != 0 ]; then
    echo "=== image step failed ($rc): the stack's state and logs ==="
    "$PY" scripts/stack.py ps || true
    "$PY" scripts/stack.py logs 2>&1 | tail -400 || true
  fi
  "$PY" scripts/stack.py down || true
  if [ "$rc" != 0 ] && [ -s "$REHEARSAL_LOG" ]; then
    echo "=== the rehearsal's report again (its last 80 lines; all of it is above the stack's logs) ==="
    tail -80 "$REHEARSAL_LOG"
  fi
  summary
  exit "$rc"
}
if [ "${1:-}" = "prebuild" ]; then
  phase "install podman & co" install_tools
  phase "base image" bash scripts/image.sh base
  phase "build image" bash scripts/image.sh build
  summary
  exit 0
fi
trap teardown EXIT

phase "install podman & co" install_tools
phase "base image" bash scripts/image.sh base
phase "build image" bash scripts/image.sh build
phase "checks as uid 10001" bash scripts/image_checks.sh
# The rehearsal's simulated crowd all comes from 127.0.0.1, and it kills a worker mid-job: the
# per-address throttles are lifted and a lost job is taken back within seconds, not minutes.
export REJUDGE_THROTTLE_USER=1000000/min REJUDGE_THROTTLE_ANON=1000000/min REJUDGE_THROTTLE_UPLOADS=1000000/min \
  REJUDGE_THROTTLE_CROWD_ARRIVALS=1000000/min REJUDGE_JOB_STALE_AFTER_SECONDS=15 REJUDGE_JOB_HEARTBEAT_SECONDS=5 \
  REJUDGE_JOB_RECOVER_EVERY_SECONDS=5 REJUDGE_MIN_WATCH_SECONDS=0.4
phase "stack up (healthy)" "$PY" scripts/stack.py up
"$PY" scripts/stack.py ps
phase "rehearsal" rehearse
