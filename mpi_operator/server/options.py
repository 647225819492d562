"""Command-line flags of ``mpi-operator``, parsed into a frozen :class:`ServerOptions`.

The flag names and defaults are the reference operator's. Go's ``flag``
package accepts ``-name`` as well as ``--name``; :func:`go_style_argv` rewrites
the single-dash spelling of our long flags so both work here too. The klog
flags the reference deployment passes (``-alsologtostderr``, ``-v=N``...) are
accepted and ignored, so existing manifests keep working.

Flags this implementation adds: ``--log-format``, ``--log-level``,
``--healthz-port``, ``--healthz-bind-address``, ``--monitoring-bind-address``
and, hidden from ``--help``, the leader-election timings and shutdown timeouts
(tests shorten them).
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from mpi_operator import __version__
from mpi_operator.api.scheduling import GangScheduling
from mpi_operator.api.v2beta1.types import ENV_KUBEFLOW_NAMESPACE
from mpi_operator.client.leaderelection import JITTER_FACTOR, LeaderElectionConfig
from mpi_operator.controller.options import ControllerOptions

API_VERSION = "v2"
LOG_FORMATS = ("json", "console")
LOCK_NAME = "mpi-operator"
LOG_LEVELS = ("debug", "info", "warning", "error", "critical")
DNS1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")


@dataclass(frozen=True, slots=True)
class ServerOptions:
    kubeconfig: str = ""
    master: str = ""
    namespace: str = ""
    """Empty: every namespace; a comma-separated list watches each of them."""
    threadiness: int = 2
    monitoring_port: int = 0
    print_version: bool = False
    gang_scheduling: str = ""
    lock_namespace: str = "mpi-operator"
    # Deviation: the reference ships 5/10 (client-go's defaults); servers protect themselves
    # with API Priority and Fairness, and 5 QPS makes a 500-worker job take 100 s to start.
    kube_api_qps: int = 100
    kube_api_burst: int = 200
    controller_queue_rate_limit: int = 10
    controller_queue_burst: int = 100
    cluster_domain: str = ""
    # Additions of this implementation.
    log_format: str = "json"
    log_level: str = "info"
    healthz_port: int = 8080
    healthz_bind_address: str = "0.0.0.0"
    monitoring_bind_address: str = "0.0.0.0"
    lease_duration: float = 15.0
    renew_deadline: float = 5.0
    retry_period: float = 3.0
    cache_sync_timeout: float = 120.0
    shutdown_drain_seconds: float = 3.0
    enable_t9k_controller: bool = True
    """Serve batch.tensorstack.dev MPIJobs too, when their CRD is installed."""

    @property
    def gang(self) -> GangScheduling | None:
        return GangScheduling.from_flag(self.gang_scheduling)

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


def _go_bool(value: str) -> bool:
    """Go's strconv.ParseBool spellings."""
    if value in ("1", "t", "T", "true", "TRUE", "True"):
        return True
    if value in ("0", "f", "F", "false", "FALSE", "False"):
        return False
    raise argparse.ArgumentTypeError(f"invalid boolean value {value!r}")


def _port(value: str) -> int:
    port = int(value)
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"port {port} out of range 0-65535")
    return port


def namespace_list(value: str) -> str:
    """``--namespace``: one namespace as given (the reference's flag, unchecked), or a
    comma-separated list of distinct DNS-1123 labels (an addition of this implementation)."""
    if "," not in value:
        return value
    names = value.split(",")
    for name in names:
        if not DNS1123_LABEL.fullmatch(name):
            raise argparse.ArgumentTypeError(
                f"{name!r} in the list {value!r} is not a valid namespace name (a DNS-1123 "
                "label: at most 63 lowercase letters, digits or '-', starting and ending "
                "with a letter or digit)"
            )
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise argparse.ArgumentTypeError(
            f"namespace {', '.join(map(repr, duplicates))} is listed more than once in {value!r}"
        )
    return value


def _positive(value: str) -> float:
    number = float(value)
    if number <= 0:
        raise argparse.ArgumentTypeError(f"must be positive, not {value}")
    return number


def _bool_flag(
    parser: argparse.ArgumentParser, name: str, dest: str, help: str, default: bool = False
) -> None:
    # ``--flag`` or ``--flag=false``, as Go's boolean flags.
    parser.add_argument(
        name,
        nargs="?",
        const=True,
        default=default,
        type=_go_bool,
        dest=dest,
        help=help,
        metavar="BOOL",
    )


