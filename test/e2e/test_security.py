"""docs/operations/security.md against the real API server and the operator's builders.

* Pod Security levels: the pods the operator builds for each example (its own builders,
  as a sync builds them) and the operator's own pod are created with a server dry run in
  namespaces enforcing each level; each is admitted at the level the page gives and
  refused at the one above (kube-apiserver's PodSecurity admission, which a dry run
  runs). The pi example with the page's ``restricted`` fields runs on the real node in a
  namespace enforcing ``restricted``.
* The SSH key Secret as the page describes it (type, keys, labels, owner, kept once
  the job finished, deleted with it; mount modes), and who can read
  it: the rules of Kubernetes' ``view`` and ``edit`` asked with ``kubectl auth can-i``,
  the operator's and the ``kubeflow-mpijobs-*`` roles' rules read from the install file.
* The NetworkPolicy example: accepted by a server-side apply dry run; its selectors
  match the labels of the pods the operator builds for the pi example. No policy is
  enforced here (the real node's network is the plain bridge plugin), as the page says.
"""

from __future__ import annotations

import base64
import copy
import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from examples_support import DEPLOY, EXAMPLES, ROOT, items
from real_node_support import PI_RESULT, run_kubeflow

from devcluster import LocalCluster
from devcluster.demo_job import load_mpijob
from devcluster.nodeconfig import MPI_IMAGES
from devcluster.testing import OperatorProcess, wait_until
from mpi_operator.api import t9k
from mpi_operator.api.v2beta1 import MPIJob, set_defaults
from mpi_operator.builders.kubeflow.launcher import new_launcher_pod_template
from mpi_operator.builders.kubeflow.worker import new_worker
from mpi_operator.builders.ssh import ssh_secret_volume
from mpi_operator.builders.t9k.pods import new_launcher_pod, new_worker_pod

Obj = dict[str, Any]
PAGE = ROOT / "docs" / "operations" / "security.md"
T9K_PI = ROOT / "examples" / "t9k" / "pi.yaml"
LEVELS = ("privileged", "baseline", "restricted")


def _page_yaml() -> list[Obj]:
    blocks = re.findall(r"```yaml\n(.*?)```", PAGE.read_text(), re.S)
    return [yaml.safe_load(b) for b in blocks]


def _restricted(job: Obj) -> Obj:
    """The job with the page's ``restricted`` fields in both pod templates."""
    (snippet, _) = _page_yaml()
    pod_context = snippet["template"]["spec"]["securityContext"]
    (container_context,) = [c["securityContext"] for c in snippet["template"]["spec"]["containers"]]
    job = copy.deepcopy(job)
    for spec in job["spec"]["mpiReplicaSpecs"].values():
        pod = spec["template"]["spec"]
        pod["securityContext"] = {**pod.get("securityContext", {}), **pod_context}
        for c in pod["containers"]:
            c["securityContext"] = {**c.get("securityContext", {}), **container_context}
    return job


def _kubeflow_pods(obj: Obj) -> list[Obj]:
    """The launcher and first worker pods the operator builds for ``obj``."""
    job = set_defaults(
        MPIJob.from_dict({**obj, "metadata": {**obj["metadata"], "namespace": "team", "uid": "u"}})
    )
    template = new_launcher_pod_template(job).template
    launcher = {"metadata": {"name": f"{job.name}-launcher", **template["metadata"]}}
    launcher |= {"apiVersion": "v1", "kind": "Pod", "spec": template["spec"]}
    return [launcher, new_worker(job, 0)]


def _t9k_pods(obj: Obj) -> list[Obj]:
    job = t9k.set_defaults(
        t9k.parse({**obj, "metadata": {**obj["metadata"], "namespace": "team", "uid": "u"}})
    )
    return [new_launcher_pod(job), new_worker_pod(job, 0)]


def _pi() -> Obj:
    return load_mpijob(EXAMPLES / "pi" / "pi.yaml")


def _host_network(job: Obj) -> Obj:
    job = copy.deepcopy(job)
    for spec in job["spec"]["mpiReplicaSpecs"].values():
        spec["template"]["spec"]["hostNetwork"] = True
    return job


def _admitted(cluster: LocalCluster, ns: str, pod: Obj) -> str:
    """Empty when a server dry run creates ``pod`` in ``ns``, else the refusal."""
    pod = copy.deepcopy(pod)
    pod["metadata"].pop("ownerReferences", None)
    pod["metadata"]["namespace"] = ns
    out = cluster.kubectl(
        "create", "--dry-run=server", "-f", "-", input=json.dumps(pod), check=False
    )
    return "" if out.returncode == 0 else out.stderr


