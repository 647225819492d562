"""Gang scheduling: which PodGroup API the operator writes and which scheduler runs the pods.

An option of the whole process (``--gang-scheduling``), not of one MPIJob: the
server parses it, the start-up checks probe the PodGroup API it names, and the
builders receive the value.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

VOLCANO_GROUP = "scheduling.volcano.sh"
VOLCANO_VERSION = "v1beta1"
VOLCANO_API_VERSION = f"{VOLCANO_GROUP}/{VOLCANO_VERSION}"
VOLCANO_SCHEDULER_NAME = "volcano"

SCHEDULER_PLUGINS_GROUP = "scheduling.x-k8s.io"
SCHEDULER_PLUGINS_VERSION = "v1alpha1"
SCHEDULER_PLUGINS_API_VERSION = f"{SCHEDULER_PLUGINS_GROUP}/{SCHEDULER_PLUGINS_VERSION}"

# Ours: the Kubernetes Workload API's PodGroup (the GenericWorkload and GangScheduling
# feature gates, alpha since 1.35), placed as a gang by the default kube-scheduler.
WORKLOAD_API_GROUP = "scheduling.k8s.io"
WORKLOAD_API_VERSION = "v1alpha2"
WORKLOAD_API_API_VERSION = f"{WORKLOAD_API_GROUP}/{WORKLOAD_API_VERSION}"
#: The ``--gang-scheduling`` value that selects it (any other value but "volcano"
#: names a scheduler-plugins scheduler, as in the reference).
WORKLOAD_API = "workload-api"


class GangKind(StrEnum):
    VOLCANO = "volcano"
    SCHEDULER_PLUGINS = "scheduler-plugins"
    WORKLOAD_API = "workload-api"


@dataclass(frozen=True)
class GangScheduling:
    """Which PodGroup API is used and which scheduler the pods are given."""

    kind: GangKind
    scheduler_name: str

    @classmethod
    def volcano(cls) -> GangScheduling:
        return cls(GangKind.VOLCANO, VOLCANO_SCHEDULER_NAME)

    @classmethod
    def scheduler_plugins(cls, scheduler_name: str) -> GangScheduling:
        return cls(GangKind.SCHEDULER_PLUGINS, scheduler_name)

    @classmethod
    def workload_api(cls) -> GangScheduling:
        """The pods keep their scheduler (the default one runs the gang plugin)."""
        return cls(GangKind.WORKLOAD_API, "")

    @classmethod
    def from_flag(cls, value: str) -> GangScheduling | None:
        """Interprets ``--gang-scheduling``: "" disables, "volcano" is volcano,
        "workload-api" the Kubernetes Workload API, any other value is the scheduler
        name of a scheduler-plugins scheduler."""
        if value == VOLCANO_SCHEDULER_NAME:
            return cls.volcano()
        if value == WORKLOAD_API:
            return cls.workload_api()
        if value:
            return cls.scheduler_plugins(value)
        return None

    @property
    def group(self) -> str:
        return _GROUPS[self.kind][0]

    @property
    def version(self) -> str:
        return _GROUPS[self.kind][1]

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}"


_GROUPS = {
    GangKind.VOLCANO: (VOLCANO_GROUP, VOLCANO_VERSION),
    GangKind.SCHEDULER_PLUGINS: (SCHEDULER_PLUGINS_GROUP, SCHEDULER_PLUGINS_VERSION),
    GangKind.WORKLOAD_API: (WORKLOAD_API_GROUP, WORKLOAD_API_VERSION),
}
