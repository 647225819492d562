"""The ``real`` shape's node on this host: containerd, the bridge CNI, CoreDNS, the
kubelet and kube-proxy, started and stopped by :class:`~devcluster.cluster.LocalCluster`,
and every artefact they leave (container processes, shims, mounts, network namespaces,
the bridge, log links) removed at stop, even after a failure."""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from . import builds
from . import nodeconfig as cfg
from .access import ClusterError
from .binaries import repo_root

#: Host commands the node needs, and the Debian package each comes from.
HOST_COMMANDS = {
    "containerd": "containerd",
    "containerd-shim-runc-v2": "containerd",
    "ctr": "containerd",
    "runc": "runc",
    "ip": "iproute2",
    "iptables": "iptables",
}
CNI_PLUGINS = ("bridge", "host-local", "loopback")
_MNT_DETACH = 2


@dataclass(frozen=True)
class NodeInputs:
    """The built inputs of the node: kubelet and CoreDNS binaries, the image archives."""

    kubelet: Path
    coredns: Path
    kube_proxy: Path
    node_images: Path
    pause_image: Path


def _print_dir(script: str) -> Path:
    out = subprocess.run(
        ["bash", str(repo_root() / "hack" / script), "--print-dir"],
        check=True,
        capture_output=True,
        text=True,
    )
    return Path(out.stdout.strip())


def preflight() -> NodeInputs:
    """What the node needs, or a one-line :class:`ClusterError` naming what is missing."""
    for target in ("node-packages", "node-binaries", "node-images"):
        builds.wait_for(target)
    if os.geteuid() != 0:
        raise ClusterError("the real cluster shape needs root (containerd, runc, mounts, a bridge)")
    for command, package in HOST_COMMANDS.items():
        if shutil.which(command) is None:
            raise ClusterError(
                f"{command} not found: install the Debian package {package} "
                "(make node-packages, hack/install-node-packages.sh)"
            )
    for plugin in CNI_PLUGINS:
        if not os.access(cfg.CNI_BIN_DIR / plugin, os.X_OK):
            raise ClusterError(
                f"CNI plugin {cfg.CNI_BIN_DIR / plugin} not found: install the Debian package "
                "containernetworking-plugins (make node-packages)"
            )
    bins = _print_dir("build-node-binaries.sh")
    images = _print_dir("build-node-images.sh")
    inputs = NodeInputs(
        bins / "kubelet",
        bins / "coredns",
        bins / "kube-proxy",
        images / "node-images.tar",
        images / "pause.tar",
    )
    for path, make in [
        (inputs.kubelet, "node-binaries"),
        (inputs.coredns, "node-binaries"),
        (inputs.kube_proxy, "node-binaries"),
        (inputs.node_images, "node-images"),
        (inputs.pause_image, "node-images"),
    ]:
        if not path.is_file():
            raise ClusterError(f"{path} missing: run `make {make}` first")
    return inputs


