"""RBAC: the operator needs every right the manifests grant it, and nothing more.

On a dedicated full local cluster whose API server audits every ServiceAccount and
runs the ``OwnerReferencesPermissionEnforcement`` admission plugin (with it, a child
whose controller reference has blockOwnerDeletion may only be made by whoever may
update the owner's finalizers), the real ``mpi-operator`` process runs under the
token of the manifests' ServiceAccount, bound to exactly the RBAC objects of
deploy/v2beta1/mpi-operator.yaml (the ClusterRole ``mpi-operator`` and the
leader-election Role), cluster-wide with its Lease in ``mpi-operator`` as the
Deployment runs it. The ClusterRole and the Role are expanded into
(apiGroup, resource, verb) triples.

The job suite (one namespace per scenario):

* ``pi``: a 2-worker job to Succeeded; cleanPodPolicy Running deletes the workers
  (pods create/delete, every informer's list/watch, mpijobs/status update, events
  create, the children's create, configmaps update of the hostfile; leases
  get/create/update: the Lease is deleted before every run, renewed every 0.5 s);
* ``suspend``: a running job suspended, then resumed (jobs update; jobs/status
  update: the started launcher Job's startTime is cleared before its template is;
  the launcher Job is managed by nobody here, so the Job controller cannot clear
  startTime first and make that write unnecessary);
* ``adopt``: the MPIJob's Service, ConfigMap, Secret, launcher Job and worker pod
  made beforehand without the operator's label (as an older operator would), with
  a drifted Service selector, a stale hostfile and a Secret missing its public key:
  create answers AlreadyExists, the operator gets and patches (adopts) each, then
  updates the three drifted ones (pods get: a worker pod is only read back);
* ``clash``: a foreign Service has the job's name: the ErrResourceExists event
  repeats with every retry, and the recorder PATCHes its count (events patch);
* ``volcano`` (``--gang-scheduling=volcano``): a gang job to Succeeded (a stand-in
  binds the pods; its PodGroup is deleted when it ends) and a second job whose
  PodGroup exists beforehand with a wrong minMember (podgroups update;
  priorityclasses list/watch). The PodGroup cache is not filtered by label, so a
  PodGroup is never adopted: get and patch of podgroups, which only a create racing
  the cache could use (and which a retry from the cache replaces), are not granted;
* ``coscheduling`` (``--gang-scheduling=scheduler-plugins-scheduler``): the same
  with the scheduler-plugins PodGroups (scheduling.x-k8s.io).

Proofs:

1. granted == used: every granted triple appears in the audit log as a successful
   request of the operator's user, and every request of it is granted (or needs no
   role: access reviews, discovery). One exception: ``update mpijobs/finalizers`` is
   never a request (the admission plugin checks it when a child is created; proof 2
   always covers it). No request is denied, not even the start-up check's (it asks a
   SelfSubjectAccessReview before reading the lock namespace).
2. each grant is needed: for each granted triple (full mode: all of them; short
   mode: :data:`SHORT_REMOVALS`, one per resource kind), the role is applied with
   just that verb removed and the scenario that needs it runs again; it must fail:
   the operator refuses to start naming that permission, or the audit log shows
   the operator's request for that very triple denied (for mpijobs/finalizers: a
   child's create refused by the admission plugin). Any other failure (a crash, a
   missed deadline) is not counted as proof and fails the test. Failures are
   detected by polling the audit log, so each run takes a second or two.

Figures on the ``CHAOS`` line: rules and triples granted, triples used, removals
tried and removals that made the suite fail (equal, or the test fails).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator

import pytest
import yaml
from chaos_support import FULL, list_items, report, started
from examples_support import VolcanoStandIn, service_account_kubeconfig
from rbac_support import (
    ADMISSION_ONLY,
    COSCHEDULER,
    NEEDS_NO_ROLE,
    OPERATOR_LABEL,
    OPERATOR_NS,
    OPERATOR_USER,
    SHORT_REMOVALS,
    STAND_IN,
    Binder,
    Rbac,
    Run,
    SuiteFailed,
    Triple,
    create,
    denial,
    event_triple,
    get,
    labelled,
    merge_patch,
    mpijob_path,
    parsed,
    rbac_objects,
    roles,
    succeeded,
    triples,
    workers_gone,
)

from mpi_operator.builders.config import new_config_map
from mpi_operator.builders.launcher import new_launcher_job
from mpi_operator.builders.podgroup import GangScheduling, new_pod_group
from mpi_operator.builders.secret import new_ssh_auth_secret
from mpi_operator.builders.service import new_job_service
from mpi_operator.builders.worker import new_worker
from mpi_operator.localcluster import FULL as FULL_SHAPE
from mpi_operator.localcluster import LocalCluster
from mpi_operator.localcluster.audit import SERVICE_ACCOUNTS, audit_code
from mpi_operator.localcluster.sample_jobs import pi_mpijob
from mpi_operator.server.testing import wait_until

pytestmark = [pytest.mark.full_cluster, pytest.mark.timeout(1800)]


@pytest.fixture(scope="module")
def rbac(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rbac]:
    """A dedicated full cluster (audit + OwnerReferencesPermissionEnforcement) with the
    deploy file's ServiceAccount and roles applied; always stopped."""
    tmp = tmp_path_factory.mktemp("rbac")
    cluster = LocalCluster(
        tmp / "cluster",
        FULL_SHAPE,
        nodes=2,
        audit_groups=[SERVICE_ACCOUNTS],
        admission_plugins=["OwnerReferencesPermissionEnforcement"],
    )
    with started(cluster):
        objects = rbac_objects()
        cluster.kubectl("apply", "--server-side", "-f", "-", input=yaml.safe_dump_all(objects))
        wait_until(
            lambda: get(cluster, f"/api/v1/namespaces/{OPERATOR_NS}/serviceaccounts/mpi-operator"),
            30,
            "ServiceAccount mpi-operator",
        )
        kubeconfig = service_account_kubeconfig(
            cluster, OPERATOR_NS, "mpi-operator", tmp / "sa.kubeconfig"
        )
        state = Rbac(cluster, tmp, objects, kubeconfig)
        for role in roles(objects):
            for t in triples(role):
                state.granted.add(t)
                state.role_of[t] = role
        yield state


