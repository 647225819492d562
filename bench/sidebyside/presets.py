"""The sizes of a side-by-side run and its named presets (``--preset``)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class QpsConfig:
    name: str
    qps: int
    burst: int
    #: False: pass no flag: each operator's shipped defaults (ours 100/200, the
    #: reference 5/10); ``qps``/``burst`` are then the raw ceiling client's.
    pass_flags: bool
    #: More flags for both operators (same spelling in both).
    extra_args: tuple[str, ...] = ()


SHIPPED = QpsConfig("shipped-defaults", 5, 10, pass_flags=False)


@dataclass
class Sizes:
    reps: int = 3
    #: Repetitions of the fan-out (default: ``reps``). A fan-out repetition takes 2-3
    #: min against ~10 for a throughput one, and its figures are the noisier.
    fanout_reps: int | None = None
    nodes: int = 8
    unrelated_pods: int = 5000
    fanout_workers: dict[str, int] = field(default_factory=dict)
    throughput_jobs: dict[str, int] = field(default_factory=dict)
    throughput_workers: int = 4
    launcher_seconds: float = 5.0
    raw_ceiling: bool = True
    #: Repetitions of the raw ceiling per config (default: all); at 5 QPS it is a
    #: ~100 s wait for a figure fixed by the token bucket ((500 - 10) / 5 s).
    raw_reps: dict[str, int] = field(default_factory=dict)
    #: The throughput's raw ceiling: that many jobs' children in flight at once (each
    #: job's together); 0: every job's the moment it is acknowledged. One was the
    #: fastest to all pods Ready here (2026-11-28: ``git show
    #: 44cb355:bench/results/RESULTS.md``).
    raw_lanes: int = 1
    configs: list[QpsConfig] = field(default_factory=list)
    timeout: float = 900.0
    #: Record a py-spy flame graph of ours in every run (next to the results file).
    profile: bool = False
    #: The scenarios the reference runs in (the others: ours and the raw client only).
    reference_scenarios: tuple[str, ...] = ("fanout", "throughput")
    #: Fairness inside the fan-out: once the harness has seen 10% of the big job's
    #: workers, a 1-worker MPIJob "small" is created beside it; seconds until its
    #: launcher and worker pods exist (``small_job_pods_s``) and its Created condition.
    fairness: bool = False
    #: Seconds the fan-out waits for Running after all worker pods exist; None: up to
    #: ``timeout``. When cut, ``running_s`` is a lower bound (``running_timed_out``).
    running_wait: float | None = None
    #: More flags for ours only (experiments: ``--threadiness 4``, ``--log-level debug``).
    ours_args: tuple[str, ...] = ()

    @property
    def fanout_repetitions(self) -> int:
        return self.reps if self.fanout_reps is None else self.fanout_reps


PRESETS = ("full", "scale", "shipped", "reduced", "queue", "fanout-unthrottled", "smoke")

#: Equal client limits for both operators: what the issue's targets compare.
EQUAL = QpsConfig("equal-100-200", 100, 200, pass_flags=True)
#: The same limits, for the 2,000-worker fan-out (each config has one fan-out size).
EQUAL_2K = QpsConfig("equal-100-200-2k", 100, 200, pass_flags=True)


def preset(name: str) -> Sizes:
    if name == "smoke":
        return Sizes(
            reps=1,
            nodes=2,
            unrelated_pods=20,
            fanout_workers={SHIPPED.name: 2},
            throughput_jobs={SHIPPED.name: 2},
            throughput_workers=1,
            launcher_seconds=1.0,
            configs=[SHIPPED],
            timeout=120.0,
            # About a second more; keeps the fairness measurement run by the test suite.
            fairness=True,
        )
    queue = QpsConfig(
        "equal-100-200-queue-1000-2000",
        100,
        200,
        pass_flags=True,
        extra_args=("--controller-queue-rate-limit", "1000", "--controller-queue-burst", "2000"),
    )
    # Fan-out with both operators and the raw client at 1000/2000: the client limiter
    # never binds for 500 pods, so the figure compares how pods are created (ours
    # concurrently, the reference one request at a time) on the same server.
    unthrottled = QpsConfig("equal-1000-2000", 1000, 2000, pass_flags=True)
    if name == "full":
        # The comparison the targets are about, sized for about 35 minutes here (two
        # consecutive runs within 90): at equal 100/200, fan-outs of 500 and 2,000
        # workers and a throughput of 50 MPIJobs, 3 repetitions each, among 5,000
        # unrelated pods. The reference reaches Running 190-420 s after a 2,000-pod
        # fan-out (its 10/s work queue): the wait for Running is cut 120 s after all
        # pods exist (a lower bound then). Its ~2.5 s per MPIJob of throughput is
        # most of the rest.
        return Sizes(
            reps=3,
            nodes=10,
            fanout_workers={EQUAL.name: 500, EQUAL_2K.name: 2000},
            throughput_jobs={EQUAL.name: 50},
            configs=[EQUAL, EQUAL_2K],
            running_wait=120.0,
        )
    if name == "scale":
        # Ten times the scale, ours against the raw ceiling (and the reference on the
        # fan-out only: at its 10/s queue, 1,000 MPIJobs would take it over 40 min):
        # a 5,000-worker fan-out, 1,000 MPIJobs of 4 workers, 50,000 unrelated pods.
        # The fan-out also measures fairness: a 1-worker MPIJob created meanwhile.
        return Sizes(
            reps=1,
            nodes=24,
            unrelated_pods=50000,
            fanout_workers={EQUAL.name: 5000},
            throughput_jobs={EQUAL.name: 1000},
            configs=[EQUAL],
            reference_scenarios=("fanout",),
            timeout=1800.0,
            fairness=True,
            # 1,000 jobs share 100 QPS: a job's next sync after its pods run comes tens
            # of seconds later, when a 5-s launcher has ended and no job is seen Running.
            launcher_seconds=120.0,
        )
    if name == "shipped":
        # Each operator at its shipped client limits (ours 100/200, the reference 5/10).
        return Sizes(
            reps=3,
            fanout_workers={SHIPPED.name: 500},
            throughput_jobs={SHIPPED.name: 100},
            raw_reps={SHIPPED.name: 0},
            configs=[SHIPPED],
        )
    if name == "reduced":
        return Sizes(
            fanout_workers={SHIPPED.name: 200},
            throughput_jobs={SHIPPED.name: 10, EQUAL.name: 50},
            raw_reps={SHIPPED.name: 1},
            configs=[EQUAL, SHIPPED],
            timeout=180.0,
        )
    if name == "fanout-unthrottled":
        return Sizes(fanout_workers={unthrottled.name: 500}, configs=[unthrottled])
    if name == "queue":
        # Throughput with the controller work queue's token bucket opened up, to show
        # what bounds the throughput scenario.
        return Sizes(
            throughput_jobs={queue.name: 50},
            configs=[queue],
            timeout=180.0,
        )
    raise ValueError(f"unknown preset {name!r}")
