"""Kueue (``sigs.k8s.io/kueue``, built by ``hack/build-kueue.sh``) run as a host process
against a :class:`~.cluster.LocalCluster`, as the Kueue suite (``test/integration/kueue``)
needs it.

A cluster has no Service network on the host (nothing routes 10.96.0.0/12 to a
process here), so Kueue's webhooks cannot be reached the way its manifests say (a
Service in ``kueue-system``): they are registered by URL, ``https://127.0.0.1:<port>/...``,
with the ``caBundle`` of a CA made here; Kueue serves them with a certificate of that CA
for 127.0.0.1 from the directory its configuration names
(``internalCertManagement.enable: false``: no Secret, no cert rotation). Only its own
kinds' webhooks (and the conversion webhook of the CRDs its kustomization converts)
and those of the enabled frameworks are registered: a webhook on a path Kueue does not
serve (a disabled framework) would fail every write of that kind.

Leader election is off; health, metrics and webhook listen on free loopback ports; the
visibility API server (``VisibilityOnDemand``, port 8082 on every address by default) is
off. The process is killed with the test process if that dies, and by :meth:`Kueue.stop`.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from . import builds, teardown
from .access import ClusterAccess, ClusterError
from .binaries import BinariesMissingError, repo_root
from .kueue_setup import (
    FEATURE_GATES,
    KUEUE_API,
    METRICS_CERT_DIR,
    MPIJOB_FRAMEWORK,
    NAMESPACE,
    PRIORITY_CLASS_LABEL,
    QUEUE_NAME_LABEL,
    START_TIMEOUT,
    configuration,
    crds_with_conversion,
    in_private_etc,
    probe_mpijob,
    webhook_certificates,
    webhook_configurations,
)
from .procs import Process, free_ports
from .waiting import StopWaitingError, wait_for

__all__ = [
    "KUEUE_API",
    "MPIJOB_FRAMEWORK",
    "NAMESPACE",
    "PRIORITY_CLASS_LABEL",
    "QUEUE_NAME_LABEL",
    "Kueue",
    "KueueFiles",
    "find",
]


@dataclass(frozen=True)
class KueueFiles:
    """What ``hack/build-kueue.sh`` puts in its cache directory."""

    dir: Path

    @property
    def binary(self) -> Path:
        return self.dir / "kueue"

    @property
    def crds(self) -> list[Path]:
        return sorted((self.dir / "crds").glob("*.yaml"))

    @property
    def webhook_manifests(self) -> Path:
        return self.dir / "webhook-manifests.yaml"


def find(root: Path | None = None) -> KueueFiles:
    """The built Kueue; :class:`BinariesMissingError` naming ``make kueue`` if missing."""
    builds.wait_for("kueue")
    root = root or repo_root()
    out = subprocess.run(
        ["bash", str(root / "hack" / "build-kueue.sh"), "--print-dir"],
        check=True,
        capture_output=True,
        text=True,
    )
    files = KueueFiles(Path(out.stdout.strip()))
    missing = [
        str(p)
        for p in (files.binary, files.webhook_manifests, files.dir / "crds")
        if not p.exists()
    ]
    if missing or not os.access(files.binary, os.X_OK):
        raise BinariesMissingError(
            f"Kueue missing from {files.dir} ({', '.join(missing) or 'kueue not executable'}); "
            "run `make kueue` (hack/build-kueue.sh) first"
        )
    return files


class Kueue:
    """Kueue's manager against ``cluster`` (its admin kubeconfig), files in ``workdir``.

    :meth:`start` installs Kueue's CRDs (kept: they outlive Kueue as in a real
    cluster), starts the process, waits for ``/readyz``, registers the webhooks and waits
    until the API server calls them (a dry-run MPIJob with a queue name comes back
    suspended). :meth:`stop` deletes the webhook configurations first (a write of an
    MPIJob must not fail on a webhook nobody serves), then kills the process.
    ``pods_ready_timeout``, ``requeuing``, ``multikueue``: see
    :func:`~.kueue_setup.configuration`.
    """

    def __init__(
        self,
        cluster: ClusterAccess,
        workdir: Path,
        *,
        files: KueueFiles | None = None,
        frameworks: Sequence[str] = (MPIJOB_FRAMEWORK,),
        pods_ready_timeout: str | None = None,
        requeuing: dict[str, Any] | None = None,
        multikueue: dict[str, Any] | None = None,
    ) -> None:
        self.cluster = cluster
        self.workdir = workdir.resolve()
        self._files = files
        self.frameworks = list(frameworks)
        self.pods_ready_timeout = pods_ready_timeout
        self.requeuing = requeuing
        self.multikueue = multikueue
        self.process: Process | None = None
        self.ports: dict[str, int] = {}
        self._webhooks: list[str] = []

    @property
    def files(self) -> KueueFiles:
        if self._files is None:
            self._files = find()
        return self._files

    @property
    def log(self) -> Path:
        return self.workdir / "logs" / "kueue.log"

    def start(self, timeout: float = START_TIMEOUT) -> None:
        files = self.files
        teardown.install_signal_handlers()
        teardown.track(self)
        try:
            self._start(files, timeout)
        except BaseException:
            self.stop()
            raise

    def _start(self, files: KueueFiles, timeout: float) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        health, metrics, webhook = free_ports(3)
        self.ports = {"health": health, "metrics": metrics, "webhook": webhook}
        base_url = f"https://127.0.0.1:{webhook}"
        cert_dir = self.workdir / "webhook-certs"
        ca = webhook_certificates(cert_dir)

        crd_file = self.workdir / "kueue-crds.yaml"
        crd_file.write_text(
            yaml.safe_dump_all(crds_with_conversion(files.crds, base_url, ca), sort_keys=False)
        )
        self.cluster.install_crds([crd_file])
        self.cluster.ensure(
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}
        )

        config = self.workdir / "kueue-config.yaml"
        config.write_text(
            yaml.safe_dump(
                configuration(
                    health_port=health,
                    metrics_port=metrics,
                    webhook_port=webhook,
                    cert_dir=cert_dir,
                    frameworks=self.frameworks,
                    pods_ready_timeout=self.pods_ready_timeout,
                    requeuing=self.requeuing,
                    multikueue=self.multikueue,
                ),
                sort_keys=False,
            )
        )
        args = [
            str(files.binary),
            f"--config={config}",
            f"--kubeconfig={self.cluster.kubeconfig}",
            f"--feature-gates={FEATURE_GATES}",
            "--zap-log-level=2",  # admission, suspend and resume decisions, in its log
        ]
        args = in_private_etc(args, self.workdir / "etc-overlay", {METRICS_CERT_DIR: cert_dir})
        self.process = Process("kueue", args, self.log)
        self.process.start()
        self._wait("Kueue /readyz", self._ready, timeout)

        for obj in webhook_configurations(
            files.webhook_manifests.read_text(), base_url, ca, self.frameworks
        ):
            plural = obj["kind"].lower() + "s"
            status, body = self.cluster.request(
                "POST", f"/apis/admissionregistration.k8s.io/v1/{plural}", obj
            )
            if status not in (200, 201):
                raise ClusterError(f"creating {obj['kind']}: {status} {body}")
            self._webhooks.append(f"{plural}/{obj['metadata']['name']}")
        self._wait("Kueue's MPIJob webhook called by kube-apiserver", self._webhook_called, timeout)

    def _wait(self, what: str, check: Any, timeout: float) -> None:
        def checked() -> Any:
            if self.process is None or not self.process.alive():
                raise StopWaitingError("exited")
            return check()

        try:
            wait_for(checked, timeout, what)
        except StopWaitingError:
            raise ClusterError(f"kueue exited while waiting for {what}\n{self.tail()}") from None
        except TimeoutError as e:
            raise ClusterError(f"{e}\n{self.tail()}") from None

    def _ready(self) -> bool:
        url = f"http://127.0.0.1:{self.ports['health']}/readyz"
        with urllib.request.urlopen(url, timeout=5) as r:
            return int(r.status) == 200

    def _webhook_called(self) -> bool:
        status, body = self.cluster.request(
            "POST",
            "/apis/kubeflow.org/v2beta1/namespaces/default/mpijobs?dryRun=All",
            probe_mpijob(),
        )
        if status not in (200, 201):
            return False
        return bool(((body.get("spec") or {}).get("runPolicy") or {}).get("suspend"))

    def alive(self) -> bool:
        return self.process is not None and self.process.alive()

    def tail(self, lines: int = 40) -> str:
        if self.process is None:
            return "(kueue not started)"
        return f"---- kueue ({self.log}) ----\n{self.process.tail(lines)}"

    def stop(self) -> None:
        """Idempotent: the webhook configurations (if the API server answers), then the
        process."""
        for ref in self._webhooks:
            with contextlib.suppress(OSError):
                self.cluster.request(
                    "DELETE", f"/apis/admissionregistration.k8s.io/v1/{ref}", timeout=10
                )
        self._webhooks.clear()
        if self.process is not None:
            self.process.stop()
        teardown.untrack(self)
