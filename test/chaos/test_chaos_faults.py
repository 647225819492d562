"""429 and 5xx answered by the real kube-apiserver to the operator, and only to it.

* An admission webhook (HTTPS on 127.0.0.1, ``failurePolicy: Fail``) denies every
  third write of each kind the operator makes (pods, launcher Jobs, Services,
  ConfigMaps, Secrets, MPIJob status, Events) with 429, 500 or 503, or lets the call
  time out or fail with HTTP 500 (kube-apiserver: "failed calling webhook", 500).
* API Priority and Fairness: the operator's user in a priority level of one nominal
  share that rejects what does not fit at once, so its start-up lists and its bursts
  of worker pod creations get genuine 429 Too Many Requests.

Both run MPIJobs with the real operator process (authenticated as a ServiceAccount,
the only audited user) and check that every job reaches its correct final state with
a correct status, that no worker pod or launcher Job is created twice, that the
operator never crashes, and, in the audit log, that the operator was really answered
with each injected code.

Found on the way: informer events were enqueued rate limited (as the reference), so
a key's per-item backoff counted events, not failures; a 5xx after 16 events since
the last good sync waited 5 ms * 2^15 = 164 s (fixed in controller.enqueue, 43f6ca6).
Under APF rejection a finished job's final status can wait behind throttled worker
creations (the 429 Retry-After is slept inside the request, holding a sync worker):
60-71 s seen with FULL counts, hence a looser deadline there.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import pytest
from chaos_support import (
    Obj,
    api,
    condition,
    create_mpijob,
    delete_all_and_check_no_orphans,
    final_state,
    mpijobs,
    operators_of_a_test,
    report,
    scale,
    started,
    wait_final,
    wait_leading,
)
from duplicate_watch import Watcher
from fault_injection import (
    ADMISSION,
    CALL_HTTP_500,
    CALL_TIMEOUT,
    DENY_429,
    DENY_500,
    DENY_503,
    FAULTS,
    FLOW_SCHEMAS,
    PRIORITY_LEVELS,
    FaultCluster,
    FaultOperators,
    FaultWebhook,
    apf_objects,
    audit_responses,
    wait_flow_schema_active,
)

from devcluster.sample_jobs import pi_mpijob

pytestmark = pytest.mark.full_cluster

# Long enough that the operator keeps its lease while its other requests are refused
# (the Lease itself is neither behind the webhook nor the FlowSchema).
PATIENT_LEASE = ("--lease-duration=60", "--renew-deadline=45", "--retry-period=1")
# The final status is written this long after the launcher finished, at the latest.
STATUS_DEADLINE = 30.0
# The same under APF rejections: the client sleeps the server's Retry-After (which APF
# raises while it keeps dropping; the client caps it at 10 s) inside the request,
# holding one of the two sync workers, as client-go does; a finished job's status can
# wait behind other jobs' throttled worker creations (71 s seen with FULL counts).
APF_STATUS_DEADLINE = 120.0
WEBHOOK_FAILED = "failed calling webhook"


@pytest.fixture(scope="module")
def fault_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FaultCluster]:
    with started(FaultCluster(tmp_path_factory.mktemp("faults-cluster"))) as cluster:
        yield cluster


@pytest.fixture
def fault_ns(fault_cluster: FaultCluster, request: pytest.FixtureRequest) -> Iterator[str]:
    prefix = re.sub(r"[^a-z0-9]+", "-", request.node.name.lower()).strip("-")[5:30].strip("-")
    name = fault_cluster.create_namespace(prefix or "faults")
    yield name
    fault_cluster.delete_namespace(name)


@pytest.fixture
def fault_operators(fault_cluster: FaultCluster, tmp_path: Path) -> Iterator[FaultOperators]:
    with operators_of_a_test(FaultOperators(fault_cluster, tmp_path)) as ops:
        yield ops


# -- the jobs and what is checked ------------------------------------------------------


def _ts(value: str) -> float:
    return datetime.strptime(value, "%Y-%m-%dT%H:%M:%S%z").timestamp()


@dataclass
class Batch:
    expected: dict[str, str]  # name -> Succeeded | Failed
    workers: dict[str, int]
    specs: list[Obj]


def batch(prefix: str, sizes: list[int]) -> Batch:
    """One job per size (its worker count); every fourth one's launcher fails."""
    expected, workers, specs = {}, {}, []
    for i, size in enumerate(sizes):
        name = f"{prefix}-{i}"
        exit_code = 1 if i % 4 == 3 else 0
        expected[name] = "Failed" if exit_code else "Succeeded"
        workers[name] = size
        specs.append(
            pi_mpijob(
                name,
                workers=size,
                launcher_exit=exit_code,
                complete_after=f"{3 + i % 5}s",
                creation_policy="WaitForWorkersReady" if i % 2 else None,
            )
        )
    return Batch(expected, workers, specs)