def build_parser(environ: Mapping[str, str] | None = None) -> argparse.ArgumentParser:
    env = os.environ if environ is None else environ
    p = argparse.ArgumentParser(
        prog="mpi-operator",
        description="Runs MPIJobs (kubeflow.org/v2beta1) on Kubernetes.",
        allow_abbrev=False,
    )
    p.add_argument(
        "--master",
        default="",
        help="URL of the Kubernetes API server; overrides the kubeconfig's server. "
        "Only needed out of cluster.",
    )
    p.add_argument(
        "--kubeConfig",
        dest="kubeconfig",
        default="",
        help="path to a kubeconfig; only needed out of cluster ($KUBECONFIG takes precedence)",
    )
    p.add_argument(
        "--namespace",
        default=env.get(ENV_KUBEFLOW_NAMESPACE, ""),
        type=namespace_list,
        help=f"watch MPIJobs only in this namespace, or in each of a comma-separated list "
        f"(default: ${ENV_KUBEFLOW_NAMESPACE}; empty: all namespaces)",
    )
    p.add_argument("--threadiness", type=int, default=2, help="number of sync workers")
    _bool_flag(p, "--version", dest="print_version", help="print the version and exit")
    p.add_argument(
        "--monitoring-port",
        type=_port,
        default=0,
        help="port serving Prometheus /metrics; 0 disables it",
    )
    p.add_argument(
        "--gang-scheduling",
        default="",
        help='gang scheduler: "volcano", or the scheduler name of a scheduler-plugins '
        "coscheduler; empty disables gang scheduling",
    )
    p.add_argument(
        "--lock-namespace",
        default="mpi-operator",
        help="namespace of the leader-election Lease (must exist)",
    )
    p.add_argument("--kube-api-qps", type=int, default=100, help="API client queries per second")
    p.add_argument("--kube-api-burst", type=int, default=200, help="API client burst")
    p.add_argument(
        "--controller-queue-rate-limit",
        type=int,
        default=10,
        help="overall rate limit (per second) of the controller's work queue",
    )
    p.add_argument(
        "--controller-queue-burst", type=int, default=100, help="burst of the work queue"
    )
    p.add_argument(
        "--cluster-domain",
        default="",
        help="cluster domain appended to host names in the MPI hostfile "
        "(<pod>.<job>.<namespace>.svc.<domain>); empty leaves it out",
    )
    p.add_argument("--log-format", choices=LOG_FORMATS, default="json")
    p.add_argument("--log-level", choices=LOG_LEVELS, default="info", type=str.lower)
    p.add_argument("--healthz-port", type=_port, default=8080, help="port serving /healthz")
    p.add_argument("--healthz-bind-address", default="0.0.0.0")
    p.add_argument("--monitoring-bind-address", default="0.0.0.0")
    _bool_flag(
        p,
        "--enable-t9k-controller",
        dest="enable_t9k_controller",
        help="also serve TensorStack T9k MPIJobs (batch.tensorstack.dev/v1beta1) when their "
        "CRD is installed; --enable-t9k-controller=false switches it off",
        default=True,
    )
    hidden = argparse.SUPPRESS
    p.add_argument("--lease-duration", type=_positive, default=15.0, help=hidden)
    p.add_argument("--renew-deadline", type=_positive, default=5.0, help=hidden)
    p.add_argument("--retry-period", type=_positive, default=3.0, help=hidden)
    p.add_argument("--cache-sync-timeout", type=_positive, default=120.0, help=hidden)
    p.add_argument("--shutdown-drain-seconds", type=float, default=3.0, help=hidden)
    # klog's flags, accepted for compatibility with the reference manifests.
    for name in KLOG_BOOL_FLAGS:
        _bool_flag(p, f"--{name}", dest=f"klog_{name}", help=hidden)
    for name in KLOG_VALUE_FLAGS:
        p.add_argument(f"--{name}", dest=f"klog_{name}", default=None, help=hidden)
    return p


KLOG_BOOL_FLAGS = ("alsologtostderr", "logtostderr", "add_dir_header", "skip_headers")
KLOG_VALUE_FLAGS = ("v", "vmodule", "stderrthreshold", "log_dir", "log_file")


def _long_flag_names(parser: argparse.ArgumentParser) -> set[str]:
    names: set[str] = set()
    for action in parser._actions:
        for opt in action.option_strings:
            if opt.startswith("--"):
                names.add(opt[2:])
    return names


def go_style_argv(argv: Sequence[str], long_names: set[str]) -> list[str]:
    """Rewrites ``-name[=value]`` to ``--name[=value]`` for known long flags."""
    out: list[str] = []
    for i, arg in enumerate(argv):
        if arg == "--":
            out.extend(argv[i:])
            break
        if arg.startswith("-") and not arg.startswith("--"):
            name = arg[1:].split("=", 1)[0]
            if name in long_names:
                arg = "-" + arg
        out.append(arg)
    return out


def parse_args(
    argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None
) -> ServerOptions:
    """Parses the command line; exits (status 2) with a usage message on errors."""
    parser = build_parser(environ)
    raw = list(sys.argv[1:] if argv is None else argv)
    ns = parser.parse_args(go_style_argv(raw, _long_flag_names(parser)))
    opts = ServerOptions(
        kubeconfig=ns.kubeconfig,
        master=ns.master,
        namespace=ns.namespace,
        threadiness=ns.threadiness,
        monitoring_port=ns.monitoring_port,
        print_version=ns.print_version,
        gang_scheduling=ns.gang_scheduling,
        lock_namespace=ns.lock_namespace,
        kube_api_qps=ns.kube_api_qps,
        kube_api_burst=ns.kube_api_burst,
        controller_queue_rate_limit=ns.controller_queue_rate_limit,
        controller_queue_burst=ns.controller_queue_burst,
        cluster_domain=ns.cluster_domain,
        log_format=ns.log_format,
        log_level=ns.log_level,
        healthz_port=ns.healthz_port,
        healthz_bind_address=ns.healthz_bind_address,
        monitoring_bind_address=ns.monitoring_bind_address,
        lease_duration=ns.lease_duration,
        renew_deadline=ns.renew_deadline,
        retry_period=ns.retry_period,
        cache_sync_timeout=ns.cache_sync_timeout,
        shutdown_drain_seconds=ns.shutdown_drain_seconds,
        enable_t9k_controller=ns.enable_t9k_controller,
    )
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


def version_lines() -> list[str]:
    return [
        f"API Version: {API_VERSION}",
        f"Version: v{__version__}",
        "Git SHA: Not provided.",
        "Built: Not provided.",
        f"Python Version: {platform.python_version()}",
        f"OS/Arch: {sys.platform}/{platform.machine()}",
    ]
