"""The examples of examples/v2beta1: valid for the API server, and each runs to
Succeeded with the operator on the full local cluster. KWOK runs no containers:
the test adds the KWOK annotation that ends the launcher after 3s (the example
files themselves carry none). Then every example of examples/ as written on the real
node, where its program really runs, or skipped with the reason it cannot run here
(``make test`` lists the skips and their reasons: pytest's ``-ra``)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from examples_support import (
    ALL_EXAMPLES,
    EXAMPLES,
    REAL_NODE_SKIPS,
    ROOT,
    apply,
    docs,
    example_id,
    items,
    kwok_example,
    namespaced_operator,
    real_node_operator,
    wait_for_condition,
)
from placement_support import assert_placement, kubeflow_hosts
from real_node_support import (
    PI_RESULT,
    RUN_TIMEOUT,
    assert_sgd_trained,
    explain,
    launcher_log,
    launcher_pod,
    run_kubeflow,
)

from devcluster import ANNOTATION_PREFIX, LocalCluster, builds
from devcluster.crds import crds_installed
from devcluster.nodeconfig import containerd_name
from devcluster.sample_jobs import on_real_node
from devcluster.testing import OperatorProcess, wait_until

Obj = dict[str, Any]
T9K_CRD = ROOT / "crd" / "t9k" / "batch.tensorstack.dev_mpijobs.yaml"

EXAMPLE_FILES = sorted(EXAMPLES.rglob("*.yaml"))
EXPECTED = {
    "pi/pi.yaml",
    "pi/pi-intel.yaml",
    "pi/pi-mpich.yaml",
    "pi/pi-gang-volcano.yaml",
    "pi/pi-failure-policy.yaml",
    "pi/pi-restart-failed.yaml",
    "pi/pi-gang-workload-api.yaml",
    "pi/pi-ttl-mpijob.yaml",
    "tensorflow-benchmarks/tensorflow-benchmarks.yaml",
    "horovod/horovod.yaml",
    "horovod/horovod-elastic.yaml",
    "deepspeed/deepspeed.yaml",
    "nccl-tests/nccl-tests.yaml",
    "mpi4py-sgd/sgd.yaml",
    "mpi4py-sgd/elastic.yaml",
}
# Every example folder builds its image; pi's MPICH and Intel MPI images have their own.
DOCKERFILES = {
    "pi/Dockerfile",
    "pi/mpich.Dockerfile",
    "pi/intel.Dockerfile",
    "tensorflow-benchmarks/Dockerfile",
    "horovod/Dockerfile",
    "deepspeed/Dockerfile",
    "nccl-tests/Dockerfile",
    "mpi4py-sgd/Dockerfile",
}


def _id(path: Path) -> str:
    return str(path.relative_to(EXAMPLES))


def test_the_examples_are_there() -> None:
    assert {_id(p) for p in EXAMPLE_FILES} == EXPECTED
    assert (EXAMPLES / "pi" / "pi.cc").is_file()
    found = {_id(p) for p in EXAMPLES.rglob("*Dockerfile")}
    assert found == DOCKERFILES


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=_id)
def test_example_has_no_test_only_annotations(path: Path) -> None:
    assert ANNOTATION_PREFIX not in path.read_text()


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=_id)
def test_example_passes_a_server_dry_run(
    api_cluster: LocalCluster, namespace: str, path: Path
) -> None:
    out = api_cluster.kubectl("apply", "--dry-run=server", "-n", namespace, "-f", str(path))
    (job,) = docs(path)
    assert f"mpijob.kubeflow.org/{job['metadata']['name']} created (server dry run)" in out.stdout


@pytest.fixture
def operator(
    full_cluster: LocalCluster, full_namespace: str, tmp_path: Path
) -> Iterator[OperatorProcess]:
    with namespaced_operator(full_cluster, full_namespace, tmp_path) as proc:
        yield proc


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=_id)
def test_example_runs_to_success(
    full_cluster: LocalCluster, full_namespace: str, operator: OperatorProcess, path: Path
) -> None:
    ns = full_namespace
    job = kwok_example(path)
    name = job["metadata"]["name"]
    apply(full_cluster, ns, job)
    done = wait_for_condition(full_cluster, ns, name, "Succeeded", operator)
    launcher = done["status"]["replicaStatuses"]["Launcher"]
    assert launcher.get("succeeded") == 1
    pods = items(full_cluster, f"/api/v1/namespaces/{ns}/pods")
    # Without --gang-scheduling the gang example's schedulingPolicy is ignored: the
    # default scheduler places its pods and no PodGroup is made.
    assert all(p["spec"].get("schedulerName") == "default-scheduler" for p in pods)
    podgroups = f"/apis/scheduling.volcano.sh/v1beta1/namespaces/{ns}/podgroups"
    assert items(full_cluster, podgroups) == []
    config = items(full_cluster, f"/api/v1/namespaces/{ns}/configmaps")
    hostfiles = [c for c in config if c["metadata"]["name"] == f"{name}-config"]
    assert hostfiles and "hostfile" in hostfiles[0]["data"]


def test_pi_program_compiles_and_runs(tmp_path: Path) -> None:
    builds.wait_for("mpi")
    if shutil.which("mpicxx") is None:
        # make test installs Open MPI where it can (hack/install-mpi.sh); CI requires it.
        if os.environ.get("MPI_OPERATOR_REQUIRE_MPI") == "1":
            pytest.fail("no mpicxx although MPI_OPERATOR_REQUIRE_MPI=1 (hack/install-mpi.sh)")
        pytest.skip("no MPI compiler (mpicxx) here: hack/install-mpi.sh")
    binary = tmp_path / "pi"
    subprocess.run(["mpicxx", "-O2", "-o", str(binary), str(EXAMPLES / "pi" / "pi.cc")], check=True)
    command = [str(binary)]
    if shutil.which("mpirun"):
        command = ["mpirun", "-n", "2", "--oversubscribe", *command]
    env = {**os.environ, "OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
    out = subprocess.run(command, check=True, capture_output=True, text=True, timeout=120, env=env)
    if command[0] == "mpirun":
        assert "2 ranks" in out.stdout
    value = float(out.stdout.split("pi is approximately ")[1].split()[0])
    assert abs(value - 3.14159) < 0.01


def test_example_yaml_uses_the_pi_image_layout() -> None:
    """The pi examples run what pi/Dockerfile builds: /home/mpiuser/pi and sshd on 2222."""
    dockerfile = (EXAMPLES / "pi" / "Dockerfile").read_text()
    assert "/home/mpiuser/pi" in dockerfile and "Port 2222" in dockerfile
    for path in EXAMPLES.glob("pi/*.yaml"):
        (job,) = yaml.safe_load_all(path.read_text())
        specs = job["spec"]["mpiReplicaSpecs"]
        launcher = specs["Launcher"]["template"]["spec"]["containers"][0]
        command = [*(launcher.get("command") or []), *(launcher.get("args") or [])]
        assert "/home/mpiuser/pi" in command, path
        assert job["spec"]["sshAuthMountPath"] == "/home/mpiuser/.ssh"


def _launcher_command(path: Path) -> list[str]:
    (job,) = docs(path)
    container = job["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]
    return [*(container.get("command") or []), *(container.get("args") or [])]


@pytest.mark.parametrize(
    ("example", "needs"),
    [
        ("horovod/horovod.yaml", ["/home/mpiuser/train.py"]),
        ("horovod/horovod-elastic.yaml", ["/home/mpiuser/train.py"]),
        ("deepspeed/deepspeed.yaml", ["/home/mpiuser/train.py"]),
        ("nccl-tests/nccl-tests.yaml", ["/opt/nccl-tests/all_reduce_perf"]),
        ("mpi4py-sgd/sgd.yaml", ["/home/mpiuser/sgd.py"]),
        ("mpi4py-sgd/elastic.yaml", ["/home/mpiuser/elastic.py"]),
    ],
)
def test_framework_examples_run_what_their_dockerfile_builds(
    example: str, needs: list[str]
) -> None:
    """Each launcher runs a program its folder's Dockerfile puts in the image, and its
    workers run that image's unprivileged sshd as the pi image does."""
    path = EXAMPLES / example
    folder = path.parent
    dockerfile = (folder / "Dockerfile").read_text()
    assert "Port 2222" in dockerfile and "/home/mpiuser/.sshd_config" in dockerfile
    command = _launcher_command(path)
    for program in needs:
        assert program in command
        name = program.rsplit("/", 1)[1]
        if program.startswith("/home/mpiuser/"):
            assert (folder / name).is_file() and name in dockerfile
        else:
            assert "/opt/nccl-tests/" in dockerfile and "MPI=1" in dockerfile
    (job,) = docs(path)
    assert job["spec"]["sshAuthMountPath"] == "/home/mpiuser/.ssh"
    worker = job["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    assert worker["command"] == ["/usr/sbin/sshd"]
    assert worker["args"] == ["-De", "-f", "/home/mpiuser/.sshd_config"]
    images = {
        c["image"]
        for r in job["spec"]["mpiReplicaSpecs"].values()
        for c in r["template"]["spec"]["containers"]
    }
    assert len(images) == 1


def test_elastic_horovod_discovers_hosts_with_the_operators_script() -> None:
    """horovodrun's discovery script is the one the operator's ConfigMap mounts (0555)
    at /etc/mpi/discover_hosts.sh, which lists the running workers."""
    command = _launcher_command(EXAMPLES / "horovod" / "horovod-elastic.yaml")
    assert command[0] == "horovodrun"
    at = command.index("--host-discovery-script")
    assert command[at + 1] == "/etc/mpi/discover_hosts.sh"
    assert "--elastic" in command and "--min-np" in command and "--max-np" in command
    (job,) = docs(EXAMPLES / "horovod" / "horovod-elastic.yaml")
    policy = job["spec"]["elasticPolicy"]
    assert command[command.index("--min-np") + 1] == str(policy["minReplicas"])
    assert command[command.index("--max-np") + 1] == str(policy["maxReplicas"])


def test_the_elastic_driver_discovers_hosts_with_the_operators_script() -> None:
    """elastic.py's driver reads the operator's /etc/mpi/discover_hosts.sh (its default),
    within the job's elastic policy."""
    (job,) = docs(EXAMPLES / "mpi4py-sgd" / "elastic.yaml")
    command = _launcher_command(EXAMPLES / "mpi4py-sgd" / "elastic.yaml")
    assert command[:3] == ["python3", "/home/mpiuser/elastic.py", "driver"]
    assert "--discover" not in command
    policy = job["spec"]["elasticPolicy"]
    assert command[command.index("--min-np") + 1] == str(policy["minReplicas"])
    assert command[command.index("--max-np") + 1] == str(policy["maxReplicas"])
    source = (EXAMPLES / "mpi4py-sgd" / "elastic.py").read_text()
    assert '"/etc/mpi/discover_hosts.sh"' in source


def test_framework_programs_compile() -> None:
    programs = (
        "horovod/train.py",
        "deepspeed/train.py",
        "mpi4py-sgd/sgd.py",
        "mpi4py-sgd/elastic.py",
    )
    for program in programs:
        compile((EXAMPLES / program).read_text(), program, "exec")
    json.loads((EXAMPLES / "deepspeed" / "ds_config.json").read_text())


# -- each example as written, on the real node --------------------------------------


def _node_has(cluster: LocalCluster, image: str) -> bool:
    """Whether the real node's containerd has ``image`` (the name as the example gives it,
    resolved as the kubelet resolves it), so that the kubelet pulls nothing."""
    assert cluster.node is not None
    socket = str(cluster.node.layout.containerd_socket)
    listed = subprocess.run(
        ["ctr", "--address", socket, "-n", "k8s.io", "images", "ls", "-q"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout.split()
    return containerd_name(image) in listed


def _images(job: Obj) -> set[str]:
    specs = job["spec"].get("mpiReplicaSpecs") or {"Worker": job["spec"]["worker"]}
    return {c["image"] for r in specs.values() for c in r["template"]["spec"]["containers"]}


def _run_t9k(cluster: LocalCluster, ns: str, job: Obj, proc: OperatorProcess) -> str:
    """The T9k MPIJob on the real node until its phase is Succeeded; the launcher's log."""
    name = job["metadata"]["name"]
    apply(cluster, ns, on_real_node(job))
    path = f"/apis/batch.tensorstack.dev/v1beta1/namespaces/{ns}/mpijobs/{name}"

    def finished() -> Obj | None:
        assert proc.poll() is None, proc.output()[-4000:]
        _, body = cluster.request("GET", path)
        status: Obj = body.get("status") or {}
        return status if status.get("phase") in ("Succeeded", "Failed") else None

    try:
        status = wait_until(finished, RUN_TIMEOUT, f"T9k mpijob {name} finished")
        assert status["phase"] == "Succeeded", status
    except BaseException:
        print(explain(cluster, ns))
        raise
    return launcher_log(cluster, ns, name)


@pytest.mark.parametrize("path", ALL_EXAMPLES, ids=example_id)
def test_example_runs_as_written_on_the_real_node(
    request: pytest.FixtureRequest, path: Path
) -> None:
    """The example's file, with the image it names, on the real node (only its
    nodeSelector and toleration added, which the node's taint asks for), run by the
    operator to Succeeded, and its launcher printed the program's result. The public
    images it names are there built as their Dockerfiles build them, the project's under
    the project's names. An example that cannot run here says why in its skip reason."""
    reason = REAL_NODE_SKIPS.get(example_id(path))
    if reason:
        pytest.skip(f"{example_id(path)}: {reason}")
    cluster: LocalCluster = request.getfixturevalue("real_cluster")
    ns: str = request.getfixturevalue("real_ns")
    tmp_path: Path = request.getfixturevalue("tmp_path")
    (job,) = docs(path)
    images = _images(job)
    missing = [image for image in images if not _node_has(cluster, image)]
    assert not missing, f"the real node has no image {missing} (make node-images)"
    name = job["metadata"]["name"]
    with contextlib.ExitStack() as stack:
        if job["apiVersion"].startswith("batch.tensorstack.dev/"):
            stack.enter_context(crds_installed(cluster, (T9K_CRD,)))
        proc = stack.enter_context(real_node_operator(cluster, ns, tmp_path))
        if job["apiVersion"].startswith("batch.tensorstack.dev/"):
            log = _run_t9k(cluster, ns, job, proc)
            hosts = [f"{name}-worker-{i}" for i in range(job["spec"]["worker"]["replicas"])]
            slots = 1
        else:
            _, log = run_kubeflow(cluster, ns, job, proc)
            hosts, slots = kubeflow_hosts(job)
        launcher = launcher_pod(cluster, ns, name)
        assert {c["image"] for c in launcher["spec"]["containers"]} <= images
        assert_placement(cluster, ns, name, log, hosts=hosts, slots=slots)
        if path.parent.name == "mpi4py-sgd":
            assert_sgd_trained(log, ranks=2)
        else:
            assert PI_RESULT.search(log), log