@dataclass
class Outcome:
    seconds: float
    problems: list[str]
    duplicates: list[str]
    late: dict[str, float]  # name -> seconds from the launcher's end to the final status
    deadline: float
    stuck: dict[str, str | None]  # not final at the deadline: name -> state
    max_lag: float


def status_problems(job: Obj, expected: str) -> list[str]:
    """What is wrong with a finished MPIJob's status."""
    name, status = job["metadata"]["name"], job.get("status") or {}
    out = []
    other = "Succeeded" if expected == "Failed" else "Failed"
    if not condition(job, "Created"):
        out.append(f"{name}: no Created condition")
    if condition(job, other) or condition(job, "Running"):
        out.append(f"{name}: {other} or Running still True: {status.get('conditions')}")
    launcher = (status.get("replicaStatuses") or {}).get("Launcher")
    want = {"succeeded": 1} if expected == "Succeeded" else {"failed": 1}
    if launcher != want:
        out.append(f"{name}: replicaStatuses.Launcher {launcher}, not {want}")
    worker = (status.get("replicaStatuses") or {}).get("Worker") or {}
    if worker.get("active") or worker.get("failed"):
        out.append(f"{name}: replicaStatuses.Worker {worker} after the end")
    for field in ("startTime", "completionTime"):
        if not status.get(field):
            out.append(f"{name}: no {field}")
    return out


def run_batch(
    cluster: FaultCluster,
    ns: str,
    operators: FaultOperators,
    jobs: Batch,
    timeout: float,
    deadline: float = STATUS_DEADLINE,
) -> Outcome:
    """Starts the operator, creates the jobs, waits for their final states and checks
    them, their pods and their launcher Jobs."""
    started = time.monotonic()
    with (
        Watcher(cluster, f"/api/v1/namespaces/{ns}/pods", pods=True) as pods,
        Watcher(cluster, f"/apis/batch/v1/namespaces/{ns}/jobs") as launchers,
    ):
        proc = operators.start(ns, lease=PATIENT_LEASE)
        wait_leading(proc, timeout=90)
        for obj in jobs.specs:
            create_mpijob(cluster, ns, obj)
        stuck: dict[str, str | None] = {}
        try:
            finished = wait_final(cluster, ns, jobs.expected, timeout=timeout)
        except AssertionError:
            current = {j["metadata"]["name"]: j for j in mpijobs(cluster, ns)}
            finished = {n: j for n, j in current.items() if final_state(j) == jobs.expected.get(n)}
            stuck = {
                n: final_state(current[n]) if n in current else "missing"
                for n in jobs.expected
                if n not in finished
            }
        seconds = time.monotonic() - started
        pod_names, job_names = pods.names(), launchers.names()
        duplicates = pods.record.duplicates + launchers.record.duplicates

    problems: list[str] = []
    late: dict[str, float] = {}
    max_lag = 0.0
    for name, job in finished.items():
        problems += status_problems(job, jobs.expected[name])
        want = {f"{name}-worker-{i}" for i in range(jobs.workers[name])}
        seen = {n for n in pod_names if n.startswith(f"{name}-worker-")}
        if seen != want:
            problems.append(f"{name}: worker pods {sorted(seen ^ want)} missing or extra")
        problems += [
            f"{n} created {len(pod_names[n])} times" for n in sorted(seen) if len(pod_names[n]) > 1
        ]
        uids = job_names.get(f"{name}-launcher", set())
        if len(uids) != 1:
            problems.append(f"{name}-launcher created {len(uids)} times")
        launcher = api(cluster, "GET", f"/apis/batch/v1/namespaces/{ns}/jobs/{name}-launcher")
        ends = [
            _ts(c["lastTransitionTime"])
            for c in launcher["status"].get("conditions") or []
            if c["type"] in ("Complete", "Failed") and c["status"] == "True"
        ]
        final = condition(job, jobs.expected[name])
        if ends and final:
            # Whole seconds on both sides: one second of slack.
            lag = _ts(final["lastTransitionTime"]) - ends[0]
            max_lag = max(max_lag, lag)
            if lag > deadline + 1:
                late[name] = lag
        else:
            problems.append(f"{name}: launcher Job {launcher['status']} not finished")
    return Outcome(seconds, problems, duplicates, late, deadline, stuck, max_lag)


