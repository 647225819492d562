#!/usr/bin/env bash
# Builds Kueue's manager (sigs.k8s.io/kueue/cmd/kueue, pinned with its dependencies in
# hack/tools/kueue/go.mod and go.sum: the one place its version is written) from the Go
# module proxy, only when missing, into
# ${XDG_CACHE_HOME:-$HOME/.cache}/mpi-operator/bin/kueue-<version>_<key>/, next to the
# control-plane binaries of hack/build-binaries.sh, with what the Kueue suite
# (test/integration/kueue, devcluster/kueue.py) reads from the same module:
#   kueue                  the manager, run on the host against the local cluster
#   crds/*.yaml            config/components/crd/bases (the kueue.x-k8s.io CRDs)
#   webhook-manifests.yaml config/components/webhook/manifests.yaml (the webhook
#                          paths and rules; the suite points them at loopback)
# Its own directory: a Kueue bump rebuilds only Kueue.
#
# Usage: hack/build-kueue.sh          build when missing, print nothing else on success
#        hack/build-kueue.sh --print-dir  print the directory and exit
# A cold build took 10 min 44 s on 2 cores shared with another build (downloading about
# 540 MB of modules included); it prints its log's path first and a progress line every
# 30 s.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TOOLS="$ROOT/hack/tools/kueue"
MODULE=sigs.k8s.io/kueue
BUILD_REV=1 # bump to force a rebuild when build flags change

VERSION="$(awk -v m="$MODULE" '($1 == m || ($1 == "require" && $2 == m)) { print ($1 == "require" ? $3 : $2); exit }' "$TOOLS/go.mod")"
[[ -n "$VERSION" ]] || { echo "build-kueue: error: $MODULE not in $TOOLS/go.mod" >&2; exit 1; }
key_hash="$( { echo "$BUILD_REV"; cat "$TOOLS/go.mod" "$TOOLS/go.sum"; } | sha256sum | cut -c1-10)"
BIN_DIR="${XDG_CACHE_HOME:-$HOME/.cache}/mpi-operator/bin/kueue-${VERSION}_$key_hash"

if [[ "${1:-}" == "--print-dir" ]]; then
  echo "$BIN_DIR"
  exit 0
fi
[[ -x "$BIN_DIR/kueue" && -s "$BIN_DIR/webhook-manifests.yaml" \
  && -s "$BIN_DIR/crds/kueue.x-k8s.io_workloads.yaml" ]] && exit 0

die() { echo "build-kueue: error: $*" >&2; exit 1; }
command -v go >/dev/null 2>&1 || die "Go toolchain not found in PATH: install Go >= 1.26 (https://go.dev/dl/) to build Kueue"
mkdir -p "$BIN_DIR"
LOG="$BIN_DIR/build.log"
: >"$LOG"
tmp="$(mktemp -d "$BIN_DIR/.tmp.XXXXXX")"
start=$SECONDS
# shellcheck source=lib/progress.sh
source "$ROOT/hack/lib/progress.sh"
trap 'progress_stop; rm -rf "$tmp"' EXIT
progress_start build-kueue "$LOG"
echo "build-kueue: building kueue from $MODULE@$VERSION into $BIN_DIR (cold: ~11 min on 2 shared cores; log: $LOG)" >&2

export GOTOOLCHAIN=local CGO_ENABLED=0
# run_go WHAT CMD...: runs a go command in the tools module, logging to $LOG; on failure
# prints one line.
run_go() {
  local what="$1"; shift
  echo "+ $*" >>"$LOG"
  if ! (cd "$TOOLS" && "$@") >>"$LOG" 2>&1; then
    local line
    line="$(grep -m1 -E '403|404|410|not available|verifying|reading https?://|dial tcp|no such host|proxyconnect' "$LOG" || true)"
    [[ -n "$line" ]] && die "the Go module proxy ($(go env GOPROXY)) refused $what: ${line#go: } (full log: $LOG)"
    die "building $what failed: $(grep -v '^+ ' "$LOG" | tail -n1) (full log: $LOG)"
  fi
}

# The version Kueue logs at start-up.
ld="-s -w -X $MODULE/pkg/version.GitVersion=$VERSION"
run_go "$MODULE@$VERSION" go build -trimpath -ldflags "$ld" -o "$tmp/kueue" "$MODULE/cmd/kueue"
dir="$(cd "$TOOLS" && go list -m -f '{{.Dir}}' "$MODULE")"
[[ -n "$dir" && -d "$dir/config/components/crd/bases" ]] || die "config/components/crd/bases not found in $MODULE@$VERSION ($dir)"
mkdir -p "$tmp/crds"
cp "$dir"/config/components/crd/bases/*.yaml "$tmp/crds/"
cp "$dir/config/components/webhook/manifests.yaml" "$tmp/webhook-manifests.yaml"
chmod 0644 "$tmp"/crds/*.yaml "$tmp/webhook-manifests.yaml"

# Move into place only once everything is there; the binary last (it is what says done).
rm -rf "$BIN_DIR/crds"
mv -f "$tmp/crds" "$tmp/webhook-manifests.yaml" "$BIN_DIR/"
mv -f "$tmp/kueue" "$BIN_DIR/kueue"
echo "build-kueue: done in $((SECONDS - start)) s: $BIN_DIR/kueue" >&2
