"""What :mod:`devcluster.kueue` hands Kueue and the API server: its Configuration, the
webhook certificates, the webhook configurations by URL and the CRDs with their
conversion webhook, and the private ``/etc`` its metrics certificate is read from."""

from __future__ import annotations

import base64
import copy
import datetime
import ipaddress
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.x509.oid import ExtendedKeyUsageOID

from .pki import self_signed_ca, signed_leaf

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


def webhook_certificates(cert_dir: Path) -> bytes:
    """A fresh CA and a serving certificate of it for 127.0.0.1 and ``localhost``:
    ``tls.crt``/``tls.key`` in ``cert_dir`` (the names controller-runtime's webhook
    server reads), ``ca.crt`` beside them; returns the CA's PEM (the ``caBundle``)."""
    cert_dir.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.UTC) - datetime.timedelta(minutes=5)
    until = now + datetime.timedelta(days=7)
    ca_key, ca = self_signed_ca("kueue-webhook-test-ca", now, until)
    sans: list[x509.GeneralName] = [
        x509.DNSName("localhost"),
        x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
    ]
    crt, key = signed_leaf(
        ca_key, ca.subject, "kueue-webhook", [], ExtendedKeyUsageOID.SERVER_AUTH, now, until, sans
    )
    ca_pem = ca.public_bytes(serialization.Encoding.PEM)
    (cert_dir / "ca.crt").write_bytes(ca_pem)
    (cert_dir / "tls.crt").write_bytes(crt)
    tls_key = cert_dir / "tls.key"
    tls_key.write_bytes(key)
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
    requeuing: dict[str, Any] | None = None,
    multikueue: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Kueue's Configuration (config.kueue.x-k8s.io/v1beta2): only what the suite needs.
    ``pods_ready_timeout``: waitForPodsReady on, with that timeout (a Go duration), so
    that Kueue keeps each admitted Workload's PodsReady condition (from the MPIJob's
    Running condition) and evicts a job not Running in time; admission not blocked.
    ``requeuing``: its ``requeuingStrategy`` (backoff of the requeues after such an
    eviction, and how many before the Workload is deactivated). ``multikueue``: the
    ``multiKueue`` section (a manager's garbage collection, origin label, timeouts)."""
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
        if requeuing:
            config["waitForPodsReady"]["requeuingStrategy"] = requeuing
    if multikueue:
        config["multiKueue"] = multikueue
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


def probe_mpijob() -> dict[str, Any]:
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
