#!/usr/bin/env bash
# `make test`: builds what the suites need and runs every test, overlapping what can
# overlap on two cores without ever running two cluster suites at once:
#   lane "go"   the Go builds, CPU-bound, one after another: helm, binaries, then
#               node-binaries, kueue
#   lane "apt"  Debian's packages and the debootstrap images, mostly I/O: mpi,
#               node-packages, node-images, operator-image (one lane: apt takes a lock)
#   checks      ruff, mypy --strict and the unit tests (the docs build is one of them),
#               no cluster: beside the lanes and the cluster suites, their output kept
#               in a file and shown once they end
# and the cluster suites (chaos, e2e, integration) in one pytest run of two worker
# processes (pytest-xdist; each starts the clusters its tests ask for, and whatever
# exists once per host, like the real node, goes to one of them), as soon as the
# control plane's binaries are built: the lanes go on beside it, and a test that needs a
# later build (the real node's, Kueue, Open MPI, the operator's image) waits for it
# (devcluster/builds.py: each build leaves <target>.done or <target>.failed in
# $MPI_OPERATOR_BUILDS_DIR). The lanes run at a lower priority (nice 10) than the tests.
# Warm, every build is a check of its cache key and both lanes end within seconds.
# Each lane's lines are prefixed with its name; the exit status is non-zero when a
# build, a check or a test failed, or when a warm run took longer than its budget
# (devcluster/budget.py: the phases' seconds, the builds' and the CPU's, at the end).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
MAKE="${MAKE:-make}"
BIN=.venv/bin
WORKERS="${MPI_TEST_WORKERS:-2}" # the cluster suites' pytest-xdist workers (0: no worker)

began=$SECONDS
"$MAKE" --no-print-directory venv || exit 1

MPI_OPERATOR_BUILDS_DIR="$(mktemp -d)"
export MPI_OPERATOR_BUILDS_DIR
phase() { # phase NAME: the seconds since the last phase ended, under NAME
  echo "$1 $((SECONDS - began))" >>"$MPI_OPERATOR_BUILDS_DIR/phases.txt"
  began=$SECONDS
}
cpu() { head -n 1 /proc/stat >"$MPI_OPERATOR_BUILDS_DIR/cpu-$1"; }
phase "virtualenv"
built() { [[ -e "$MPI_OPERATOR_BUILDS_DIR/$1.done" || -e "$MPI_OPERATOR_BUILDS_DIR/$1.failed" ]]; }

lane() { # lane NAME TARGET...: make each target in turn, stop at the first failure
  local name="$1"; shift
  {
    for target in "$@"; do
      local start=$SECONDS
      if nice -n 10 "$MAKE" --no-print-directory "$target"; then # its seconds, for the budget
        echo "$((SECONDS - start))" >"$MPI_OPERATOR_BUILDS_DIR/$target.done"
      else # this one and the rest of the lane: failed, for the tests that wait for them
        for rest in "$@"; do built "$rest" || touch "$MPI_OPERATOR_BUILDS_DIR/$rest.failed"; done
        exit 1
      fi
    done
  } 2>&1 | sed -u "s/^/[$name] /"
}

lane go helm binaries node-binaries kueue &
go_lane=$!
lane apt mpi node-packages node-images operator-image &
apt_lane=$!
trap 'kill "$go_lane" "$apt_lane" ${checks_pid:-} 2>/dev/null; wait; rm -rf "$MPI_OPERATOR_BUILDS_DIR"' EXIT
trap 'exit 130' INT TERM

status=0
# The checks need no cluster: they run beside everything else (their seconds are shown
# apart, not added to the phases). Their output goes to a file, shown when they end.
checks_log="$MPI_OPERATOR_BUILDS_DIR/checks.log"
checks() {
  local start=$SECONDS failed=0
  "$MAKE" --no-print-directory lint typecheck || failed=1
  echo "lint and type checks $((SECONDS - start))" >>"$MPI_OPERATOR_BUILDS_DIR/beside.txt"
  start=$SECONDS
  "$BIN/pytest" test/unit || failed=1
  echo "unit tests $((SECONDS - start))" >>"$MPI_OPERATOR_BUILDS_DIR/beside.txt"
  return "$failed"
}
checks >"$checks_log" 2>&1 &
checks_pid=$!
checks_shown=""
show_checks() { # waits for the checks, then shows their output once
  [[ -n "$checks_shown" ]] && return
  checks_shown=1
  wait "$checks_pid" || status=1
  echo "==== make test: ruff, mypy --strict and the unit tests (run beside the rest) ===="
  cat "$checks_log"
}

# Every cluster starts from the control plane's binaries; the rest is waited for by
# the tests that need it. Cold, the checks end while the builds go on: shown then.
until built helm && built binaries; do
  if [[ -z "$checks_shown" ]] && ! kill -0 "$checks_pid" 2>/dev/null; then show_checks; fi
  sleep 1
done
phase "waiting for the binaries"
if [[ -e "$MPI_OPERATOR_BUILDS_DIR/binaries.failed" || -e "$MPI_OPERATOR_BUILDS_DIR/helm.failed" ]]; then
  show_checks
  echo "make test: the control plane's binaries failed to build (the lines marked [go]); the cluster suites not run" >&2
  exit 1
fi
cpu cluster-start
# In worker processes (test/worker_units.py says how it groups the tests between them).
"$BIN/pytest" --ignore=test/unit -n "$WORKERS" --dist loadgroup || status=1
cpu cluster-end
phase "cluster suites"
show_checks
phase "waiting for the checks"

wait "$go_lane" || { echo "make test: a Go build failed: see the lines marked [go]" >&2; status=1; }
wait "$apt_lane" || { echo "make test: a package or image build failed: see the lines marked [apt]" >&2; status=1; }
phase "waiting for the builds"
"$BIN/python" -m devcluster.budget || status=1
exit "$status"
