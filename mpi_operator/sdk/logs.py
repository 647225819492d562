"""The launcher's log: its newest pod, once it has started, read whole or followed
(followed across the launcher's attempts: a restarted container, then a new pod); a
worker's log, read whole or followed while its container runs; and every started
worker's log at once."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from kubernetes.watch import Watch

from ._config import DEFAULT_REQUEST_TIMEOUT
from .errors import LogsUnavailableError

if TYPE_CHECKING:
    from .client import JobClient

_STARTED = ("Running", "Succeeded", "Failed")

QUIET_LOG_SECONDS = 24 * 3600.0
"""How long a followed log may go without a line before the stream gives up
(:class:`~mpi_operator.sdk.errors.SDKTimeoutError`): the kubernetes client takes no
unbounded read timeout beside a bounded connect one."""


def _started(pod: Any) -> bool:
    """Whether the pod's containers have started (a Pending pod has no log to give)."""
    return (pod.status.phase if pod.status else None) in _STARTED


def _newest(pods: list[Any]) -> Any:
    return max(pods, key=lambda p: (p.metadata.creation_timestamp, p.metadata.name))


def launcher_pod(
    client: JobClient[Any],
    name: str,
    namespace: str,
    timeout: float,
    request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
) -> Any:
    """The job's newest launcher pod once it started; waits up to ``timeout`` seconds."""
    kind = client.kind
    deadline = time.monotonic() + timeout
    while True:
        with client._translated():
            pods = client.core.list_namespaced_pod(
                namespace,
                label_selector=kind.launcher_selector(name),
                _request_timeout=request_timeout,
            ).items
        pod = _newest(pods) if pods else None
        if pod is not None and _started(pod):
            return pod
        if time.monotonic() >= deadline:
            what = (
                f"launcher pod {pod.metadata.name} is {pod.status.phase}"
                if pod is not None
                else "no launcher pod yet"
            )
            raise LogsUnavailableError(f"{kind.kind} {namespace}/{name}: {what}")
        time.sleep(0.5)


def _container(client: JobClient[Any], pod: Any, container: str | None) -> str:
    names = [c.name for c in pod.spec.containers]
    for wanted in (container, client.kind.launcher_container):
        if wanted and wanted in names:
            return wanted
    if container:
        raise LogsUnavailableError(
            f"pod {pod.metadata.name} has no container {container!r}: {', '.join(names)}"
        )
    return str(names[0])


def launcher_logs(
    client: JobClient[Any],
    name: str,
    namespace: str,
    follow: bool,
    container: str | None,
    timeout: float,
    request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
) -> Iterator[str]:
    if follow:
        yield from _follow(client, name, namespace, container, timeout, request_timeout)
        return
    pod = launcher_pod(client, name, namespace, 0, request_timeout)
    with client._translated():
        text = client.core.read_namespaced_pod_log(
            pod.metadata.name,
            namespace,
            container=_container(client, pod, container),
            _request_timeout=request_timeout,
        )
    yield from str(text).splitlines()


def _follow(
    client: JobClient[Any],
    name: str,
    namespace: str,
    container: str | None,
    timeout: float,
    request_timeout: float,
) -> Iterator[str]:
    """Each attempt of the launcher in turn (the launcher Job restarts a failed container
    or makes a new pod: with the pi example, the first ``mpirun`` can start before the
    workers' names resolve), until an attempt succeeds or the job finishes. ``timeout``
    bounds the waits for an attempt to start, not the time spent streaming."""
    followed: set[tuple[str, int]] = set()
    deadline = time.monotonic() + timeout
    while True:
        try:
            remaining = max(0.0, deadline - time.monotonic())
            pod = launcher_pod(client, name, namespace, remaining, request_timeout)
        except LogsUnavailableError:
            if followed:
                return
            raise
        cname = _container(client, pod, container)
        status = _status_of(pod, cname)
        attempt = (str(pod.metadata.uid), status.restart_count if status else 0)
        if attempt not in followed and _has_log(status):
            followed.add(attempt)
            yield from _stream(client, pod, namespace, cname, request_timeout)
            deadline = time.monotonic() + timeout
            continue
        if _over(client, name, namespace, pod) or time.monotonic() >= deadline:
            return
        time.sleep(0.5)


