#!/usr/bin/env bash
# Builds the images of the `real` local cluster shape, only when missing, into
# ${XDG_CACHE_HOME:-$HOME/.cache}/mpi-operator/images/<key>/ (outside the checkout;
# <key> changes whenever an input changes: this script, pi.cc, sgd.py, elastic.py, the pause program):
#   node-images.tar  an OCI archive, each tag from `debootstrap --variant=minbase`;
#                    devcluster/nodeconfig.py's NODE_IMAGES names them in the node:
#     The reference's public images, built as its Dockerfiles build them (v0.8.2's
#     build/base/Dockerfile, then build/base/<mpi>.Dockerfile, then
#     examples/v2beta1/pi/<mpi>Dockerfile's pi from the <mpi>-builder image), and loaded
#     under their public names, docker.io/mpioperator/mpi-pi:<mpi>:
#       public-openmpi  trixie: openssh-server, openssh-client, sshd with
#                       CAP_NET_BIND_SERVICE, ssh_config and sshd_config on port 2222 with
#                       StrictModes off, mpiuser (useradd -m), ~mpiuser/.sshd_config, openmpi-bin,
#                       and /home/mpiuser/pi built by `mpic++` (g++, libopenmpi-dev).
#       public-mpich    the same base with dnsutils and mpich, the reference's entrypoint.sh
#                       as the entry point (on the launcher, it waits until every host of the
#                       hostfile resolves), pi built by MPICH's `mpic++`.
#     (The reference's mpi-pi:intel installs Intel oneAPI from Intel's apt repository,
#     which this machine cannot reach: no image is loaded under that name.)
#     The project's own images (docker.io/mpi-operator-python/...):
#       mpi4py-sgd      examples/v2beta1/mpi4py-sgd/Dockerfile's image (trixie): Open MPI 5,
#                       python3-mpi4py, python3-numpy, sshd for mpiuser (1000) on port 2222,
#                       /home/mpiuser/sgd.py and elastic.py. `--example mpi4py-sgd` builds it alone.
#       t9k-pi          examples/t9k/Dockerfile's image: public-openmpi's layers (its FROM
#                       mpioperator/mpi-pi:openmpi) and one more, the files its RUN edits
#                       under /etc: root's sshd and ssh back on port 22 (where the T9k
#                       launcher waits), pam_loginuid optional. `--example t9k-pi` builds it
#                       alone (public-openmpi's tree, its pi from the reference's builder
#                       stage, then the same layer; public-openmpi is not kept).
#       t9k-init        the T9k launcher's init container (--t9k-init-image in the tests):
#                       sh, cut, nslookup (bind9-dnsutils) and nc (netcat-openbsd). Debian's
#                       busybox has no `nc -z` and its nslookup ignores the search domains.
#       openmpi, openmpi4, mpich, intel: the MPI stacks the tests run the examples'
#                       programs on, with other images or as root,
#                       each with its MPI and openssh-server, user mpiuser (1000), sshd on port
#                       2222 for mpiuser and, as root, on 22 with Debian's configuration:
#                 openmpi   trixie, Open MPI 5.0 (PRRTE launches the ranks)
#                 openmpi4  bookworm, Open MPI 4.1 (ORTE)
#                 mpich     trixie, MPICH 4.2. Bookworm's MPICH 4.0.2 (ch4:ucx) deadlocks in
#                           MPI_Finalize across pods in most runs; 4.2 finished every run tried.
#                 intel     trixie, Intel MPI 2021 from PyPI (impi-rt; impi-devel's mpicxx
#                           builds pi, then leaves), in /usr/local, with Debian's libfabric
#                           (impi-rt's wheel names a libfabric package PyPI does not serve).
#                           Its entry point waits, on the launcher, until every host of the
#                           hostfile resolves (Hydra does not retry a name), then runs the
#                           container's arguments, as pi-intel.yaml expects (args: mpirun ...).
#                 Each has /home/mpiuser/pi built with its own mpicxx, and the data-parallel
#                 example /home/mpiuser/sgd.py (examples/v2beta1/mpi4py-sgd) with numpy and
#                 mpi4py for its MPI: Debian's python3-mpi4py where Debian builds it for that
#                 MPI (Open MPI 5 and 4.1), otherwise mpi4py's wheel from PyPI, which loads
#                 the image's libmpi.so.12 (MPICH's ABI, which Intel MPI shares).
#     One debootstrap per suite: the trixie images start from copies of one base.
#   pause.tar   the pod sandbox image: hack/tools/pause, a static Go binary
# The cluster imports node-images.tar into its containerd under the names of
# devcluster/nodeconfig.py's NODE_IMAGES, and pause.tar as localhost/pause:local.
#
# Usage: hack/build-node-images.sh             build what is missing
#        hack/build-node-images.sh --print-dir print the images directory and exit
#        hack/build-node-images.sh --example mpi4py-sgd|t9k-pi [--print]
#             build only that example's image (the same recipe) into its own directory,
#             as <tag>.tar (tag <tag>); with --print, print that archive's path and its
#             tag (two lines) and exit: hack/build-image.sh's builder interface
#             (`make example-image [EXAMPLE=t9k]` without a container engine)
# Needs root, debootstrap and umoci (hack/install-node-packages.sh), Go, and pip (the
# project's .venv, else python3's) to fetch the PyPI wheels.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PI_SRC="$ROOT/examples/v2beta1/pi/pi.cc"
SGD_SRC="$ROOT/examples/v2beta1/mpi4py-sgd/sgd.py"
ELASTIC_SRC="$ROOT/examples/v2beta1/mpi4py-sgd/elastic.py"
PAUSE_SRC="$ROOT/hack/tools/pause"
# examples/t9k/Dockerfile's RUN, verbatim (a unit test compares them): on mpi-pi:openmpi,
# sshd and ssh on port 22 instead of 2222, and pam_loginuid optional (a container may not
# set its audit login uid: root's sessions would fail).
T9K_PI_RUN="sed -i 's/^\\(\\s*Port\\) 2222\$/\\1 22/' /etc/ssh/sshd_config /etc/ssh/ssh_config \\
 && sed -i 's/^session\\s\\+required\\s\\+pam_loginuid\\.so/session optional pam_loginuid.so/' /etc/pam.d/sshd"
