#!/usr/bin/env bash
# `make test`: builds what the suites need and runs every test, overlapping what can
# overlap on two cores without ever running two cluster suites at once:
#   lane "go"   the Go builds, CPU-bound, one after another: helm, binaries, kueue,
#               node-binaries
#   lane "apt"  Debian's packages and the debootstrap images, mostly I/O: mpi,
#               node-packages, node-images, operator-image (one lane: apt takes a lock)
#   in front    ruff, mypy --strict and the unit tests (the docs build is one of them)
# and then, once both lanes are done, the cluster suites (chaos, e2e, integration) in
# one pytest run. The lanes run at a lower priority (nice 10) than the checks in front.
# Warm, every build is a check of its cache key and both lanes end within seconds.
# Each lane's lines are prefixed with its name; the exit status is non-zero when a
# build, a check or a test failed.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
MAKE="${MAKE:-make}"
BIN=.venv/bin

"$MAKE" --no-print-directory venv || exit 1

lane() { # lane NAME TARGET...: make each target in turn, stop at the first failure
  local name="$1"; shift
  {
    for target in "$@"; do
      nice -n 10 "$MAKE" --no-print-directory "$target" || exit 1
    done
  } 2>&1 | sed -u "s/^/[$name] /"
}

lane go helm binaries kueue node-binaries &
go_lane=$!
lane apt mpi node-packages node-images operator-image &
apt_lane=$!
trap 'kill "$go_lane" "$apt_lane" 2>/dev/null; wait' INT TERM

status=0
"$MAKE" --no-print-directory lint typecheck || status=1
"$BIN/pytest" test/unit || status=1

built=1
wait "$go_lane" || { echo "make test: a Go build failed: see the lines marked [go]" >&2; built=0; }
wait "$apt_lane" || { echo "make test: a package or image build failed: see the lines marked [apt]" >&2; built=0; }
if ((built == 0)); then
  echo "make test: the cluster suites need every build; not run" >&2
  exit 1
fi
"$BIN/pytest" --ignore=test/unit || status=1
exit "$status"
