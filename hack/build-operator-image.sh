#!/usr/bin/env bash
# Builds the operator's image from the project's wheel, for the in-cluster e2e test on the
# `real` local cluster shape (the Dockerfile's python:3.11-slim cannot be pulled here):
#   base   `debootstrap --variant=minbase bookworm` (python3 3.11, as the Dockerfile's) with a
#          virtualenv in /opt/mpi-operator holding the runtime dependencies pinned, with their
#          hashes, in requirements.lock (as the Dockerfile installs them), downloaded from PyPI
#          as wheels by this machine's pip; user nonroot (65532).
#   image  the base plus one layer: the wheel of `pip wheel .` installed without dependencies
#          (`pip check` proves the base has them). Entrypoint mpi-operator, as the Dockerfile's.
# Both are cached outside the checkout, in ${XDG_CACHE_HOME:-$HOME/.cache}/mpi-operator/
# operator-image/: the base keyed by this script and requirements.lock, the image by the base
# and the wheel's sha256 (the wheel is built reproducibly, SOURCE_DATE_EPOCH fixed), so a
# code change rebuilds only the small top layer.
#
# Usage: hack/build-operator-image.sh          build what is missing
#        hack/build-operator-image.sh --print  print the OCI archive and the image's name
#                                              (two lines) and exit; builds only the wheel
# The archive is imported into the real node's containerd with `ctr images import
# --base-name localhost/mpi-operator-python`, which names it as printed.
# Needs root, debootstrap and umoci (hack/install-node-packages.sh) and the venv's pip.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SUITE=bookworm
REPO=localhost/mpi-operator-python
PY="${PYTHON:-$ROOT/.venv/bin/python}"
[[ -x "$PY" ]] || PY="$(command -v python3)"
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/mpi-operator/operator-image"
die() { echo "build-operator-image: error: $*" >&2; exit 1; }

mkdir -p "$CACHE"
work="$(mktemp -d "$CACHE/.tmp.XXXXXX")"
rootfs="$work/bundle/rootfs"
ticker=""
cleanup() {
  [[ -z "$ticker" ]] || kill "$ticker" 2>/dev/null || true
  mountpoint -q "$rootfs/proc" 2>/dev/null && umount -l "$rootfs/proc" || true
  rm -rf "$work"
}
trap cleanup EXIT

# The wheel, from a copy of what goes into it (no build/ or egg-info in the checkout).
mkdir -p "$work/src"
cp -r "$ROOT/pyproject.toml" "$ROOT/setup.py" "$ROOT/README.md" "$ROOT/LICENSE" "$ROOT/mpi_operator" "$work/src/"
find "$work/src" -name __pycache__ -prune -exec rm -rf {} +
# setup.py's build hook writes the commit into the wheel (`mpi-operator --version`); the copy
# has no .git, so it comes from the checkout here (none outside one: "Not provided.").
commit="$(git -C "$ROOT" rev-parse HEAD 2>/dev/null || true)"
[[ -z "$commit" || -z "$(git -C "$ROOT" status --porcelain --untracked-files=no 2>/dev/null)" ]] || commit+=-dirty
MPI_OPERATOR_GIT_COMMIT="$commit" SOURCE_DATE_EPOCH=315532800 "$PY" -m pip wheel -q --no-deps -w "$work/wheel" "$work/src" >"$work/wheel.log" 2>&1 \
  || die "pip wheel . failed: $(tail -n1 "$work/wheel.log")"
wheel="$(ls "$work"/wheel/mpi_operator-*.whl)"
version="$(basename "$wheel" | cut -d- -f2)"
wheel_hash="$(sha256sum "$wheel" | cut -c1-12)"
# The base depends on build_base's text, the suite and the lock, not on the rest of this file.
base_key="$({ echo "$SUITE"; sed -n '/^build_base() {/,/^}/p' "${BASH_SOURCE[0]}"; cat "$ROOT/requirements.lock"; } | sha256sum | cut -c1-12)"
BASE="$CACHE/base_${SUITE}_$base_key"
TAG="$version-$wheel_hash"
OUT="$CACHE/image_${base_key}_$wheel_hash"

if [[ "${1:-}" == "--print" ]]; then
  printf '%s\n%s\n' "$OUT/mpi-operator.tar" "$REPO:$TAG"
  exit 0
fi
[[ -s "$OUT/mpi-operator.tar" ]] && exit 0

[[ "$(id -u)" == 0 ]] || die "not root: debootstrap and chroot need root to build the operator's image"
for t in debootstrap umoci chroot; do
  command -v "$t" >/dev/null 2>&1 || die "$t not found: run hack/install-node-packages.sh (Debian package ${t/chroot/coreutils})"
done
LOG="$work/build.log"
: >"$LOG"
start=$SECONDS
step() { # step WHAT CMD...: logs the command's output; on failure prints one line
  local what="$1"; shift
  echo "+ $*" >>"$LOG"
  "$@" >>"$LOG" 2>&1 || {
    cp "$LOG" "$CACHE/failed-build.log"
    die "$what failed: $(grep -v '^+ ' "$LOG" | grep -m1 -E '^E:|rror' || tail -n1 "$LOG") (full log: $CACHE/failed-build.log)"
  }
}
# A clean environment: none of this machine's PIP_* settings (its CA file, find-links) apply.
in_root() { chroot "$rootfs" env -i LC_ALL=C HOME=/root PATH=/usr/sbin:/usr/bin:/sbin:/bin "$@"; }

