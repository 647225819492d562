"""Configuration of the ``real`` shape's node (pure functions): containerd, the bridge CNI
network, the kubelet and CoreDNS, all kept under the cluster's directory."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mpi_operator import __version__

#: The real node's name, label and taint: pods run there only with the matching
#: nodeSelector and toleration (:func:`devcluster.realpods.on_real_node`),
#: so that nothing meant for the KWOK nodes starts a real container.
REAL_NODE_NAME = "real-node-0"
REAL_NODE_LABEL = ("type", "real")
REAL_NODE_TAINT = {"key": "type", "value": "real", "effect": "NoSchedule"}
CLUSTER_DOMAIN = "cluster.local"
#: Where the images of ``hack/build-node-images.sh`` are known in containerd.
PAUSE_IMAGE = "localhost/pause:local"
#: The project's own images are named as its operator's (``mpi-operator-python:<version>``):
#: ``mpi-operator-python/<image>:<tag>``; a public name is given only to an image built as
#: that public image is built.
OWN_REPO = "mpi-operator-python"
#: The MPI stacks the tests run on, by tag: openmpi: Open MPI 5 (trixie), openmpi4: Open
#: MPI 4.1 (bookworm), mpich: MPICH 4.2 (trixie), intel: Intel MPI 2021 from PyPI (trixie).
MPI_STACKS = ("openmpi", "openmpi4", "mpich", "intel")
MPI_IMAGES = {stack: f"{OWN_REPO}/mpi-pi:{stack}" for stack in MPI_STACKS}
#: examples/v2beta1/mpi4py-sgd's image (its Dockerfile; ``make example-image``).
SGD_IMAGE = f"{OWN_REPO}/mpi4py-sgd:{__version__}"
#: examples/t9k's image (its Dockerfile: mpioperator/mpi-pi:openmpi with root's sshd on
#: port 22, where the T9k launcher waits; ``make example-image EXAMPLE=t9k``).
T9K_PI_IMAGE = f"{OWN_REPO}/t9k-pi:{__version__}"
#: The T9k launcher's init container in the tests (``--t9k-init-image``): sh, cut,
#: nslookup and ``nc -z``, as the operator's default (busybox 1.36, which cannot be
#: fetched here) has.
T9K_INIT_IMAGE = f"{OWN_REPO}/t9k-init:{__version__}"
#: The reference's public images, built here as its Dockerfiles build them.
PUBLIC_MPI_IMAGES = {"openmpi": "mpioperator/mpi-pi:openmpi", "mpich": "mpioperator/mpi-pi:mpich"}


def containerd_name(ref: str) -> str:
    """A tagged image reference as containerd names it: Docker Hub's domain added, and
    its ``library/`` namespace for a one-component name."""
    first, slash, _ = ref.partition("/")
    if slash and ("." in first or ":" in first or first == "localhost"):
        return ref
    return f"docker.io/{ref}" if slash else f"docker.io/library/{ref}"


#: Each tag of hack/build-node-images.sh's node-images.tar, and the name the node gives it.
NODE_IMAGES = {
    **{f"public-{mpi}": containerd_name(ref) for mpi, ref in PUBLIC_MPI_IMAGES.items()},
    **{stack: containerd_name(ref) for stack, ref in MPI_IMAGES.items()},
    "mpi4py-sgd": containerd_name(SGD_IMAGE),
    "t9k-pi": containerd_name(T9K_PI_IMAGE),
    "t9k-init": containerd_name(T9K_INIT_IMAGE),
}
#: The name node-images.tar is imported under first (``<this>:<tag>``), then removed.
IMPORT_REPO = "localhost/node-images"
CNI_BIN_DIR = Path("/usr/lib/cni")
#: kubelet writes a symlink per container here (a fixed path), removed at stop.
CONTAINER_LOG_LINKS = Path("/var/log/containers")


#: How the bridges of this machine's clusters are named (then 8 hex digits).
BRIDGE_PREFIX = "mpib"


@dataclass(frozen=True)
class NodeLayout:
    """Where one real node keeps its files, its network and its ports."""

    dir: Path
    bridge: str
    subnet_octet: int
    kubelet_port: int
    kubelet_healthz_port: int
    coredns_ready_port: int
    kube_proxy_healthz_port: int = 0
    kube_proxy_metrics_port: int = 0

    @classmethod
    def for_cluster(cls, workdir: Path, ports: tuple[int, ...]) -> NodeLayout:
        """A bridge name and /24 derived from the cluster's directory: two clusters
        of this machine get different ones."""
        digest = hashlib.sha256(str(workdir).encode()).hexdigest()
        octet = int(digest[:4], 16) % 200 + 20
        return cls(workdir / "node", f"{BRIDGE_PREFIX}{digest[:8]}", octet, *ports)

    @property
    def subnet(self) -> str:
        return f"10.85.{self.subnet_octet}.0/24"

    @property
    def gateway(self) -> str:
        """The bridge's address on the host: the node IP, the cluster DNS address."""
        return f"10.85.{self.subnet_octet}.1"

    @property
    def bridge_mac(self) -> str:
        """The bridge's own MAC, set when it is made (locally administered, from its name).
        A bridge left to pick one takes its lowest port's and changes it when that pod's
        veth goes: pods that cached the gateway's old MAC then lose DNS until their ARP
        entry expires (a launcher's ssh failed "Temporary failure in name resolution"
        while the previous test's pods were torn down)."""
        digest = hashlib.sha256(self.bridge.encode()).digest()
        return ":".join(f"{b:02x}" for b in (0x02, *digest[:5]))

    @property
    def containerd_dir(self) -> Path:
        return self.dir / "containerd"

    @property
    def containerd_socket(self) -> Path:
        return self.containerd_dir / "containerd.sock"

    @property
    def containerd_state(self) -> Path:
        return self.containerd_dir / "state"

    @property
    def kubelet_dir(self) -> Path:
        return self.dir / "kubelet"

    @property
    def pod_logs_dir(self) -> Path:
        return self.dir / "pod-logs"

    @property
    def cni_conf_dir(self) -> Path:
        return self.dir / "cni" / "net.d"

    @property
    def cgroup_root(self) -> str:
        """The kubelet's cgroup root, one per cluster (named like its bridge): the
        ``kubepods`` tree goes below it and is removed with it at stop."""
        return f"/{self.bridge}"


