#!/usr/bin/env bash
# Checks on the built image, run inside it AS ITS USER (uid 10001), as the containers run:
#   1. every proxy (bow, pos, syn, met) computes a matrix: WordNet's copy and the spaCy model are
#      readable by that user (a root-only file broke every WordNet proxy, issue 23 finding 1);
#   2. Dawid-Skene and crowd-kit's MACE run (the image installs crowd-kit without the transformers
#      stack it declares but never imports, issue 23 finding 3);
#   3. gunicorn starts with no "Control server error" (its control socket defaulted to root's
#      $HOME, issue 23 finding 2) and keeps its control socket where that user can write;
#   4. the image's size, printed, and refused above REJUDGE_IMAGE_MAX_BYTES (default 1.0 GB).
#   bash scripts/image_checks.sh [IMAGE]
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/engine.sh
IMAGE=${1:-${REJUDGE_IMAGE:-rejudge:latest}}
MAX_BYTES=${REJUDGE_IMAGE_MAX_BYTES:-1000000000}
USER_ID=10001
log() { printf '[image-checks %s] %s\n' "$(date -u +%T)" "$*"; }
fail() { echo "IMAGE CHECK FAILED: $*" >&2; exit 1; }
# --no-healthcheck: podman would schedule the image's HEALTHCHECK with systemd, absent here.
hc() { [ "$(engine_name)" = podman ] && echo --no-healthcheck; return 0; }
run_as_user() { engine run --rm -i $(hc) --user "$USER_ID" $(engine_ulimits) --network none "$IMAGE" "$@"; }

log "proxies as uid $USER_ID"
run_as_user python - <<'EOF' || fail "a proxy does not run as uid $USER_ID (see above)"
import os
from annotation.analysis.proxies import PROXY_NAMES, load_wordnet, proxy_matrix
assert os.getuid() == 10001, os.getuid()
reader = load_wordnet()
assert reader.synsets("dog"), "WordNet has no synset for 'dog'"
captions = ["a man is slicing a tomato on a board", "a man cuts tomatoes", "a dog runs across the grass"]
clips = [[c] for c in captions]
for name in PROXY_NAMES:
    m = proxy_matrix(name, clips, captions)
    # The two tomato captions share words, the dog caption none with them.
    assert m.shape == (3, 3) and m[0, 1] > m[0, 2], (name, m)
    print(f"{name}: ok {m.round(3).tolist()}")
EOF

log "Dawid-Skene and crowd-kit's MACE as uid $USER_ID"
run_as_user python - <<'EOF' || fail "the aggregation models do not run in the image (see above)"
import importlib.util
from annotation.analysis.aggregation import aggregate
unit = [0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3]
rater = [0, 1, 2] * 4
value = [1, 1, 0, 0, 0, 0, 1, 1, 1, 0, 1, 0]
for model in ("dawid_skene", "mace"):
    labels = aggregate(unit, rater, value, model=model).labels.tolist()
    assert labels == [1, 0, 1, 0], (model, labels)  # each unit's majority, as on a checkout
    print(model, "ok", labels)
for absent in ("transformers", "torch", "pyarrow"):
    assert importlib.util.find_spec(absent) is None, f"{absent} is installed but nothing imports it"
EOF

log "gunicorn's start as uid $USER_ID"
name=rejudge-image-check-$$
engine rm -f "$name" >/dev/null 2>&1 || true
engine run -d $(hc) --name "$name" --user "$USER_ID" $(engine_ulimits) --network none \
  -e SECRET_KEY=image-check-only -e GUNICORN_WORKERS=1 "$IMAGE" >/dev/null
trap 'engine rm -f "$name" >/dev/null 2>&1 || true' EXIT
started=0
for _ in $(seq 1 300); do
  if engine logs "$name" 2>&1 | grep -q "Booting worker"; then started=1; break; fi
  [ "$(engine inspect --format '{{.State.Running}}' "$name")" = true ] || break
  sleep 0.5
done
# The control server starts with the master; let the master log it (or its error) first.
for _ in $(seq 1 120); do
  engine logs "$name" 2>&1 | grep -qE "Control socket listening|Control server error" && break
  sleep 0.5
done
logs=$(engine logs "$name" 2>&1)
echo "$logs" | sed 's/^/  gunicorn | /'
[ "$started" = 1 ] || fail "gunicorn did not boot a worker"
if echo "$logs" | grep -q "Control server error"; then fail "gunicorn logged a control server error"; fi
echo "$logs" | grep -q "Control socket listening at /var/lib/rejudge/" \
  || fail "gunicorn's control socket is not in the user's folder /var/lib/rejudge"

size=$(engine image inspect --format '{{.Size}}' "$IMAGE")
log "image $IMAGE: $((size / 1000000)) MB ($size bytes; limit $((MAX_BYTES / 1000000)) MB)"
[ "$size" -le "$MAX_BYTES" ] || fail "the image is $((size / 1000000)) MB, over $((MAX_BYTES / 1000000)) MB"
log "all image checks passed"
