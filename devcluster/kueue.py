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

import base64
import contextlib
import copy
import datetime
import ipaddress
import os
import subprocess
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from . import teardown
from .access import ClusterAccess, ClusterError
from .binaries import BinariesMissingError, repo_root
from .pki import key_pem, self_signed_ca
from .procs import Process, free_ports
from .waiting import StopWaitingError, wait_for

NAMESPACE = "kueue-system"
QUEUE_NAME_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_CLASS_LABEL = "kueue.x-k8s.io/priority-class"
KUEUE_API = "kueue.x-k8s.io/v1beta2"
MPIJOB_FRAMEWORK = "kubeflow.org/mpijob"
#: The CRDs whose conversion webhook Kueue's kustomization enables
#: (config/components/crd/kustomization.yaml).
CONVERTED_CRDS = ("localqueues", "clusterqueues", "cohorts", "workloads", "multikueueclusters")
#: The webhooks of Kueue's own kinds (always served), by path fragment.
CORE_WEBHOOKS = "-kueue-x-k8s-io-"
#: The path fragment of each framework's webhooks.
FRAMEWORK_WEBHOOKS = {MPIJOB_FRAMEWORK: "-kubeflow-org-v2beta1-mpijob"}
FEATURE_GATES = "VisibilityOnDemand=false"
#: Where Kueue reads its metrics serving certificate when its internal cert management
#: is off (fixed in cmd/kueue/main.go).
METRICS_CERT_DIR = "/etc/kueue/metrics/certs"
WEBHOOK_CONFIGURATION_NAME = "kueue-loopback"
START_TIMEOUT = 120.0


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


def webhook_certificates(cert_dir: Path) -> bytes:
    """A fresh CA and a serving certificate of it for 127.0.0.1 and ``localhost``:
    ``tls.crt``/``tls.key`` in ``cert_dir`` (the names controller-runtime's webhook
    server reads), ``ca.crt`` beside them; returns the CA's PEM (the ``caBundle``)."""
    cert_dir.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.UTC) - datetime.timedelta(minutes=5)
    until = now + datetime.timedelta(days=7)
    ca_key, ca = self_signed_ca("kueue-webhook-test-ca", now, until)
    ca_name = ca.subject
    key = ec.generate_private_key(ec.SECP256R1())
    sans: list[x509.GeneralName] = [
        x509.DNSName("localhost"),
        x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
    ]
    leaf = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kueue-webhook")]))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(until)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectAlternativeName(sans), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    ca_pem = ca.public_bytes(serialization.Encoding.PEM)
    (cert_dir / "ca.crt").write_bytes(ca_pem)
    (cert_dir / "tls.crt").write_bytes(leaf.public_bytes(serialization.Encoding.PEM))
    tls_key = cert_dir / "tls.key"
    tls_key.write_bytes(key_pem(key))
    tls_key.chmod(0o600)
    return ca_pem


def configuration(
    *,
    health_port: int,
    metrics_port: int,
    webhook_port: int,
    cert_dir: Path,
    frameworks: Sequence[str],
    pods_ready_timeout: str | None = None,
) -> dict[str, Any]:
    """Kueue's Configuration (config.kueue.x-k8s.io/v1beta2): only what the suite needs.
    ``pods_ready_timeout``: waitForPodsReady on, with that timeout (a Go duration), so
    that Kueue keeps each admitted Workload's PodsReady condition (from the MPIJob's
    Running condition) and evicts a job not Running in time; admission not blocked."""
    config: dict[str, Any] = {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2",
        "kind": "Configuration",
        "namespace": NAMESPACE,
        "health": {"healthProbeBindAddress": f"127.0.0.1:{health_port}"},
        "metrics": {"bindAddress": f"127.0.0.1:{metrics_port}"},
        "webhook": {"host": "127.0.0.1", "port": webhook_port, "certDir": str(cert_dir)},
        "leaderElection": {"leaderElect": False},
        "internalCertManagement": {"enable": False},
        "manageJobsWithoutQueueName": False,
        "integrations": {"frameworks": list(frameworks)},
    }
    if pods_ready_timeout:
        config["waitForPodsReady"] = {"timeout": pods_ready_timeout, "blockAdmission": False}
    return config