def _stream(
    client: JobClient[Any], pod: Any, namespace: str, cname: str, request_timeout: float
) -> Iterator[str]:
    """The log's lines as they are written; ``request_timeout`` bounds the connection,
    and :data:`QUIET_LOG_SECONDS` the wait for the next line (a quiet program is not a
    dead server)."""
    watcher = Watch()
    with client._translated():
        try:
            for line in watcher.stream(
                client.core.read_namespaced_pod_log,
                name=pod.metadata.name,
                namespace=namespace,
                container=cname,
                follow=True,
                _request_timeout=(request_timeout, QUIET_LOG_SECONDS),
            ):
                yield str(line)
        finally:
            watcher.stop()


def _status_of(pod: Any, cname: str) -> Any:
    for status in (pod.status.container_statuses if pod.status else None) or []:
        if status.name == cname:
            return status
    return None


def _has_log(status: Any) -> bool:
    """Whether the container's current attempt has started (a container waiting to
    restart has no current log)."""
    state = status.state if status is not None else None
    return state is not None and (state.running is not None or state.terminated is not None)


def _over(client: JobClient[Any], name: str, namespace: str, pod: Any) -> bool:
    """No attempt will follow: the launcher pod succeeded, or the job finished."""
    if pod.status is not None and pod.status.phase == "Succeeded":
        return True
    job = client.get(name, namespace)
    return client.kind.failed(job) or client.kind.reached(job, "Succeeded")


def worker_logs(
    client: JobClient[Any],
    name: str,
    namespace: str,
    index: int,
    follow: bool,
    container: str | None,
    timeout: float,
    request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
) -> Iterator[str]:
    pod_name = f"{name}-worker-{index}"
    deadline = time.monotonic() + (timeout if follow else 0)
    while True:
        with client._translated():
            pods = client.core.list_namespaced_pod(
                namespace,
                field_selector=f"metadata.name={pod_name}",
                _request_timeout=request_timeout,
            ).items
        pod = pods[0] if pods else None
        if pod is not None and _started(pod):
            break
        if time.monotonic() >= deadline:
            what = f"is {pod.status.phase}" if pod is not None else "does not exist"
            raise LogsUnavailableError(
                f"{client.kind.kind} {namespace}/{name}: worker pod {pod_name} {what}"
            )
        time.sleep(0.5)
    cname = _container(client, pod, container)
    if follow:
        yield from _stream(client, pod, namespace, cname, request_timeout)
        return
    with client._translated():
        text = client.core.read_namespaced_pod_log(
            pod_name, namespace, container=cname, _request_timeout=request_timeout
        )
    yield from str(text).splitlines()


def worker_order(pod: Any) -> tuple[int, str]:
    """A worker pod's order: its index (``<job>-worker-<index>``), then its name."""
    name = str(pod.metadata.name)
    tail = name.rsplit("-", 1)[-1]
    return (int(tail) if tail.isdigit() else -1, name)


def all_worker_logs(
    client: JobClient[Any],
    name: str,
    namespace: str,
    container: str | None,
    request_timeout: float,
) -> dict[str, str]:
    """Each started worker pod's current log, by pod name, in index order."""
    with client._translated():
        pods = client.core.list_namespaced_pod(
            namespace,
            label_selector=client.kind.worker_selector(name),
            _request_timeout=request_timeout,
        ).items
    texts: dict[str, str] = {}
    for pod in sorted(pods, key=worker_order):
        if not _started(pod):
            continue
        with client._translated():
            texts[str(pod.metadata.name)] = str(
                client.core.read_namespaced_pod_log(
                    pod.metadata.name,
                    namespace,
                    container=_container(client, pod, container),
                    _request_timeout=request_timeout,
                )
            )
    return texts