@pytest.fixture(scope="module")
def level_namespaces(api_cluster: LocalCluster) -> Iterator[dict[str, str]]:
    names = {}
    try:
        for level in LEVELS:
            names[level] = api_cluster.create_namespace(f"pss-{level}")
            label = f"pod-security.kubernetes.io/enforce={level}"
            api_cluster.kubectl("label", "namespace", names[level], label)
        yield names
    finally:
        for name in names.values():
            api_cluster.delete_namespace(name)


def _operator_pod() -> Obj:
    (deployment,) = [
        d for d in yaml.safe_load_all(DEPLOY.read_text()) if d and d["kind"] == "Deployment"
    ]
    template = deployment["spec"]["template"]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "operator", **template["metadata"]},
        "spec": template["spec"],
    }


#: The page's table: each component's pods and the lowest level that admits them.
COMPONENTS = {
    "operator": (lambda: [_operator_pod()], "restricted"),
    "pi": (lambda: _kubeflow_pods(_pi()), "baseline"),
    "pi-restricted": (lambda: _kubeflow_pods(_restricted(_pi())), "restricted"),
    "t9k": (lambda: _t9k_pods(yaml.safe_load(T9K_PI.read_text())), "baseline"),
    "host-network": (lambda: _kubeflow_pods(_host_network(_pi())), "privileged"),
}


@pytest.mark.parametrize("component", COMPONENTS)
def test_each_component_needs_the_level_the_page_gives(
    api_cluster: LocalCluster, level_namespaces: dict[str, str], component: str
) -> None:
    build, level = COMPONENTS[component]
    above = LEVELS[LEVELS.index(level) + 1] if level != "restricted" else None
    for pod in build():
        name = pod["metadata"]["name"]
        assert _admitted(api_cluster, level_namespaces[level], pod) == "", (name, level)
        if above is not None:
            refusal = _admitted(api_cluster, level_namespaces[above], pod)
            assert f'violates PodSecurity "{above}:latest"' in refusal, (name, refusal)


def test_a_t9k_launcher_is_refused_by_restricted_for_its_init_container(
    api_cluster: LocalCluster, level_namespaces: dict[str, str]
) -> None:
    """Whatever the worker template says: the launcher's init container has no
    securityContext of its own, while the worker made from the same template passes."""
    job = yaml.safe_load(T9K_PI.read_text())
    (snippet, _) = _page_yaml()
    template = job["spec"]["worker"]["template"]["spec"]
    template["securityContext"] = snippet["template"]["spec"]["securityContext"]
    (context,) = [c["securityContext"] for c in snippet["template"]["spec"]["containers"]]
    template["containers"][0]["securityContext"] = context  # uid 1000, not the example's 0
    launcher, worker = _t9k_pods(job)
    restricted = level_namespaces["restricted"]
    assert _admitted(api_cluster, restricted, worker) == ""
    refusal = _admitted(api_cluster, restricted, launcher)
    assert re.search(r'container "wait-for-workers" must set securityContext', refusal), refusal
    assert "mpi-worker" not in refusal, refusal


def test_the_ssh_key_volume_modes() -> None:
    """0600 at /root/.ssh, the Secret volume's default (0644) elsewhere."""
    assert ssh_secret_volume("pi-ssh", "/root/.ssh")["secret"]["defaultMode"] == 0o600
    volume = ssh_secret_volume("pi-ssh", "/home/mpiuser/.ssh")
    assert "defaultMode" not in volume["secret"]
    assert [i["path"] for i in volume["secret"]["items"]] == [
        "id_rsa",
        "id_rsa.pub",
        "authorized_keys",
    ]


def _can_i(cluster: LocalCluster, ns: str, user: str, verb: str) -> bool:
    out = cluster.kubectl("auth", "can-i", verb, "secrets", "-n", ns, "--as", user, check=False)
    return out.stdout.strip() == "yes"


def _selected(cluster: LocalCluster, role: str) -> set[str]:
    """The ClusterRoles whose rules the aggregated ``role`` takes (its aggregationRule)."""
    roles = items(cluster, "/apis/rbac.authorization.k8s.io/v1/clusterroles")
    (rule,) = [r["aggregationRule"] for r in roles if r["metadata"]["name"] == role]
    return {
        r["metadata"]["name"]
        for r in roles
        for selector in rule["clusterRoleSelectors"]
        if selector["matchLabels"].items() <= (r["metadata"].get("labels") or {}).items()
    }


