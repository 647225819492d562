"""``python -m bench.sidebyside [--preset full|smoke] [--reps N] ...``: see bench/README.md."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .presets import PRESETS, preset
from .report import format_summary
from .runner import run

RESULTS = Path(__file__).resolve().parents[1] / "results"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.sidebyside", description=__doc__)
    p.add_argument("--preset", default="full", choices=PRESETS)
    p.add_argument("--reps", type=int, help="repetitions (default: the preset's)")
    p.add_argument("--fanout-reps", type=int, help="fan-out repetitions (default: --reps)")
    p.add_argument("--unrelated-pods", type=int, help="unrelated pods for the memory scenario")
    p.add_argument("--fanout-workers", type=int, help="workers of the fan-out MPIJob (all configs)")
    p.add_argument("--jobs", type=int, help="MPIJobs of the throughput scenario (all configs)")
    p.add_argument("--no-fanout", action="store_true", help="skip the fan-out scenario")
    p.add_argument("--timeout", type=float, help="seconds each wait may take")
    p.add_argument("--no-raw", action="store_true", help="skip the raw-client ceiling")
    p.add_argument(
        "--raw-lanes",
        type=int,
        metavar="N",
        help="throughput's raw ceiling: N jobs' children in flight at once (0: all; default 1)",
    )
    p.add_argument(
        "--fairness",
        action="store_true",
        help="create a 1-worker MPIJob during the fan-out; time until its pods exist",
    )
    p.add_argument(
        "--running-wait",
        type=float,
        metavar="SECONDS",
        help="cut the fan-out's wait for Running this long after all pods exist (lower bound)",
    )
    p.add_argument(
        "--out", type=Path, help="results JSON (default bench/results/sidebyside-<preset>.json)"
    )
    p.add_argument("--workdir", type=Path, help="keep cluster and operator logs here")
    p.add_argument(
        "--ours-only",
        action="store_true",
        help="run neither the reference nor its ratios (profiling, quick checks)",
    )
    p.add_argument(
        "--profile",
        action="store_true",
        help="record a py-spy flame graph of ours in every run, next to the results",
    )
    p.add_argument(
        "--ours-arg",
        action="append",
        default=[],
        metavar="FLAG",
        help="one more flag for ours only, repeatable (--ours-arg=--threadiness=4)",
    )
    args = p.parse_args(argv)
    sizes = preset(args.preset)
    if args.reps is not None:
        sizes.reps = args.reps
        sizes.fanout_reps = None
    if args.fanout_reps is not None:
        sizes.fanout_reps = args.fanout_reps
    if args.unrelated_pods is not None:
        sizes.unrelated_pods = args.unrelated_pods
    if args.fanout_workers is not None:
        sizes.fanout_workers = {c.name: args.fanout_workers for c in sizes.configs}
    if args.jobs is not None:
        sizes.throughput_jobs = {c.name: args.jobs for c in sizes.configs}
    if args.no_fanout:
        sizes.fanout_workers = {}
    if args.timeout is not None:
        sizes.timeout = args.timeout
    if args.no_raw:
        sizes.raw_ceiling = False
    if args.raw_lanes is not None:
        sizes.raw_lanes = args.raw_lanes
    if args.fairness:
        sizes.fairness = True
    if args.running_wait is not None:
        sizes.running_wait = args.running_wait
    sizes.profile = args.profile
    sizes.ours_args = tuple(args.ours_arg)
    if args.ours_only:
        sizes.reference_scenarios = ()
    out = args.out or RESULTS / f"sidebyside-{args.preset}.json"
    run(sizes, out, workdir=args.workdir)
    print(format_summary(json.loads(out.read_text())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
