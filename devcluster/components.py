"""Command lines and configuration of the control plane's components (pure functions)."""

from __future__ import annotations

import base64
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .pki import Pki

SERVICE_CIDR = "10.96.0.0/12"
POD_CIDR = "10.244.0.0/16"
SA_ISSUER = "https://kubernetes.default.svc.cluster.local"
KWOK_NODE_ANNOTATION = "kwok.x-k8s.io/node"
KCM_CONTROLLERS = (
    "job-controller",
    "garbage-collector-controller",
    "namespace-controller",
    "serviceaccount-token-controller",
    "serviceaccount-controller",
    "root-ca-certificate-publisher-controller",
    "ttl-after-finished-controller",
    "pod-garbage-collector-controller",
    "replicaset-controller",
    "deployment-controller",
    # Scales an elastic MPIJob through its scale subresource.
    "horizontal-pod-autoscaler-controller",
)
#: Also in the ``real`` shape: the headless Services' DNS records come from EndpointSlices.
KCM_ENDPOINT_CONTROLLERS = ("endpointslice-controller", "endpoints-controller")
#: With the Workload API: kube-apiserver's PodGroupProtection admission puts the
#: ``scheduling.k8s.io/podgroup-protection`` finalizer on every PodGroup, and only this
#: controller (which runs when GenericWorkload is on in kube-controller-manager) removes
#: it, once no pod that is neither Succeeded nor Failed names the group. Without it a
#: deleted PodGroup stays, terminating, forever: a job re-created with its name cannot
#: have its own.
KCM_WORKLOAD_API_CONTROLLERS = ("podgroup-protection-controller",)
#: Capacity of each fake node of the full shape.
NODE_CAPACITY = {"cpu": "64", "memory": "512Gi", "pods": "250", "nvidia.com/gpu": "8"}


@dataclass(frozen=True)
class Layout:
    """Where one cluster keeps its files and which ports its components listen on."""

    workdir: Path
    pki: Pki
    kubeconfig: Path
    ports: Mapping[str, int]


#: A builder of one component's command line.
ArgsBuilder = Callable[[Path, "Layout"], list[str]]


def etcd_args(binary: Path, layout: Layout) -> list[str]:
    client = f"http://127.0.0.1:{layout.ports['etcd']}"
    peer = f"http://127.0.0.1:{layout.ports['etcd-peer']}"
    return [
        str(binary),
        "--name=node0",
        f"--data-dir={layout.workdir / 'etcd-data'}",
        f"--listen-client-urls={client}",
        f"--advertise-client-urls={client}",
        f"--listen-peer-urls={peer}",
        f"--initial-advertise-peer-urls={peer}",
        f"--initial-cluster=node0={peer}",
        "--unsafe-no-fsync=true",
        "--quota-backend-bytes=4294967296",
        "--log-level=warn",
    ]


def apiserver_args(
    binary: Path,
    layout: Layout,
    *,
    full: bool,
    watch_cache: bool,
    kubelet_client: bool = False,
    pod_reachable_at: str | None = None,
    admission_plugins: list[str],
    extra: list[str],
) -> list[str]:
    """kube-apiserver's flags; ``full``: the shape with controller manager and nodes;
    ``kubelet_client``: a real kubelet serves logs and exec, reached at the node's
    InternalIP (its name resolves nowhere) with the admin's client certificate;
    ``pod_reachable_at``: an address of this host that pods reach (the real node's
    bridge gateway), advertised as the ``kubernetes`` Service's endpoint (which
    kube-proxy forwards 10.96.0.1:443 to) and listened on, as on every address."""
    pki = layout.pki
    bind, advertise = ("0.0.0.0", pod_reachable_at) if pod_reachable_at else ("127.0.0.1",) * 2
    args = [
        str(binary),
        f"--etcd-servers=http://127.0.0.1:{layout.ports['etcd']}",
        f"--bind-address={bind}",
        f"--advertise-address={advertise}",
        f"--secure-port={layout.ports['kube-apiserver']}",
        f"--cert-dir={layout.workdir / 'apiserver-certs'}",
        f"--tls-cert-file={pki.serving_crt}",
        f"--tls-private-key-file={pki.serving_key}",
        f"--client-ca-file={pki.ca_crt}",
        f"--service-account-issuer={SA_ISSUER}",
        f"--service-account-key-file={pki.sa_pub}",
        f"--service-account-signing-key-file={pki.sa_key}",
        f"--service-cluster-ip-range={SERVICE_CIDR}",
        "--authorization-mode=Node,RBAC",
        "--allow-privileged=true",
        "--enable-priority-and-fairness=false",
        # The `kubernetes` Service's endpoint: none on loopback (an Endpoints address may
        # not be 127.0.0.1), the advertised address where pods reach it.
        f"--endpoint-reconciler-type={'lease' if pod_reachable_at else 'none'}",
        "--profiling=false",
    ]
    if not watch_cache:
        args.append("--watch-cache=false")
    if kubelet_client:
        args += [
            "--kubelet-preferred-address-types=InternalIP",
            f"--kubelet-client-certificate={pki.admin_crt}",
            f"--kubelet-client-key={pki.admin_key}",
        ]
    args += extra
    if admission_plugins:
        args.append(f"--enable-admission-plugins={','.join(admission_plugins)}")
    if full:
        # No node-lifecycle controller would lift the not-ready taint this plugin
        # puts on new nodes; KWOK keeps the nodes Ready.
        args.append("--disable-admission-plugins=TaintNodesByCondition")
    else:
        # No controller manager creates the default ServiceAccounts (as envtest).
        args.append("--disable-admission-plugins=ServiceAccount")
    return args


