#!/usr/bin/env bash
# Installs, from Debian's packages and only when missing, what the `real` local cluster
# shape needs on the host: containerd and runc (containers), containernetworking-plugins
# (bridge, host-local, loopback, portmap CNI plugins), debootstrap (the image rootfs),
# umoci (turns a rootfs into an OCI image) and iproute2/iptables (the pod bridge).
# Needs root and apt-get; otherwise prints one line naming what is missing and fails.
set -euo pipefail

PKGS=(containerd runc containernetworking-plugins debootstrap umoci iproute2 iptables)
# Files that prove each package is installed (dpkg -s is slower and locale-dependent).
probe() {
  case "$1" in
    containerd) command -v containerd >/dev/null && command -v ctr >/dev/null ;;
    runc) command -v runc >/dev/null ;;
    containernetworking-plugins) [[ -x /usr/lib/cni/bridge && -x /usr/lib/cni/host-local && -x /usr/lib/cni/loopback ]] ;;
    debootstrap) command -v debootstrap >/dev/null ;;
    umoci) command -v umoci >/dev/null ;;
    iproute2) command -v ip >/dev/null ;;
    iptables) command -v iptables >/dev/null ;;
  esac
}

missing=()
for p in "${PKGS[@]}"; do probe "$p" || missing+=("$p"); done
[[ ${#missing[@]} -eq 0 ]] && exit 0

if [[ "$(id -u)" != 0 ]]; then
  echo "install-node-packages: not root; install the Debian packages ${missing[*]} (the real cluster shape needs them)" >&2
  exit 1
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "install-node-packages: no apt-get; install ${missing[*]} (the real cluster shape needs them)" >&2
  exit 1
fi
echo "install-node-packages: installing ${missing[*]} from Debian's packages" >&2
export DEBIAN_FRONTEND=noninteractive
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
if ! { apt-get -qq update && apt-get -qq install -y --no-install-recommends "${missing[@]}"; } >"$log" 2>&1; then
  echo "install-node-packages: apt-get could not install ${missing[*]}: $(grep -m1 -E '^E:' "$log" || tail -n1 "$log")" >&2
  exit 1
fi
# Debian's containerd package starts a system daemon on install where systemd runs; the
# real shape runs its own containerd with its own root, state and socket, so that one
# is left alone.
for p in "${missing[@]}"; do
  probe "$p" || { echo "install-node-packages: $p installed but not found afterwards" >&2; exit 1; }
done