# -- the scenarios: set-up before the operator starts, then driving to the goal ------------

Drive = Callable[[], None]


def pi(run: Run) -> Drive:
    ns = run.namespace("rbac-pi")
    create(run.cluster, mpijob_path(ns), pi_mpijob("pi", workers=2))

    def drive() -> None:
        run.wait(succeeded(run, ns, "pi"), "pi Succeeded")
        run.wait(workers_gone(run, ns, "pi"), "pi's workers deleted (cleanPodPolicy)")

    return drive


def suspend(run: Run) -> Drive:
    """The launcher Job is made beforehand, as the operator would, but managed by
    nobody (``spec.managedBy``) and given a startTime, so that the Job controller
    never clears it: resuming must clear it through jobs/status, every time."""
    c, ns = run.cluster, run.namespace("rbac-suspend")
    obj = create(c, mpijob_path(ns), pi_mpijob("pause", workers=1, launcher_exit=None))
    launcher = new_launcher_job(parsed(obj)).job
    launcher["spec"]["managedBy"] = STAND_IN
    path = f"/apis/batch/v1/namespaces/{ns}/jobs"
    create(c, path, launcher)
    path += "/pause-launcher"
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    merge_patch(c, f"{path}/status", {"status": {"startTime": started}})

    def launcher_suspended(value: bool) -> Callable[[], bool]:
        def check() -> bool:
            job = get(c, path) or {}
            return job.get("spec", {}).get("suspend") is value

        return check

    def drive() -> None:
        merge_patch(c, mpijob_path(ns, "pause"), {"spec": {"runPolicy": {"suspend": True}}})
        run.wait(launcher_suspended(True), "the launcher Job suspended")
        merge_patch(c, mpijob_path(ns, "pause"), {"spec": {"runPolicy": {"suspend": False}}})
        run.wait(launcher_suspended(False), "the launcher Job resumed")
        job = get(c, path) or {}
        assert not job.get("status", {}).get("startTime"), job.get("status")

    return drive