def stale_bridges(node: NodeLayout, links: list[dict[str, Any]]) -> list[str]:
    """The other clusters' bridges (:data:`BRIDGE_PREFIX`) in ``links`` (``ip -j addr show type
    bridge``) that hold an address in ``node``'s /24: a killed run's leftover would
    take the host's route to this node's pods."""
    prefix = node.gateway.rsplit(".", 1)[0] + "."
    return [
        link["ifname"]
        for link in links
        if link.get("ifname", "").startswith(BRIDGE_PREFIX)
        and link["ifname"] != node.bridge
        and any(a.get("local", "").startswith(prefix) for a in link.get("addr_info", []))
    ]


def containerd_config(node: NodeLayout) -> str:
    """containerd's TOML: its own root, state and socket; the CRI plugin with the local
    pause image, ``restrict_oom_score_adj`` (runc cannot lower oom_score_adj without
    CAP_SYS_RESOURCE), network namespaces under its state directory and the bridge CNI."""
    d = node.containerd_dir
    cri = 'plugins."io.containerd.grpc.v1.cri"'
    return "\n".join(
        [
            "version = 2",
            f'root = "{d / "root"}"',
            f'state = "{node.containerd_state}"',
            'disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", '
            '"io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.aufs", '
            '"io.containerd.snapshotter.v1.devmapper", "io.containerd.tracing.processor.v1.otlp"]',
            "[grpc]",
            f'  address = "{node.containerd_socket}"',
            "[ttrpc]",
            f'  address = "{d / "containerd-ttrpc.sock"}"',
            "[debug]",
            '  address = ""',
            "[metrics]",
            '  address = ""',
            '[plugins."io.containerd.internal.v1.opt"]',
            f'  path = "{d / "opt"}"',
            f"[{cri}]",
            f'  sandbox_image = "{PAUSE_IMAGE}"',
            "  restrict_oom_score_adj = true",
            "  netns_mounts_under_state_dir = true",
            '  stream_server_address = "127.0.0.1"',
            '  stream_server_port = "0"',
            "  enable_selinux = false",
            "  disable_apparmor = true",
            f"[{cri}.cni]",
            f'  bin_dir = "{CNI_BIN_DIR}"',
            f'  conf_dir = "{node.cni_conf_dir}"',
            "  max_conf_num = 1",
            f"[{cri}.containerd]",
            '  snapshotter = "overlayfs"',
            '  default_runtime_name = "runc"',
            f"[{cri}.containerd.runtimes.runc]",
            '  runtime_type = "io.containerd.runc.v2"',
            f"[{cri}.containerd.runtimes.runc.options]",
            "  SystemdCgroup = false",
            f'  Root = "{d / "runc"}"',
            "",
        ]
    )


def cni_conflist(node: NodeLayout) -> dict[str, Any]:
    """The bridge plugin on the node's own bridge (made beforehand with the gateway's
    address, so that CoreDNS can listen there before any pod runs). ``isGateway`` and
    ``ipMasq`` stay off: they would switch on the host's IP forwarding and NAT; pods
    reach each other on the bridge and the host at the gateway."""
    return {
        "cniVersion": "1.0.0",
        "name": "mpi-operator-local",
        "plugins": [
            {
                "type": "bridge",
                "bridge": node.bridge,
                "isGateway": False,
                "ipMasq": False,
                "hairpinMode": True,
                "ipam": {
                    "type": "host-local",
                    "ranges": [[{"subnet": node.subnet, "gateway": node.gateway}]],
                    "routes": [{"dst": "0.0.0.0/0", "gw": node.gateway}],
                    "dataDir": str(node.dir / "cni" / "ipam"),
                },
            }
        ],
    }


