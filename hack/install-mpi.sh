#!/usr/bin/env bash
# Installs Open MPI (mpicxx, mpirun) from Debian's packages when missing, so that the
# test that compiles and runs examples/v2beta1/pi/pi.cc has a compiler. Only as root
# with apt-get (CI, a throw-away machine); elsewhere it says what to install and the
# test is skipped, unless MPI_OPERATOR_REQUIRE_MPI=1 (set by .ci/run) makes it fail.
set -euo pipefail

if command -v mpicxx >/dev/null 2>&1 && command -v mpirun >/dev/null 2>&1; then
  exit 0
fi
if [[ "$(id -u)" != 0 ]] || ! command -v apt-get >/dev/null 2>&1; then
  echo "install-mpi: no mpicxx; install Open MPI (Debian: openmpi-bin libopenmpi-dev) to run the pi program test" >&2
  exit 0
fi
echo "install-mpi: installing openmpi-bin and libopenmpi-dev from Debian's packages" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get -qq update >/dev/null
apt-get -qq install -y --no-install-recommends openmpi-bin libopenmpi-dev >/dev/null
command -v mpicxx >/dev/null
