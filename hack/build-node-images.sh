#!/usr/bin/env bash
# Builds the images of the `real` local cluster shape, only when missing, into
# ${XDG_CACHE_HOME:-$HOME/.cache}/mpi-operator/images/<key>/ (outside the checkout;
# <key> changes whenever an input changes: this script, pi.cc, sgd.py, the pause program):
#   mpi-pi.tar  an OCI archive with three tags, each from `debootstrap --variant=minbase`
#               plus its MPI and openssh-server, user mpiuser (1000), sshd on port 2222 as
#               in examples/v2beta1/pi/Dockerfile (and the reference's mpi-pi images):
#                 openmpi   trixie, Open MPI 5.0 (PRRTE launches the ranks); the reference's
#                           mpi-pi:openmpi is laid out the same way
#                 openmpi4  bookworm, Open MPI 4.1 (ORTE)
#                 mpich     trixie, MPICH 4.2. Bookworm's MPICH 4.0.2 (ch4:ucx) deadlocks in
#                           MPI_Finalize across pods in most runs; 4.2 finished every run tried.
#               Each has /home/mpiuser/pi built with its own mpicxx. One debootstrap per
#               suite: the two trixie images start from copies of the same base. The
#               openmpi tag also has Debian's mpi4py (built with Open MPI) and numpy, and
#               /home/mpiuser/sgd.py (examples/v2beta1/mpi4py-sgd).
#               As root, sshd runs on port 22 with Debian's configuration (T9k's workers).
#               nslookup (bind9-dnsutils) and nc (netcat-openbsd) let the openmpi tag stand
#               in for busybox:1.36, the T9k launcher's init container image: Debian's
#               busybox has no `nc -z` and its nslookup ignores the search domains.
#   pause.tar   the pod sandbox image: hack/tools/pause, a static Go binary
# The cluster imports them into its containerd as docker.io/mpioperator/mpi-pi:{openmpi,openmpi4,mpich}
# (the names examples/v2beta1/pi uses) and localhost/pause:local.
#
# Usage: hack/build-node-images.sh             build what is missing
#        hack/build-node-images.sh --print-dir print the images directory and exit
# Needs root, debootstrap and umoci (hack/install-node-packages.sh) and Go.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PI_SRC="$ROOT/examples/v2beta1/pi/pi.cc"
SGD_SRC="$ROOT/examples/v2beta1/mpi4py-sgd/sgd.py"
PAUSE_SRC="$ROOT/hack/tools/pause"
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

# The mirror apt already uses here (deb.debian.org unless configured otherwise).
mirror="${DEBIAN_MIRROR:-}"
if [[ -z "$mirror" ]]; then
  mirror="$(grep -h -m1 -E '^URIs:' /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '{ print $2; exit }' || true)"
  [[ -n "$mirror" ]] || mirror="$(awk '$1 == "deb" && $0 !~ /security/ { print $2; exit }' /etc/apt/sources.list 2>/dev/null || true)"
  [[ -n "$mirror" ]] || mirror=http://deb.debian.org/debian
fi

mkdir -p "$OUT"
LOG="$OUT/build.log"
: >"$LOG"
start=$SECONDS
work="$(mktemp -d "$OUT/.tmp.XXXXXX")"
cleanup() {
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

echo "build-node-images: building the MPI images (openmpi, mpich: trixie; openmpi4: bookworm) from debootstrap ($mirror) and the pause image into $OUT (cold: a few minutes)" >&2

# base_rootfs SUITE: $work/base-SUITE, a minbase debootstrap of SUITE, made once.
base_rootfs() {
  local suite="$1" t0=$SECONDS
  [[ -d "$work/base-$suite" ]] && return 0
  step "debootstrap $suite from $mirror" nice -n 10 debootstrap --variant=minbase "$suite" "$work/base-$suite" "$mirror"
  echo "build-node-images: debootstrap $suite in $((SECONDS - t0)) s" | tee -a "$LOG" >&2
}

# make_rootfs TAG MPI SUITE PACKAGE...: a copy of SUITE's base rootfs in $work/rootfs-TAG
# with the packages, sshd set up for mpiuser and root, and $work/pi-TAG compiled with
# MPI's mpicxx (MPI: Debian's flavour, openmpi or mpich).
make_rootfs() {
  local tag="$1" mpi="$2" suite="$3"; shift 3
  local rootfs="$work/rootfs-$tag"
  in_root() { chroot "$rootfs" env DEBIAN_FRONTEND=noninteractive LC_ALL=C PATH=/usr/sbin:/usr/bin:/sbin:/bin "$@"; }
  base_rootfs "$suite"
  local t0=$SECONDS
  cp -a "$work/base-$suite" "$rootfs"
  mount -t proc proc "$rootfs/proc"
  step "apt-get update in the $tag image" in_root apt-get -q update
  # The compilers only build pi, then leave the image.
  local build_pkgs=(g++ "lib$mpi-dev")
  step "installing $mpi and sshd in the $tag image" in_root apt-get -q install -y --no-install-recommends \
    openssh-server openssh-client "$@" "${build_pkgs[@]}"
  cp "$PI_SRC" "$rootfs/tmp/pi.cc"
  step "compiling pi.cc with $mpi ($tag)" in_root "mpicxx.$mpi" -O2 -o /tmp/pi /tmp/pi.cc
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
  # sshd wants its privilege separation directory even when it runs unprivileged.
  mkdir -p "$rootfs/run/sshd"
  mv "$rootfs/tmp/pi" "$work/pi-$tag"
  rm -rf "$rootfs/tmp/"* "$rootfs/var/lib/apt/lists/"* "$rootfs/var/cache/apt/"*.bin "$rootfs/var/cache/apt/archives/"*.deb
  umount -l "$rootfs/proc"
  echo "build-node-images: $tag on $suite's base in $((SECONDS - t0)) s" | tee -a "$LOG" >&2
}
make_rootfs openmpi openmpi trixie openmpi-bin bind9-dnsutils netcat-openbsd python3-mpi4py python3-numpy
install -m 0644 -o 1000 -g 1000 "$SGD_SRC" "$work/rootfs-openmpi/home/mpiuser/sgd.py"
make_rootfs mpich mpich trixie mpich
rm -rf "$work/base-trixie"
make_rootfs openmpi4 openmpi bookworm openmpi-bin
rm -rf "$work/base-bookworm"

# The OCI layout: per MPI, its rootfs as the base layer, then pi in a small layer.
layout="$work/oci"
step "umoci init" umoci init --layout "$layout"
for mpi in openmpi openmpi4 mpich; do
  step "umoci new ($mpi)" umoci new --image "$layout:base-$mpi"
  step "umoci unpack ($mpi)" umoci unpack --image "$layout:base-$mpi" "$work/bundle-$mpi"
  rm -rf "$work/bundle-$mpi/rootfs"
  mv "$work/rootfs-$mpi" "$work/bundle-$mpi/rootfs"
  step "umoci repack ($mpi base layer)" umoci repack --image "$layout:base-$mpi" "$work/bundle-$mpi"
  rm -rf "$work/bundle-$mpi"
  step "umoci config ($mpi)" umoci config --image "$layout:base-$mpi" --tag "$mpi" \
    --config.workingdir /home/mpiuser \
    --config.env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
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

mv -f "$work/mpi-pi.tar" "$work/pause.tar" "$OUT/"
echo "build-node-images: done in $((SECONDS - start)) s; $(du -ch "$OUT"/*.tar | tail -n1 | cut -f1) in $OUT" >&2
