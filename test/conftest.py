"""Shared fixtures: real local control planes (``devcluster``).

* ``api_cluster`` (session): etcd + kube-apiserver, envtest-like.
* ``full_cluster`` (session): + kube-controller-manager, kube-scheduler, KWOK fake nodes;
  its API server audits every ServiceAccount's requests (``.audit_events()``), and
  nobody else's: the tests' operators under a ServiceAccount token, not the admin.
* ``real_cluster`` (session): + one real node running containers (containerd, kubelet,
  bridge CNI, CoreDNS, kube-proxy), tainted and labelled ``type=real``; root only, built by
  ``make node``. Pods go there through ``sample_jobs.on_real_node``.
* ``namespace`` / ``full_namespace`` (function): a fresh namespace in one of them,
  deleted afterwards.

Both clusters are :class:`devcluster.LocalCluster` objects:
``.kubeconfig`` (Path), ``.server`` (https URL), ``.kubectl(*args, check=True,
input=None)``, ``.stop_apiserver()``, ``.start_apiserver()``, ``.restart_apiserver()``,
``.compact_etcd()``, ``.request(method, path, body)``. Each starts lazily, the first time
a test asks for it, and they share nothing; under pytest-xdist (``make test``), once per
worker process that runs such a test (``worker_units.py``: the real node's tests all go
to one). Tests using them are marked ``cluster`` / ``full_cluster`` / ``real_cluster``
automatically. The binaries come from ``make binaries``; the fixtures
never build them.
"""

from __future__ import annotations

import re
import time
from collections import defaultdict
from collections.abc import Iterator

import pytest
import worker_units

from devcluster import API, FULL, REAL, BinariesMissingError, LocalCluster
from devcluster.access import ClusterError
from devcluster.audit import SERVICE_ACCOUNTS
from devcluster.cluster import STARTS
from devcluster.realnode import preflight
from devcluster.testing import OPERATOR_STARTS

_API_FIXTURES = {"api_cluster", "namespace"}
_FULL_FIXTURES = {"full_cluster", "full_namespace", "kueue_env"}
_REAL_FIXTURES = {"real_cluster"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        names = set(getattr(item, "fixturenames", ()))
        if names & _API_FIXTURES:
            item.add_marker(pytest.mark.cluster)
        if names & _FULL_FIXTURES:
            item.add_marker(pytest.mark.full_cluster)
        if names & _REAL_FIXTURES:
            item.add_marker(pytest.mark.real_cluster)


def pytest_configure(config: pytest.Config) -> None:
    # The cluster suites side by side in worker processes: worker_units.py says how.
    config.pluginmanager.register(worker_units, "worker_units")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_teardown(item: pytest.Item) -> None:
    # A test that stopped the shared API server and failed must not break the next ones.
    funcargs = getattr(item, "funcargs", {})
    for name in ("api_cluster", "full_cluster"):
        cluster = funcargs.get(name)
        if (
            isinstance(cluster, LocalCluster)
            and "kube-apiserver" in cluster.processes
            and not cluster.processes["kube-apiserver"].alive()
        ):
            cluster.start_apiserver()


def _start(factory: pytest.TempPathFactory, shape: str) -> LocalCluster:
    audit = [SERVICE_ACCOUNTS] if shape == FULL else []
    # The full shape runs the Workload API's gang scheduling (alpha gates): pods that name
    # no PodGroup are scheduled as without it.
    cluster = LocalCluster(
        factory.mktemp(f"{shape}-cluster"),
        shape,
        audit_groups=audit,
        workload_api=shape == FULL,
    )
    try:
        _ = cluster.bins
        if shape == REAL:
            # Never skipped: a machine that cannot run the real node fails every test
            # that needs it, with the one line naming what is missing.
            preflight()
    except (BinariesMissingError, ClusterError) as e:
        pytest.fail(f"the {shape} cluster cannot start here: {e}", pytrace=False)
    cluster.start()
    return cluster


def _session_cluster(factory: pytest.TempPathFactory, shape: str) -> Iterator[LocalCluster]:
    cluster = _start(factory, shape)
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="session")
def api_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    yield from _session_cluster(tmp_path_factory, API)


@pytest.fixture(scope="session")
def full_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    yield from _session_cluster(tmp_path_factory, FULL)