def _assert_sound(outcome: Outcome, operators: FaultOperators) -> None:
    crashes = operators.crashes() + operators.tracebacks()
    assert not outcome.duplicates, outcome.duplicates
    assert not crashes, crashes
    assert not outcome.problems, outcome.problems


def _assert_in_time(outcome: Outcome, operators: FaultOperators) -> None:
    """Every job final, within its deadline of its launcher's end. (A miss seen
    here first: informer events enqueued rate limited grew a key's per-item backoff,
    so a 5xx after N events waited 5 ms * 2^N; the log records of long backoffs are
    shown.)"""
    slow = sorted({*outcome.late, *outcome.stuck})
    evidence = operators.inflated_backoff(slow) if slow else []
    assert not outcome.stuck, f"not final in time: {outcome.stuck}; {evidence}"
    assert not outcome.late, (
        f"final status later than {outcome.deadline}s: {outcome.late}; {evidence}"
    )


def _webhook_answers(answers: list[Obj]) -> tuple[Counter[int], int]:
    """The webhook's denials by code, and the failed webhook calls, in audited answers."""
    denied = Counter(a["code"] for a in answers if "denied the request" in a["message"])
    call_failed = sum(a["code"] == 500 and WEBHOOK_FAILED in a["message"] for a in answers)
    return denied, call_failed


def _audited_answers(
    cluster: FaultCluster, offset: int, faults: Counter[str]
) -> tuple[list[Obj], Counter[int], int]:
    """The operator's audited answers, with :func:`_webhook_answers` of them, once they
    account for every injected fault, or as they are after 15 s. kube-apiserver writes an audit event at ResponseComplete,
    which can come after the client (and the webhook's count) saw the answer: a fresh
    CI run read the log once, just after the last injection, and found 9 of 10 503s."""
    expected = (
        Counter({429: faults[DENY_429], 500: faults[DENY_500], 503: faults[DENY_503]}),
        faults[CALL_TIMEOUT] + faults[CALL_HTTP_500],
    )
    deadline = time.monotonic() + 15
    while True:
        answers = audit_responses(cluster, offset)
        denied, call_failed = _webhook_answers(answers)
        seen = (Counter({c: denied[c] for c in (429, 500, 503)}), call_failed)
        if seen == expected or time.monotonic() >= deadline:
            return answers, denied, call_failed
        time.sleep(0.2)


# -- the tests ---------------------------------------------------------------------------