def webhook_configurations(
    manifests: str, base_url: str, ca_bundle: bytes, frameworks: Sequence[str]
) -> list[dict[str, Any]]:
    """Kueue's Mutating- and ValidatingWebhookConfiguration (its
    config/components/webhook/manifests.yaml), keeping the webhooks of its own kinds and
    of ``frameworks`` only, each called at ``base_url`` + its path with ``ca_bundle``."""
    fragments = [CORE_WEBHOOKS] + [FRAMEWORK_WEBHOOKS[f] for f in frameworks]
    ca = base64.b64encode(ca_bundle).decode()
    out: list[dict[str, Any]] = []
    for doc in yaml.safe_load_all(manifests):
        if not isinstance(doc, dict) or not doc.get("kind", "").endswith("WebhookConfiguration"):
            continue
        doc = copy.deepcopy(doc)
        kept = []
        for hook in doc.get("webhooks") or []:
            path = hook["clientConfig"]["service"]["path"]
            if any(f in path for f in fragments):
                hook["clientConfig"] = {"url": base_url + path, "caBundle": ca}
                kept.append(hook)
        suffix = "mutating" if doc["kind"].startswith("Mutating") else "validating"
        doc["metadata"] = {"name": f"{WEBHOOK_CONFIGURATION_NAME}-{suffix}"}
        doc["webhooks"] = kept
        out.append(doc)
    return out


def crds_with_conversion(paths: Sequence[Path], base_url: str, ca_bundle: bytes) -> list[Any]:
    """Kueue's CRDs as its kustomization installs them: those of :data:`CONVERTED_CRDS`
    with the conversion webhook (``/convert``), here at ``base_url``."""
    ca = base64.b64encode(ca_bundle).decode()
    docs: list[Any] = []
    for p in paths:
        for doc in yaml.safe_load_all(p.read_text()):
            if not isinstance(doc, dict) or doc.get("kind") != "CustomResourceDefinition":
                continue
            if doc["spec"]["names"]["plural"] in CONVERTED_CRDS:
                doc["spec"]["conversion"] = {
                    "strategy": "Webhook",
                    "webhook": {
                        "clientConfig": {"url": base_url + "/convert", "caBundle": ca},
                        "conversionReviewVersions": ["v1"],
                    },
                }
            docs.append(doc)
    return docs


def _probe_mpijob() -> dict[str, Any]:
    container = {"name": "c", "image": "none"}
    spec = {"containers": [container]}
    return {
        "apiVersion": "kubeflow.org/v2beta1",
        "kind": "MPIJob",
        "metadata": {"name": "kueue-webhook-probe", "labels": {QUEUE_NAME_LABEL: "probe"}},
        "spec": {
            "mpiReplicaSpecs": {
                "Launcher": {"replicas": 1, "template": {"spec": spec}},
                "Worker": {"replicas": 1, "template": {"spec": spec}},
            }
        },
    }


def in_private_etc(args: list[str], overlay: Path, dirs: dict[str, Path]) -> list[str]:
    """``args`` run in a mount namespace of their own where ``/etc`` is an overlay whose
    upper layer (under ``overlay``) holds a copy of each source directory of ``dirs`` at
    its ``/etc/...`` target: the process sees the files there, the host's ``/etc`` is
    never written. (With its internal cert management off, Kueue reads its metrics
    certificate from the fixed :data:`METRICS_CERT_DIR`.) Root, or a kernel that lets
    an unprivileged user namespace mount an overlay."""
    upper, work = overlay / "upper", overlay / "work"
    work.mkdir(parents=True, exist_ok=True)
    for target, source in dirs.items():
        dest = upper / Path(target).relative_to("/etc")
        dest.mkdir(parents=True, exist_ok=True)
        for f in source.iterdir():
            if f.is_file():
                (dest / f.name).write_bytes(f.read_bytes())
                (dest / f.name).chmod(f.stat().st_mode & 0o777)
    mount = (
        f"mount -t overlay overlay -o lowerdir=/etc,upperdir={upper},workdir={work} /etc"
        ' && exec "$0" "$@"'
    )
    user = [] if os.geteuid() == 0 else ["--user", "--map-root-user"]
    return ["unshare", *user, "--mount", "--propagation", "private", "--", "sh", "-c", mount, *args]


class Kueue:
    """Kueue's manager against ``cluster`` (its admin kubeconfig), files in ``workdir``.

    :meth:`start` installs Kueue's CRDs (kept: they outlive Kueue as in a real
    cluster), starts the process, waits for ``/readyz``, registers the webhooks and waits
    until the API server calls them (a dry-run MPIJob with a queue name comes back
    suspended). :meth:`stop` deletes the webhook configurations first (a write of an
    MPIJob must not fail on a webhook nobody serves), then kills the process.
    ``pods_ready_timeout``: Kueue's waitForPodsReady (see :func:`configuration`).
    """

    def __init__(
        self,
        cluster: ClusterAccess,
        workdir: Path,
        *,
        files: KueueFiles | None = None,
        frameworks: Sequence[str] = (MPIJOB_FRAMEWORK,),
        pods_ready_timeout: str | None = None,
    ) -> None:
        self.cluster = cluster
        self.workdir = workdir.resolve()
        self._files = files
        self.frameworks = list(frameworks)
        self.pods_ready_timeout = pods_ready_timeout
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
            _probe_mpijob(),
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
