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
* A pod template is at most :data:`MAX_TEMPLATE_BYTES` as JSON, and nothing in it
  (nor in any other free-form field) nests deeper than :data:`MAX_NESTING_DEPTH`:
  every worker pod carries its template, so the template's size is what one tenant
  makes the operator build, hold and send per pod (:func:`template_limit_errors`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from mpi_operator.api.field_errors import FieldError, invalid, too_long

#: Workers of one MPIJob, either API. Deviation from the reference (no limit there):
#: more than the Job API allows an Indexed Job's completions.
MAX_WORKER_REPLICAS = 100_000
#: kube-apiserver's limit on a ConfigMap's data: the bytes of its values, summed.
CONFIG_MAP_DATA_LIMIT = 1024 * 1024
#: A pod template's compact JSON, either API. Each pod built from it is a request body
#: of about this size, and a slow-start batch holds up to 256: 16 MiB at 64 KiB (the
#: examples' largest template is 0.8 KB; the issue's 0.71 MB one cost 4.4 MiB per pod).
MAX_TEMPLATE_BYTES = 64 * 1024
#: Objects and lists nested in a free-form field (a T9k template, a Kubeflow template's
#: metadata, T9k cleanUpWorkers), counted from the field: a PodSpec's deepest field is
#: about 12 down; orjson's encoder stops at 255 and its decoder at 1,024.
MAX_NESTING_DEPTH = 32
#: Longer keys are cut in the field path of a nesting error, which names each level.
_PATH_KEY_CHARS = 63
_PLAIN_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")


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


def _key_path(path: str, key: object) -> str:
    text = str(key)
    if len(text) > _PATH_KEY_CHARS:
        text = text[:_PATH_KEY_CHARS] + "..."
    # Kubernetes' field paths: .name for a plain key, [key] for any other.
    return f"{path}.{text}" if _PLAIN_KEY.match(text) else f"{path}[{text}]"


def nesting_errors(value: Any, path: str, limit: int = MAX_NESTING_DEPTH) -> list[FieldError]:
    """An error naming the first field under ``path`` that is nested deeper than ``limit``
    objects and lists (``value`` itself is level 1). The walk stops there, so that its
    recursion never goes past ``limit + 1`` calls whatever the depth, and the path is
    only spelt out for the error."""
    keys = _past(value, 1, limit) if isinstance(value, dict | list) else None
    if keys is None:
        return []
    where = path
    for key in reversed(keys):
        where = f"{where}[{key}]" if isinstance(key, int) else _key_path(where, key)
    detail = f"must be nested at most {limit} objects and lists deep (counted from {path})"
    return [invalid(where, len(keys) + 1, detail)]


def _past(node: dict[str, Any] | list[Any], depth: int, limit: int) -> list[object] | None:
    """The keys (innermost first) down to the first object or list below ``node`` (at
    level ``depth``) that lies deeper than ``limit``; None when there is none."""
    if depth > limit:
        return []
    items: Any = node.items() if isinstance(node, dict) else enumerate(node)
    for key, child in items:
        if isinstance(child, dict | list):
            keys = _past(child, depth + 1, limit)
            if keys is not None:
                keys.append(key)
                return keys
    return None


def template_limit_errors(template: Any, path: str) -> list[FieldError]:
    """The template at ``path`` nests at most :data:`MAX_NESTING_DEPTH` deep and takes at
    most :data:`MAX_TEMPLATE_BYTES` as JSON; the errors name ``path`` and the limit."""
    errors = nesting_errors(template, path)
    if errors:
        return errors  # and it cannot be encoded to be measured
    # The standard library, not orjson: the models also ship in the SDK alone (its
    # compact form is the same bytes; a template of 64 KiB takes about a millisecond).
    size = len(json.dumps(template, separators=(",", ":"), ensure_ascii=False).encode())
    if size <= MAX_TEMPLATE_BYTES:
        return []
    detail = (
        f"must have at most {MAX_TEMPLATE_BYTES} bytes as JSON (each pod built from it "
        f"carries it), has {size}"
    )
    return [too_long(path, detail)]