def adopt(run: Run) -> Drive:
    c, ns = run.cluster, run.namespace("rbac-adopt")
    obj = create(c, mpijob_path(ns), pi_mpijob("adopt", workers=1, launcher_exit=None))
    job = parsed(obj)
    service = new_job_service(job)
    service["spec"]["selector"] = {"drifted": "yes"}
    config = new_config_map(job, 1)
    config["data"] = {"hostfile": "stale\n"}
    secret = new_ssh_auth_secret(job)
    del secret["data"]["ssh-publickey"]
    launcher, worker = new_launcher_job(job).job, new_worker(job, 0)
    for child in (service, config, secret, launcher, worker):
        # As an older operator made them: invisible to the label-filtered caches.
        (child["metadata"].get("labels") or {}).pop(OPERATOR_LABEL, None)
    base = f"/api/v1/namespaces/{ns}"
    create(c, f"{base}/services", service)
    create(c, f"{base}/configmaps", config)
    create(c, f"{base}/secrets", secret)
    create(c, f"/apis/batch/v1/namespaces/{ns}/jobs", launcher)
    create(c, f"{base}/pods", worker)

    def done() -> bool:
        svc = get(c, f"{base}/services/adopt")
        cm = get(c, f"{base}/configmaps/adopt-config")
        sec = get(c, f"{base}/secrets/adopt-ssh")
        launcher = get(c, f"/apis/batch/v1/namespaces/{ns}/jobs/adopt-launcher")
        return (
            all(map(labelled, (svc, cm, sec, launcher)))
            and svc is not None
            and "drifted" not in svc["spec"]["selector"]
            and cm is not None
            and cm["data"].get("hostfile") != "stale\n"
            and sec is not None
            and "ssh-publickey" in sec["data"]
        )

    def drive() -> None:
        run.wait(done, "the children adopted and repaired")

    return drive


def clash(run: Run) -> Drive:
    c, ns = run.cluster, run.namespace("rbac-clash")
    foreign = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "clash"},
        "spec": {"clusterIP": "None", "selector": {"app": "someone-else"}},
    }
    create(c, f"/api/v1/namespaces/{ns}/services", foreign)
    create(c, mpijob_path(ns), pi_mpijob("clash", workers=1))

    def repeated() -> bool:
        events = list_items(c, f"/api/v1/namespaces/{ns}/events")
        return any(
            e.get("reason") == "ErrResourceExists" and int(e.get("count") or 1) >= 2 for e in events
        )

    def drive() -> None:
        run.wait(repeated, "a repeated ErrResourceExists event (count >= 2)")

    return drive


def _gang(run: Run, gang: GangScheduling, plural_path: str, prefix: str) -> Drive:
    c, ns = run.cluster, run.namespace(prefix)
    create(c, mpijob_path(ns), pi_mpijob("gang", workers=2))
    obj = create(c, mpijob_path(ns), pi_mpijob("drift", workers=1, launcher_exit=None))
    group = new_pod_group(parsed(obj), gang, {})
    want = group["spec"]["minMember"]
    group["spec"]["minMember"] = 99
    groups = plural_path.format(ns=ns)
    create(c, groups, group)
    binder: Callable[[], None] = (
        VolcanoStandIn(c, ns) if gang.scheduler_name == "volcano" else Binder(c, ns, COSCHEDULER)
    )

    def drive() -> None:
        def gang_done() -> bool:
            binder()
            return succeeded(run, ns, "gang")()

        run.wait(gang_done, "the gang job Succeeded")
        run.wait(lambda: get(c, f"{groups}/gang") is None, "the finished job's PodGroup deleted")

        def repaired() -> bool:
            pg = get(c, f"{groups}/drift")
            return pg is not None and pg["spec"]["minMember"] == want

        run.wait(repaired, "the drifted PodGroup repaired")

    return drive


def volcano(run: Run) -> Drive:
    return _gang(
        run,
        GangScheduling.volcano(),
        "/apis/scheduling.volcano.sh/v1beta1/namespaces/{ns}/podgroups",
        "rbac-volcano",
    )


def coscheduling(run: Run) -> Drive:
    return _gang(
        run,
        GangScheduling.scheduler_plugins(COSCHEDULER),
        "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/{ns}/podgroups",
        "rbac-cosched",
    )


Scenario = Callable[[Run], Drive]
#: The children the ``adopt`` scenario finds drifted and updates.
CHILDREN = ("services", "configmaps", "secrets")

#: The operator's flags for each group of scenarios (one process a group).
GROUPS: dict[str, tuple[tuple[str, ...], list[Scenario]]] = {
    "plain": ((), [pi, suspend, adopt, clash]),
    "volcano": (("--gang-scheduling=volcano",), [volcano]),
    "coscheduling": ((f"--gang-scheduling={COSCHEDULER}",), [coscheduling]),
}