build_base() {
  # For make test's budget (devcluster/budget.py): this run built more than the image.
  if [[ -n "${MPI_OPERATOR_BUILDS_DIR:-}" ]]; then touch "$MPI_OPERATOR_BUILDS_DIR/operator-image.cold"; fi
  local mirror="${DEBIAN_MIRROR:-}"
  if [[ -z "$mirror" ]]; then # the mirror apt already uses here
    mirror="$(grep -h -m1 -E '^URIs:' /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '{ print $2; exit }' || true)"
    [[ -n "$mirror" ]] || mirror="$(awk '$1 == "deb" && $0 !~ /security/ { print $2; exit }' /etc/apt/sources.list 2>/dev/null || true)"
    [[ -n "$mirror" ]] || mirror=http://deb.debian.org/debian
  fi
  echo "build-operator-image: building the base from debootstrap $SUITE ($mirror) into $BASE (cold: a few minutes; log: $LOG)" >&2
  ( while sleep 30; do echo "build-operator-image: still building the base ($((SECONDS - start)) s; log: $LOG)" >&2; done ) &
  ticker=$!
  local layout="$work/base-oci"
  step "umoci init" umoci init --layout "$layout"
  step "umoci new" umoci new --image "$layout:base"
  step "umoci unpack (empty base)" umoci unpack --image "$layout:base" "$work/bundle"
  rm -rf "$rootfs"
  step "debootstrap $SUITE from $mirror" nice -n 10 debootstrap --variant=minbase "$SUITE" "$rootfs" "$mirror"
  mount -t proc proc "$rootfs/proc"
  step "apt-get update in the image" in_root apt-get -q update
  step "installing python3 in the image" in_root env DEBIAN_FRONTEND=noninteractive \
    apt-get -q install -y --no-install-recommends python3 python3-venv
  # The locked runtime dependencies, as binary wheels for this machine's (the same)
  # Python 3.11, checked against the lock's hashes when downloaded and when installed.
  cp "$ROOT/requirements.lock" "$rootfs/tmp/requirements.lock"
  step "pip download of the locked runtime dependencies" "$PY" -m pip download -q --only-binary=:all: \
    --require-hashes -d "$rootfs/tmp/wheels" -r "$rootfs/tmp/requirements.lock"
  step "python3 -m venv in the image" in_root python3 -m venv /opt/mpi-operator
  step "installing the locked runtime dependencies in the image" in_root /opt/mpi-operator/bin/pip install -q \
    --no-index --find-links /tmp/wheels --require-hashes -r /tmp/requirements.lock
  in_root /opt/mpi-operator/bin/pip freeze >"$work/base-freeze.txt"
  step "adding the nonroot user" in_root sh -c 'groupadd --gid 65532 nonroot && useradd --uid 65532 --gid 65532 --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin nonroot'
  umount -l "$rootfs/proc"
  rm -rf "$rootfs/tmp/"* "$rootfs/var/lib/apt/lists/"* "$rootfs/var/cache/apt/"*.bin \
    "$rootfs/var/cache/apt/archives/"*.deb "$rootfs/usr/share/doc/"* "$rootfs/usr/share/man/"*
  step "umoci repack (base layer)" umoci repack --image "$layout:base" "$work/bundle"
  step "umoci config (base)" umoci config --image "$layout:base" --config.user 65532:65532 \
    --config.entrypoint /opt/mpi-operator/bin/mpi-operator --config.workingdir / \
    --config.env PATH=/opt/mpi-operator/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --config.env PYTHONDONTWRITEBYTECODE=1 --config.env PYTHONUNBUFFERED=1
  step "umoci gc (base)" umoci gc --layout "$layout"
  rm -rf "$work/bundle"
  mkdir -p "$work/base-out"
  mv "$layout" "$work/base-out/oci"
  mv "$work/base-freeze.txt" "$work/base-out/requirements.lock"
  rm -rf "$BASE"
  mv "$work/base-out" "$BASE"
  kill "$ticker" 2>/dev/null || true
}

[[ -d "$BASE/oci" ]] || build_base
# The image: the base plus the wheel, in a copy of the base's layout.
layout="$work/oci"
cp -a "$BASE/oci" "$layout"
step "umoci unpack (base)" umoci unpack --image "$layout:base" "$work/bundle"
cp "$wheel" "$rootfs/tmp/"
step "installing the wheel in the image" in_root /opt/mpi-operator/bin/pip install -q --no-deps \
  --no-index "/tmp/$(basename "$wheel")"
step "pip check in the image" in_root /opt/mpi-operator/bin/pip check
rm -rf "$rootfs/tmp/"*
step "umoci repack (the wheel)" umoci repack --image "$layout:$TAG" "$work/bundle"
step "umoci rm base" umoci rm --image "$layout:base"
step "umoci gc" umoci gc --layout "$layout"
mkdir -p "$work/out"
tar -C "$layout" -cf "$work/out/mpi-operator.tar" .
cp "$BASE/requirements.lock" "$work/out/"
rm -rf "$OUT"
mv "$work/out" "$OUT"
echo "build-operator-image: $REPO:$TAG done in $((SECONDS - start)) s; $(du -h "$OUT/mpi-operator.tar" | cut -f1) in $OUT" >&2
