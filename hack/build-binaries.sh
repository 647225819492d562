#!/usr/bin/env bash
# Builds the local test control plane from Go modules, only when missing:
#   kube-apiserver, kube-controller-manager, kube-scheduler, kubectl  (hack/tools/k8s)
#   etcd                                                              (hack/tools/etcd)
#   kwok, kwokctl                                                     (hack/tools/kwok)
#     with hack/tools/kwok/*.patch applied to a copy of the module (delete-by-uid.patch:
#     KWOK deletes a pod by uid, as a kubelet does, so a late delete of a pod that is gone
#     no longer removes its replacement of the same name)
# and copies the PodGroup CRDs of volcano and scheduler-plugins from the Go module
# cache. Everything lands in ${XDG_CACHE_HOME:-$HOME/.cache}/mpi-operator/bin/<key>/,
# outside the checkout; <key> changes whenever a pinned version changes.
#
# Usage: hack/build-binaries.sh            build what is missing, print nothing on success
#        hack/build-binaries.sh --print-dir print the binaries directory and exit
#
# If KUBEBUILDER_ASSETS points at envtest binaries, the kube-apiserver, etcd and
# kubectl found there are used (devcluster prefers them) and not built.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TOOLS="$ROOT/hack/tools"

# Pinned versions of the CRD sources (same as upstream mpi-operator v0.8.2's go.mod).
VOLCANO_MODULE=volcano.sh/volcano
VOLCANO_VERSION=v1.10.0
VOLCANO_CRD=config/crd/volcano/bases/scheduling.volcano.sh_podgroups.yaml
SCHEDPLUGINS_MODULE=sigs.k8s.io/scheduler-plugins
SCHEDPLUGINS_VERSION=v0.29.8
SCHEDPLUGINS_CRD=manifests/coscheduling/crd.yaml
BUILD_REV=1 # bump to force a rebuild when build flags change

modver() { # modver GO_MOD_FILE MODULE -> version required there
  awk -v m="$2" '($1 == m || ($1 == "require" && $2 == m)) { print ($1 == "require" ? $3 : $2); exit }' "$1"
}
K8S_VERSION="$(modver "$TOOLS/k8s/go.mod" k8s.io/kubernetes)"
ETCD_VERSION="$(modver "$TOOLS/etcd/go.mod" go.etcd.io/etcd/server/v3)"
KWOK_VERSION="$(modver "$TOOLS/kwok/go.mod" sigs.k8s.io/kwok)"

