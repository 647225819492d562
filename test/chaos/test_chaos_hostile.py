"""Hostile input: the corpus of ``test/fixtures/hostile/`` (Kubeflow MPIJobs, and T9k
MPIJobs in ``t9k/``) and hypothesis-generated specs. None crashes or stalls the
operator (a good job created after them succeeds), each gets an API rejection or a
Warning event naming the field, and the events are deduplicated (an Event's count
grows; no flood of Event objects).

The namespace has a ResourceQuota of 20 BestEffort pods, so that a hostile job that
is valid but enormous (2^31-1 workers) cannot fill the shared cluster; the good jobs
request resources and are not limited by it.
"""

from __future__ import annotations

import copy
import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from chaos_support import (
    MPIJOBS,
    Obj,
    Operators,
    api,
    condition,
    create_mpijob,
    list_items,
    report,
    scale,
    wait_final,
    wait_leading,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from devcluster import LocalCluster
from devcluster.crds import crds_installed
from devcluster.sample_jobs import pi_mpijob
from devcluster.testing import wait_until

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO / "test" / "fixtures" / "hostile"
T9K_CRD = REPO / "crd" / "t9k" / "batch.tensorstack.dev_mpijobs.yaml"
T9K_MPIJOBS = "/apis/batch.tensorstack.dev/v1beta1/namespaces/{ns}/mpijobs"
T9K_POD_GROUP_CRD = "podgroups.scheduler.tensorstack.dev"
BEST_EFFORT_PODS = 20
EVENT_DEADLINE = 45.0


def _quota(cluster: LocalCluster, ns: str) -> None:
    # No resourcequota controller runs in the local cluster: the status is set by
    # hand, and the admission plugin keeps ``used`` up to date from there.
    hard = {"pods": str(BEST_EFFORT_PODS)}
    path = f"/api/v1/namespaces/{ns}/resourcequotas"
    quota = api(
        cluster,
        "POST",
        path,
        {
            "apiVersion": "v1",
            "kind": "ResourceQuota",
            "metadata": {"name": "best-effort"},
            "spec": {"hard": hard, "scopes": ["BestEffort"]},
        },
    )
    quota["status"] = {"hard": hard, "used": {"pods": "0"}}
    api(cluster, "PUT", f"{path}/best-effort/status", quota)


def _good(name: str) -> Obj:
    obj = pi_mpijob(name, complete_after="2s")
    for spec in obj["spec"]["mpiReplicaSpecs"].values():
        for c in spec["template"]["spec"]["containers"]:
            c["resources"] = {"requests": {"cpu": "10m", "memory": "16Mi"}}
    return obj


def _put(obj: Obj, path: str, value: Any) -> None:
    parts = path.split(".")
    cur: Any = obj
    for p in parts[:-1]:
        cur = cur[int(p)] if isinstance(cur, list) else cur[p]
    last = parts[-1]
    if isinstance(cur, list):
        cur[int(last)] = value
    else:
        cur[last] = value


def _nested(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = {"a": value}
    return value


def _generate(obj: Obj, doc: Obj) -> None:
    """What the case file describes instead of holding: ``inflate`` (a long string),
    ``env_entries`` (that many small env entries) and ``nest`` (objects that deep)."""
    for where, size in (doc.get("inflate") or {}).items():
        _put(obj, where, "a" * size)
    for where, count in (doc.get("env_entries") or {}).items():
        _put(obj, where, [{"name": f"E{i:05d}", "value": "x"} for i in range(count)])
    for where, depth in (doc.get("nest") or {}).items():
        _put(obj, where, _nested(depth))


def _corpus(folder: Path = CORPUS) -> list[tuple[str, Obj, str, str]]:
    cases = []
    for path in sorted(folder.glob("*.yaml")):
        doc = yaml.safe_load(path.read_text())
        obj = doc["object"]
        _generate(obj, doc)
        cases.append((path.stem, obj, str(doc.get("field") or ""), doc.get("expect", "")))
    return cases


def _post(cluster: LocalCluster, ns: str, obj: Obj) -> tuple[int, str]:
    status, body = cluster.request("POST", MPIJOBS.format(ns=ns), obj, timeout=60)
    message = body.get("message", "") if isinstance(body, dict) else str(body)
    return status, str(message)


def _warnings(cluster: LocalCluster, ns: str, api_version: str | None = None) -> list[Obj]:
    return [
        e
        for e in list_items(cluster, f"/api/v1/namespaces/{ns}/events")
        if e.get("type") == "Warning"
        and e["involvedObject"].get("kind") == "MPIJob"
        and api_version in (None, e["involvedObject"].get("apiVersion"))
    ]


def _explained(cluster: LocalCluster, ns: str, name: str, field: str) -> str | None:
    """The Warning event or Failed condition of ``name`` that names ``field``."""
    for e in _warnings(cluster, ns):
        if e["involvedObject"]["name"] == name and field.lower() in e["message"].lower():
            return f"{e['reason']}: {e['message'][:200]}"
    status, job = cluster.request("GET", f"{MPIJOBS.format(ns=ns)}/{name}")
    failed = condition(job, "Failed") if status == 200 else None
    if failed and field.lower() in failed["message"].lower():
        return f"Failed/{failed['reason']}: {failed['message'][:200]}"
    return None


def _wait_explained(
    explain: Callable[[str, str], str | None], fields: dict[str, str]
) -> tuple[dict[str, str], dict[str, str]]:
    """Waits for ``explain(name, field)`` of each job: (explained, unexplained)."""
    explained: dict[str, str] = {}
    unexplained: dict[str, str] = {}
    for name, field in fields.items():
        try:
            explained[name] = wait_until(
                lambda n=name, f=field: explain(n, f),  # type: ignore[misc]
                EVENT_DEADLINE,
                f"a Warning naming {field} for {name}",
                1.0,
            )
        except TimeoutError:
            unexplained[name] = field
    return explained, unexplained


def _dedup_figures(cluster: LocalCluster, ns: str) -> tuple[int, int, int]:
    """(Event objects, their total count, the most Event objects for one object,
    reason and message) over the namespace's Warning events of MPIJobs."""
    events = _warnings(cluster, ns)
    per_key = Counter((e["involvedObject"]["uid"], e["reason"], e["message"]) for e in events)
    total = sum(int(e.get("count") or 1) for e in events)
    return len(events), total, max(per_key.values(), default=0)


def test_chaos_hostile_corpus(
    full_cluster: LocalCluster, full_namespace: str, operators: Operators
) -> None:
    ns = full_namespace
    _quota(full_cluster, ns)
    proc = operators.start(ns)
    wait_leading(proc)
    cases = _corpus()
    rejected: dict[str, str] = {}
    accepted: dict[str, tuple[str, str]] = {}
    for key, obj, field, expect in cases:
        status, message = _post(full_cluster, ns, obj)
        if status >= 400:
            assert status != 500 or not field, (key, status, message)
            assert field.lower() in message.lower(), f"{key}: {status} {message[:300]}"
            rejected[key] = f"{status} {message[:160]}"
        else:
            accepted[obj["metadata"]["name"]] = (field, expect)

    # The operator still works: a good job created after all of them succeeds.
    create_mpijob(full_cluster, ns, _good("good-after-corpus"))
    wait_final(full_cluster, ns, {"good-after-corpus": "Succeeded"}, timeout=90)

    # Valid, but more BestEffort workers than the quota: the same Warning again and
    # again, as the operator retries with backoff; it must stay one Event object.
    create_mpijob(full_cluster, ns, pi_mpijob("quota-buster", workers=BEST_EFFORT_PODS + 2))
    to_explain: dict[str, str] = {}
    for name, (field, expect) in accepted.items():
        if expect == "ignored":  # another controller's: no children, no event
            svc, _ = full_cluster.request("GET", f"/api/v1/namespaces/{ns}/services/{name}")
            assert svc == 404, name
        elif field:
            to_explain[name] = field
    explained, unexplained = _wait_explained(
        lambda n, f: _explained(full_cluster, ns, n, f), to_explain
    )

    # Many failed syncs of quota-buster, few Event objects: repeats are counted on
    # one Event, and client-go's spam filter (burst 25 per object) bounds the rest.
    def buster() -> list[Obj]:
        return [
            e for e in _warnings(full_cluster, ns) if e["involvedObject"]["name"] == "quota-buster"
        ]

    try:
        wait_until(
            lambda: any(int(e.get("count") or 1) >= 3 for e in buster()),
            60,
            "a repeated warning counted three times on one Event",
            1.0,
        )
    except TimeoutError:
        seen = [(e["reason"], e.get("count"), e["message"][:120]) for e in buster()]
        raise AssertionError(f"quota-buster's warnings: {seen}") from None
    buster_events = buster()
    objects, total, worst = _dedup_figures(full_cluster, ns)
    crashes = operators.crashes() + operators.tracebacks()
    report(
        test="hostile-corpus",
        quota_buster_event_objects=len(buster_events),
        quota_buster_warnings=sum(int(e.get("count") or 1) for e in buster_events),
        hostile_inputs=len(cases),
        api_rejections=len(rejected),
        warning_events=len(explained),
        unexplained=len(unexplained),
        warning_event_objects=objects,
        warning_event_count_total=total,
        max_event_objects_per_reason=worst,
        crashes=len(crashes),
    )
    print(json.dumps({"rejected": rejected, "explained": explained}, indent=1))
    assert not unexplained, unexplained
    assert not crashes, crashes
    assert worst == 1, "the same warning in more than one Event object"
    assert len(buster_events) <= 25, "a flood of Event objects for one MPIJob"


def _specs() -> st.SearchStrategy[Obj]:
    ints = st.one_of(
        st.integers(-3, 4), st.sampled_from([2**31, -(2**31), 10**12]), st.text(max_size=3)
    )
    names = st.sampled_from(["main", "Bad_Name", "", "x" * 70, "ok-name", "-x"])
    implementation = st.sampled_from(["OpenMPI", "Intel", "MPICH", "", "Foo", 5, None])
    policy = st.sampled_from(["Running", "All", "None", "", "Sometimes", 3])

    @st.composite
    def build(draw: st.DrawFn) -> Obj:
        # Each field is spoilt with probability 1/4, so that most examples have one
        # or two faults and some are valid: they get past the API server's schema.
        def spoil() -> bool:
            return draw(st.integers(0, 3)) == 0

        obj = pi_mpijob("x", launcher_exit=0, complete_after="2s")
        spec = obj["spec"]
        replica_specs = spec["mpiReplicaSpecs"]
        worker = replica_specs["Worker"]
        container = worker["template"]["spec"]["containers"][0]
        if spoil():
            worker["replicas"] = draw(ints)
        if spoil():
            spec["slotsPerWorker"] = draw(ints)
        if spoil():
            spec["mpiImplementation"] = draw(implementation)
        if spoil():
            spec["runPolicy"]["cleanPodPolicy"] = draw(policy)
        if spoil():
            spec["runPolicy"]["backoffLimit"] = draw(ints)
        if spoil():
            container["name"] = draw(names)
        if spoil():
            del replica_specs["Launcher"]
        elif spoil():
            replica_specs["Launcher"]["replicas"] = draw(ints)
        if spoil():
            replica_specs[draw(st.sampled_from(["Chief", "worker", ""]))] = copy.deepcopy(worker)
        if spoil():
            container["env"] = [
                {"name": draw(st.text(max_size=5)), "value": draw(st.text(max_size=20))}
            ]
        if spoil():
            container["image"] = draw(st.sampled_from(["", " ", "a" * 300, "UPPER:case"]))
        return obj

    return build()


def test_chaos_hypothesis_specs(
    full_cluster: LocalCluster, full_namespace: str, operators: Operators
) -> None:
    ns = full_namespace
    _quota(full_cluster, ns)
    proc = operators.start(ns)
    wait_leading(proc)
    statuses: Counter[int] = Counter()
    accepted: list[str] = []
    counter = [0]

    @settings(
        max_examples=scale(40, 200),
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(spec=_specs())
    def post(spec: Obj) -> None:
        counter[0] += 1
        name = f"hyp-{counter[0]}"
        spec["metadata"]["name"] = name
        status, message = _post(full_cluster, ns, spec)
        statuses[status] += 1
        assert status in (201, 400, 422), (status, message[:300])
        if status == 201:
            accepted.append(name)

    post()
    create_mpijob(full_cluster, ns, _good("good-after-hypothesis"))
    wait_final(full_cluster, ns, {"good-after-hypothesis": "Succeeded"}, timeout=90)

    def every_accepted_handled() -> bool:
        warned = {e["involvedObject"]["name"] for e in _warnings(full_cluster, ns)}
        jobs = {j["metadata"]["name"]: j for j in list_items(full_cluster, MPIJOBS.format(ns=ns))}
        pending = [
            n
            for n in accepted
            if n not in warned and not (jobs[n].get("status") or {}).get("conditions")
        ]
        return not pending

    wait_until(every_accepted_handled, EVENT_DEADLINE, "a status or a Warning for each", 1.0)
    objects, total, worst = _dedup_figures(full_cluster, ns)
    crashes = operators.crashes() + operators.tracebacks()
    report(
        test="hostile-hypothesis",
        hostile_inputs=counter[0],
        api_answers=dict(statuses),
        accepted=len(accepted),
        warning_event_objects=objects,
        warning_event_count_total=total,
        max_event_objects_per_reason=worst,
        crashes=len(crashes),
    )
    assert not crashes, crashes
    assert worst <= 1, "the same warning in more than one Event object"


def _t9k_explained(cluster: LocalCluster, ns: str, name: str, field: str) -> str | None:
    for e in _warnings(cluster, ns, "batch.tensorstack.dev/v1beta1"):
        if e["involvedObject"]["name"] == name and field.lower() in e["message"].lower():
            return f"{e['reason']}: {e['message'][:200]}"
    return None


def _good_t9k(name: str) -> Obj:
    """A valid T9k job whose pods request resources (the BestEffort quota spares them)."""
    obj: Obj = yaml.safe_load((REPO / "examples" / "t9k" / "pi.yaml").read_text())
    obj["metadata"]["name"] = name
    obj["spec"]["worker"]["template"]["spec"]["containers"][0]["resources"] = {
        "limits": {"cpu": "10m", "memory": "16Mi"}
    }
    return obj


def test_chaos_hostile_t9k_corpus(
    full_cluster: LocalCluster, full_namespace: str, operators: Operators
) -> None:
    """T9k MPIJobs: each case of ``fixtures/hostile/t9k`` is refused by ``kubectl create``
    naming its field, or gets a Warning event naming it (the scheduler's PodGroup CRD
    is not installed: the t9kScheduler case's event names it)."""
    ns = full_namespace
    _quota(full_cluster, ns)
    cases = _corpus(CORPUS / "t9k")
    assert len(cases) >= 15
    no_crd = full_cluster.kubectl("get", "crd", T9K_POD_GROUP_CRD, check=False)
    assert no_crd.returncode != 0, "the scheduler's PodGroup CRD must not be installed"
    with crds_installed(full_cluster, (T9K_CRD,)):
        proc = operators.start(ns)
        wait_leading(proc)
        wait_until(lambda: "serving T9k MPIJobs" in proc.output(), 30, "the T9k controller")
        rejected: dict[str, str] = {}
        accepted: dict[str, str] = {}
        for key, obj, field, _ in cases:
            out = full_cluster.kubectl(
                "create", "-n", ns, "-f", "-", input=yaml.safe_dump(obj), check=False
            )
            if out.returncode:
                assert field.lower() in out.stderr.lower(), f"{key}: {out.stderr[:300]}"
                rejected[key] = out.stderr.strip()[:160]
            else:
                accepted[obj["metadata"]["name"]] = field
        # The operator still works: a good T9k job created after them all runs.
        api(full_cluster, "POST", T9K_MPIJOBS.format(ns=ns), _good_t9k("good-t9k"))

        def good_phase() -> str:
            job = api(full_cluster, "GET", f"{T9K_MPIJOBS.format(ns=ns)}/good-t9k")
            return str((job.get("status") or {}).get("phase"))

        wait_until(lambda: good_phase() == "Running", 90, "the good T9k job Running", 1.0)
        explained, unexplained = _wait_explained(
            lambda n, f: _t9k_explained(full_cluster, ns, n, f), accepted
        )
        crashes = operators.crashes() + operators.tracebacks()
        report(
            test="hostile-t9k-corpus",
            hostile_inputs=len(cases),
            api_rejections=len(rejected),
            warning_events=len(explained),
            unexplained=len(unexplained),
            crashes=len(crashes),
        )
        print(json.dumps({"rejected": rejected, "explained": explained}, indent=1))
        api(full_cluster, "DELETE", T9K_MPIJOBS.format(ns=ns))
    assert not unexplained, unexplained
    assert not crashes, crashes