# The PyPI wheels (pinned: the key covers this script).
IMPI_VERSION=2021.19.0
MPI4PY_VERSION=4.1.2
key_hash="$(cat "${BASH_SOURCE[0]}" "$PI_SRC" "$SGD_SRC" "$ELASTIC_SRC" "$PAUSE_SRC/main.go" "$PAUSE_SRC/go.mod" | sha256sum | cut -c1-12)"
OUT="${XDG_CACHE_HOME:-$HOME/.cache}/mpi-operator/images/bookworm-trixie_${key_hash}"
ARCHIVES=(node-images.tar pause.tar)

example=""
if [[ "${1:-}" == "--example" ]]; then
  [[ "${2:-}" == mpi4py-sgd || "${2:-}" == t9k-pi ]] || { echo "usage: $0 --example mpi4py-sgd|t9k-pi [--print]" >&2; exit 2; }
  example="$2"
  OUT="${XDG_CACHE_HOME:-$HOME/.cache}/mpi-operator/images/${example}_${key_hash}"
  ARCHIVES=("$example.tar")
  if [[ "${3:-}" == "--print" ]]; then
    printf '%s\n%s\n' "$OUT/$example.tar" "$example"
    exit 0
  fi
fi
if [[ "${1:-}" == "--print-dir" ]]; then
  echo "$OUT"
  exit 0
fi
missing=0
for archive in "${ARCHIVES[@]}"; do [[ -s "$OUT/$archive" ]] || missing=1; done
[[ "$missing" == 0 ]] && exit 0

die() { echo "build-node-images: error: $*" >&2; exit 1; }
[[ "$(id -u)" == 0 ]] || die "not root: debootstrap and chroot need root to build the real node's images"
for t in debootstrap umoci chroot; do
  command -v "$t" >/dev/null 2>&1 || die "$t not found: run hack/install-node-packages.sh (Debian package ${t/chroot/coreutils})"
done
[[ -n "$example" ]] || command -v go >/dev/null 2>&1 || die "Go toolchain not found in PATH: it builds the pause program"
if [[ -x "$ROOT/.venv/bin/python" ]]; then
  PIP=("$ROOT/.venv/bin/python" -m pip)
else
  PIP=(python3 -m pip)
fi
[[ -n "$example" ]] || "${PIP[@]}" --version >/dev/null 2>&1 || die "pip not found (${PIP[*]}): run make venv; it fetches Intel MPI and mpi4py from PyPI"

# The mirror apt already uses here (deb.debian.org unless configured otherwise).
mirror="${DEBIAN_MIRROR:-}"
if [[ -z "$mirror" ]]; then
  mirror="$(grep -h -m1 -E '^URIs:' /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '{ print $2; exit }' || true)"
  [[ -n "$mirror" ]] || mirror="$(awk '$1 == "deb" && $0 !~ /security/ { print $2; exit }' /etc/apt/sources.list 2>/dev/null || true)"
  [[ -n "$mirror" ]] || mirror=http://deb.debian.org/debian
