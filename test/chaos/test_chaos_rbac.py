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
  in one request (pods create/deletecollection, every informer's list/watch, mpijobs/status update, events
  create, the children's create, configmaps update of the hostfile; leases
  get/create/update: the Lease is deleted before every run, renewed every 0.5 s);
* ``suspend``: a running job suspended, its one worker deleted by name (pods
  delete), then resumed (jobs update; jobs/status
  update: the started launcher Job's startTime is cleared before its template is;
  the launcher Job is managed by nobody here, so the Job controller cannot clear
  startTime first and make that write unnecessary);
* ``adopt``: the MPIJob's Service, ConfigMap, Secret, launcher Job and worker pod
  made beforehand without the operator's label (as an older operator would), with
  a drifted Service selector, a stale hostfile and a Secret missing its public key:
  create answers AlreadyExists, the operator gets and patches (adopts) each, then
  updates the three drifted ones (pods get: a worker pod is only read back). The
  Secret is looked up with a list by name and adopted with an update: the roles
  grant no get or patch on Secrets, as the reference's;
* ``clash``: a foreign Service has the job's name: the ErrResourceExists event
  repeats with every retry, and the recorder PATCHes its count (events patch);
* ``restart``: a worker OOMKilled on its first run; the failure policy's RestartJob
  deletes the first attempt's launcher Job (jobs delete) and the job then succeeds;
* ``ttl``: ``ttlSecondsAfterFinishedPolicy: MPIJob``; the finished MPIJob itself is
  deleted (mpijobs delete);
* ``volcano`` (``--gang-scheduling=volcano``): a gang job to Succeeded (a stand-in
  binds the pods; its PodGroup is deleted when it ends) and a second job whose
  PodGroup exists beforehand with a wrong minMember (podgroups update;
  priorityclasses list/watch). The PodGroup cache is not filtered by label, so a
  PodGroup is never adopted: get and patch of podgroups, which only a create racing
  the cache could use (and which a retry from the cache replaces), are not granted;
* ``coscheduling`` (``--gang-scheduling=scheduler-plugins-scheduler``): the same
  with the scheduler-plugins PodGroups (scheduling.x-k8s.io).
* ``workload`` (``--gang-scheduling=workload-api``): the same with the Kubernetes
  Workload API's PodGroups (scheduling.k8s.io), placed by the real kube-scheduler.

And one more case, on its own: an admission webhook makes the PodGroup of a gang
job just before the operator's own create goes through, so that it answers
AlreadyExists before the operator's cache has seen it; the job must still succeed
with no request denied (the operator used to GET the PodGroup then).

Proofs:

1. granted == used: every granted triple appears in the audit log as a successful
   request of the operator's user, and every request of it is granted (or needs no
   role: access reviews, discovery). One exception: ``update mpijobs/finalizers`` is
   never a request (the admission plugin checks it when a child is created; proof 2
   always covers it). No request is denied, not even the start-up check's (it asks a
   SelfSubjectAccessReview before reading the lock namespace).
2. each grant is needed: for each granted triple (full mode: all of them; short
   mode: :data:`SHORT_REMOVALS`, one per resource kind and both deletes), the role is applied with
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
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from chaos_support import FULL, Obj, api, report, started
from examples_support import VolcanoStandIn, service_account_kubeconfig
from fault_injection import ADMISSION, FaultWebhook
from rbac_scenarios import GROUPS, run_group, scenario_for
from rbac_support import (
    ADMISSION_ONLY,
    NEEDS_NO_ROLE,
    OPERATOR_NS,
    OPERATOR_USER,
    SHORT_REMOVALS,
    Rbac,
    Run,
    SuiteFailed,
    Triple,
    create,
    denial,
    event_triple,
    get,
    mpijob_path,
    rbac_objects,
    roles,
    succeeded,
    triples,
)

from devcluster import FULL as FULL_SHAPE
from devcluster import LocalCluster
from devcluster.audit import SERVICE_ACCOUNTS, audit_code
from devcluster.sample_jobs import pi_mpijob
from devcluster.testing import wait_until

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
        workload_api=True,
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