def test_who_can_read_the_keys(api_cluster: LocalCluster, namespace: str) -> None:
    """Kubernetes' ``view``, ``edit`` and ``admin`` are aggregated ClusterRoles, filled by
    kube-controller-manager, which this cluster shape does not run: the roles they
    aggregate are read from the server, and their sources bound and asked."""
    assert _selected(api_cluster, "view") == {"system:aggregate-to-view"}
    assert "system:aggregate-to-edit" in _selected(api_cluster, "edit")
    assert "edit" in _selected(api_cluster, "admin")
    for source in ("view", "edit"):
        api_cluster.kubectl(
            "create",
            "rolebinding",
            source,
            "-n",
            namespace,
            f"--clusterrole=system:aggregate-to-{source}",
            f"--user={source}-user",
        )
    verbs = ("get", "list", "watch")
    assert not any(_can_i(api_cluster, namespace, "view-user", v) for v in verbs)
    assert all(_can_i(api_cluster, namespace, "edit-user", v) for v in verbs)
    objs = [d for d in yaml.safe_load_all(DEPLOY.read_text()) if d]
    roles = {o["metadata"]["name"]: o for o in objs if o["kind"] == "ClusterRole"}
    for name in ("kubeflow-mpijobs-admin", "kubeflow-mpijobs-edit", "kubeflow-mpijobs-view"):
        for rule in roles[name].get("rules") or []:
            assert rule["resources"] != ["secrets"] and rule["apiGroups"] == ["kubeflow.org"]
    secrets = [r for r in roles["mpi-operator"]["rules"] if "secrets" in r["resources"]]
    assert [r["verbs"] for r in secrets] == [["list", "watch", "create", "update"]]


def test_the_network_policy_applies_and_selects_the_jobs_pods(
    api_cluster: LocalCluster, namespace: str
) -> None:
    (policy,) = [d for d in _page_yaml() if d.get("kind") == "NetworkPolicy"]
    text = PAGE.read_text()
    assert "kubectl apply -n <namespace> -f pi-mpi.yaml" in text
    out = api_cluster.kubectl(
        "apply", "--dry-run=server", "-n", namespace, "-f", "-", input=yaml.safe_dump(policy)
    )
    assert "networkpolicy.networking.k8s.io/pi-mpi created (server dry run)" in out.stdout
    spec = policy["spec"]
    selector = spec["podSelector"]["matchLabels"]
    # Every pod the operator builds for the pi example is selected, and is a peer.
    for pod in _kubeflow_pods(_pi()):
        assert selector.items() <= pod["metadata"]["labels"].items(), pod["metadata"]
    assert spec["ingress"] == [{"from": [{"podSelector": {"matchLabels": selector}}]}]
    assert spec["egress"][0] == {"to": [{"podSelector": {"matchLabels": selector}}]}
    # The T9k label the page names is the one on the T9k pods.
    for pod in _t9k_pods(yaml.safe_load(T9K_PI.read_text())):
        assert pod["metadata"]["labels"]["batch.tensorstack.dev/job-name"] == "pi-t9k"
    assert "`batch.tensorstack.dev/job-name: <job>`" in text


def test_pi_runs_restricted_and_its_key_secret_lives_and_dies_with_it(
    real_cluster: LocalCluster, real_ns: str, operator: OperatorProcess
) -> None:
    """The pi example with the page's restricted fields, in a namespace enforcing
    ``restricted``, on the real node, on an image whose sshd has no file capability (the
    project's; the public image's has one, which restricted's fields cannot execute, as
    the page says); its Secret as the page says, kept once the job finished, then
    deleted with the job by the garbage collector."""
    real_cluster.kubectl(
        "label", "namespace", real_ns, "pod-security.kubernetes.io/enforce=restricted"
    )
    job = _restricted(_pi())
    for spec in job["spec"]["mpiReplicaSpecs"].values():
        for container in spec["template"]["spec"]["containers"]:
            container["image"] = MPI_IMAGES["openmpi"]
    _, log = run_kubeflow(real_cluster, real_ns, job, operator)
    assert PI_RESULT.search(log), log
    status, secret = real_cluster.request("GET", f"/api/v1/namespaces/{real_ns}/secrets/pi-ssh")
    assert status == 200, secret
    assert secret["type"] == "kubernetes.io/ssh-auth"
    assert sorted(secret["data"]) == ["ssh-privatekey", "ssh-publickey"]
    assert secret["metadata"]["labels"]["training.kubeflow.org/operator-name"] == "mpi-operator"
    (owner,) = secret["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["controller"]) == ("MPIJob", "pi", True)
    private = base64.b64decode(secret["data"]["ssh-privatekey"]).decode()
    assert private.startswith("-----BEGIN EC PRIVATE KEY-----"), private[:40]
    public = base64.b64decode(secret["data"]["ssh-publickey"]).decode()
    assert public.startswith("ecdsa-sha2-nistp521 "), public
    real_cluster.kubectl("delete", "mpijob", "-n", real_ns, "pi", "--ignore-not-found")
    wait_until(
        lambda: (
            real_cluster.request("GET", f"/api/v1/namespaces/{real_ns}/secrets/pi-ssh")[0] == 404
        ),
        60,
        "the Secret pi-ssh deleted with its job",
    )