fi

# shellcheck source=lib/progress.sh
source "$ROOT/hack/lib/progress.sh"
mkdir -p "$OUT"
LOG="$OUT/build.log"
: >"$LOG"
start=$SECONDS
work="$(mktemp -d "$OUT/.tmp.XXXXXX")"
cleanup() {
  progress_stop
  for rootfs in "$work"/rootfs-*; do
    mountpoint -q "$rootfs/proc" 2>/dev/null && umount -l "$rootfs/proc" || true
  done
  rm -rf "$work"
}
trap cleanup EXIT
step() { # step WHAT CMD...: logs the command's output; on failure prints one line
  local what="$1"; shift
  echo "+ $*" >>"$LOG"
  "$@" >>"$LOG" 2>&1 || die "$what failed: $(grep -v '^+ ' "$LOG" | grep -m1 -E '^E:|rror' || tail -n1 "$LOG") (full log: $LOG)"
}

if [[ -n "$example" ]]; then
  echo "build-node-images: building the $example image from debootstrap ($mirror) into $OUT (cold: 2 to 3 minutes; log: $LOG)" >&2
else
  echo "build-node-images: building the node's images (trixie: the reference's mpi-pi openmpi and mpich, mpi4py-sgd, t9k-pi, t9k-init, and the openmpi, mpich, intel stacks; bookworm: openmpi4) from debootstrap ($mirror) and PyPI, and the pause image, into $OUT (cold: about 10 minutes; log: $LOG)" >&2
fi
progress_start build-node-images "$LOG"

# in_root CMD...: CMD in the image tree $rootfs (the caller's).
in_root() { chroot "$rootfs" env DEBIAN_FRONTEND=noninteractive LC_ALL=C PATH=/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$@"; }

# base_rootfs SUITE: $work/base-SUITE, a minbase debootstrap of SUITE, made once.
base_rootfs() {
  local suite="$1" t0=$SECONDS
  [[ -d "$work/base-$suite" ]] && return 0
  step "debootstrap $suite from $mirror" nice -n 10 debootstrap --variant=minbase "$suite" "$work/base-$suite" "$mirror"
  echo "build-node-images: debootstrap $suite in $((SECONDS - t0)) s" | tee -a "$LOG" >&2
}

# pip_wheels ROOTFS ARGS...: pip (this machine's, with its cache) installs PyPI wheels
# into the image's tree, for the image's Python where they hold Python code.
pip_wheels() {
  local rootfs="$1"; shift
  step "pip install $* into $rootfs" nice -n 10 "${PIP[@]}" install -q --no-deps --no-compile \
    --disable-pip-version-check --no-warn-script-location "$@"
}

# install_intel_mpi ROOTFS: impi-rt and impi-devel into /usr/local (bin, lib and
# include side by side, where the ssh sessions' PATH and the dynamic loader look).
install_intel_mpi() {
  local rootfs="$1" usr="$1/usr/local"
  pip_wheels "$rootfs" --prefix /usr/local --root "$rootfs" \
    "impi-rt==$IMPI_VERSION" "impi-devel==$IMPI_VERSION"
  # The wheels' Python metadata landed under this machine's Python version: gone.
  rm -rf "$usr"/lib/python3*/site-packages
  rmdir --ignore-fail-on-non-empty "$usr"/lib/python3*
  # What pi, mpi4py and Hydra never load: benchmarks, tuning tools, Java, the
  # ABI-standard library, GPU kernels, and the launch control plane (libmpcp).
  rm -rf "$usr"/bin/IMB-* "$usr/bin/mpitune_fast" "$usr/opt/mpi/tune_fast" "$usr/share/java" \
    "$usr"/lib/libmpi_abi* "$usr"/lib/libmpijava* "$usr"/lib/libmpcp* \
    "$usr"/opt/mpi/etc/*.fatbin "$usr"/opt/mpi/etc/*.spv "$usr/etc/conda"
  # A wheel carries a library's symbolic links as copies: make them links again.
  local f full
  for f in "$usr"/lib/lib*.so "$usr"/lib/lib*.so.*; do
    full="$(find "$usr/lib" -maxdepth 1 -name "${f##*/}.*" | sort | tail -n1)"
    [[ -n "$full" ]] && cmp -s "$f" "$full" && ln -sfn "${full##*/}" "$f"
  done
  return 0
}

