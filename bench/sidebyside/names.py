"""Names the scenarios and audit counts give and the summary reads back (pure, no
cluster)."""

from __future__ import annotations

#: The fan-out's MPIJob, and the 1-worker one created meanwhile (fairness).
BIG, SMALL = "fanout", "small"

#: An MPIJob's status and ``discover_hosts.sh`` writes, as the audit counts spell them
#: (``by_verb_resource``; ``updates_by_object`` adds the object's name).
STATUS_CONFIG_UPDATES = ("update mpijobs/status", "update configmaps")

#: The throughput scenario's steps (:mod:`.job_times`), in the order a job goes through
#: them.
STEPS = ("workers_exist", "launcher_exists", "scheduled", "ready")
#: The figures :func:`.job_times.step_medians` gives: the steps before Ready (Ready has
#: its own p50 and p99).
STEP_METRICS = tuple(f"create_to_{step}_p50_s" for step in STEPS[:-1])