@pytest.fixture(scope="session")
def real_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    yield from _session_cluster(tmp_path_factory, REAL)


def _prefix(request: pytest.FixtureRequest) -> str:
    name = re.sub(r"[^a-z0-9]+", "-", request.node.name.lower()).strip("-")
    name = name.removeprefix("test-")[:40].strip("-")
    return name or "test"


@pytest.fixture
def namespace(api_cluster: LocalCluster, request: pytest.FixtureRequest) -> Iterator[str]:
    name = api_cluster.create_namespace(_prefix(request))
    yield name
    if not api_cluster.processes["kube-apiserver"].alive():
        api_cluster.start_apiserver()
    api_cluster.delete_namespace(name)


@pytest.fixture
def full_namespace(full_cluster: LocalCluster, request: pytest.FixtureRequest) -> Iterator[str]:
    name = full_cluster.create_namespace(_prefix(request))
    yield name
    if not full_cluster.processes["kube-apiserver"].alive():
        full_cluster.start_apiserver()
    full_cluster.delete_namespace(name)


# -- where the time goes -------------------------------------------------------------
#
# The summary at the end of a run: per suite (test/<suite>/), the time of the tests'
# setup, call and teardown (a session cluster's start is in the setup of the first test
# that asks for it), and the local clusters and operator processes this process started.
# Clusters a test starts in a child process (make demo, the migration's kubectl runs) are
# not counted. docs/development/tests.md gives the figures of a full run.

_PHASES: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
_MODULES: dict[str, float] = defaultdict(float)


def _suite(nodeid: str) -> str:
    parts = nodeid.split("/")
    return parts[1] if len(parts) > 2 and parts[0] == "test" else parts[0]


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    phases = _PHASES[_suite(report.nodeid)]
    phases[report.when] += report.duration
    _MODULES[report.nodeid.split("::")[0]] += report.duration
    if report.when == "call":
        phases["tests"] += 1


_BEGAN = time.monotonic()
_WORKERS: dict[str, float] = {}


def pytest_sessionfinish(session: pytest.Session) -> None:
    # In an xdist worker: its cluster and operator starts and its seconds, for the
    # controller's summary.
    out = getattr(session.config, "workeroutput", None)
    if out is not None:
        out["cluster_starts"] = [list(start) for start in STARTS]
        out["operator_starts"] = list(OPERATOR_STARTS)
        out["seconds"] = time.monotonic() - _BEGAN


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: object, error: object) -> None:
    # In the xdist controller: a worker's figures, sent by its pytest_sessionfinish.
    out = getattr(node, "workeroutput", None) or {}
    STARTS.extend((shape, seconds) for shape, seconds in out.get("cluster_starts", ()))
    OPERATOR_STARTS.extend(out.get("operator_starts", ()))
    if "seconds" in out:
        name = (getattr(node, "workerinput", None) or {}).get("workerid", len(_WORKERS))
        _WORKERS[str(name)] = out["seconds"]


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not _PHASES:
        return
    write = terminalreporter.write_line
    terminalreporter.section("where the time goes")
    write(f"{'suite':<14}{'tests':>7}{'setup s':>10}{'call s':>10}{'teardown s':>12}")
    for suite, p in sorted(_PHASES.items()):
        write(
            f"{suite:<14}{int(p['tests']):>7}{p['setup']:>10.0f}{p['call']:>10.0f}"
            f"{p['teardown']:>12.0f}"
        )
    by_shape: dict[str, list[float]] = defaultdict(list)
    for shape, seconds in STARTS:
        by_shape[shape].append(seconds)
    for shape, times in sorted(by_shape.items()):
        write(f"cluster starts, {shape}: {len(times)}, {sum(times):.0f} s in all")
    write(f"operator processes started: {len(OPERATOR_STARTS)}")
    if _WORKERS:  # the phases above are summed over the workers, which overlap
        each = ", ".join(f"{w} {s:.0f} s" for w, s in sorted(_WORKERS.items()))
        write(f"worker processes: {len(_WORKERS)} ({each}), side by side")
    write("the fifteen costliest test files (setup, call and teardown), seconds:")
    for path, seconds in sorted(_MODULES.items(), key=lambda kv: -kv[1])[:15]:
        write(f"{seconds:>8.0f}  {path}")
