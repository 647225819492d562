"""Certificates and keys of a local control plane (what envtest and kwokctl generate).

* ``ca.crt``/``ca.key``: a self-signed CA, trusted for serving and client certificates.
* ``apiserver.crt``/``apiserver.key``: kube-apiserver's serving certificate (loopback
  and the in-cluster ``kubernetes.default.svc`` names).
* ``admin.crt``/``admin.key``: the client certificate of user ``admin`` in group
  ``system:masters``; every component and ``kubectl`` use it.
* ``sa.key``/``sa.pub``: the ServiceAccount token signing key pair.
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

SERVICE_IP = "10.96.0.1"


@dataclass(frozen=True)
class Pki:
    """Paths of the files written by :func:`generate`."""

    dir: Path

    @property
    def ca_crt(self) -> Path:
        return self.dir / "ca.crt"

    @property
    def serving_crt(self) -> Path:
        return self.dir / "apiserver.crt"

    @property
    def serving_key(self) -> Path:
        return self.dir / "apiserver.key"

    @property
    def admin_crt(self) -> Path:
        return self.dir / "admin.crt"

    @property
    def admin_key(self) -> Path:
        return self.dir / "admin.key"

    @property
    def sa_key(self) -> Path:
        return self.dir / "sa.key"

    @property
    def sa_pub(self) -> Path:
        return self.dir / "sa.pub"


def key_pem(key: ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    )


def self_signed_ca(
    common_name: str, now: datetime.datetime, until: datetime.datetime
) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    """A fresh CA key and its self-signed certificate, valid from ``now`` to ``until``."""
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(until)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), False)
        .sign(ca_key, hashes.SHA256())
    )
    return ca_key, ca_cert


def signed_leaf(
    ca_key: ec.EllipticCurvePrivateKey,
    ca_name: x509.Name,
    cn: str,
    orgs: list[str],
    usage: x509.ObjectIdentifier,
    now: datetime.datetime,
    until: datetime.datetime,
    sans: list[x509.GeneralName] | None = None,
) -> tuple[bytes, bytes]:
    """A fresh key and its certificate signed by the CA, for one extended key usage:
    both PEM (certificate, key)."""
    key = ec.generate_private_key(ec.SECP256R1())
    attrs = [x509.NameAttribute(NameOID.COMMON_NAME, cn)]
    attrs += [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in orgs]
    builder = (
        x509.CertificateBuilder()
        .subject_name(x509.Name(attrs))
        .issuer_name(ca_name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now)
        .not_valid_after(until)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), False
        )
    )
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    cert = builder.sign(ca_key, hashes.SHA256())
    return cert.public_bytes(serialization.Encoding.PEM), key_pem(key)


def _write(path: Path, data: bytes, private: bool = False) -> None:
    path.write_bytes(data)
    if private:
        path.chmod(0o600)


def generate(directory: Path) -> Pki:
    """Write a fresh PKI into ``directory`` (created if needed) and return its paths."""
    directory.mkdir(parents=True, exist_ok=True)
    pki = Pki(directory)
    now = datetime.datetime.now(datetime.UTC) - datetime.timedelta(minutes=5)
    until = now + datetime.timedelta(days=365)

    ca_key, ca_cert = self_signed_ca("mpi-operator-localcluster-ca", now, until)
    ca_name = ca_cert.subject
    _write(pki.ca_crt, ca_cert.public_bytes(serialization.Encoding.PEM))
    _write(directory / "ca.key", key_pem(ca_key), private=True)

    def leaf(
        cn: str,
        orgs: list[str],
        usage: x509.ObjectIdentifier,
        sans: list[x509.GeneralName] | None = None,
    ) -> tuple[bytes, bytes]:
        return signed_leaf(ca_key, ca_name, cn, orgs, usage, now, until, sans)

    dns = [
        "localhost",
        "kubernetes",
        "kubernetes.default",
        "kubernetes.default.svc",
        "kubernetes.default.svc.cluster.local",
    ]
    sans: list[x509.GeneralName] = [x509.DNSName(n) for n in dns]
    sans += [
        x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
        x509.IPAddress(ipaddress.ip_address(SERVICE_IP)),
    ]
    crt, key = leaf("kube-apiserver", [], ExtendedKeyUsageOID.SERVER_AUTH, sans)
    _write(pki.serving_crt, crt)
    _write(pki.serving_key, key, private=True)
    crt, key = leaf("admin", ["system:masters"], ExtendedKeyUsageOID.CLIENT_AUTH)
    _write(pki.admin_crt, crt)
    _write(pki.admin_key, key, private=True)

    sa = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    _write(pki.sa_key, key_pem(sa), private=True)
    _write(
        pki.sa_pub,
        sa.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        ),
    )
    return pki