# drop_intel_devel ROOTFS: impi-devel's wrappers and headers, and the Fortran library
# the wrappers link (pi does not load it), once pi is built.
drop_intel_devel() {
  local usr="$1/usr/local"
  rm -rf "$usr/include" "$usr/opt/mpi/bin" "$usr"/lib/libmpifort*
  rm -f "$usr"/bin/mpi{cc,cxx,f77,f90,fc,gcc,gxx,icc,icpc,icpx,icx,ifort,ifx}
}

# make_rootfs TAG SUITE MPI PACKAGE...: a copy of SUITE's base rootfs in $work/rootfs-TAG
# with the packages, MPI (Debian's openmpi or mpich flavour, or intel from PyPI), the
# programs, and sshd set up for mpiuser and root; $work/pi-TAG compiled with MPI's mpicxx.
make_rootfs() {
  local tag="$1" suite="$2" mpi="$3"; shift 3
  local rootfs="$work/rootfs-$tag"
  base_rootfs "$suite"
  local t0=$SECONDS
  cp -a "$work/base-$suite" "$rootfs"
  mount -t proc proc "$rootfs/proc"
  step "apt-get update in the $tag image" in_root apt-get -q update
  # The compilers only build pi, then leave the image.
  local build_pkgs=(g++) mpicxx="mpicxx.$mpi"
  [[ "$mpi" == intel ]] && mpicxx=mpicxx || build_pkgs+=("lib$mpi-dev")
  step "installing $mpi and sshd in the $tag image" in_root apt-get -q install -y --no-install-recommends \
    openssh-server openssh-client python3-numpy "$@" "${build_pkgs[@]}"
  [[ "$mpi" == intel ]] && install_intel_mpi "$rootfs"
  if ! in_root python3 -c 'import mpi4py' 2>/dev/null; then
    local py
    py="$(in_root python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
    pip_wheels "$rootfs" --only-binary=:all: --implementation cp --python-version "$py" \
      --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
      --platform manylinux2014_x86_64 --platform manylinux_2_5_x86_64 --platform manylinux1_x86_64 \
      --target "$rootfs/usr/local/lib/python$py/dist-packages" "mpi4py==$MPI4PY_VERSION"
  fi
  step "ldconfig ($tag)" in_root ldconfig
  cp "$PI_SRC" "$rootfs/tmp/pi.cc"
  step "compiling pi.cc with $mpi ($tag)" in_root "$mpicxx" -O2 -o /tmp/pi /tmp/pi.cc
  if [[ "$suite" == trixie && "$mpi" != intel ]]; then
    # The reference's pi for its public image of this MPI: its builder stage is
    # debian:trixie with g++ and lib$mpi-dev (this tree has both), and runs
    # `mpic++ /src/pi.cc -o /pi`.
    step "compiling the reference's pi with $mpi" in_root mpic++ /tmp/pi.cc -o /tmp/pi-public
    mv "$rootfs/tmp/pi-public" "$work/pi-public-$mpi"
  fi
  [[ "$mpi" == intel ]] && drop_intel_devel "$rootfs"
  if in_root ldd /tmp/pi | grep 'not found' >>"$LOG"; then
    die "pi ($tag) misses a library (full log: $LOG)"
  fi
  # Only what an installed package depends on stays: numpy suggests gcc, which would
  # keep the whole toolchain (and perl, autoconf) under apt's default rules.
  step "removing the compilers ($tag)" in_root apt-get -q purge -y --auto-remove \
    -o APT::AutoRemove::SuggestsImportant=false -o APT::AutoRemove::RecommendsImportant=false \
    "${build_pkgs[@]}"
  step "adding mpiuser ($tag)" in_root useradd --create-home --uid 1000 --shell /bin/bash mpiuser
  # mpiuser's sshd listens on 2222; root's (T9k's workers) on 22.
  printf 'Host *\n  StrictHostKeyChecking no\n  UserKnownHostsFile /dev/null\n  LogLevel ERROR\nMatch localuser mpiuser\n  Port 2222\n' \
    >>"$rootfs/etc/ssh/ssh_config"
  # A container may not set its audit login uid (no CAP_AUDIT_CONTROL): root's sshd
  # sessions would fail on pam_loginuid.
  sed -i 's/^session\s\+required\s\+pam_loginuid.so/session optional pam_loginuid.so/' "$rootfs/etc/pam.d/sshd"
  # root's ~/.ssh is the SSH Secret's volume, a world-writable tmpfs directory: with
  # StrictModes sshd refuses its keys ("bad ownership or modes for directory /root/.ssh").
  # The reference's base image turns StrictModes off the same way.
  sed -i 's/^#\?StrictModes .*/StrictModes no/' "$rootfs/etc/ssh/sshd_config"
  step "generating mpiuser's sshd host key ($tag)" in_root su mpiuser -c "ssh-keygen -q -t ed25519 -N '' -f /home/mpiuser/.ssh_host_key"
  printf '%s\n' 'Port 2222' 'HostKey /home/mpiuser/.ssh_host_key' 'PidFile /home/mpiuser/sshd.pid' \
    'AuthorizedKeysFile /home/mpiuser/.ssh/authorized_keys' 'PasswordAuthentication no' \
    'StrictModes no' 'UsePAM no' >"$rootfs/home/mpiuser/.sshd_config"
  in_root chown mpiuser:mpiuser /home/mpiuser/.sshd_config
  install -m 0644 -o 1000 -g 1000 "$SGD_SRC" "$rootfs/home/mpiuser/sgd.py"
  # sshd wants its privilege separation directory even when it runs unprivileged.
  mkdir -p "$rootfs/run/sshd"
  mv "$rootfs/tmp/pi" "$work/pi-$tag"
  rm -rf "$rootfs/tmp/"* "$rootfs/var/lib/apt/lists/"* "$rootfs/var/cache/apt/"*.bin "$rootfs/var/cache/apt/archives/"*.deb
  umount -l "$rootfs/proc"
  echo "build-node-images: $tag on $suite's base in $((SECONDS - t0)) s" | tee -a "$LOG" >&2
}
# public_rootfs TAG PACKAGE...: $work/rootfs-TAG as the reference's public image is built:
# debian:trixie, build/base/Dockerfile (port 2222), then its <mpi>.Dockerfile's
# `apt install -y --no-install-recommends PACKAGE...`. (Its pi comes from make_rootfs's
# tree of the same MPI, as the reference's builder stage; its entry point, if any, after.)
public_rootfs() {
  local tag="$1"; shift
  local rootfs="$work/rootfs-$tag" t0=$SECONDS port=2222
  base_rootfs trixie
  cp -a "$work/base-trixie" "$rootfs"
  mount -t proc proc "$rootfs/proc"
  step "apt-get update ($tag)" in_root apt-get -q update
  step "installing sshd ($tag)" in_root apt-get -q install -y --no-install-recommends \
    openssh-server openssh-client libcap2-bin
  mkdir -p "$rootfs/var/run/sshd"
  step "setcap on sshd ($tag)" in_root setcap CAP_NET_BIND_SERVICE=+eip /usr/sbin/sshd
  step "removing libcap2-bin ($tag)" in_root apt-get -q remove -y libcap2-bin
  # build/base/Dockerfile's edits, verbatim.
  step "ssh configuration ($tag)" in_root sh -c "sed -i \"s/[ #]\\(.*StrictHostKeyChecking \\).*/ \\1no/g\" /etc/ssh/ssh_config \
    && echo \"    UserKnownHostsFile /dev/null\" >> /etc/ssh/ssh_config \
    && sed -i \"s/[ #]\\(.*Port \\).*/ \\1$port/g\" /etc/ssh/ssh_config \
    && sed -i \"s/#\\(StrictModes \\).*/\\1no/g\" /etc/ssh/sshd_config \
    && sed -i \"s/#\\(Port \\).*/\\1$port/g\" /etc/ssh/sshd_config"
  step "adding mpiuser ($tag)" in_root useradd -m mpiuser
  # build/base/sshd_config, then `echo "Port $port" >> /home/mpiuser/.sshd_config`.
  printf '%s\n' 'PidFile /home/mpiuser/sshd.pid' 'HostKey /home/mpiuser/.ssh/id_rsa' \
    'StrictModes no' "Port $port" >"$rootfs/home/mpiuser/.sshd_config"
  chown 1000:1000 "$rootfs/home/mpiuser/.sshd_config"
  step "installing $* ($tag)" in_root apt-get -q install -y --no-install-recommends "$@"
  rm -rf "$rootfs/tmp/"* "$rootfs/var/lib/apt/lists/"* "$rootfs/var/cache/apt/"*.bin "$rootfs/var/cache/apt/archives/"*.deb
  umount -l "$rootfs/proc"
  echo "build-node-images: $tag on trixie's base in $((SECONDS - t0)) s" | tee -a "$LOG" >&2
}

