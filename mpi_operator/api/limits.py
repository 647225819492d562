"""Size limits of an MPIJob, checked before anything is written (ours; the reference
operator has none).

* At most :data:`MAX_WORKER_REPLICAS` workers, for both MPIJob APIs: a sync walks
  every worker index and builds the hostfile on the event loop, so 2^31-1 workers
  would stall the whole operator.
* The ConfigMap ``<job>-config`` must fit in the API server's limit on a ConfigMap's
  data (:data:`CONFIG_MAP_DATA_LIMIT`, the sum of its values' bytes), or every write
  of it is refused. Its size follows from the job's names alone: each worker adds one
  or more lines of fixed length plus the decimal digits of its index. The builders'
  exact formats are described by :class:`ConfigShape`; the size is computed without
  building the content, so a job of 2^31-1 workers costs nothing to check.
"""

from __future__ import annotations

from dataclasses import dataclass

from mpi_operator.api.field_errors import FieldError, invalid

#: Workers of one MPIJob, either API. Deviation from the reference (no limit there):
#: more than the Job API allows an Indexed Job's completions.
MAX_WORKER_REPLICAS = 100_000
#: kube-apiserver's limit on a ConfigMap's data: the bytes of its values, summed.
CONFIG_MAP_DATA_LIMIT = 1024 * 1024


def worker_cap_errors(path: str, replicas: int | None) -> list[FieldError]:
    """The shared worker cap; ``path`` names the replicas field of the job's API."""
    if replicas is None or replicas <= MAX_WORKER_REPLICAS:
        return []
    return [invalid(path, replicas, f"must be no more than {MAX_WORKER_REPLICAS}")]


def index_digits(count: int) -> int:
    """Decimal digits of the indexes 0 .. count-1, written out one after another."""
    total, low, high, width = 0, 0, 10, 1
    while low < count:
        total += (min(count, high) - low) * width
        low, high, width = high, high * 10, width + 1
    return total


@dataclass(frozen=True, slots=True)
class ConfigShape:
    """The byte size of a ConfigMap's data as a function of its worker count:
    ``fixed`` bytes whatever the count, ``per_worker`` bytes for each worker, and
    each worker's index written ``index_times`` times (once per line naming it)."""

    fixed: int
    per_worker: int
    index_times: int

    def size(self, workers: int) -> int:
        return self.fixed + workers * self.per_worker + self.index_times * index_digits(workers)

    def largest_fitting(self, limit: int = CONFIG_MAP_DATA_LIMIT) -> int:
        """The most workers (up to the cap) whose ConfigMap fits in ``limit`` bytes."""
        low, high = 0, MAX_WORKER_REPLICAS
        if self.size(low) > limit:
            return 0
        while low < high:
            mid = (low + high + 1) // 2
            if self.size(mid) <= limit:
                low = mid
            else:
                high = mid - 1
        return low


def config_map_errors(
    path: str, replicas: int, shape: ConfigShape, contents: str, factors: str
) -> list[FieldError]:
    """An error naming ``path`` when ``replicas`` workers make a ConfigMap the API server
    refuses; ``contents`` (what the ConfigMap holds) and ``factors`` (what its size
    depends on) are for the message."""
    if replicas > MAX_WORKER_REPLICAS or shape.size(replicas) <= CONFIG_MAP_DATA_LIMIT:
        return []
    fits = shape.largest_fitting()
    detail = (
        f"{contents} for this many workers would take {shape.size(replicas)} bytes, more than "
        f"the {CONFIG_MAP_DATA_LIMIT} bytes a ConfigMap may hold; at most {fits} workers fit "
        f"with this job's {factors}"
    )
    return [invalid(path, replicas, detail)]


def byte_length(text: str) -> int:
    return len(text.encode())
