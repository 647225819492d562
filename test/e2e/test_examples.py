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
import threading
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from examples_support import (
    ALL_EXAMPLES,
    EXAMPLES,
    REAL_NODE_SKIPS,
    apply,
    docs,
    example_id,
    items,
    kwok_example,
    namespaced_operator,
    wait_for_condition,
)
from placement_support import assert_placement, kubeflow_hosts
from real_examples_support import (
    CONCURRENT_RUN_TIMEOUT,
    ExampleRun,
    all_examples_running,
    images,
    is_t9k,
    raise_if_stopped,
)
from real_node_support import PI_RESULT, assert_sgd_trained

from devcluster import ANNOTATION_PREFIX, LocalCluster, builds
from devcluster.testing import OperatorProcess

Obj = dict[str, Any]
EXAMPLE_FILES = sorted(EXAMPLES.rglob("*.yaml"))
#: One test's wait for its example's run on KWOK (wait_for_condition's own deadline is
#: 90 s; all the runs go at once).
KWOK_WAIT = 120
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


@dataclass
class KwokRun:
    """An example's run on KWOK's nodes: once it Succeeded, its job and what its
    namespace held at that moment (a TTL may delete the job before its test reads it)."""

    job: Obj
    pods: list[Obj]
    podgroups: list[Obj]
    configmaps: list[Obj]


def _run_on_kwok(
    cluster: LocalCluster, ns: str, path: Path, proc: OperatorProcess, stop: threading.Event
) -> KwokRun:
    job = kwok_example(path)
    name = job["metadata"]["name"]
    apply(cluster, ns, job)
    done = wait_for_condition(
        cluster, ns, name, "Succeeded", proc, each_poll=raise_if_stopped(stop)
    )
    return KwokRun(
        job=done,
        pods=items(cluster, f"/api/v1/namespaces/{ns}/pods"),
        podgroups=items(cluster, f"/apis/scheduling.volcano.sh/v1beta1/namespaces/{ns}/podgroups"),
        configmaps=items(cluster, f"/api/v1/namespaces/{ns}/configmaps"),
    )


@pytest.fixture(scope="module")
def kwok_runs(
    full_cluster: LocalCluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[Path, Future[KwokRun]]]:
    """Every example running on KWOK's nodes at once, a namespace each, one operator
    watching them all (stopped cleanly after the module's last test: SIGTERM, exit 0);
    each test waits for its own example's run."""
    stop = threading.Event()
    with contextlib.ExitStack() as stack:
        namespaces = {}
        for path in EXAMPLE_FILES:
            ns = full_cluster.create_namespace(f"example-{path.stem}"[:40])
            stack.callback(full_cluster.delete_namespace, ns)
            namespaces[path] = ns
        proc = stack.enter_context(
            namespaced_operator(
                full_cluster, ",".join(namespaces.values()), tmp_path_factory.mktemp("kwok")
            )
        )
        pool = ThreadPoolExecutor(max_workers=len(namespaces), thread_name_prefix="kwok")
        stack.callback(pool.shutdown, wait=True)
        stack.callback(stop.set)
        yield {
            path: pool.submit(_run_on_kwok, full_cluster, ns, path, proc, stop)
            for path, ns in namespaces.items()
        }


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=_id)
def test_example_runs_to_success(kwok_runs: dict[Path, Future[KwokRun]], path: Path) -> None:
    run = kwok_runs[path].result(timeout=KWOK_WAIT)
    name = run.job["metadata"]["name"]
    launcher = run.job["status"]["replicaStatuses"]["Launcher"]
    assert launcher.get("succeeded") == 1
    # Without --gang-scheduling the gang example's schedulingPolicy is ignored: the
    # default scheduler places its pods and no PodGroup is made.
    assert all(p["spec"].get("schedulerName") == "default-scheduler" for p in run.pods)
    assert run.podgroups == []
    hostfiles = [c for c in run.configmaps if c["metadata"]["name"] == f"{name}-config"]
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
#
# All at once (real_examples_support): each example's run waits on pod starts, sshd,
# DNS and its image's entry point, hardly on the CPU, so the runs overlap, as many as
# the node's memory holds; each test waits for its own example's run and checks it.

RUNNABLE = [p for p in ALL_EXAMPLES if example_id(p) not in REAL_NODE_SKIPS]
#: One test's wait for its run: its own deadlines (to succeed, then 60 s for its pods
#: to go) once the node's memory holds it, behind at most every other run.
RUN_WAIT = (CONCURRENT_RUN_TIMEOUT + 60) * len(RUNNABLE)


@pytest.fixture(scope="module")
def real_examples(
    real_cluster: LocalCluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, ExampleRun]]:
    """Every runnable example running on the real node (started by the first test that
    asks), stopped and cleaned up after the module's last test."""
    with all_examples_running(real_cluster, RUNNABLE, tmp_path_factory.mktemp("examples")) as runs:
        yield runs


@pytest.mark.host_wide  # the real node, asked for only by the examples that run
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
    run: ExampleRun = request.getfixturevalue("real_examples")[example_id(path)]
    assert not run.missing, f"the real node has no image {run.missing} (make node-images)"
    done = run.result(timeout=RUN_WAIT)
    case = run.case
    print(f"{example_id(path)}: {case.queued_s:.0f}s queued, Succeeded {case.ran_s:.0f}s later")
    job, name = run.job, run.name
    if is_t9k(job):
        hosts = [f"{name}-worker-{i}" for i in range(job["spec"]["worker"]["replicas"])]
        slots = 1
    else:
        hosts, slots = kubeflow_hosts(job)
    assert {c["image"] for c in done.launcher["spec"]["containers"]} <= images(job)
    assert_placement(
        cluster, run.namespace, name, done.log, hosts=hosts, slots=slots, hostfile=done.hostfile
    )
    if path.parent.name == "mpi4py-sgd":
        assert_sgd_trained(done.log, ranks=2)
    else:
        assert PI_RESULT.search(done.log), done.log