# public_pi MPI: $work/pi-public-MPI as the reference's builder stage builds it alone
# (debian:trixie, g++ and libMPI-dev, `mpic++ /src/pi.cc -o /pi`), in a tree dropped after;
# the full build takes it from make_rootfs's tree of that MPI instead.
public_pi() {
  local mpi="$1"
  local rootfs="$work/rootfs-builder-$mpi" t0=$SECONDS
  base_rootfs trixie
  cp -a "$work/base-trixie" "$rootfs"
  mount -t proc proc "$rootfs/proc"
  step "apt-get update (builder-$mpi)" in_root apt-get -q update
  step "installing g++ and lib$mpi-dev (builder-$mpi)" in_root apt-get -q install -y \
    --no-install-recommends g++ "lib$mpi-dev"
  cp "$PI_SRC" "$rootfs/tmp/pi.cc"
  step "compiling the reference's pi with $mpi" in_root mpic++ /tmp/pi.cc -o /tmp/pi-public
  mv "$rootfs/tmp/pi-public" "$work/pi-public-$mpi"
  umount -l "$rootfs/proc"
  rm -rf "$rootfs"
  echo "build-node-images: the reference's pi with $mpi in $((SECONDS - t0)) s" | tee -a "$LOG" >&2
}

# t9k_pi_layer FROM: $work/layer-t9k-pi/etc, what T9K_PI_RUN changes under /etc when run
# on a copy of $work/rootfs-FROM (public-openmpi's tree); that copy is dropped after.
t9k_pi_layer() {
  local from="$work/rootfs-$1" rootfs="$work/rootfs-t9k-pi" layer="$work/layer-t9k-pi" f rel
  cp -a "$from" "$rootfs"
  step "examples/t9k/Dockerfile's RUN (t9k-pi)" in_root sh -c "$T9K_PI_RUN"
  mkdir -p "$layer"
  while IFS= read -r -d '' f; do
    rel="${f#"$rootfs"/}"
    if [[ ! -e "$from/$rel" ]] || ! cmp -s "$from/$rel" "$f"; then
      (cd "$rootfs" && cp -a --parents "$rel" "$layer/")
    fi
  done < <(find "$rootfs/etc" -type f -print0)
  for rel in etc/ssh/sshd_config etc/ssh/ssh_config etc/pam.d/sshd; do
    [[ -f "$layer/$rel" ]] || die "t9k-pi: examples/t9k/Dockerfile's RUN did not change /$rel (full log: $LOG)"
  done
  grep -qx 'Port 22' "$layer/etc/ssh/sshd_config" || die "t9k-pi: sshd_config has no 'Port 22' (full log: $LOG)"
  echo "+ t9k-pi's layer: $(cd "$layer" && find . -type f | sort | tr '\n' ' ')" >>"$LOG"
  rm -rf "$rootfs"
}

