"""The launcher's log: its newest pod, once it has started, read whole or followed."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from kubernetes.watch import Watch

from ._errors import translated
from .errors import LogsUnavailableError

if TYPE_CHECKING:
    from .client import JobClient

_STARTED = ("Running", "Succeeded", "Failed")


def _started(pod: Any) -> bool:
    """Whether the pod's containers have started (a Pending pod has no log to give)."""
    return (pod.status.phase if pod.status else None) in _STARTED


def _newest(pods: list[Any]) -> Any:
    return max(pods, key=lambda p: (p.metadata.creation_timestamp, p.metadata.name))


def launcher_pod(client: JobClient[Any], name: str, namespace: str, timeout: float) -> Any:
    """The job's newest launcher pod once it started; waits up to ``timeout`` seconds."""
    kind = client.kind
    deadline = time.monotonic() + timeout
    while True:
        with translated():
            pods = client.core.list_namespaced_pod(
                namespace, label_selector=kind.launcher_selector(name)
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
) -> Iterator[str]:
    pod = launcher_pod(client, name, namespace, timeout if follow else 0)
    args = {
        "name": pod.metadata.name,
        "namespace": namespace,
        "container": _container(client, pod, container),
    }
    with translated():
        if not follow:
            text = client.core.read_namespaced_pod_log(**args)
            yield from str(text).splitlines()
            return
        watcher = Watch()
        try:
            for line in watcher.stream(client.core.read_namespaced_pod_log, follow=True, **args):
                yield str(line)
        finally:
            watcher.stop()
