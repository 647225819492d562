#!/usr/bin/env bash
# Builds the Helm CLI from the Go module proxy (helm.sh/helm/v3, pinned with its
# dependencies in hack/tools/helm/go.mod and go.sum), only when missing, into
# ${XDG_CACHE_HOME:-$HOME/.cache}/mpi-operator/bin/helm-<version>_<key>/helm, next to the
# control-plane binaries of hack/build-binaries.sh. Its own directory: a Helm bump does
# not rebuild the control plane, nor the other way round. The chart's tests
# (test/unit/test_helm_chart.py) and the in-cluster e2e run it.
#
# Usage: hack/build-helm.sh          build when missing, print nothing else on success
#        hack/build-helm.sh --print  print the helm binary's path and exit
# A cold build takes about 4 min on 2 idle cores (module download included); it prints
# its log's path first and a progress line every 30 s.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TOOLS="$ROOT/hack/tools/helm"
MODULE=helm.sh/helm/v3
BUILD_REV=1 # bump to force a rebuild when build flags change

VERSION="$(awk -v m="$MODULE" '$1 == m { print $2; exit }' "$TOOLS/go.mod")"
[[ -n "$VERSION" ]] || { echo "build-helm: error: $MODULE not in $TOOLS/go.mod" >&2; exit 1; }
key_hash="$( { echo "$BUILD_REV"; cat "$TOOLS/go.mod" "$TOOLS/go.sum"; } | sha256sum | cut -c1-10)"
BIN_DIR="${XDG_CACHE_HOME:-$HOME/.cache}/mpi-operator/bin/helm-${VERSION}_$key_hash"

if [[ "${1:-}" == "--print" ]]; then
  echo "$BIN_DIR/helm"
  exit 0
fi
[[ -x "$BIN_DIR/helm" ]] && exit 0
# One build at a time: make test's build lane and a chart test may both ask for it; the
# second waits for the first and then finds the binary.
mkdir -p "$(dirname "$BIN_DIR")"
exec 9>"$BIN_DIR.lock"
flock 9
[[ -x "$BIN_DIR/helm" ]] && exit 0

die() { echo "build-helm: error: $*" >&2; exit 1; }
command -v go >/dev/null 2>&1 || die "Go toolchain not found in PATH: install Go >= 1.26 (https://go.dev/dl/) to build Helm"
mkdir -p "$BIN_DIR"
LOG="$BIN_DIR/build.log"
: >"$LOG"
tmp="$(mktemp -d "$BIN_DIR/.tmp.XXXXXX")"
start=$SECONDS
# shellcheck source=lib/progress.sh
source "$ROOT/hack/lib/progress.sh"
trap 'progress_stop; rm -rf "$tmp"' EXIT
progress_start build-helm "$LOG"
echo "build-helm: building helm from $MODULE@$VERSION into $BIN_DIR (cold: ~4-8 min on 2 cores; log: $LOG)" >&2

export GOTOOLCHAIN=local CGO_ENABLED=0
# The version `helm version` prints (its default is only major.minor).
ld="-s -w -X $MODULE/internal/version.version=$VERSION"
echo "+ go build -trimpath -ldflags '$ld' -o $tmp/helm $MODULE/cmd/helm" >>"$LOG"
if ! (cd "$TOOLS" && go build -trimpath -ldflags "$ld" -o "$tmp/helm" "$MODULE/cmd/helm") >>"$LOG" 2>&1; then
  line="$(grep -m1 -E '403|404|410|not available|verifying|dial tcp|no such host|proxyconnect' "$LOG" || true)"
  [[ -n "$line" ]] && die "the Go module proxy ($(go env GOPROXY)) refused $MODULE@$VERSION: ${line#go: } (full log: $LOG)"
  die "building helm failed: $(tail -n1 "$LOG") (full log: $LOG)"
fi
mv -f "$tmp/helm" "$BIN_DIR/helm"
echo "build-helm: done in $((SECONDS - start)) s: $BIN_DIR/helm" >&2