def kubelet_config(node: NodeLayout, ca_crt: Path) -> dict[str, Any]:
    """KubeletConfiguration: cgroupfs on the cgroup v1 hierarchy, pod and QoS cgroups
    below the node's own cgroup root (without pod cgroups the kubelet's in-place resize
    path dereferences a missing pod cgroup and panics), the API server authenticated by its client
    certificate, cluster DNS on the gateway, everything under the node's directory."""
    return {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "failCgroupV1": False,
        # Mounted ConfigMaps (an elastic job's discover_hosts.sh) refresh within 10 s,
        # not the default minute.
        "syncFrequency": "10s",
        "cgroupDriver": "cgroupfs",
        "cgroupsPerQOS": True,
        "cgroupRoot": node.cgroup_root,
        "enforceNodeAllocatable": [],
        "containerRuntimeEndpoint": f"unix://{node.containerd_socket}",
        "address": node.gateway,
        "port": node.kubelet_port,
        "readOnlyPort": 0,
        "healthzBindAddress": "127.0.0.1",
        "healthzPort": node.kubelet_healthz_port,
        "podLogsDir": str(node.pod_logs_dir),
        "clusterDomain": CLUSTER_DOMAIN,
        "clusterDNS": [node.gateway],
        "resolvConf": "/etc/resolv.conf",
        "registerWithTaints": [dict(REAL_NODE_TAINT)],
        "failSwapOn": False,
        "authentication": {
            "anonymous": {"enabled": False},
            "webhook": {"enabled": True},
            "x509": {"clientCAFile": str(ca_crt)},
        },
        "authorization": {"mode": "Webhook"},
        "evictionHard": {
            "memory.available": "100Mi",
            "nodefs.available": "1%",
            "imagefs.available": "1%",
        },
        "imageGCHighThresholdPercent": 100,
        "imageGCLowThresholdPercent": 99,
        "serializeImagePulls": False,
        "nodeStatusReportFrequency": "10s",
        "fileCheckFrequency": "0s",
        "volumeStatsAggPeriod": "0s",
        "localStorageCapacityIsolation": False,
        "maxPods": 50,
    }


def corefile(node: NodeLayout, kubeconfig: Path) -> str:
    """CoreDNS on the gateway: Service and pod records of the cluster, nothing else."""
    return "\n".join(
        [
            ".:53 {",
            f"    bind {node.gateway}",
            f"    ready 127.0.0.1:{node.coredns_ready_port}",
            "    errors",
            f"    kubernetes {CLUSTER_DOMAIN} in-addr.arpa ip6.arpa {{",
            f"        kubeconfig {kubeconfig} localcluster",
            "        pods insecure",
            "        ttl 1",
            "    }",
            "}",
            "",
        ]
    )


def kube_proxy_config(node: NodeLayout, kubeconfig: Path) -> dict[str, Any]:
    """KubeProxyConfiguration, iptables mode: ClusterIP Services (the ``kubernetes``
    one for in-cluster clients) DNATed to their endpoints. The node's pod subnet is the
    cluster CIDR (pods' own traffic is not masqueraded), NodePorts only on the gateway
    (no ``route_localnet``), conntrack sysctls left alone (no CAP_SYS_RESOURCE here)."""
    return {
        "apiVersion": "kubeproxy.config.k8s.io/v1alpha1",
        "kind": "KubeProxyConfiguration",
        "mode": "iptables",
        "clientConnection": {"kubeconfig": str(kubeconfig)},
        "hostnameOverride": REAL_NODE_NAME,
        "bindAddress": node.gateway,
        "healthzBindAddress": f"127.0.0.1:{node.kube_proxy_healthz_port}",
        "metricsBindAddress": f"127.0.0.1:{node.kube_proxy_metrics_port}",
        "clusterCIDR": node.subnet,
        "detectLocalMode": "ClusterCIDR",
        "nodePortAddresses": [f"{node.gateway}/32"],
        "iptables": {"localhostNodePorts": False, "syncPeriod": "30s", "minSyncPeriod": "1s"},
        "conntrack": {
            "maxPerCore": 0,
            "min": 0,
            "tcpEstablishedTimeout": "0s",
            "tcpCloseWaitTimeout": "0s",
        },
    }


def kube_proxy_args(binary: Path, config: Path) -> list[str]:
    return [str(binary), f"--config={config}", "--v=1"]


def containerd_args(binary: Path, config: Path) -> list[str]:
    return [str(binary), f"--config={config}", "--log-level=info"]


def kubelet_args(binary: Path, node: NodeLayout, config: Path, kubeconfig: Path) -> list[str]:
    key, value = REAL_NODE_LABEL
    return [
        str(binary),
        f"--config={config}",
        f"--kubeconfig={kubeconfig}",
        f"--root-dir={node.kubelet_dir}",
        f"--hostname-override={REAL_NODE_NAME}",
        f"--node-ip={node.gateway}",
        f"--node-labels={key}={value}",
        "--v=1",
    ]


def coredns_args(binary: Path, corefile_path: Path) -> list[str]:
    return [str(binary), "-conf", str(corefile_path)]


def dump_json(obj: Any) -> str:
    return json.dumps(obj, indent=2) + "\n"
