"""Names the scenarios give and the summary reads back (pure, no cluster)."""

from __future__ import annotations

#: The fan-out's MPIJob, and the 1-worker one created meanwhile (fairness).
BIG, SMALL = "fanout", "small"

#: The throughput scenario's steps (:mod:`.job_times`), in the order a job goes through
#: them.
STEPS = ("workers_exist", "launcher_exists", "scheduled", "ready")
#: The figures :func:`.job_times.step_medians` gives: the steps before Ready (Ready has
#: its own p50 and p99).
STEP_METRICS = tuple(f"create_to_{step}_p50_s" for step in STEPS[:-1])
