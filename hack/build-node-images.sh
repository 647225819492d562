#!/usr/bin/env bash
# Builds the images of the `real` local cluster shape, only when missing, into
# ${XDG_CACHE_HOME:-$HOME/.cache}/mpi-operator/images/<key>/ (outside the checkout;
# <key> changes whenever an input changes: this script, pi.cc, sgd.py, the pause program):
#   mpi-pi.tar  an OCI archive with four tags, each from `debootstrap --variant=minbase`
#               plus its MPI and openssh-server, user mpiuser (1000), sshd on port 2222 as
#               in examples/v2beta1/pi/Dockerfile (and the reference's mpi-pi images):
#                 openmpi   trixie, Open MPI 5.0 (PRRTE launches the ranks); the reference's
#                           mpi-pi:openmpi is laid out the same way
#                 openmpi4  bookworm, Open MPI 4.1 (ORTE)
#                 mpich     trixie, MPICH 4.2. Bookworm's MPICH 4.0.2 (ch4:ucx) deadlocks in
#                           MPI_Finalize across pods in most runs; 4.2 finished every run tried.
#                 intel     trixie, Intel MPI 2021 from PyPI (impi-rt; impi-devel's mpicxx
#                           builds pi, then leaves), in /usr/local, with Debian's libfabric
#                           (impi-rt's wheel names a libfabric package PyPI does not serve).
#                           Its entry point waits, on the launcher, until every host of the
#                           hostfile resolves (Hydra does not retry a name), then runs the
#                           container's arguments, as pi-intel.yaml expects (args: mpirun ...).
#               Each has /home/mpiuser/pi built with its own mpicxx, and the data-parallel
#               example /home/mpiuser/sgd.py (examples/v2beta1/mpi4py-sgd) with numpy and
#               mpi4py for its MPI: Debian's python3-mpi4py where Debian builds it for that
#               MPI (Open MPI 5 and 4.1), otherwise mpi4py's wheel from PyPI, which loads
#               the image's libmpi.so.12 (MPICH's ABI, which Intel MPI shares).
#               One debootstrap per suite: the trixie images start from copies of one base.
#               As root, sshd runs on port 22 with Debian's configuration (T9k's workers).
#               nslookup (bind9-dnsutils) and nc (netcat-openbsd) let the openmpi tag stand
#               in for busybox:1.36, the T9k launcher's init container image: Debian's
#               busybox has no `nc -z` and its nslookup ignores the search domains.
#   pause.tar   the pod sandbox image: hack/tools/pause, a static Go binary
# The cluster imports them into its containerd as
# docker.io/mpioperator/mpi-pi:{openmpi,openmpi4,mpich,intel} (the names examples/v2beta1/pi
# uses) and localhost/pause:local.
#
# Usage: hack/build-node-images.sh             build what is missing
#        hack/build-node-images.sh --print-dir print the images directory and exit
# Needs root, debootstrap and umoci (hack/install-node-packages.sh), Go, and pip (the
# project's .venv, else python3's) to fetch the PyPI wheels.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PI_SRC="$ROOT/examples/v2beta1/pi/pi.cc"
SGD_SRC="$ROOT/examples/v2beta1/mpi4py-sgd/sgd.py"
PAUSE_SRC="$ROOT/hack/tools/pause"
# The PyPI wheels (pinned: the key covers this script).
IMPI_VERSION=2021.19.0
MPI4PY_VERSION=4.1.2
key_hash="$(cat "${BASH_SOURCE[0]}" "$PI_SRC" "$SGD_SRC" "$PAUSE_SRC/main.go" "$PAUSE_SRC/go.mod" | sha256sum | cut -c1-12)"
OUT="${XDG_CACHE_HOME:-$HOME/.cache}/mpi-operator/images/bookworm-trixie_${key_hash}"

if [[ "${1:-}" == "--print-dir" ]]; then
  echo "$OUT"
  exit 0
fi
[[ -s "$OUT/mpi-pi.tar" && -s "$OUT/pause.tar" ]] && exit 0

die() { echo "build-node-images: error: $*" >&2; exit 1; }
[[ "$(id -u)" == 0 ]] || die "not root: debootstrap and chroot need root to build the real node's images"
for t in debootstrap umoci chroot; do
  command -v "$t" >/dev/null 2>&1 || die "$t not found: run hack/install-node-packages.sh (Debian package ${t/chroot/coreutils})"
done
command -v go >/dev/null 2>&1 || die "Go toolchain not found in PATH: it builds the pause program"
if [[ -x "$ROOT/.venv/bin/python" ]]; then
  PIP=("$ROOT/.venv/bin/python" -m pip)
else
  PIP=(python3 -m pip)
fi
"${PIP[@]}" --version >/dev/null 2>&1 || die "pip not found (${PIP[*]}): run make venv; it fetches Intel MPI and mpi4py from PyPI"

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

echo "build-node-images: building the MPI images (openmpi, mpich, intel: trixie; openmpi4: bookworm) from debootstrap ($mirror) and PyPI, and the pause image, into $OUT (cold: about 6 minutes; log: $LOG)" >&2
progress_start build-node-images "$LOG"

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
  in_root() { chroot "$rootfs" env DEBIAN_FRONTEND=noninteractive LC_ALL=C PATH=/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$@"; }
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
make_rootfs openmpi trixie openmpi openmpi-bin bind9-dnsutils netcat-openbsd python3-mpi4py
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
rm -rf "$work/base-trixie"
make_rootfs openmpi4 bookworm openmpi openmpi-bin python3-mpi4py
rm -rf "$work/base-bookworm"

# The OCI layout: per MPI, its rootfs as the base layer, then pi in a small layer.
layout="$work/oci"
step "umoci init" umoci init --layout "$layout"
for mpi in openmpi openmpi4 mpich intel; do
  step "umoci new ($mpi)" umoci new --image "$layout:base-$mpi"
  step "umoci unpack ($mpi)" umoci unpack --image "$layout:base-$mpi" "$work/bundle-$mpi"
  rm -rf "$work/bundle-$mpi/rootfs"
  mv "$work/rootfs-$mpi" "$work/bundle-$mpi/rootfs"
  step "umoci repack ($mpi base layer)" umoci repack --image "$layout:base-$mpi" "$work/bundle-$mpi"
  rm -rf "$work/bundle-$mpi"
  step "umoci config ($mpi)" umoci config --image "$layout:base-$mpi" --tag "$mpi" \
    --config.workingdir /home/mpiuser \
    --config.env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
  if [[ "$mpi" == intel ]]; then
    step "umoci config (intel entry point)" umoci config --image "$layout:$mpi" --config.entrypoint /entrypoint.sh
  fi
  install -D -m 0755 -o 1000 -g 1000 "$work/pi-$mpi" "$work/layer-$mpi/pi"
  step "umoci insert (pi, $mpi)" umoci insert --image "$layout:$mpi" "$work/layer-$mpi/pi" /home/mpiuser/pi
  step "umoci rmi base ($mpi)" umoci rm --image "$layout:base-$mpi"
done
step "umoci gc" umoci gc --layout "$layout"
tar -C "$layout" -cf "$work/mpi-pi.tar" .

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
mv -f "$work/mpi-pi.tar" "$work/pause.tar" "$OUT/"
echo "build-node-images: done in $((SECONDS - start)) s; $(du -ch "$OUT"/*.tar | tail -n1 | cut -f1) in $OUT" >&2
