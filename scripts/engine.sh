# Sourced by scripts/image.sh and scripts/stack.sh: `engine ARGS...` runs the container engine.
# Docker Engine when one answers (`docker info`), else podman with the settings these VMs need:
# runc (crun cannot set rlimits here), cgroupfs (no systemd session to delegate to) and a file
# events log (no journald). REJUDGE_ENGINE=podman|docker forces one.

_engine_choice() {
  if [ -n "${REJUDGE_ENGINE:-}" ]; then
    echo "$REJUDGE_ENGINE"
  elif command -v docker >/dev/null && docker info >/dev/null 2>&1; then
    echo docker
  elif command -v podman >/dev/null; then
    echo podman
  else
    echo "no container engine: apt-get install -y podman runc (or run Docker Engine)" >&2
    return 1
  fi
}

ENGINE_NAME=${ENGINE_NAME:-$(_engine_choice)}
export ENGINE_NAME

engine_name() { echo "$ENGINE_NAME"; }

engine() {
  if [ "$ENGINE_NAME" = podman ]; then
    podman --runtime runc --cgroup-manager cgroupfs --events-backend file "$@"
  else
    docker "$@"
  fi
}

# podman's defaults ask runc for rlimits this VM refuses ("error setting rlimit type 7/6:
# operation not permitted"): file descriptors above this shell's hard limit, processes above
# 32768 (measured: 32768 passes, 65536 does not, whatever `ulimit -Hu` says). Give them explicitly.
engine_ulimits() {
  local nofile nproc
  nofile=$(ulimit -Hn) nproc=$(ulimit -Hu)
  [ "$nofile" = unlimited ] && nofile=65536
  [ "$nproc" = unlimited ] && nproc=32768
  [ "$nofile" -gt 65536 ] && nofile=65536
  [ "$nproc" -gt 32768 ] && nproc=32768
  echo "--ulimit nofile=$nofile:$nofile --ulimit nproc=$nproc:$nproc"
}