def test_chaos_webhook_429_and_5xx_lose_nothing(
    fault_cluster: FaultCluster, fault_ns: str, fault_operators: FaultOperators, tmp_path: Path
) -> None:
    cluster, ns = fault_cluster, fault_ns
    jobs = batch("hook", [1 + i % 3 for i in range(scale(8, 30))])
    offset = cluster.audit_offset()
    name = f"chaos-faults-{ns}"
    with FaultWebhook(tmp_path, every=3) as webhook:
        api(cluster, "POST", ADMISSION, webhook.configuration(name, ns))
        try:
            outcome = run_batch(cluster, ns, fault_operators, jobs, timeout=scale(180, 420))
        finally:
            cluster.request("DELETE", f"{ADMISSION}/{name}")
        faults, by_kind, users = Counter(webhook.faults), dict(webhook.by_kind), webhook.users

    answers, denied, call_failed = _audited_answers(cluster, offset, faults)
    codes = Counter(a["code"] for a in answers if a["code"] >= 400)
    sync_failures = fault_operators.sync_failures()
    report(
        test="webhook-faults",
        jobs=len(jobs.expected),
        pods=sum(jobs.workers.values()),
        webhook_calls=sum(webhook.calls.values()),
        **{f"injected_{f.replace('-', '_')}": faults[f] for f in FAULTS},
        audit_codes=dict(sorted(codes.items())),
        sync_retries=dict(sync_failures),
        duplicates=len(outcome.duplicates),
        lost_updates=len(outcome.late),
        max_status_lag_s=outcome.max_lag,
        crashes=len(fault_operators.crashes()),
        seconds=round(outcome.seconds, 1),
    )
    print("faults by kind:", by_kind)
    _assert_sound(outcome, fault_operators)
    assert users == {"system:serviceaccount:chaos-faults:operator"}, users
    assert all(faults[f] > 0 for f in FAULTS), faults
    # What the operator was answered, from kube-apiserver's audit log: each denial
    # with the webhook's code, each failed call as a 500 of kube-apiserver's own.
    assert denied[429] == faults[DENY_429] > 0, (denied, faults)
    assert denied[500] == faults[DENY_500] > 0, (denied, faults)
    assert denied[503] == faults[DENY_503] > 0, (denied, faults)
    assert call_failed == faults[CALL_TIMEOUT] + faults[CALL_HTTP_500], (call_failed, faults)
    # The 5xx reached the work queue (429 is retried inside the request).
    assert sync_failures["500"] + sync_failures["503"] > 0, sync_failures

    fault_operators.collect_secrets()
    delete_all_and_check_no_orphans(cluster, ns)
    _assert_in_time(outcome, fault_operators)


def test_chaos_apf_rejections_lose_nothing(
    fault_cluster: FaultCluster, fault_ns: str, fault_operators: FaultOperators
) -> None:
    cluster, ns = fault_cluster, fault_ns
    sizes = ([30, 2, 30, 1, 30, 3] * 2)[: scale(4, 12)]
    jobs = batch("apf", sizes)
    name = f"chaos-faults-{ns}"
    level, schema = apf_objects(name)
    offset = cluster.audit_offset()
    rejected_before = cluster.apiserver_metric(
        "apiserver_flowcontrol_rejected_requests_total", priority_level=name
    )
    api(cluster, "POST", PRIORITY_LEVELS, level)
    try:
        api(cluster, "POST", FLOW_SCHEMAS, schema)
        try:
            wait_flow_schema_active(cluster, name)
            outcome = run_batch(
                cluster,
                ns,
                fault_operators,
                jobs,
                timeout=scale(240, 600),
                deadline=APF_STATUS_DEADLINE,
            )
            rejected = (
                cluster.apiserver_metric(
                    "apiserver_flowcontrol_rejected_requests_total", priority_level=name
                )
                - rejected_before
            )
        finally:
            cluster.request("DELETE", f"{FLOW_SCHEMAS}/{name}")
    finally:
        cluster.request("DELETE", f"{PRIORITY_LEVELS}/{name}")

    answers = audit_responses(cluster, offset)
    throttled = Counter(f"{a['verb']} {a['resource']}" for a in answers if a["code"] == 429)
    report(
        test="apf-rejections",
        jobs=len(jobs.expected),
        pods=sum(jobs.workers.values()),
        requests=len(answers),
        audit_429=sum(throttled.values()),
        apf_rejected=int(rejected),
        duplicates=len(outcome.duplicates),
        lost_updates=len(outcome.late),
        max_status_lag_s=outcome.max_lag,
        crashes=len(fault_operators.crashes()),
        seconds=round(outcome.seconds, 1),
    )
    print("429 by request:", dict(throttled.most_common()))
    _assert_sound(outcome, fault_operators)
    assert rejected > 0
    assert sum(throttled.values()) > 0, throttled
    fault_operators.collect_secrets()
    delete_all_and_check_no_orphans(cluster, ns)
    _assert_in_time(outcome, fault_operators)