def scenario_for(t: Triple) -> tuple[str, Scenario]:
    """The one scenario that needs ``t`` (the cheapest, when several do)."""
    group, resource, verb = t
    if group == "scheduling.volcano.sh" or resource == "priorityclasses":
        return "volcano", volcano
    if group == "scheduling.x-k8s.io":
        return "coscheduling", coscheduling
    if resource == "events" and verb == "patch":
        return "plain", clash
    if resource in ("jobs", "jobs/status") and verb == "update":
        return "plain", suspend
    if verb in ("get", "patch") or (verb == "update" and resource in CHILDREN):
        return "plain", adopt
    return "plain", pi


def run_group(rbac: Rbac, name: str, scenarios: list[Scenario], graceful: bool) -> Run:
    flags = GROUPS[name][0]
    run = Run(rbac, flags, name)
    try:
        drives = [s(run) for s in scenarios]
        run.start()
        for drive in drives:
            drive()
    except (AssertionError, TimeoutError):
        print(f"--- operator of {name} ---\n{run.log_tail()}")
        raise
    finally:
        run.stop(graceful)
    return run


# -- the tests -----------------------------------------------------------------------------


def test_chaos_rbac_every_grant_is_used_and_nothing_else(rbac: Rbac) -> None:
    rbac.apply_roles()
    started = time.monotonic()
    runs: list[Run] = []
    for name, (_, scenarios) in GROUPS.items():
        try:
            runs.append(run_group(rbac, name, scenarios, graceful=True))
        except BaseException:
            print(f"--- group {name} ---")
            raise
    cluster = rbac.cluster
    used: set[Triple] = set()
    other: set[str] = set()
    denied: list[str] = []
    expected = rbac.granted - ADMISSION_ONLY

    def collect() -> bool:
        used.clear()
        other.clear()
        denied.clear()
        for event in cluster.audit_events(runs[0].audit_start, user=OPERATOR_USER):
            t = event_triple(event)
            reason = denial(event)
            if reason:
                denied.append(reason)
            elif t is not None and audit_code(event) not in (401, 403):
                # Authorized (answered 200, or 404/409 after authorization).
                used.add(t)
            if t is not None and t not in rbac.granted | NEEDS_NO_ROLE:
                other.add(f"{t} {audit_code(event)}")
        return expected <= used

    # The watches are audited when they end (the operators stopped).
    with contextlib.suppress(TimeoutError):
        wait_until(collect, 20, "every granted triple in the audit log")
    report(
        rules=sum(len(r.get("rules") or []) for r in roles(rbac.objects)),
        triples_granted=len(rbac.granted),
        triples_used=len(used & rbac.granted),
        admission_only=len(ADMISSION_ONLY),
        seconds=round(time.monotonic() - started, 1),
    )
    assert denied == [], denied
    assert other == set(), f"requests no role grants: {sorted(other)}"
    never = sorted(expected - used)
    assert never == [], f"granted but never used: {never}"


def test_chaos_rbac_each_removed_grant_fails_the_suite(rbac: Rbac) -> None:
    removals = sorted(rbac.granted) if FULL else SHORT_REMOVALS
    assert set(SHORT_REMOVALS) <= rbac.granted, set(SHORT_REMOVALS) - rbac.granted
    kinds = {(g, r.split("/")[0]) for g, r, _ in rbac.granted}
    assert {(g, r.split("/")[0]) for g, r, _ in SHORT_REMOVALS} == kinds
    started = time.monotonic()
    failed: dict[Triple, str] = {}
    passed: list[Triple] = []
    unexplained: dict[Triple, str] = {}
    try:
        for t in removals:
            rbac.apply_roles(removed=t)
            group, scenario = scenario_for(t)
            t0 = time.monotonic()
            try:
                run_group(rbac, group, [scenario], graceful=False)
            except SuiteFailed as err:
                outcome = f"{time.monotonic() - t0:.1f}s {err}"
                if err.explained_by(t):
                    failed[t] = outcome
                else:
                    unexplained[t] = outcome
            except (AssertionError, TimeoutError) as err:
                # Not proof: the removal's denial must be seen, not guessed.
                unexplained[t] = f"{time.monotonic() - t0:.1f}s {err}"
            else:
                passed.append(t)
            print(f"without {t}: {failed.get(t) or unexplained.get(t) or 'the suite PASSED'}")
    finally:
        rbac.apply_roles()
    report(
        mode="full" if FULL else "short",
        removals_tried=len(removals),
        removals_failed_suite=len(failed),
        seconds=round(time.monotonic() - started, 1),
    )
    assert passed == [], f"the suite passes without these grants: {passed}"
    assert unexplained == {}, f"failures not caused by the removed grant: {unexplained}"
    assert len(failed) == len(removals)