class RealNode:
    """One node; ``run`` starts a named component process (the cluster's ``_run``)."""

    def __init__(self, workdir: Path, ports: tuple[int, ...], kubeconfig: Path) -> None:
        self.layout = cfg.NodeLayout.for_cluster(workdir, ports)
        self.kubeconfig = kubeconfig
        #: kube-proxy's binary once started: its iptables rules are removed at cleanup.
        self._kube_proxy: Path | None = None

    @staticmethod
    def gateway_of(workdir: Path) -> str:
        """The node's bridge gateway (node IP) for the cluster in ``workdir``, known
        before the node starts: kube-apiserver advertises it to pods."""
        return cfg.NodeLayout.for_cluster(workdir, (0, 0, 0)).gateway

    # -- start

    def start(
        self,
        inputs: NodeInputs,
        ca_crt: Path,
        run: Callable[[str, list[str]], None],
        wait: Callable[[str, Callable[[], object]], object],
    ) -> None:
        node = self.layout
        for d in (node.containerd_dir, node.cni_conf_dir, node.kubelet_dir, node.pod_logs_dir):
            d.mkdir(parents=True, exist_ok=True)
        ctd_config = node.dir / "containerd.toml"
        ctd_config.write_text(cfg.containerd_config(node))
        (node.cni_conf_dir / "10-bridge.conflist").write_text(cfg.dump_json(cfg.cni_conflist(node)))
        self._make_bridge()
        run("containerd", cfg.containerd_args(Path(_which("containerd")), ctd_config))
        wait("containerd's socket", lambda: self._ctr("version", check=False).returncode == 0)
        self._ctr("images", "import", "--base-name", cfg.IMPORT_REPO, str(inputs.node_images))
        for tag, name in cfg.NODE_IMAGES.items():
            self._ctr("images", "tag", "--force", f"{cfg.IMPORT_REPO}:{tag}", name)
        self._ctr("images", "rm", *(f"{cfg.IMPORT_REPO}:{tag}" for tag in cfg.NODE_IMAGES))
        self._ctr("images", "import", "--base-name", "localhost/pause", str(inputs.pause_image))
        corefile = node.dir / "Corefile"
        corefile.write_text(cfg.corefile(node, self.kubeconfig))
        run("coredns", cfg.coredns_args(inputs.coredns, corefile))
        _make_cgroup_root(node.cgroup_root)
        kubelet_config = node.dir / "kubelet.yaml"
        kubelet_config.write_text(cfg.dump_json(cfg.kubelet_config(node, ca_crt)))
        run("kubelet", cfg.kubelet_args(inputs.kubelet, node, kubelet_config, self.kubeconfig))
        wait(
            "CoreDNS /ready", lambda: _http_ok(f"http://127.0.0.1:{node.coredns_ready_port}/ready")
        )
        wait(
            "kubelet /healthz",
            lambda: _http_ok(f"http://127.0.0.1:{node.kubelet_healthz_port}/healthz"),
        )
        self._start_kube_proxy(inputs.kube_proxy, run, wait)

    def _start_kube_proxy(
        self,
        binary: Path,
        run: Callable[[str, list[str]], None],
        wait: Callable[[str, Callable[[], object]], object],
    ) -> None:
        """kube-proxy (iptables mode): pods reach the API server at the ``kubernetes``
        Service's ClusterIP, as in-cluster clients do (KUBERNETES_SERVICE_HOST)."""
        node = self.layout
        config = node.dir / "kube-proxy.yaml"
        config.write_text(cfg.dump_json(cfg.kube_proxy_config(node, self.kubeconfig)))
        self._kube_proxy = binary
        run("kube-proxy", cfg.kube_proxy_args(binary, config))
        wait(
            "kube-proxy /healthz",
            lambda: _http_ok(f"http://127.0.0.1:{node.kube_proxy_healthz_port}/healthz"),
        )

    def import_image(self, archive: Path, base_name: str | None = None) -> None:
        """Import an OCI archive into the node's containerd, named ``base_name:<tag>``, or
        without ``base_name`` by the archive's own ``io.containerd.image.name``."""
        named = ("--base-name", base_name) if base_name else ()
        self._ctr("images", "import", *named, str(archive))

    def _make_bridge(self) -> None:
        node = self.layout
        links = json.loads(_ip("-j", "addr", "show", "type", "bridge") or "[]")
        for stale in cfg.stale_bridges(node, links):
            _ip("link", "del", stale)
        if not Path(f"/sys/class/net/{node.bridge}").exists():
            _ip("link", "add", "name", node.bridge, "type", "bridge")
        _ip("link", "set", "dev", node.bridge, "address", node.bridge_mac)
        _ip("addr", "replace", f"{node.gateway}/24", "dev", node.bridge)
        _ip("link", "set", node.bridge, "up")

    def _ctr(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        argv = [_which("ctr"), "--address", str(self.layout.containerd_socket), "-n", "k8s.io"]
        result = subprocess.run([*argv, *args], capture_output=True, text=True, timeout=300)
        if check and result.returncode != 0:
            raise ClusterError(f"ctr {' '.join(args)}: {result.stderr.strip()}")
        return result

    # -- stop

    def kill_containers(self) -> None:
        """Kill every container process of the node while containerd still runs, so that
        the shims exit and the kubelet's volumes can be unmounted."""
        with contextlib.suppress(OSError, subprocess.SubprocessError, ClusterError):
            tasks = self._ctr("tasks", "ls", "-q", check=False).stdout.split()
            for task in tasks:
                self._ctr("tasks", "kill", "-s", "SIGKILL", task, check=False)
            deadline = time.monotonic() + 10
            for task in tasks:
                while self._ctr("tasks", "delete", task, check=False).returncode != 0:
                    if time.monotonic() > deadline:
                        break
                    time.sleep(0.2)

    def cleanup(self) -> None:
        """After the node's processes stopped: whatever is left of them (idempotent)."""
        node = self.layout
        for pid in _shims_of(node.containerd_socket):
            _kill_tree(pid)
        _unmount_under(node.dir)
        _remove_cgroup_root(node.cgroup_root)
        if Path(f"/sys/class/net/{node.bridge}").exists():
            with contextlib.suppress(ClusterError):
                _ip("link", "del", node.bridge)
        _remove_log_links(node.pod_logs_dir)
        _remove_kubelet_chains()
        if self._kube_proxy is not None:  # its KUBE-* chains in the host's iptables
            with contextlib.suppress(OSError, subprocess.SubprocessError):
                subprocess.run(
                    [str(self._kube_proxy), "--cleanup"], capture_output=True, timeout=60
                )


CGROUP_MOUNTS = Path("/sys/fs/cgroup")


def _which(command: str) -> str:
    found = shutil.which(command)
    if found is None:
        raise ClusterError(f"{command} not found")
    return found


def _ip(*args: str) -> str:
    result = subprocess.run(["ip", *args], capture_output=True, text=True)
    if result.returncode != 0:
        raise ClusterError(f"ip {' '.join(args)}: {result.stderr.strip()}")
    return result.stdout


def _http_ok(url: str) -> bool:
    import urllib.request

    with urllib.request.urlopen(url, timeout=5) as r:
        return bool(r.status == 200)


def _cmdline(pid: int) -> list[str]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return raw.decode(errors="replace").split("\0")


def _shims_of(socket: Path) -> list[int]:
    """The containerd shims serving the containerd at ``socket`` (and no other)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            argv = _cmdline(int(entry.name))
            if argv and argv[0].endswith("containerd-shim-runc-v2") and str(socket) in argv:
                pids.append(int(entry.name))
    return pids


def _children(pid: int) -> list[int]:
    kids: list[int] = []
    with contextlib.suppress(OSError):
        for task in Path(f"/proc/{pid}/task").iterdir():
            with contextlib.suppress(OSError):
                kids += [int(k) for k in (task / "children").read_text().split()]
    return kids


def _kill_tree(pid: int) -> None:
    """SIGKILL ``pid`` and all its descendants, the descendants first."""
    for child in _children(pid):
        _kill_tree(child)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signal.SIGKILL)


def _unmount_under(root: Path) -> None:
    """Detach every mount below ``root`` (overlay rootfs, shm, secrets' tmpfs, netns)."""
    libc = ctypes.CDLL(None, use_errno=True)
    prefix = str(root.resolve()) + "/"
    for _ in range(5):
        points = []
        with contextlib.suppress(OSError):
            for line in Path("/proc/self/mountinfo").read_text().splitlines():
                point = line.split()[4].replace("\\040", " ")
                if point.startswith(prefix):
                    points.append(point)
        if not points:
            return
        for point in sorted(points, key=len, reverse=True):
            libc.umount2(point.encode(), _MNT_DETACH)


def _cgroup_hierarchies(unified: bool = False) -> list[Path]:
    """The mounted cgroup v1 hierarchies (the kubelet's cgroupfs driver uses them), and
    with ``unified`` the cgroup v2 tree beside them, where the kubelet makes its root too."""
    kinds = ("cgroup", "cgroup2") if unified else ("cgroup",)
    found = []
    for line in Path("/proc/self/mounts").read_text().splitlines():
        fields = line.split()
        if fields[2] in kinds and fields[1].startswith(str(CGROUP_MOUNTS) + "/"):
            found.append(Path(fields[1]))
    return found


def _make_cgroup_root(root: str) -> None:
    """The kubelet's cgroup root in every hierarchy (the kubelet requires it to exist);
    a new cpuset cgroup gets its parent's CPUs and memory nodes, or tasks can't join."""
    for hierarchy in _cgroup_hierarchies():
        path = hierarchy / root.strip("/")
        try:
            path.mkdir(exist_ok=True)
        except OSError as e:
            raise ClusterError(f"cannot create the kubelet's cgroup {path}: {e}") from e
        for name in ("cpuset.cpus", "cpuset.mems"):
            if (path / name).exists() and not (path / name).read_text().strip():
                (path / name).write_text((hierarchy / name).read_text())


def _remove_cgroup_root(root: str) -> None:
    """Removes the node's cgroup tree, deepest first (its tasks are gone by now)."""
    for hierarchy in _cgroup_hierarchies(unified=True):
        top = hierarchy / root.strip("/")
        if not top.is_dir():
            continue
        dirs = [top, *(p for p in top.rglob("*") if p.is_dir())]
        for d in sorted(dirs, key=lambda p: len(p.parts), reverse=True):
            with contextlib.suppress(OSError):
                d.rmdir()


#: The iptables chains the kubelet makes (table, chain, the built-in chains jumping to it),
#: and kube-proxy's mode hint, which its own cleanup leaves in the mangle table.
KUBELET_CHAINS = (
    ("filter", "KUBE-FIREWALL", ("INPUT", "OUTPUT")),
    ("filter", "KUBE-KUBELET-CANARY", ()),
    ("nat", "KUBE-KUBELET-CANARY", ()),
    ("mangle", "KUBE-KUBELET-CANARY", ()),
    ("mangle", "KUBE-IPTABLES-HINT", ()),
)


def _remove_kubelet_chains() -> None:
    """The kubelet's own chains, which kube-proxy's cleanup leaves (absent ones are no
    error)."""
    for table, chain, callers in KUBELET_CHAINS:
        commands = [
            *(["-t", table, "-D", caller, "-j", chain] for caller in callers),
            ["-t", table, "-F", chain],
            ["-t", table, "-X", chain],
        ]
        for args in commands:
            with contextlib.suppress(OSError, subprocess.SubprocessError):
                subprocess.run(["iptables", *args], capture_output=True, timeout=30)


def _remove_log_links(pod_logs_dir: Path) -> None:
    with contextlib.suppress(OSError):
        for link in cfg.CONTAINER_LOG_LINKS.iterdir():
            with contextlib.suppress(OSError):
                if link.is_symlink() and os.readlink(link).startswith(str(pod_logs_dir)):
                    link.unlink()
