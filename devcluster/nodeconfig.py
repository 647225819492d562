"""Configuration of the ``real`` shape's node (pure functions): containerd, the bridge CNI
network, the kubelet and CoreDNS, all kept under the cluster's directory."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: The real node's name, label and taint: pods run there only with the matching
#: nodeSelector and toleration (:func:`devcluster.realpods.on_real_node`),
#: so that nothing meant for the KWOK nodes starts a real container.
REAL_NODE_NAME = "real-node-0"
REAL_NODE_LABEL = ("type", "real")
REAL_NODE_TAINT = {"key": "type", "value": "real", "effect": "NoSchedule"}
CLUSTER_DOMAIN = "cluster.local"
#: Where the images of ``hack/build-node-images.sh`` are known in containerd.
PAUSE_IMAGE = "localhost/pause:local"
MPI_IMAGE_REPO = "docker.io/mpioperator/mpi-pi"
#: openmpi: Open MPI 5 (trixie), openmpi4: Open MPI 4.1 (bookworm), mpich: MPICH 4.2 (trixie),
#: intel: Intel MPI 2021 from PyPI (trixie).
MPI_IMAGES = {tag: f"{MPI_IMAGE_REPO}:{tag}" for tag in ("openmpi", "openmpi4", "mpich", "intel")}
#: The T9k launcher's default init container image (busybox:1.36, pinned by digest): the
#: openmpi image stands in for it, with sh, cut, nslookup and ``nc -z`` (see
#: hack/build-node-images.sh), under each name containerd may look it up by: the tag,
#: and the digest (a reference with both, as the operator writes it, is resolved by
#: its digest alone; nothing checks that the stand-in's content has that digest).
INIT_IMAGE_DIGEST = "sha256:73aaf090f3d85aa34ee199857f03fa3a95c8ede2ffd4cc2cdb5b94e566b11662"
INIT_IMAGES = (
    "docker.io/library/busybox:1.36",
    f"docker.io/library/busybox@{INIT_IMAGE_DIGEST}",
)
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
    """CoreDNS on the gateway: Service and pod records of the cluster, nothing else. Every
    query is logged with its answer code and duration (``log``), so that a name a pod
    could not resolve shows whether the query reached CoreDNS and what it answered."""
    return "\n".join(
        [
            ".:53 {",
            f"    bind {node.gateway}",
            f"    ready 127.0.0.1:{node.coredns_ready_port}",
            "    errors",
            "    log",
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