def _component_common(component: str, layout: Layout) -> list[str]:
    return [
        f"--kubeconfig={layout.kubeconfig}",
        f"--authentication-kubeconfig={layout.kubeconfig}",
        f"--authorization-kubeconfig={layout.kubeconfig}",
        "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics",
        "--bind-address=127.0.0.1",
        f"--secure-port={layout.ports[component]}",
        f"--cert-dir={layout.workdir / (component + '-certs')}",
        "--leader-elect=false",
    ]


def controller_manager_args(
    binary: Path, layout: Layout, *, endpoints: bool = False, workload_api: bool = False
) -> list[str]:
    controllers = KCM_CONTROLLERS + (KCM_ENDPOINT_CONTROLLERS if endpoints else ())
    if workload_api:
        controllers += KCM_WORKLOAD_API_CONTROLLERS
    return [
        str(binary),
        *_component_common("kube-controller-manager", layout),
        f"--controllers={','.join(controllers)}",
        f"--service-account-private-key-file={layout.pki.sa_key}",
        f"--root-ca-file={layout.pki.ca_crt}",
        "--use-service-account-credentials=false",
        "--kube-api-qps=500",
        "--kube-api-burst=1000",
        "--concurrent-job-syncs=10",
        # A HorizontalPodAutoscaler's scale lands within seconds (15 s by default).
        "--horizontal-pod-autoscaler-sync-period=2s",
        *([WORKLOAD_API_GATES] if workload_api else []),
    ]


#: The Kubernetes Workload API and its gang scheduling (alpha in 1.35 and 1.36): the
#: feature gates on kube-apiserver, kube-scheduler and kube-controller-manager (whose
#: podgroup-protection-controller needs GenericWorkload; GangScheduling, which needs
#: GenericWorkload, is the scheduler's), the API group on kube-apiserver.
WORKLOAD_API_GATES = "--feature-gates=GenericWorkload=true,GangScheduling=true"
WORKLOAD_API_APISERVER = [WORKLOAD_API_GATES, "--runtime-config=scheduling.k8s.io/v1alpha2=true"]


def scheduler_args(binary: Path, layout: Layout, *, workload_api: bool = False) -> list[str]:
    # The client budget kube-controller-manager has here too. At the default 50 QPS
    # (burst 100), 250 pods created within a second are all bound only after 3 s: the
    # benchmark's slowest of 50 jobs then started at 3.0 s with either operator.
    return [
        str(binary),
        *_component_common("kube-scheduler", layout),
        "--kube-api-qps=500",
        "--kube-api-burst=1000",
        *([WORKLOAD_API_GATES] if workload_api else []),
    ]


def kwok_args(binary: Path, layout: Layout, config: Path) -> list[str]:
    return [
        str(binary),
        f"--kubeconfig={layout.kubeconfig}",
        f"--config={config}",
        "--manage-all-nodes=false",
        f"--manage-nodes-with-annotation-selector={KWOK_NODE_ANNOTATION}=fake",
        f"--cidr={POD_CIDR}",
        "--node-ip=10.240.0.1",
        "--node-lease-duration-seconds=40",
    ]


def fake_node(name: str) -> dict[str, Any]:
    """A Node object that the KWOK controller manages."""
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "annotations": {KWOK_NODE_ANNOTATION: "fake", "node.alpha.kubernetes.io/ttl": "0"},
            "labels": {
                "kubernetes.io/arch": "amd64",
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/role": "agent",
                "node-role.kubernetes.io/agent": "",
                "type": "kwok",
            },
        },
        "spec": {},
        "status": {"capacity": dict(NODE_CAPACITY), "allocatable": dict(NODE_CAPACITY)},
    }


def kubeconfig(server: str, ca_crt: Path, user: str, credentials: dict[str, str]) -> dict[str, Any]:
    """A kubeconfig document for one user of the cluster at ``server``."""
    ca = base64.b64encode(ca_crt.read_bytes()).decode()
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "localcluster",
                "cluster": {"server": server, "certificate-authority-data": ca},
            }
        ],
        "users": [{"name": user, "user": credentials}],
        "contexts": [
            {"name": "localcluster", "context": {"cluster": "localcluster", "user": user}}
        ],
        "current-context": "localcluster",
    }
