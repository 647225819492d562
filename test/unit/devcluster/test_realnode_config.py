"""The ``real`` shape's node configuration (pure) and its pinned inputs."""

from __future__ import annotations

import re
from pathlib import Path

from devcluster import components
from devcluster import nodeconfig as cfg
from devcluster.sample_jobs import on_real_node, pi_mpijob

ROOT = Path(__file__).resolve().parents[3]
NODE = cfg.NodeLayout.for_cluster(Path("/tmp/some-cluster"), (10250, 10248, 8181))


def _pins(go_mod: Path) -> dict[str, str]:
    """k8s.io/kubernetes' version and every replace line of a tools module."""
    text = go_mod.read_text()
    pins = dict(re.findall(r"^\s*(k8s\.io/[\w.-]+) => \S+ (v[\w.-]+)$", text, re.M))
    pins["k8s.io/kubernetes"] = re.search(r"^require k8s.io/kubernetes (\S+)$", text, re.M)[1]  # type: ignore[index]
    return pins


def test_the_kubelet_is_pinned_to_the_control_planes_release() -> None:
    control_plane = _pins(ROOT / "hack/tools/k8s/go.mod")
    kubelet = _pins(ROOT / "hack/tools/kubelet/go.mod")
    assert kubelet["k8s.io/kubernetes"] == control_plane["k8s.io/kubernetes"]
    assert {k: v for k, v in kubelet.items() if k in control_plane} == control_plane


def test_two_clusters_get_different_bridges_and_subnets() -> None:
    other = cfg.NodeLayout.for_cluster(Path("/tmp/other-cluster"), (1, 2, 3))
    assert len(NODE.bridge) <= 15  # IFNAMSIZ
    assert (NODE.bridge, NODE.subnet) != (other.bridge, other.subnet)
    assert NODE.gateway.endswith(".1") and NODE.subnet.startswith(NODE.gateway[:-1])


def test_the_bridge_has_a_fixed_locally_administered_unicast_mac() -> None:
    """Set, not taken from a port: it must not change when a pod's veth goes."""
    other = cfg.NodeLayout.for_cluster(Path("/tmp/other-cluster"), (1, 2, 3))
    first = int(NODE.bridge_mac.split(":")[0], 16)
    assert re.fullmatch(r"([0-9a-f]{2}:){5}[0-9a-f]{2}", NODE.bridge_mac)
    assert first & 0b10 and not first & 0b01  # locally administered, unicast
    assert (
        NODE.bridge_mac
        == cfg.NodeLayout.for_cluster(Path("/tmp/some-cluster"), (4, 5, 6)).bridge_mac
    )
    assert NODE.bridge_mac != other.bridge_mac


def test_containerd_runs_without_cap_sys_resource_and_keeps_to_its_directory() -> None:
    toml = cfg.containerd_config(NODE)
    assert "restrict_oom_score_adj = true" in toml
    assert "netns_mounts_under_state_dir = true" in toml
    assert f'address = "{NODE.containerd_socket}"' in toml
    assert f'sandbox_image = "{cfg.PAUSE_IMAGE}"' in toml


def test_kubelet_on_cgroup_v1_with_cluster_dns_on_the_gateway() -> None:
    conf = cfg.kubelet_config(NODE, Path("/ca.crt"))
    assert conf["failCgroupV1"] is False
    assert conf["cgroupDriver"] == "cgroupfs"
    assert conf["clusterDNS"] == [NODE.gateway]
    assert conf["registerWithTaints"] == [cfg.REAL_NODE_TAINT]
    net = cfg.cni_conflist(NODE)["plugins"][0]
    assert (net["type"], net["ipam"]["type"]) == ("bridge", "host-local")
    assert f"bind {NODE.gateway}" in cfg.corefile(NODE, Path("/kubeconfig"))


def test_endpoint_controllers_and_kubelet_access_only_in_the_real_shape(tmp_path: Path) -> None:
    from devcluster.pki import Pki

    layout = components.Layout(
        tmp_path,
        Pki(tmp_path),
        tmp_path / "kc",
        {"kube-controller-manager": 1, "etcd": 2, "kube-apiserver": 3},
    )
    full = components.controller_manager_args(Path("kcm"), layout)
    real = components.controller_manager_args(Path("kcm"), layout, endpoints=True)
    assert "endpointslice-controller" not in " ".join(full)
    assert "endpointslice-controller,endpoints-controller" in " ".join(real)
    args = {"full": True, "watch_cache": True, "admission_plugins": [], "extra": []}
    plain = components.apiserver_args(Path("a"), layout, **args)  # type: ignore[arg-type]
    kubelet = components.apiserver_args(Path("a"), layout, kubelet_client=True, **args)  # type: ignore[arg-type]
    assert "--kubelet-preferred-address-types=InternalIP" not in plain
    assert "--kubelet-preferred-address-types=InternalIP" in kubelet