# sgd_rootfs: $work/rootfs-mpi4py-sgd, examples/v2beta1/mpi4py-sgd/Dockerfile's image.
sgd_rootfs() {
  local tag=mpi4py-sgd
  local rootfs="$work/rootfs-$tag" t0=$SECONDS
  base_rootfs trixie
  cp -a "$work/base-trixie" "$rootfs"
  mount -t proc proc "$rootfs/proc"
  step "apt-get update ($tag)" in_root apt-get -q update
  step "installing Open MPI, mpi4py, numpy and sshd ($tag)" in_root apt-get -q install -y \
    --no-install-recommends openmpi-bin python3-mpi4py python3-numpy openssh-server openssh-client
  step "adding mpiuser ($tag)" in_root useradd --create-home --uid 1000 --shell /bin/bash mpiuser
  printf 'Host *\n  Port 2222\n  StrictHostKeyChecking no\n  UserKnownHostsFile /dev/null\n  LogLevel ERROR\n' \
    >>"$rootfs/etc/ssh/ssh_config"
  step "generating mpiuser's sshd host key ($tag)" in_root su mpiuser -c "ssh-keygen -q -t ed25519 -N '' -f /home/mpiuser/.ssh_host_key"
  printf '%s\n' 'Port 2222' 'HostKey /home/mpiuser/.ssh_host_key' 'PidFile /home/mpiuser/sshd.pid' \
    'AuthorizedKeysFile /home/mpiuser/.ssh/authorized_keys' 'PasswordAuthentication no' \
    'StrictModes no' 'UsePAM no' >"$rootfs/home/mpiuser/.sshd_config"
  chown 1000:1000 "$rootfs/home/mpiuser/.sshd_config"
  install -m 0644 -o 1000 -g 1000 "$SGD_SRC" "$rootfs/home/mpiuser/sgd.py"
  install -m 0644 -o 1000 -g 1000 "$ELASTIC_SRC" "$rootfs/home/mpiuser/elastic.py"
  rm -rf "$rootfs/tmp/"* "$rootfs/var/lib/apt/lists/"* "$rootfs/var/cache/apt/"*.bin "$rootfs/var/cache/apt/archives/"*.deb
  umount -l "$rootfs/proc"
  echo "build-node-images: $tag on trixie's base in $((SECONDS - t0)) s" | tee -a "$LOG" >&2
}

