#!/usr/bin/env bash
# Builds the real node's Go binaries of the `real` local cluster shape, only when missing:
#   kubelet     from the same k8s.io/kubernetes release as the control plane (hack/tools/kubelet)
#   kube-proxy  from that same module (iptables mode: the `kubernetes` Service for in-cluster pods)
#   coredns  CoreDNS with the kubernetes, health, errors and cache plugins (hack/tools/coredns)
# into ${XDG_CACHE_HOME:-$HOME/.cache}/mpi-operator/node-bin/<key>/, outside the checkout,
# under a key of their own (the control plane's binaries of hack/build-binaries.sh keep theirs).
#
# Usage: hack/build-node-binaries.sh             build what is missing
#        hack/build-node-binaries.sh --print-dir print the binaries directory and exit
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TOOLS="$ROOT/hack/tools"
BUILD_REV=1 # bump to force a rebuild when build flags change

modver() { # modver GO_MOD_FILE MODULE -> version required there
  awk -v m="$2" '($1 == m || ($1 == "require" && $2 == m)) { print ($1 == "require" ? $3 : $2); exit }' "$1"
}
K8S_VERSION="$(modver "$TOOLS/kubelet/go.mod" k8s.io/kubernetes)"
COREDNS_VERSION="$(modver "$TOOLS/coredns/go.mod" github.com/coredns/coredns)"
key_hash="$(
  {
    echo "$BUILD_REV"
    cat "$TOOLS"/kubelet/go.mod "$TOOLS"/kubelet/go.sum "$TOOLS"/coredns/go.mod "$TOOLS"/coredns/go.sum \
      "$TOOLS"/coredns/main.go
  } | sha256sum | cut -c1-10
)"
BIN_DIR="${XDG_CACHE_HOME:-$HOME/.cache}/mpi-operator/node-bin/kubelet-${K8S_VERSION}_coredns-${COREDNS_VERSION}_${key_hash}"

if [[ "${1:-}" == "--print-dir" ]]; then
  echo "$BIN_DIR"
  exit 0
fi
[[ -x "$BIN_DIR/kubelet" && -x "$BIN_DIR/kube-proxy" && -x "$BIN_DIR/coredns" ]] && exit 0

die() { echo "build-node-binaries: error: $*" >&2; exit 1; }
command -v go >/dev/null 2>&1 || die "Go toolchain not found in PATH: install Go >= 1.26 (https://go.dev/dl/) to build the kubelet, kube-proxy and CoreDNS"
mkdir -p "$BIN_DIR"
LOG="$BIN_DIR/build.log"
export GOTOOLCHAIN=local CGO_ENABLED=0
start=$SECONDS
tmp="$(mktemp -d "$BIN_DIR/.tmp.XXXXXX")"
# shellcheck source=lib/progress.sh
source "$ROOT/hack/lib/progress.sh"
trap 'progress_stop; rm -rf "$tmp"' EXIT
progress_start build-node-binaries "$LOG"

run_go() { # run_go WHAT CMD...: logs; on failure prints one line
  local what="$1"; shift
  echo "+ $*" >>"$LOG"
  if ! nice -n 10 "$@" >>"$LOG" 2>&1; then
    local line
    line="$(grep -m1 -E '403|404|410|not available|verifying|reading https?://|dial tcp|no such host' "$LOG" | tail -n1 || true)"
    [[ -n "$line" ]] && die "the Go module proxy ($(go env GOPROXY)) refused $what: ${line#go: } (full log: $LOG)"
    die "building $what failed: $(grep -v '^+ ' "$LOG" | tail -n1) (full log: $LOG)"
  fi
}

minor="${K8S_VERSION#v1.}"; minor="${minor%%.*}"
ld="-s -w"
for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ld+=" -X $p.gitVersion=$K8S_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean"
done
for cmd in kubelet kube-proxy; do
  [[ -x "$BIN_DIR/$cmd" ]] && continue
  echo "build-node-binaries: building $cmd from k8s.io/kubernetes@$K8S_VERSION into $BIN_DIR (log: $LOG)" >&2
  (cd "$TOOLS/kubelet" && run_go "$cmd (k8s.io/kubernetes@$K8S_VERSION)" go build -trimpath -ldflags "$ld" -o "$tmp/$cmd" "k8s.io/kubernetes/cmd/$cmd")
done
if [[ ! -x "$BIN_DIR/coredns" ]]; then
  echo "build-node-binaries: building coredns from github.com/coredns/coredns@$COREDNS_VERSION (log: $LOG)" >&2
  (cd "$TOOLS/coredns" && run_go "coredns@$COREDNS_VERSION" go build -trimpath -ldflags "-s -w" -o "$tmp/coredns" .)
fi
for f in "$tmp"/*; do
  [[ -e "$f" ]] && mv -f "$f" "$BIN_DIR/"
done
echo "build-node-binaries: done in $((SECONDS - start)) s in $BIN_DIR" >&2
