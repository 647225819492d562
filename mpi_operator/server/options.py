"""Command-line flags of ``mpi-operator``, parsed into a frozen :class:`ServerOptions`.

Each field of :class:`ServerOptions` declares its flag (:func:`~.flags.flag`):
name, default and help text live there once, and the parser, ``--help`` and
the docs' table of flags are derived from them. The flag names and defaults
are the reference operator's, but for the API client's rate limit; the klog
flags the reference's manifests pass (``-alsologtostderr``...) are accepted,
and ``-v=N`` sets the log level (:data:`~.flags.KLOG_FLAGS`).
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from mpi_operator.api.scheduling import GangScheduling
from mpi_operator.api.v2beta1.types import ENV_KUBEFLOW_NAMESPACE
from mpi_operator.builders.t9k.pods import DEFAULT_INIT_IMAGE
from mpi_operator.client.leaderelection import JITTER_FACTOR, LeaderElectionConfig
from mpi_operator.controller import ControllerOptions
from mpi_operator.server.flag_values import (
    METRICS_OFF,
    bind_address,
    dns_domain,
    image_reference,
    metrics_bind_address,
    namespace_list,
    port,
    positive,
    split_host_port,
)
from mpi_operator.server.flags import (
    KLOG_FLAGS,
    OURS,
    TIMINGS,
    Flag,
    build_parser,
    flag,
    go_style_argv,
    long_flag_names,
    option_flags,
)

LOG_FORMATS = ("auto", "json", "console")
LOCK_NAME = "mpi-operator"
LOG_LEVELS = ("debug", "info", "warning", "error", "critical")


@dataclass(frozen=True, slots=True)
class ServerOptions:
    kubeconfig: str = flag(
        "kubeConfig",
        "",
        "path to a kubeconfig, only needed out of cluster; $KUBECONFIG takes precedence, "
        "and with neither (nor --master) the operator runs in-cluster when "
        "$KUBERNETES_SERVICE_HOST is set, else reads ~/.kube/config",
    )
    master: str = flag(
        "master",
        "",
        "URL of the Kubernetes API server, overriding the kubeconfig's; only needed out of cluster",
    )
    namespace: str = flag(
        "namespace",
        "",
        "watch MPIJobs only in this namespace, or in each of a comma-separated list "
        "(the list is ours); empty: all namespaces",
        parse=namespace_list,
        env=ENV_KUBEFLOW_NAMESPACE,
        default_text=f"${ENV_KUBEFLOW_NAMESPACE}, else all namespaces",
    )
    threadiness: int = flag("threadiness", 2, "number of sync workers")
    monitoring_port: int = flag(
        "monitoring-port", 0, "port serving Prometheus /metrics; 0 disables it", parse=port
    )
    print_version: bool = flag("version", False, "print the version and exit")
    gang_scheduling: str = flag(
        "gang-scheduling",
        "",
        'gang scheduler: "volcano", "workload-api" (the Kubernetes Workload API\'s '
        "PodGroups, scheduling.k8s.io/v1alpha2, placed by the default scheduler), or the "
        "scheduler name of a scheduler-plugins coscheduler; empty disables gang scheduling",
    )
    lock_namespace: str = flag(
        "lock-namespace",
        "mpi-operator",
        "namespace of the leader-election Lease mpi-operator (must exist)",
    )
    # Deviation: the reference ships 5/10 (client-go's defaults); servers protect themselves
    # with API Priority and Fairness, and 5 QPS makes a 500-worker job take 100 s to start.
    kube_api_qps: int = flag(
        "kube-api-qps",
        100,
        "client-side rate limit, queries per second, of each API client (as the reference's"
        " clientsets: Kubernetes' own resources, MPIJobs, each gang scheduler's PodGroups),"
        " for all jobs together",
        reference="5",
    )
    kube_api_burst: int = flag(
        "kube-api-burst", 200, "burst of each API client's rate limit", reference="10"
    )
    controller_queue_rate_limit: int = flag(
        "controller-queue-rate-limit",
        10,
        "overall rate limit (per second) of the retries of failed syncs in the work queue",
    )
    controller_queue_burst: int = flag(
        "controller-queue-burst", 100, "burst of the work queue's overall rate limit"
    )
    cluster_domain: str = flag(
        "cluster-domain",
        "",
        "cluster domain appended to host names in the MPI hostfile "
        "(<pod>.<job>.<namespace>.svc.<domain>); empty leaves it out; must be a DNS "
        "domain (the reference takes any text)",
        parse=dns_domain,
    )
    log_format: str = flag(
        "log-format",
        "auto",
        "json: one JSON line per event, with the MPIJob key; console: for people; "
        "auto: console when stderr is a terminal, else json",
        group=OURS,
        choices=LOG_FORMATS,
    )
    log_level: str = flag(
        "log-level",
        "info",
        "least severe level logged (-v=N is another spelling)",
        group=OURS,
        parse=str.lower,
        choices=LOG_LEVELS,
    )
    healthz_port: int = flag(
        "healthz-port", 8080, "port serving /healthz (0: any free port)", group=OURS, parse=port
    )
    healthz_bind_address: str = flag(
        "healthz-bind-address", "0.0.0.0", "address /healthz listens on", group=OURS
    )
    monitoring_bind_address: str = flag(
        "monitoring-bind-address", "0.0.0.0", "address /metrics listens on", group=OURS
    )
    metrics_bind_address: str = flag(
        "metrics-bind-address",
        "",
        "host:port serving Prometheus /metrics, as controller-runtime's flag (an empty "
        f"host: every address; an IPv6 host in brackets); {METRICS_OFF} disables it; "
        "overrides --monitoring-port and --monitoring-bind-address, which decide when "
        "it is empty",
        group=OURS,
        parse=metrics_bind_address,
        default_text='"": the older flags decide (off, as in the reference)',
    )
    health_probe_bind_address: str = flag(
        "health-probe-bind-address",
        "",
        "host:port serving /healthz, as controller-runtime's flag (an empty host: every "
        "address; an IPv6 host in brackets); overrides --healthz-port and "
        "--healthz-bind-address, which decide when it is empty",
        group=OURS,
        parse=bind_address,
        default_text='"": the older flags decide (0.0.0.0:8080; the reference: :8080)',
    )
    lease_duration: float = flag(
        "lease-duration",
        15.0,
        "how long a Lease holds without renewal before another replica may take it",
        group=TIMINGS,
        parse=positive,
    )
    renew_deadline: float = flag(
        "renew-deadline",
        5.0,
        "how long the leader retries renewing before it steps down",
        group=TIMINGS,
        parse=positive,
    )
    retry_period: float = flag(
        "retry-period",
        3.0,
        "wait between attempts to acquire or renew the Lease",
        group=TIMINGS,
        parse=positive,
    )
    cache_sync_timeout: float = flag(
        "cache-sync-timeout",
        120.0,
        "how long a new leader waits for its informers' first lists before exiting 1",
        group=TIMINGS,
        parse=positive,
    )
    shutdown_drain_seconds: float = flag(
        "shutdown-drain-seconds",
        3.0,
        "how long the syncs in flight may finish after SIGTERM or lost leadership",
        group=TIMINGS,
    )
    enable_t9k_controller: bool = flag(
        "enable-t9k-controller",
        True,
        "also serve TensorStack T9k MPIJobs (batch.tensorstack.dev/v1beta1) when their "
        "CRD is installed; --enable-t9k-controller=false switches it off",
        group=OURS,
    )
    t9k_init_image: str = flag(
        "t9k-init-image",
        DEFAULT_INIT_IMAGE,
        "image of the T9k launcher's init container, which waits until every worker "
        "resolves and accepts SSH connections: it runs sh, cut, nslookup and nc -z",
        group=OURS,
        parse=image_reference,
        default_text="busybox:1.36, pinned by its digest",
    )

    @property
    def gang(self) -> GangScheduling | None:
        return GangScheduling.from_flag(self.gang_scheduling)

    @property
    def metrics_listen(self) -> tuple[str, int] | None:
        """Where /metrics listens (host, port; an empty host: every address); None: off."""
        if self.metrics_bind_address == METRICS_OFF:
            return None
        if self.metrics_bind_address:
            return split_host_port(self.metrics_bind_address)
        if not self.monitoring_port:
            return None
        return self.monitoring_bind_address, self.monitoring_port

    @property
    def health_listen(self) -> tuple[str, int]:
        """Where /healthz listens (host, port; an empty host: every address)."""
        if self.health_probe_bind_address:
            return split_host_port(self.health_probe_bind_address)
        return self.healthz_bind_address, self.healthz_port

    @property
    def namespaces(self) -> tuple[str, ...]:
        """The watched namespaces; empty: all of them."""
        return tuple(self.namespace.split(",")) if self.namespace else ()

    def controller_options(self) -> ControllerOptions:
        return ControllerOptions(
            namespace=self.namespaces if len(self.namespaces) > 1 else self.namespace or None,
            threadiness=self.threadiness,
            cluster_domain=self.cluster_domain,
            gang=self.gang,
            queue_rate_limit=float(self.controller_queue_rate_limit),
            queue_burst=self.controller_queue_burst,
        )


def all_flags() -> list[Flag]:
    """Every flag: the options' and klog's, in --help's order."""
    return [*option_flags(ServerOptions), *KLOG_FLAGS]


