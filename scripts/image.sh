#!/usr/bin/env bash
# Builds the production image (Dockerfile) on a machine that may reach no container registry.
#
#   bash scripts/image.sh base     make debian:bookworm-slim from Debian's mirror if it is missing
#   bash scripts/image.sh build    base, then the image (tag $REJUDGE_IMAGE, default rejudge:latest)
#   bash scripts/image.sh size     print the image's size in bytes
#
# The Dockerfile starts FROM debian:bookworm-slim. Where a registry answers, that is the official
# image and nothing here is needed (`docker build .` works unchanged). Where none does (CI, these
# VMs), mmdebstrap makes the same thing from the host's Debian mirror: the minbase variant with the
# official slim image's dpkg exclusions, imported and tagged docker.io/library/debian:bookworm-slim,
# so the Dockerfile's FROM resolves to it without a pull. It is made once and kept (the image in
# the engine's store, plus a tarball under $REJUDGE_IMAGE_CACHE for a store that was wiped).
#
# The engine: Docker Engine when one answers, else podman with runc (crun cannot set rlimits on
# these VMs), cgroupfs (no systemd session to delegate to) and explicit ulimits (the defaults
# podman derives from the host's are refused by runc here).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=scripts/engine.sh
. scripts/engine.sh

SUITE=bookworm
BASE=docker.io/library/debian:${SUITE}-slim
IMAGE=${REJUDGE_IMAGE:-rejudge:latest}
CACHE=${REJUDGE_IMAGE_CACHE:-/var/cache/rejudge-image}
# Raise when the mmdebstrap recipe below changes, so cached bases made by the old one are remade.
RECIPE=2

log() { printf '[image %s] %s\n' "$(date -u +%T)" "$*"; }

# The host's Debian mirror (the first deb.debian.org-like URI of the main archive in
# /etc/apt/sources.list or sources.list.d), so the base is made from what this machine can reach.
host_mirror() {
  local uri
  uri=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null \
    | grep -v '^\s*#' \
    | grep -oE 'https?://[^ ]+/debian/?( |$)' | grep -v security | head -1 | tr -d ' ' || true)
  echo "${uri:-http://deb.debian.org/debian}"
}

make_base() {
  # A base this script made carries its recipe's number; one made by an older recipe is remade.
  # One without the label (pulled from a registry) is the official image: always used as it is.
  local made
  if made=$(engine image inspect --format '{{index .Config.Labels "io.rejudge.base-recipe"}}' "$BASE" 2>/dev/null); then
    if [ -z "$made" ] || [ "$made" = "<no value>" ] || [ "$made" = "$RECIPE" ]; then
      log "base $BASE is present: reused"
      return
    fi
    log "base $BASE was made by recipe $made, not $RECIPE: remaking it"
  fi
  mkdir -p "$CACHE"
  local tarball="$CACHE/debian-${SUITE}-slim-recipe${RECIPE}.tar"
  if [ ! -s "$tarball" ]; then
    command -v mmdebstrap >/dev/null || { echo "mmdebstrap is missing: apt-get install -y mmdebstrap" >&2; exit 1; }
    local mirror security
    mirror=$(host_mirror)
    security=${mirror%/debian}/debian-security
    log "making $BASE with mmdebstrap from $mirror"
    # What debuerreotype does for the official slim variant: minbase, no docs, man pages or
    # translations (copyright files kept), and the same deb822 sources the official image has.
    local slim=/tmp/rejudge-slim-$$ opts=()
    mkdir -p "$slim"
    # --dpkgopt, not a file in dpkg.cfg.d: mmdebstrap applies these path filters also when it
    # extracts the essential packages itself, and writes them to the image for later installs.
    for rule in 'path-exclude=/usr/share/doc/*' 'path-include=/usr/share/doc/*/copyright' \
                'path-exclude=/usr/share/man/*' 'path-exclude=/usr/share/groff/*' \
                'path-exclude=/usr/share/info/*' 'path-exclude=/usr/share/lintian/*' \
                'path-exclude=/usr/share/linda/*' 'path-exclude=/usr/share/locale/*' \
                'path-include=/usr/share/locale/locale.alias'; do
      opts+=(--dpkgopt="$rule")
    done
    cat >"$slim/debian.sources" <<EOF
Types: deb
URIs: $mirror
Suites: $SUITE ${SUITE}-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: $security
Suites: ${SUITE}-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
    # merged-usr the way debootstrap and the official image do it (usr-is-merged), not through the
    # usrmerge package, which would pull perl and its modules in (~50 MB) for nothing.
    mmdebstrap --variant=minbase --mode=root --format=tar \
      --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr \
      "${opts[@]}" \
      --customize-hook="rm -f \"\$1/etc/apt/sources.list\" && cp $slim/debian.sources \"\$1/etc/apt/sources.list.d/debian.sources\"" \
      --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin "$1"/var/cache/apt/archives/*.deb "$1"/var/log/*.log "$1"/tmp/*' \
      --customize-hook='echo "debian-slim" > "$1/etc/hostname"' \
      "$SUITE" "$tarball.part" "$mirror $SUITE main" "$mirror ${SUITE}-updates main" "$security ${SUITE}-security main"
    mv "$tarball.part" "$tarball"
    rm -rf "$slim"
  else
    log "base tarball $tarball is cached"
  fi
  engine import --change 'CMD ["bash"]' --change "LABEL io.rejudge.base-recipe=$RECIPE" "$tarball" "$BASE" >/dev/null
  log "imported $BASE ($(du -h "$tarball" | cut -f1) tarball)"
}

# The CA bundle pip trusts on this host (PIP_CERT, or `cert =` in pip.conf): on a network whose
# proxy re-signs TLS, pip in the build needs it too (the Dockerfile's secret pip_cert).
pip_cert() {
  local cert=${PIP_CERT:-}
  [ -n "$cert" ] || cert=$(sed -n 's/^\s*cert\s*=\s*//p' /etc/pip.conf "${XDG_CONFIG_HOME:-$HOME/.config}/pip/pip.conf" 2>/dev/null | head -1)
  [ -n "$cert" ] && [ -s "$cert" ] && echo "$cert"
  return 0
}

build() {
  make_base
  local secret=() cert
  cert=$(pip_cert)
  [ -n "$cert" ] && secret=(--secret "id=pip_cert,src=$cert")
  log "building $IMAGE with $(engine_name)"
  local start=$SECONDS
  # --pull=never: the base is local (made above or pulled before); a registry is never asked.
  # --format docker: the OCI format has no HEALTHCHECK, and podman would drop the image's.
  if [ "$(engine_name)" = podman ]; then
    engine build --pull=never --format docker $(engine_ulimits) "${secret[@]}" --layers -t "$IMAGE" -f Dockerfile .
  else
    DOCKER_BUILDKIT=1 engine build --pull=false "${secret[@]}" -t "$IMAGE" -f Dockerfile .
  fi
  log "built $IMAGE in $((SECONDS - start)) s; size $(size_human)"
}

size_bytes() { engine image inspect --format '{{.Size}}' "$IMAGE"; }
size_human() { size_bytes | awk '{printf "%.0f MB (%d bytes)", $1 / 1e6, $1}'; }

case "${1:-build}" in
  base) make_base ;;
  build) build ;;
  size) size_bytes ;;
  *) echo "usage: $0 base|build|size" >&2; exit 2 ;;
esac