key_hash="$(
  {
    echo "$BUILD_REV $VOLCANO_VERSION $SCHEDPLUGINS_VERSION"
    cat "$TOOLS"/k8s/go.mod "$TOOLS"/k8s/go.sum "$TOOLS"/etcd/go.mod "$TOOLS"/etcd/go.sum \
      "$TOOLS"/etcd/etcd/main.go "$TOOLS"/kwok/go.mod "$TOOLS"/kwok/go.sum "$TOOLS"/kwok/*.patch
  } | sha256sum | cut -c1-10
)"
KEY="k8s-${K8S_VERSION}_etcd-${ETCD_VERSION}_kwok-${KWOK_VERSION}_${key_hash}"
BIN_DIR="${XDG_CACHE_HOME:-$HOME/.cache}/mpi-operator/bin/$KEY"

if [[ "${1:-}" == "--print-dir" ]]; then
  echo "$BIN_DIR"
  exit 0
fi

die() { echo "build-binaries: error: $*" >&2; exit 1; }

assets="${KUBEBUILDER_ASSETS:-}"
have() { # have NAME: present in the cache, or (kube-apiserver/etcd/kubectl) in KUBEBUILDER_ASSETS
  [[ -x "$BIN_DIR/$1" ]] && return 0
  case "$1" in
    kube-apiserver | etcd | kubectl) [[ -n "$assets" && -x "$assets/$1" ]] ;;
    *) return 1 ;;
  esac
}

k8s_missing=()
for b in kube-apiserver kube-controller-manager kube-scheduler kubectl; do
  have "$b" || k8s_missing+=("$b")
done
need_etcd=0; have etcd || need_etcd=1
need_kwok=0; { have kwok && have kwokctl; } || need_kwok=1
need_crds=0
[[ -s "$BIN_DIR/crds/scheduling.volcano.sh_podgroups.yaml" && -s "$BIN_DIR/crds/scheduling.x-k8s.io_podgroups.yaml" ]] || need_crds=1

if [[ ${#k8s_missing[@]} -eq 0 && $need_etcd -eq 0 && $need_kwok -eq 0 && $need_crds -eq 0 ]]; then
  exit 0
fi

command -v go >/dev/null 2>&1 || die "Go toolchain not found in PATH: install Go >= 1.26 (https://go.dev/dl/) to build the test control plane"
mkdir -p "$BIN_DIR"
LOG="$BIN_DIR/build.log"
export GOTOOLCHAIN=local CGO_ENABLED=0

# run_go WHAT CMD...: runs a go command, logging to $LOG; on failure prints one line.
run_go() {
  local what="$1"; shift
  echo "+ $*" >>"$LOG"
  if ! "$@" >>"$LOG" 2>&1; then
    local line
    line="$(grep -m1 -E '403|404|410|not available|verifying|reading https?://|dial tcp|no such host|proxyconnect' "$LOG" | tail -n1 || true)"
    if [[ -n "$line" ]]; then
      die "the Go module proxy ($(go env GOPROXY)) refused $what: ${line#go: } (full log: $LOG)"
    fi
    die "building $what failed: $(grep -v '^+ ' "$LOG" | tail -n1) (full log: $LOG)"
  fi
}

start=$SECONDS
tmp="$(mktemp -d "$BIN_DIR/.tmp.XXXXXX")"
# shellcheck source=lib/progress.sh
source "$ROOT/hack/lib/progress.sh"
trap 'progress_stop; rm -rf "$tmp"' EXIT
progress_start build-binaries "$LOG"

if [[ ${#k8s_missing[@]} -gt 0 ]]; then
  echo "build-binaries: building ${k8s_missing[*]} from k8s.io/kubernetes@$K8S_VERSION into $BIN_DIR (cold: ~15 min on 2 cores; log: $LOG)" >&2
  minor="${K8S_VERSION#v1.}"; minor="${minor%%.*}"
  build_date="$(cd "$TOOLS/k8s" && go list -m -f '{{if .Time}}{{.Time.UTC.Format "2006-01-02T15:04:05Z"}}{{end}}' k8s.io/kubernetes 2>/dev/null || true)"
  [[ -n "$build_date" ]] || build_date="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  ld="-s -w"
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ld+=" -X $p.gitVersion=$K8S_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$minor"
    ld+=" -X $p.gitCommit= -X $p.gitTreeState=clean -X $p.buildDate=$build_date"
  done
  pkgs=()
  for b in "${k8s_missing[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/$b"); done
  if [[ ${#pkgs[@]} -eq 1 ]]; then out="$tmp/${k8s_missing[0]}"; else out="$tmp/"; fi
  (cd "$TOOLS/k8s" && run_go "k8s.io/kubernetes@$K8S_VERSION" go build -trimpath -ldflags "$ld" -o "$out" "${pkgs[@]}")
fi

if [[ $need_etcd -eq 1 ]]; then
  echo "build-binaries: building etcd from go.etcd.io/etcd/server/v3@$ETCD_VERSION (log: $LOG)" >&2
  (cd "$TOOLS/etcd" && run_go "go.etcd.io/etcd/server/v3@$ETCD_VERSION" go build -trimpath -ldflags "-s -w" -o "$tmp/etcd" ./etcd)
fi

if [[ $need_kwok -eq 1 ]]; then
  echo "build-binaries: building kwok, kwokctl from sigs.k8s.io/kwok@$KWOK_VERSION (log: $LOG)" >&2
  command -v patch >/dev/null 2>&1 || die "patch not found in PATH: install it (apt-get install patch) to build kwok"
  (cd "$TOOLS/kwok" && run_go "sigs.k8s.io/kwok@$KWOK_VERSION" go mod download sigs.k8s.io/kwok)
  # A patched copy of the module, put in its place by a replace line in a copy of go.mod
  # (-modfile): go.mod and go.sum in hack/tools/kwok stay as they are.
  src="$tmp/kwok-src"
  cp -r "$(cd "$TOOLS/kwok" && go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)" "$src"
  chmod -R u+w "$src"
  for p in "$TOOLS"/kwok/*.patch; do
    patch -s -p1 -d "$src" <"$p" >>"$LOG" 2>&1 || die "$p does not apply to sigs.k8s.io/kwok@$KWOK_VERSION (log: $LOG)"
  done
  cp "$TOOLS/kwok/go.mod" "$tmp/kwok.mod"
  cp "$TOOLS/kwok/go.sum" "$tmp/kwok.sum"
  (cd "$TOOLS/kwok" && go mod edit -modfile="$tmp/kwok.mod" -replace "sigs.k8s.io/kwok=$src")
  (cd "$TOOLS/kwok" && run_go "sigs.k8s.io/kwok@$KWOK_VERSION" go build -modfile="$tmp/kwok.mod" \
    -ldflags "-s -w -X sigs.k8s.io/kwok/pkg/consts.Version=${KWOK_VERSION#v}" \
    -o "$tmp/" sigs.k8s.io/kwok/cmd/kwok sigs.k8s.io/kwok/cmd/kwokctl)
  rm -rf "$src" "$tmp/kwok.mod" "$tmp/kwok.sum"
fi

if [[ $need_crds -eq 1 ]]; then
  mkdir -p "$tmp/crds"
  copy_crd() { # copy_crd MODULE VERSION PATH DEST
    local dir
    (cd "$tmp" && run_go "$1@$2" go mod download -json "$1@$2")
    dir="$(cd "$tmp" && go mod download -json "$1@$2" | awk -F'"' '$2 == "Dir" { print $4 }')"
    [[ -s "$dir/$3" ]] || die "$3 not found in $1@$2"
    cp "$dir/$3" "$tmp/crds/$4"
  }
  copy_crd "$VOLCANO_MODULE" "$VOLCANO_VERSION" "$VOLCANO_CRD" scheduling.volcano.sh_podgroups.yaml
  copy_crd "$SCHEDPLUGINS_MODULE" "$SCHEDPLUGINS_VERSION" "$SCHEDPLUGINS_CRD" scheduling.x-k8s.io_podgroups.yaml
  chmod 0644 "$tmp"/crds/*.yaml
  mkdir -p "$BIN_DIR/crds"
  mv -f "$tmp"/crds/*.yaml "$BIN_DIR/crds/"
  rmdir "$tmp/crds"
fi

# Move into place only once everything built (a partial build never looks complete).
for f in "$tmp"/*; do
  [[ -e "$f" ]] || continue
  mv -f "$f" "$BIN_DIR/"
done
echo "build-binaries: done in $((SECONDS - start)) s; $(du -sh "$BIN_DIR" | cut -f1) in $BIN_DIR" >&2