# -- a PodGroup that exists already ---------------------------------------------------------

VOLCANO_GROUPS = "/apis/scheduling.volcano.sh/v1beta1/namespaces/{ns}/podgroups"
PROBE = "webhook-probe"
VOLCANO_GROUP_TYPE = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup"}


class PodGroupRace(FaultWebhook):
    """A webhook on PodGroup creates that, on the operator's first create of each
    PodGroup, makes the same PodGroup itself first (as the cluster's admin) and then
    lets the operator's create through, which then finds it exists (409
    AlreadyExists) before the operator's cache has seen it: another writer winning
    the race against the cache. PodGroups named ``webhook-probe*`` only show that the
    webhook is in use."""

    def __init__(self, workdir: Path, cluster: LocalCluster) -> None:
        super().__init__(workdir, every=1, timeout_seconds=10)
        self.cluster = cluster
        self.raced: list[str] = []
        self.probes = 0

    def decide(self, request: Obj) -> str | None:
        obj = request["object"]
        meta = obj["metadata"]
        if meta["name"].startswith(PROBE):
            self.probes += 1
        elif meta["name"] not in self.raced:
            self.raced.append(meta["name"])
            keep = ("name", "labels", "annotations", "ownerReferences")
            first = {**obj, "metadata": {k: meta[k] for k in keep if k in meta}}
            first.pop("status", None)
            api(self.cluster, "POST", VOLCANO_GROUPS.format(ns=request["namespace"]), first)
        return None

    def config(self, name: str, namespace: str) -> Obj:
        config = self.configuration(name, namespace, OPERATOR_USER)
        hook = config["webhooks"][0]
        hook["rules"] = [
            {
                "apiGroups": ["scheduling.volcano.sh"],
                "apiVersions": ["v1beta1"],
                "operations": ["CREATE"],
                "resources": ["podgroups"],
                "scope": "Namespaced",
            }
        ]
        hook["matchConditions"][0]["expression"] = (
            f"request.userInfo.username == '{OPERATOR_USER}'"
            f" || object.metadata.name.startsWith('{PROBE}')"
        )
        return config


def test_chaos_rbac_a_pod_group_that_exists_already_needs_no_get(rbac: Rbac) -> None:
    """The create of a PodGroup answered AlreadyExists is resolved from the PodGroup
    cache: under the deploy role (no get on podgroups) the job still runs to the end,
    and no request of the operator is denied (it used to GET the PodGroup: 403)."""
    rbac.apply_roles()
    cluster = rbac.cluster
    run = Run(rbac, ("--gang-scheduling=volcano",), "podgroup-race")
    name = "rbac-podgroup-race"
    with PodGroupRace(rbac.tmp / "podgroup-race", cluster) as webhook:
        try:
            ns = run.namespace("rbac-race")
            groups = VOLCANO_GROUPS.format(ns=ns)
            api(cluster, "POST", ADMISSION, webhook.config(name, ns))

            def probed() -> bool:
                probe = {"metadata": {"generateName": PROBE}, "spec": {"minMember": 1}}
                api(cluster, "POST", groups, {**VOLCANO_GROUP_TYPE, **probe})
                return webhook.probes > 0

            wait_until(probed, 30, "the webhook in use", 0.5)
            create(cluster, mpijob_path(ns), pi_mpijob("race", workers=2))
            run.start()
            binder = VolcanoStandIn(cluster, ns)

            def done() -> bool:
                binder()
                return succeeded(run, ns, "race")()

            run.wait(done, "the gang job Succeeded")
        finally:
            cluster.request("DELETE", f"{ADMISSION}/{name}")
            run.stop(graceful=True)
    assert webhook.raced == ["race"]
    creates = [
        audit_code(e)
        for e in cluster.audit_events(run.audit_start, user=OPERATOR_USER)
        if event_triple(e) == ("scheduling.volcano.sh", "podgroups", "create")
    ]
    assert 409 in creates, creates  # the AlreadyExists path was taken
