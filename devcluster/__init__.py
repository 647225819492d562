"""A local Kubernetes control plane for tests and development, from real binaries.

The binaries (kube-apiserver, kube-controller-manager, kube-scheduler, kubectl,
etcd, kwok) are built from Go modules by ``make binaries`` (``hack/build-binaries.sh``)
into ``${XDG_CACHE_HOME:-~/.cache}/mpi-operator/bin/<version-key>/``; kube-apiserver,
etcd and kubectl are taken from ``$KUBEBUILDER_ASSETS`` when present there.

Two shapes, everything listening on 127.0.0.1 only, on free ports:

* ``api``: etcd + kube-apiserver, like envtest (ServiceAccount admission off, since
  no controller creates the ``default`` ServiceAccounts).
* ``full``: + kube-controller-manager (job, garbage collector, namespace,
  serviceaccount, serviceaccount-token, root-ca publisher, ttl-after-finished, podgc,
  replicaset, deployment controllers), kube-scheduler, and a KWOK controller managing
  fake nodes ``kwok-node-0..3`` (64 cpu, 512Gi memory, 250 pods, 8 ``nvidia.com/gpu``
  each, no taints, label ``type=kwok``).

Authentication is by client certificates (user ``admin`` in ``system:masters``), the
authorization mode is ``Node,RBAC``, ServiceAccount tokens are signed (``kubectl create
token`` works). The CRDs of the repository's ``crd/`` and the volcano and
scheduler-plugins PodGroup CRDs are installed and Established at start.

How pods behave on the fake nodes (KWOK Stages in ``stages/``), driven by annotations
on the pod (put them in a Job's or MPIJob's pod template):

``kwok.mpi-operator.io/start-delay: "2s"``
    The pod stays Pending (scheduled) this long before it runs (default: at once).
    Then it is Running and Ready with a pod IP.
``kwok.mpi-operator.io/complete-after: "5s"``
    The containers terminate this long after the pod started running. Without it a
    pod runs until deleted.
``kwok.mpi-operator.io/exit-code: "3"``
    With ``complete-after``: the containers' exit code (default ``0``). ``0`` makes the
    pod Succeeded (reason ``Completed``), anything else Failed (reason ``Error``).
``kwok.mpi-operator.io/reason: "OOMKilled"``
    With ``complete-after``: the containers' termination reason instead.
``kwok.mpi-operator.io/evict-after: "3s"``
    The kubelet evicts the pod this long after it started running: phase Failed,
    reason ``Evicted``, condition ``DisruptionTarget`` (``TerminationByKubelet``),
    containers terminated with 137. Takes precedence over ``complete-after``.
``kwok.mpi-operator.io/fail-first-run-after: "2s"``
    The pod fails this long after it started running (exit code and reason from the
    two annotations above, default ``1`` and ``Error``), but only if it has no label
    ``training.kubeflow.org/restart-attempt``: an MPIJob's pods fail on its first run
    and not after the failure policy restarted it.

Durations are Go durations (``500ms``, ``2s``, ``1m``). A pod being deleted while it
has finalizers is first stopped (Failed, exit code 137) as a kubelet would; with no
finalizers left it is removed at once. ``restartPolicy`` is not simulated: containers
are never restarted.

Entry points: ``python -m devcluster up|down`` (``make cluster-up`` /
``make cluster-down``) and the pytest fixtures of ``test/conftest.py``.
"""

from .access import API, FULL, REAL, ClusterError, KubectlError
from .binaries import Binaries, BinariesMissingError
from .cluster import LocalCluster
from .waiting import wait_for

ANNOTATION_PREFIX = "kwok.mpi-operator.io/"
START_DELAY = ANNOTATION_PREFIX + "start-delay"
COMPLETE_AFTER = ANNOTATION_PREFIX + "complete-after"
EXIT_CODE = ANNOTATION_PREFIX + "exit-code"
REASON = ANNOTATION_PREFIX + "reason"
EVICT_AFTER = ANNOTATION_PREFIX + "evict-after"
FAIL_FIRST_RUN_AFTER = ANNOTATION_PREFIX + "fail-first-run-after"

__all__ = [
    "API",
    "COMPLETE_AFTER",
    "EVICT_AFTER",
    "EXIT_CODE",
    "FAIL_FIRST_RUN_AFTER",
    "FULL",
    "REAL",
    "REASON",
    "START_DELAY",
    "Binaries",
    "BinariesMissingError",
    "ClusterError",
    "KubectlError",
    "LocalCluster",
    "wait_for",
]
