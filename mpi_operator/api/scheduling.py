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


class GangKind(StrEnum):
    VOLCANO = "volcano"
    SCHEDULER_PLUGINS = "scheduler-plugins"


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
    def from_flag(cls, value: str) -> GangScheduling | None:
        """Interprets ``--gang-scheduling``: "" disables, "volcano" is volcano, any
        other value is the scheduler name of a scheduler-plugins scheduler."""
        if value == VOLCANO_SCHEDULER_NAME:
            return cls.volcano()
        if value:
            return cls.scheduler_plugins(value)
        return None

    @property
    def group(self) -> str:
        return VOLCANO_GROUP if self.kind is GangKind.VOLCANO else SCHEDULER_PLUGINS_GROUP

    @property
    def version(self) -> str:
        return VOLCANO_VERSION if self.kind is GangKind.VOLCANO else SCHEDULER_PLUGINS_VERSION

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}"