# init_rootfs: $work/rootfs-t9k-init, what the T9k launcher's init container runs (sh,
# cut, sleep, nslookup, nc -z).
init_rootfs() {
  local tag=t9k-init
  local rootfs="$work/rootfs-$tag" t0=$SECONDS
  base_rootfs trixie
  cp -a "$work/base-trixie" "$rootfs"
  mount -t proc proc "$rootfs/proc"
  step "apt-get update ($tag)" in_root apt-get -q update
  step "installing nslookup and nc ($tag)" in_root apt-get -q install -y --no-install-recommends \
    bind9-dnsutils netcat-openbsd
  rm -rf "$rootfs/tmp/"* "$rootfs/var/lib/apt/lists/"* "$rootfs/var/cache/apt/"*.bin "$rootfs/var/cache/apt/archives/"*.deb
  umount -l "$rootfs/proc"
  echo "build-node-images: $tag on trixie's base in $((SECONDS - t0)) s" | tee -a "$LOG" >&2
}

# The OCI layout: per image, its tree as the base layer; pi in a small layer of its own.
layout="$work/oci"
step "umoci init" umoci init --layout "$layout"
PATH_ENV=PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
# pack TAG UMOCI-CONFIG-ARGS...: $work/rootfs-TAG as TAG's one layer, configured.
pack() {
  local tag="$1"; shift
  step "umoci new ($tag)" umoci new --image "$layout:base-$tag"
  step "umoci unpack ($tag)" umoci unpack --image "$layout:base-$tag" "$work/bundle-$tag"
  rm -rf "$work/bundle-$tag/rootfs"
  mv "$work/rootfs-$tag" "$work/bundle-$tag/rootfs"
  step "umoci repack ($tag base layer)" umoci repack --image "$layout:base-$tag" "$work/bundle-$tag"
  rm -rf "$work/bundle-$tag"
  step "umoci config ($tag)" umoci config --image "$layout:base-$tag" --tag "$tag" \
    --config.env "$PATH_ENV" "$@"
  step "umoci rmi base ($tag)" umoci rm --image "$layout:base-$tag"
}
# derive TAG FROM DIR TARGET: TAG is FROM's image with DIR added at TARGET as one more
# layer (as a Dockerfile's FROM, then a RUN that changes only TARGET's files).
derive() {
  step "umoci insert ($1 from $2)" umoci insert --image "$layout:$2" --tag "$1" "$3" "$4"
}
# add_pi TAG BINARY UID MODE: BINARY as /home/mpiuser/pi, in a layer of its own.
add_pi() {
  local tag="$1" binary="$2" uid="$3" mode="$4"
  install -D -m "$mode" -o "$uid" -g "$uid" "$binary" "$work/layer-$tag/pi"
  step "umoci insert (pi, $tag)" umoci insert --image "$layout:$tag" "$work/layer-$tag/pi" /home/mpiuser/pi
}

if [[ "$example" == mpi4py-sgd ]]; then
  sgd_rootfs
  rm -rf "$work/base-trixie"
  pack mpi4py-sgd --config.user mpiuser --config.workingdir /home/mpiuser
elif [[ "$example" == t9k-pi ]]; then
  public_rootfs public-openmpi openmpi-bin
  public_pi openmpi
  t9k_pi_layer public-openmpi
  rm -rf "$work/base-trixie"
  pack public-openmpi --config.workingdir /home/mpiuser --config.cmd bash
  add_pi public-openmpi "$work/pi-public-openmpi" 0 0755
  derive t9k-pi public-openmpi "$work/layer-t9k-pi/etc" /etc
  step "umoci rm (public-openmpi)" umoci rm --image "$layout:public-openmpi"
fi
if [[ -n "$example" ]]; then
  step "umoci gc" umoci gc --layout "$layout"
  tar -C "$layout" -cf "$work/$example.tar" .
  progress_stop
  mv -f "$work/$example.tar" "$OUT/"
  echo "build-node-images: done in $((SECONDS - start)) s; $(du -h "$OUT/$example.tar" | cut -f1) in $OUT" >&2
  exit 0
fi