def test_on_real_node_steers_every_pod_and_drops_cpu_only() -> None:
    job = pi_mpijob("pi")
    container = job["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    container["resources"] = {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "1"}}
    real = on_real_node(job)
    assert container["resources"]["limits"]["cpu"] == "1"  # the original is untouched
    for spec in real["spec"]["mpiReplicaSpecs"].values():
        pod = spec["template"]["spec"]
        assert pod["nodeSelector"] == {"type": "real"}
        assert {"operator": "Equal", **cfg.REAL_NODE_TAINT} in pod["tolerations"]
    worker = real["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    assert worker["resources"] == {"limits": {"memory": "1Gi"}, "requests": {}}
    t9k = on_real_node({"spec": {"worker": {"template": {"spec": {"containers": []}}}}})
    assert t9k["spec"]["worker"]["template"]["spec"]["nodeSelector"] == {"type": "real"}


def test_kube_proxy_in_iptables_mode_on_the_node_without_conntrack_sysctls() -> None:
    node = cfg.NodeLayout.for_cluster(Path("/tmp/some-cluster"), (1, 2, 3, 4, 5))
    conf = cfg.kube_proxy_config(node, Path("/kubeconfig"))
    assert (conf["mode"], conf["hostnameOverride"]) == ("iptables", cfg.REAL_NODE_NAME)
    assert (conf["clusterCIDR"], conf["detectLocalMode"]) == (node.subnet, "ClusterCIDR")
    assert conf["healthzBindAddress"] == "127.0.0.1:4"
    assert conf["metricsBindAddress"] == "127.0.0.1:5"
    assert conf["nodePortAddresses"] == [f"{node.gateway}/32"]
    assert conf["iptables"]["localhostNodePorts"] is False
    assert conf["conntrack"]["maxPerCore"] == 0


def test_the_api_server_is_advertised_to_pods_only_in_the_real_shape(tmp_path: Path) -> None:
    from devcluster.pki import Pki

    layout = components.Layout(
        tmp_path, Pki(tmp_path), tmp_path / "kc", {"etcd": 2, "kube-apiserver": 3}
    )
    args = {"full": True, "watch_cache": True, "admission_plugins": [], "extra": []}
    plain = components.apiserver_args(Path("a"), layout, **args)  # type: ignore[arg-type]
    gateway = cfg.NodeLayout.for_cluster(tmp_path, (0, 0, 0)).gateway
    real = components.apiserver_args(Path("a"), layout, pod_reachable_at=gateway, **args)  # type: ignore[arg-type]
    assert {"--bind-address=127.0.0.1", "--endpoint-reconciler-type=none"} <= set(plain)
    assert {"--bind-address=0.0.0.0", f"--advertise-address={gateway}"} <= set(real)
    assert "--endpoint-reconciler-type=lease" in real


def test_a_leftover_bridge_on_the_nodes_subnet_is_stale() -> None:
    prefix = NODE.gateway[:-1]
    links = [
        {"ifname": NODE.bridge, "addr_info": [{"local": NODE.gateway}]},
        {"ifname": "mpibdeadbeef", "addr_info": [{"local": prefix + "1"}]},
        {"ifname": "mpib0000aaaa", "addr_info": [{"local": "10.85.250.1"}]},
        {"ifname": "docker0", "addr_info": [{"local": prefix + "7"}]},
        {"ifname": "mpibnoaddr", "addr_info": []},
    ]
    assert cfg.stale_bridges(NODE, links) == ["mpibdeadbeef"]


def _containerd_lookup_name(ref: str) -> str:
    """The name containerd's CRI plugin looks a pod's image up by (docker.ParseDockerRef):
    Docker Hub's domain and ``library/`` added, and the tag dropped when a digest is given."""
    name, _, digest = ref.partition("@")
    repo, _, tag = name.partition(":") if ":" in name.rsplit("/", 1)[-1] else (name, "", "")
    if "/" not in repo:
        repo = f"library/{repo}"
    if "." not in repo.split("/")[0]:
        repo = f"docker.io/{repo}"
    return f"{repo}@{digest}" if digest else f"{repo}:{tag or 'latest'}"


def test_the_real_node_names_only_publicly_built_images_with_public_names() -> None:
    """Only the two images built as the reference's public ones carry its names
    (mpioperator/...); every other image of the node is the project's own
    (mpi-operator-python/...), each under the name containerd resolves a pod's reference
    to. No busybox stands in for the T9k init image: the operator's default stays
    busybox 1.36 pinned by digest, and the tests pass --t9k-init-image."""
    from mpi_operator import __version__
    from mpi_operator.builders.t9k.pods import DEFAULT_INIT_IMAGE

    assert re.fullmatch(r"busybox:1\.36@sha256:[0-9a-f]{64}", DEFAULT_INIT_IMAGE)
    names = set(cfg.NODE_IMAGES.values())
    assert not any("busybox" in name for name in names)
    public = {n for n in names if n.startswith("docker.io/mpioperator/")}
    assert public == {
        "docker.io/mpioperator/mpi-pi:openmpi",
        "docker.io/mpioperator/mpi-pi:mpich",
    }
    assert {t for t, n in cfg.NODE_IMAGES.items() if n in public} == {
        "public-openmpi",
        "public-mpich",
    }
    for name in names - public:
        assert name.startswith("docker.io/mpi-operator-python/"), name
    for ref in [*cfg.MPI_IMAGES.values(), cfg.SGD_IMAGE, cfg.T9K_PI_IMAGE, cfg.T9K_INIT_IMAGE]:
        assert _containerd_lookup_name(ref) in names, ref
    assert f"mpi-operator-python/mpi4py-sgd:{__version__}" == cfg.SGD_IMAGE
    assert f"mpi-operator-python/t9k-init:{__version__}" == cfg.T9K_INIT_IMAGE
    assert f"mpi-operator-python/t9k-pi:{__version__}" == cfg.T9K_PI_IMAGE
    assert cfg.MPI_IMAGES["openmpi4"] == "mpi-operator-python/mpi-pi:openmpi4"


def test_every_tag_of_the_node_images_is_named() -> None:
    """hack/build-node-images.sh packs (or derives from another) exactly the tags
    NODE_IMAGES names."""
    script = (ROOT / "hack" / "build-node-images.sh").read_text()
    packed = set(re.findall(r"^(?:pack|derive) ([a-z0-9-]+)", script, re.M))
    packed |= set(re.findall(r"^for mpi in ([a-z0-9 ]+); do\n  entry", script, re.M)[0].split())
    packed.discard("$mpi")
    assert packed == set(cfg.NODE_IMAGES)