def new_parser(environ: Mapping[str, str]) -> argparse.ArgumentParser:
    return build_parser(
        all_flags(),
        environ,
        prog="mpi-operator",
        description="Runs MPIJobs (kubeflow.org/v2beta1, and T9k's) on Kubernetes.",
    )


def parse_args(argv: Sequence[str], environ: Mapping[str, str]) -> ServerOptions:
    """Parses the command line; exits (status 2) with a usage message on errors."""
    parser = new_parser(environ)
    parsed = vars(parser.parse_args(go_style_argv(argv, long_flag_names(parser))))
    opts = ServerOptions(**{spec.dest: parsed[spec.dest] for spec in option_flags(ServerOptions)})
    if not opts.print_version:
        try:
            validate_timings(opts)
        except ValueError as err:
            parser.error(str(err))
    return opts


def _s(value: float) -> str:
    return f"{value:g}s"


def validate_timings(opts: ServerOptions) -> None:
    """client-go's ordering of the leader-election timings, and a drain that ends
    before a successor may take over; raises ValueError naming the flags."""
    lease, renew, retry = opts.lease_duration, opts.renew_deadline, opts.retry_period
    drain = opts.shutdown_drain_seconds
    if lease < 1:
        # The Lease holds whole seconds (leaseDurationSeconds).
        raise ValueError(f"--lease-duration ({_s(lease)}) must be at least 1s")
    if lease <= renew:
        raise ValueError(
            f"--lease-duration ({_s(lease)}) must be greater than --renew-deadline ({_s(renew)})"
        )
    if renew <= JITTER_FACTOR * retry:
        raise ValueError(
            f"--renew-deadline ({_s(renew)}) must be greater than {JITTER_FACTOR:g} x "
            f"--retry-period ({_s(retry)}), the longest jittered retry"
        )
    if drain < 0:
        raise ValueError(f"--shutdown-drain-seconds ({_s(drain)}) must not be negative")
    if retry + renew + drain > lease:
        fits = max(lease - retry - renew, 0.0)
        raise ValueError(
            f"--shutdown-drain-seconds ({_s(drain)}) is too long: a leader that cannot renew "
            f"steps down up to --renew-deadline + --retry-period ({_s(renew + retry)}) after "
            f"its last renewal, and must have drained before a successor may take over at "
            f"--lease-duration ({_s(lease)}); at most {_s(fits)} fits"
        )


def leader_election_config(opts: ServerOptions, identity: str) -> LeaderElectionConfig:
    return LeaderElectionConfig(
        namespace=opts.lock_namespace,
        name=LOCK_NAME,
        identity=identity,
        lease_duration=opts.lease_duration,
        renew_deadline=opts.renew_deadline,
        retry_period=opts.retry_period,
        release_on_cancel=True,
    )