make_rootfs openmpi trixie openmpi openmpi-bin python3-mpi4py
make_rootfs mpich trixie mpich mpich
make_rootfs intel trixie intel libfabric1
# Hydra resolves the hostfile's names once: the launcher waits until they all resolve
# (workers with a readiness probe are in DNS only once Ready), at most two minutes.
cat >"$work/rootfs-intel/entrypoint.sh" <<'ENTRY'
#!/bin/sh
hostfile="${I_MPI_HYDRA_HOST_FILE:-/etc/mpi/hostfile}"
if [ "$K_MPI_JOB_ROLE" = launcher ] && [ -r "$hostfile" ]; then
  for host in $(cut -d: -f1 "$hostfile"); do
    waited=0
    until getent hosts "$host" >/dev/null; do
      if [ "$waited" -ge 240 ]; then
        echo "entrypoint: $host does not resolve after 2 minutes; starting anyway" >&2
        break
      fi
      sleep 0.5
      waited=$((waited + 1))
    done
  done
fi
exec "$@"
ENTRY
chmod 0755 "$work/rootfs-intel/entrypoint.sh"
public_rootfs public-openmpi openmpi-bin
t9k_pi_layer public-openmpi
public_rootfs public-mpich dnsutils mpich
# The reference's build/base/entrypoint.sh (v0.8.2), verbatim: mpich.Dockerfile's entry point.
cat >"$work/rootfs-public-mpich/entrypoint.sh" <<'ENTRY'
#!/usr/bin/env bash

set_intel_vars=/opt/intel/oneapi/setvars.sh
if [ -f $set_intel_vars ]; then
  source $set_intel_vars
fi

function resolve_host() {
  host="$1"
  check="nslookup $host"
  max_retry=10
  counter=0
  backoff=0.1
  until $check > /dev/null
  do
    if [ $counter -eq $max_retry ]; then
      echo "Couldn't resolve $host"
      return
    fi
    sleep $backoff
    echo "Couldn't resolve $host... Retrying"
    ((counter++))
    backoff=$(echo - | awk "{print $backoff + $backoff}")
  done
  echo "Resolved $host"
}

if [ "$K_MPI_JOB_ROLE" == "launcher" ]; then
  resolve_host "$HOSTNAME"
  cut -d ':' -f 1 /etc/mpi/hostfile | while read -r host
  do
    resolve_host "$host"
  done
fi

exec "$@"
ENTRY
chmod 0755 "$work/rootfs-public-mpich/entrypoint.sh"
sgd_rootfs
init_rootfs
rm -rf "$work/base-trixie"
make_rootfs openmpi4 bookworm openmpi openmpi-bin python3-mpi4py
rm -rf "$work/base-bookworm"

for mpi in openmpi openmpi4 mpich intel; do
  entry=()
  [[ "$mpi" == intel ]] && entry=(--config.entrypoint /entrypoint.sh)
  pack "$mpi" --config.workingdir /home/mpiuser "${entry[@]}"
  add_pi "$mpi" "$work/pi-$mpi" 1000 0755
done
# debian:trixie's command (bash) stays in mpi-pi:openmpi; mpich.Dockerfile's ENTRYPOINT
# clears it.
pack public-openmpi --config.workingdir /home/mpiuser --config.cmd bash
add_pi public-openmpi "$work/pi-public-openmpi" 0 0755
derive t9k-pi public-openmpi "$work/layer-t9k-pi/etc" /etc
pack public-mpich --config.workingdir /home/mpiuser --config.entrypoint /entrypoint.sh
add_pi public-mpich "$work/pi-public-mpich" 0 0755
pack mpi4py-sgd --config.user mpiuser --config.workingdir /home/mpiuser
pack t9k-init --config.cmd sh
step "umoci gc" umoci gc --layout "$layout"
tar -C "$layout" -cf "$work/node-images.tar" .

# The pause image: one static binary.
mkdir -p "$work/pause-root"
(cd "$PAUSE_SRC" && CGO_ENABLED=0 GOTOOLCHAIN=local nice -n 10 go build -trimpath -ldflags '-s -w' -o "$work/pause-root/pause" .) >>"$LOG" 2>&1 \
  || die "building the pause program failed (full log: $LOG)"
player="$work/pause-oci"
step "umoci init (pause)" umoci init --layout "$player"
step "umoci new (pause)" umoci new --image "$player:local"
step "umoci insert (pause)" umoci insert --image "$player:local" "$work/pause-root/pause" /pause
step "umoci config (pause)" umoci config --image "$player:local" --config.entrypoint /pause
step "umoci gc (pause)" umoci gc --layout "$player"
tar -C "$player" -cf "$work/pause.tar" .

progress_stop
mv -f "$work/node-images.tar" "$work/pause.tar" "$OUT/"
echo "build-node-images: done in $((SECONDS - start)) s; $(du -ch "$OUT"/*.tar | tail -n1 | cut -f1) in $OUT" >&2
