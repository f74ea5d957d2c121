#!/bin/sh
# Installs a requirements file the one way scripts/setup.sh and the Dockerfile both use, so a
# checkout and the image hold the same packages:
#   sh scripts/install_requirements.sh PYTHON requirements.txt [pip options...]
# A line marked `# no-deps` is installed without the dependencies its package declares (pip has no
# per-line option for it): crowd-kit declares transformers, pyarrow and the Hugging Face stack
# (~470 MB) that its aggregation code never imports; what it does import is pinned in the file.
set -eu
python=$1 requirements=$2
shift 2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
grep -v -e '# no-deps' "$requirements" >"$work/requirements.txt"
grep -e '# no-deps' "$requirements" | sed 's/#.*//' >"$work/no-deps.txt"
"$python" -m pip install "$@" -r "$work/requirements.txt"
if grep -q '[^[:space:]]' "$work/no-deps.txt"; then
  "$python" -m pip install "$@" --no-deps -r "$work/no-deps.txt"
fi
