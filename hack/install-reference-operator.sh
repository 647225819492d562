#!/usr/bin/env bash
# Installs the reference Go operator (kubeflow/mpi-operator v0.8.2) from the Go module
# proxy, only when missing, into ${XDG_CACHE_HOME:-$HOME/.cache}/mpi-operator/reference/<version>/
# (outside the checkout: its code is never vendored or committed). Used by the
# side-by-side benchmarks in bench/ (bench/README.md), and, as an image, by the migration
# test on the real node (test/e2e/test_migrate_running_jobs.py).
#
# Usage: hack/install-reference-operator.sh              install if missing, print the binary path
#        hack/install-reference-operator.sh --print-path print the binary path and exit
#        hack/install-reference-operator.sh --image      install if missing, then its image as an
#            OCI archive named as its manifests name it (hack/reference_image.py, no container
#            engine; rebuilt when the binary changes); print the archive and the image's name
set -euo pipefail

VERSION="${MPI_OPERATOR_REFERENCE_VERSION:-v0.8.2}"
MODULE=github.com/kubeflow/mpi-operator
DIR="${XDG_CACHE_HOME:-$HOME/.cache}/mpi-operator/reference/$VERSION"
BIN="$DIR/mpi-operator"

if [[ "${1:-}" == "--print-path" ]]; then
  echo "$BIN"
  exit 0
fi

die() { echo "install-reference-operator: error: $*" >&2; exit 1; }

image() {
  local archive="$DIR/image.oci.tar" name="mpioperator/mpi-operator:${VERSION#v}"
  if [[ ! -s "$archive" || "$archive" -ot "$BIN" ]]; then
    python3 "$(dirname "${BASH_SOURCE[0]}")/reference_image.py" "$BIN" "$archive" "$name" >/dev/null
  fi
  printf '%s\n%s\n' "$archive" "$name"
}

if [[ -x "$BIN" ]]; then
  if [[ "${1:-}" == "--image" ]]; then image; else echo "$BIN"; fi
  exit 0
fi

command -v go >/dev/null 2>&1 || die "Go toolchain not found in PATH: install Go (https://go.dev/dl/) to build the reference operator"
mkdir -p "$DIR"
LOG="$DIR/install.log"
tmp="$(mktemp -d "$DIR/.tmp.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
echo "install-reference-operator: go install $MODULE/cmd/mpi-operator@$VERSION (cold: a few minutes)" >&2
export GOTOOLCHAIN=local CGO_ENABLED=0
# The module's go.mod has no replace directives, so `go install pkg@version` works.
if ! GOBIN="$tmp" go install -trimpath -ldflags "-s -w" "$MODULE/cmd/mpi-operator@$VERSION" >"$LOG" 2>&1; then
  # `go install pkg@version` also reads the module's version list (to report
  # deprecations); some module proxies/mirrors refuse that listing while serving the
  # pinned version itself. Build the same package from a throw-away main module that
  # requires exactly $VERSION (same dependency versions, by MVS over its go.mod).
  if ! grep -qE 'loading deprecation|loading retractions|@v/list' "$LOG"; then
    die "go install failed: $(tail -n3 "$LOG" | tr '\n' ' ') (full log: $LOG)"
  fi
  echo "install-reference-operator: the proxy refused the version list; building from a pinned throw-away module" >&2
  mkdir -p "$tmp/mod"
  # Same `go` version as the module's own go.mod, so that the module graph is pruned
  # exactly as it is for `go install` (no go line would mean unpruned go 1.16 loading).
  gomod="$(cd "$tmp/mod" && go mod download -json "$MODULE@$VERSION" | awk -F'"' '$2 == "GoMod" { print $4 }')"
  gover="$(awk '$1 == "go" { print $2; exit }' "$gomod")"
  [[ -n "$gover" ]] || die "no go directive in $MODULE@$VERSION's go.mod ($gomod)"
  printf 'module mpi-operator-reference-build\n\ngo %s\n\nrequire %s %s\n' "$gover" "$MODULE" "$VERSION" >"$tmp/mod/go.mod"
  if ! (cd "$tmp/mod" && go build -mod=mod -trimpath -ldflags "-s -w" -o "$tmp/mpi-operator" \
    "$MODULE/cmd/mpi-operator") >>"$LOG" 2>&1; then
    die "building $MODULE/cmd/mpi-operator@$VERSION failed: $(tail -n3 "$LOG" | tr '\n' ' ') (full log: $LOG)"
  fi
fi
mv -f "$tmp/mpi-operator" "$BIN"
if [[ "${1:-}" == "--image" ]]; then image; else echo "$BIN"; fi
